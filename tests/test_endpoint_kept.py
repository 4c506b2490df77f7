"""An OpenAI-compatible endpoint's calls are kept as a local model's are: a greedy
request answered once is read from `kept_outputs.db` by a later declaration of the
program and by a later `approx-tune run` in the same folder, never sent again by an
untimed pass; a failed or timed-out request is never kept; `keep=False` sends every
time. Requests are counted on the server's side (serve.py's GET /stats) against the
REAL SmolLM2-135M-Instruct behind `frontends.components.llm.serve`."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends import Knob
from frontends.components.declare import Generate, Tune
from frontends.components.kept import KeptOutputs
from frontends.components.llm.openai_backend import OpenAIAnswerModel
from frontends.components.llm.serve import LocalServer

QUESTION = "Which city is the Eiffel Tower in?"
PASSAGES = ["The Eiffel Tower is in Paris. It was finished in 1889."]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server():
    with LocalServer({"smol": "smollm2", "slow": "smollm2"}, delays={"slow": 20.0}, startup_timeout=300,
                     env={"OMP_NUM_THREADS": "1"}) as s:
        yield s


def program_of(model, other=None, path=None):
    """`ask(question, passages)`: the answer of `model` (and of `other`, asked for one
    token more, so their requests differ), its outputs kept in `path` where a model keeps them."""
    answer = Generate("answer", model, max_new_tokens=6, tune=[Tune.param("max_new_tokens", 3)])
    second = Generate("second", other or model, max_new_tokens=7)

    def ask(question, passages):
        return answer(question, passages)

    def ask_both(question, passages):
        return answer(question, passages), second(question, passages)

    f = Knob()(ask if other is None else ask_both)
    f.kept = f.keep_outputs(path) if path is not None else False
    return f


def sent(server) -> int:
    return server.stats()["requests"]


def test_identity_names_what_the_request_body_depends_on():
    base = dict(base_url="http://127.0.0.1:1/v1", model="smol")
    one = OpenAIAnswerModel(**base)
    assert one.deterministic and not OpenAIAnswerModel(**base, keep=False).deterministic
    assert OpenAIAnswerModel(**base, timeout=5, api_key="secret").identity() == one.identity()
    assert "secret" not in OpenAIAnswerModel(**base, api_key="secret").identity()
    others = [OpenAIAnswerModel("http://127.0.0.1:2/v1", "smol"), OpenAIAnswerModel(base["base_url"], "tiny"),
              OpenAIAnswerModel(**base, api="chat"), OpenAIAnswerModel(**base, logprobs=False),
              OpenAIAnswerModel(**base, max_new_tokens=8), OpenAIAnswerModel(**base, name="other")]
    assert len({m.identity() for m in [one, *others]}) == 1 + len(others)


def test_a_kept_answer_is_a_fresh_answer_and_is_not_sent_again(server, tmp_path):
    path = tmp_path / "kept_outputs.db"
    first = program_of(OpenAIAnswerModel(server.url, "smol", timeout=120), path=path)
    assert first.kept
    before = sent(server)
    with first.untimed():
        answer = first.build({})(QUESTION, PASSAGES)
    assert sent(server) == before + 1 and len(KeptOutputs(path)) == 1
    assert first.reuse_counts() == {"reused": 0, "run": 1, "requests_sent": 1, "requests_kept": 0}

    model = OpenAIAnswerModel(server.url, "smol", timeout=120)  # a later study's declaration, in a new object
    later = program_of(model, path=path)
    with later.untimed():
        kept = later.build({})(QUESTION, PASSAGES)
        assert sent(server) == before + 1  # read from the file: no request
        later.build({"answer.max_new_tokens": {"knob_val": 1}})(QUESTION, PASSAGES)  # another body: sent
    assert sent(server) == before + 2
    assert later.reuse_counts() == {"reused": 1, "run": 1, "requests_sent": 1, "requests_kept": 1}
    fresh = model.answer(QUESTION, PASSAGES, max_new_tokens=6)
    assert sent(server) == before + 3 and fresh.text
    assert (kept.text, kept.confidence, kept.tokens_used, kept.new_tokens, kept.model) == \
        (fresh.text, fresh.confidence, fresh.tokens_used, fresh.new_tokens, fresh.model) == \
        (answer.text, answer.confidence, answer.tokens_used, answer.new_tokens, answer.model)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def received(server, n: int, patience: float = 120.0) -> dict:
    """The server's stats once it has received `n` requests (a timed-out client's request
    may reach a loaded server after the client gave up), or after `patience` seconds."""
    deadline = time.monotonic() + patience
    while (stats := server.stats())["requests"] < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return stats


def test_a_failed_or_timed_out_request_is_never_kept(server, tmp_path):
    path = tmp_path / "kept_outputs.db"
    gone = program_of(OpenAIAnswerModel(f"http://127.0.0.1:{free_port()}/v1", "smol", timeout=10), path=path)
    with gone.untimed(), pytest.raises(ApproxError, match="cannot reach the endpoint"):
        gone.build({})(QUESTION, PASSAGES)
    assert len(KeptOutputs(path)) == 0 and gone.reuse_counts()["run"] == 0

    slow = program_of(OpenAIAnswerModel(server.url, "slow", timeout=1), path=path)  # the server holds it 20 s
    before = server.stats()
    for _ in range(2):
        with slow.untimed(), pytest.raises(ApproxError, match="within 1 s"):
            slow.build({})(QUESTION, PASSAGES)
    after = received(server, before["requests"] + 2)  # the second call was sent again, not read
    assert after["requests"] == before["requests"] + 2
    assert [n - before["bodies"].get(d, 0) for d, n in after["bodies"].items() if n != before["bodies"].get(d)] == [2]
    assert len(KeptOutputs(path)) == 0 and slow.reuse_counts()["requests_kept"] == 0


def test_keep_false_sends_every_time(server, tmp_path):
    path = tmp_path / "kept_outputs.db"
    models = lambda: (OpenAIAnswerModel(server.url, "smol", timeout=120, name="kept"),  # noqa: E731
                      OpenAIAnswerModel(server.url, "smol", timeout=120, name="sent", keep=False))
    before = sent(server)
    for _ in range(2):  # two declarations of the program, as two studies make
        program = program_of(*models(), path=path)
        with program.untimed():
            program.build({})(QUESTION, PASSAGES)
    assert sent(server) == before + 3  # the kept model's request once, the other's twice
    assert program.reuse_counts() == {"reused": 1, "run": 0, "requests_sent": 1, "requests_kept": 1}
    alone = program_of(models()[1], path=tmp_path / "none.db")  # keeps nothing: no file
    assert alone.kept is False and not (tmp_path / "none.db").exists()


def tune_inputs():
    """Four questions of examples/own_pipeline.py and their answers: two tune, two held out."""
    from examples.own_pipeline import make_inputs

    return make_inputs(4)


REQUESTS = re.compile(r"^endpoint requests \(this process\): (\d+) sent, (\d+) answered from kept outputs$", re.M)


def approx_tune(server, out: Path) -> tuple[int, int, set[str]]:
    """One `approx-tune run` of examples/own_pipeline.py in its own process: (requests it
    says it sent, calls it says were answered from kept outputs, bodies the server got)."""
    before = server.stats()["bodies"]
    cmd = [str(Path(sys.executable).with_name("approx-tune")), "run", "examples.own_pipeline:pipeline",
           "--inputs", "tests.test_endpoint_kept:tune_inputs", "--metric", "containment", "--mode", "static",
           "--trials", "3", "--repeats", "1", "--eval-ratio", "1", "--budget", "0.5", "--out", str(out), "--report"]
    env = {**os.environ, "APPROX_LLM_URL": server.url, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    said = REQUESTS.search(run.stdout)
    assert said, run.stdout
    after = server.stats()["bodies"]
    got = {d for d, n in after.items() if n > before.get(d, 0)}
    assert sum(after.values()) - sum(before.values()) == int(said[1])  # what it says it sent is what arrived
    return int(said[1]), int(said[2]), got


def held_out_exact_bodies(server, monkeypatch) -> set[str]:
    """The bodies of the held-out split's exact pass (run here, outside kept outputs)."""
    import importlib

    from approx_opt.program import exact_config
    from autotuner.splits import split_inputs

    monkeypatch.setenv("APPROX_LLM_URL", server.url)
    import examples.own_pipeline as module

    module = importlib.reload(module)  # its model reads the URL when the module is run
    _, (held_out, _) = split_inputs(*tune_inputs(), 1.0, 0)
    before = server.stats()["bodies"]
    run = module.pipeline.build(exact_config(module.pipeline))
    for args in held_out:
        run(*args)
    return {d for d, n in server.stats()["bodies"].items() if n > before.get(d, 0)}


def test_a_resumed_study_sends_no_request_its_untimed_passes_sent(server, tmp_path, monkeypatch):
    """The resumed run's tuning passes read every call, and every held-out figure is
    kept in its study, so it makes no held-out measurer: it sends no request. The first
    run sent the held-out evaluation's exact pass live (the pass that warms the program
    up before its paired timing)."""
    sent1, kept1, bodies1 = approx_tune(server, tmp_path)
    assert sent1 > 0 and kept1 > 0 and len(KeptOutputs(tmp_path / "kept_outputs.db")) > 0
    sent2, kept2, bodies2 = approx_tune(server, tmp_path)
    assert sent2 == 0 and bodies2 == set()
    held_out = held_out_exact_bodies(server, monkeypatch)
    assert len(held_out) == 4 and held_out <= bodies1
    assert kept2 >= 4  # the tuning split's exact pass (2 questions, 2 calls each), read
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert f"endpoint requests (the tuning process): {sent2} sent, {kept2} answered from kept outputs" in summary
