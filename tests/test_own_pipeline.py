"""The README's own pipeline (examples/own_pipeline.py) at a small size, for real:
SmolLM2-135M-Instruct served by `frontends.components.llm.serve` in a process
started here, called over its OpenAI-compatible API by a prompt-level rewrite and
an answer call, BM25 over the example's documents, a tool that runs. Knob 0 is
the plain program; every knob at 1 runs to the end (the skips return their
fallbacks); each call's time is recorded in its answer."""

from __future__ import annotations

import importlib

import pytest

from frontends.components.llm.serve import LocalServer

QUESTIONS = 2


@pytest.fixture(scope="module")
def example():
    with LocalServer({"smol": "smollm2"}, startup_timeout=300, env={"OMP_NUM_THREADS": "1"}) as server:
        mp = pytest.MonkeyPatch()
        mp.setenv("APPROX_LLM_URL", server.url)
        import examples.own_pipeline as module

        yield importlib.reload(module)  # its model reads the URL when the module is run
        mp.undo()


def test_the_pipeline_runs_against_the_served_model(example):
    inputs, references = example.make_inputs(QUESTIONS)
    program = example.pipeline
    assert [k.name for k in program.knobs()] == [
        "rewrite.skip", "search.top_k", "answer.max_new_tokens", "tidy.cache", "tidy.skip"]
    exact = program.build({k.name: {"knob_val": 0} for k in program.knobs()})
    outputs = [exact(*args) for args in inputs]
    assert outputs == [program.python(*args) for args in inputs]
    assert all(isinstance(o, str) and o for o in outputs) and len(references) == QUESTIONS
    cheapest = program.build({k.name: {"knob_val": 1} for k in program.knobs()})
    assert all(isinstance(cheapest(*args), str) for args in inputs)  # the skipped rewrite and tool fall back


def test_each_prompt_call_records_its_time(example):
    (question,), = example.make_inputs(1)[0]
    rewritten = example.rewrite(question)
    assert rewritten.model == "smol" and rewritten.seconds > 0 and rewritten.query == rewritten.text


def test_profile_shows_where_the_time_goes(example, capsys):
    """`approx-tune profile` as a user runs it: one row per component, the served
    model's calls first (they take the time), and a bad -n is one line."""
    from autotuner.cli import main

    spec = ["examples.own_pipeline:pipeline", "--inputs", "examples.own_pipeline:make_inputs"]
    assert main(["profile", *spec, "-n", str(QUESTIONS)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in out[2:]}
    assert set(rows) == {"rewrite", "search", "answer", "tidy", "(program)"}
    assert out[2].split()[0] in ("rewrite", "answer")
    assert main(["profile", *spec, "-n", "0"]) == 1
    assert "-n must be >= 1" in capsys.readouterr().err
