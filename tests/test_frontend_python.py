"""Decorated orchestration code (generated-Python path): identical to the plain
function at knob 0, and perforation, truncation, skipping, substitution, decision
trees, safety contracts, params and cascades acting on the real loops and calls."""

from __future__ import annotations

import json

import frontend_programs as P
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_opt.program import exact_config
from frontends import Knob, StaticTransform
from frontends.components.folders import data_dir

DATA = data_dir()


def squad_sample(n_paragraphs: int = 12, n_questions: int = 8):
    """The first paragraphs of SQuAD dev (real data) and questions about them."""
    path = DATA / "squad" / "dev-v1.1.json"
    if not path.exists():
        pytest.skip(f"no SQuAD data at {path} (set APPROX_DATA_DIR)")
    article = json.loads(path.read_text())["data"][0]
    paragraphs = article["paragraphs"][:n_paragraphs]
    docs = [p["context"] for p in paragraphs]
    questions = [qa["question"] for p in paragraphs for qa in p["qas"][:1]][:n_questions]
    return docs, questions


def test_compound_rag_exact_at_knob_0_and_perforated():
    docs, questions = squad_sample()
    assert P.rag.kind == P.bm25_rank.kind == "python"
    for q in questions:
        assert P.rag(q, docs, 2) == P.rag.python(q, docs, 2)
        assert P.bm25_rank(q, docs, 3) == P.bm25_rank.python(q, docs, 3)
    for k in (2, 3):
        ranked = P.bm25_rank.build({"bm25_rank": {"knob_val": k}})
        for q in questions[:4]:
            got = ranked(q, docs, 3)
            assert all(i % k == 0 for i in got)  # only documents 0, k, 2k, ... were scored
            subset = P.bm25_rank.python(q, docs, len(docs))  # same scores, ranked among the kept ones
            assert got == [i for i in subset if i % k == 0][:3]


def test_answer_substitution_calls_the_approx_kernel():
    docs, questions = squad_sample(3, 2)
    approx = P.answer.build({"answer": {"knob_val": 1}})
    assert approx(questions[0], docs[0]) == P.short_answer(questions[0], docs[0])
    assert P.answer(questions[0], docs[0]) == P.best_sentence(questions[0], docs[0])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 12), st.sampled_from(["a", "step-"]))
def test_loop_runs_the_real_calls(steps, tag):
    P.CALLS.clear()
    assert P.pipeline(steps, tag) == P.pipeline.python(steps, tag)
    assert P.CALLS[: len(P.CALLS) // 2] == [f"{tag}{i}" for i in range(steps)]
    for k in (2, 3):
        P.CALLS.clear()
        out = P.pipeline.build({"pipeline": {"knob_val": k}})(steps, tag)
        assert P.CALLS == [f"{tag}{i}" for i in range(0, steps, k)]  # the skipped calls never happen
        assert out == [f"{tag}{i}".upper() for i in range(0, steps, k)]


def test_truncation_and_task_skipping_act_on_python():
    P.CALLS.clear()
    truncated = P.pipeline.build({"pipeline": {"knob_val": 0}})
    assert truncated(3, "x") == ["X0", "X1", "X2"]
    for k, kept in ((1, ["BIG", "done"]), (2, ["SMALL", "done"]), (3, ["EMPTY", "done"]), (4, ["done"])):
        P.CALLS.clear()
        assert P.triage.build({"triage": {"knob_val": k}})([1, 2, 3]) == kept
        assert P.CALLS == [s.lower() for s in kept if s != "done"]
    assert [P.triage(x) for x in ([1, 2, 3], [1], [])] == [P.triage.python(x) for x in ([1, 2, 3], [1], [])]


def test_decision_tree_and_safety_contract_python():
    assert P.respond("abc") == "abc."  # len 3 < 4: exact
    assert P.respond("abcd") == "ABCD!"  # >= 4: approx_kernels[1]
    assert P.respond("badly") == "fallback"  # "BADLY!" fails the checker: recovered
    exact = P.respond.build(exact_config(P.respond))
    assert [exact(q) for q in ("abc", "abcd", "badly")] == [P.respond.python(q) for q in ("abc", "abcd", "badly")]


def test_param_and_cascade_python():
    names = [s.name for s in P.repeat.knobs()]
    assert names == ["repeat", "repeat#2"]
    assert P.repeat("ab", 2) == "abab"
    assert P.repeat.build({"repeat": {"knob_val": 2}})("ab", 2) == "ababab"  # k = values[1] = 3
    casc = P.repeat.build({"repeat#2": {"knob_val": 1}})
    assert casc("ab", 2) == "abab"  # "ab?" is not trusted: escalates to the exact function
    assert casc("abcd", 2) == "abcd!"  # trusted cheap variant


TOUR = Knob()(P.syntax_tour)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), max_size=8), st.text(alphabet="ab cd", min_size=1, max_size=12))
def test_python_syntax_identical(xs, text):
    tour = TOUR
    if not text.split():
        text = "x " + text
    assert tour(xs, text) == P.syntax_tour(xs, text)


def test_exceptions_propagate_like_python():
    tour = TOUR
    with pytest.raises(AttributeError):
        tour([1], 5)  # 5 has no .upper / .split
    with pytest.raises(ZeroDivisionError):
        Knob()(divide)(1, 0)


def divide(a, b):
    if b == 0:
        raise ZeroDivisionError("b is zero")
    return a / b


def test_set_config_and_program_protocol():
    P.pipeline.set_config({"pipeline": {"knob_val": 3}})
    try:
        assert P.pipeline(7, "s") == ["S0", "S3", "S6"]
        assert P.pipeline.config == {"pipeline": {"knob_val": 3}}
    finally:
        P.pipeline.set_config({})
    assert P.pipeline(3, "s") == ["S0", "S1", "S2"]
    spec = P.pipeline.knobs()[0]
    assert (spec.name, spec.transform_type, spec.values) == ("pipeline", "loop_perforate", (0, 2, 3, 4, 8))
    assert P.pipeline.name == "frontend_programs:pipeline"


def test_generated_python_never_executes_ir_text():
    evil = "'); import os; os.system('echo pwned'); ('"

    @Knob()
    def echo(x):
        return x + evil

    assert echo("a") == "a" + evil
    from approx_dialect.context import parse_module
    from frontends.pygen import generate

    text, env, entry = echo._module()
    src = generate(parse_module(echo.ir(after=True)), env).source
    assert "os.system" not in src and "echo" not in src.replace("def f0", "")


def test_modulo_perforation_and_while_loops_in_python():
    skip = Knob(static_transform=StaticTransform("loop_perforate_modulo", 0))(P.pipeline.python)
    for k in (2, 3):
        P.CALLS.clear()
        skip.build({"pipeline": {"knob_val": k}})(7, "m")
        assert P.CALLS == [f"m{i}" for i in range(7) if i % k != k - 1]

    @Knob(static_transform=StaticTransform("loop_truncate", 0))
    def countdown(n):
        out = []
        for i in range(n, 0, -2):
            out.append(i)
        while out and out[-1] < 3:
            out.pop()
        return out

    for n in range(0, 9):
        assert countdown(n) == countdown.python(n)
    assert countdown.build({"countdown": {"knob_val": 2}})(8) == [8, 6]
