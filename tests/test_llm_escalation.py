"""Cascades (docs/cascade.md semantics), fallbacks and the `component.generate` op's
parameters, on real local models (tiny GPT-2s of different seeds)."""

from __future__ import annotations

import math

import pytest

from approx_dialect.cascade import decode
from approx_dialect.diagnostics import ApproxError
from frontends import Knob
from frontends.components.declare import Generate, Tune
from frontends.components.llm.context_cuts import select_sentences
from frontends.components.llm.escalation import Fallback, ModelCascade
from frontends.components.llm.openai_backend import OpenAIAnswerModel
from tests.test_llm_support import CONTEXTS, QUESTION, causal, one_torch_thread  # noqa: F401 (autouse fixture)

N = 3  # max new tokens: keeps every call short


def models():
    return causal(0), causal(1), causal(2)  # two variants, then the exact model


def conf(m):
    return m.answer(QUESTION, CONTEXTS, N).confidence


def expected_stages(start: int, threshold: float, variants, confs, exact) -> list[str]:
    """What docs/cascade.md says runs: variants from `start` until one reaches the threshold."""
    names = []
    for m, c in list(zip(variants, confs))[start - 1:]:
        names.append(m.name)
        if c >= threshold:
            return names
    return names + [exact.name]


def test_cascade_escalates_exactly_when_confidence_is_below_the_threshold():
    v0, v1, exact = models()
    c0, c1 = conf(v0), conf(v1)
    def up(x):  # the smallest threshold above x
        return math.nextafter(x, 2.0)

    for thresholds in ([c0, up(c0)], [up(max(c0, c1))]):
        for k in range(1, 2 * len(thresholds) + 1):
            start, t = decode(k, 2, len(thresholds))
            got = ModelCascade([v0, v1], exact, thresholds, k).answer(QUESTION, CONTEXTS, N)
            assert [s for s, _ in got.stages] == expected_stages(start, thresholds[t], [v0, v1], [c0, c1], exact)
            if k == 1 and thresholds[0] == c0:  # a confidence equal to the threshold is accepted
                assert got.stages == ((v0.name, c0),) and got.text == v0.answer(QUESTION, CONTEXTS, N).text
            if k == 2 and len(thresholds) == 2:  # just below: escalates
                assert got.stages[0] == (v0.name, c0) and len(got.stages) >= 2


def test_cascade_answer_is_the_accepted_stage_and_counts_all_tokens():
    v0, v1, exact = models()
    a = ModelCascade([v0, v1], exact, [2.0], 1).answer(QUESTION, CONTEXTS, N)  # nothing reaches 2: all run
    ref = [m.answer(QUESTION, CONTEXTS, N) for m in (v0, v1, exact)]
    assert [s for s, _ in a.stages] == [v0.name, v1.name, exact.name]
    assert (a.text, a.model, a.new_tokens) == (ref[2].text, exact.name, N)
    assert a.tokens_used == sum(r.tokens_used for r in ref)


def test_cascade_knob_zero_is_the_exact_model():
    v0, v1, exact = models()
    a = ModelCascade([v0, v1], exact, [0.0, 0.5], 0).answer(QUESTION, CONTEXTS, N)
    b = exact.answer(QUESTION, CONTEXTS, N)
    assert (a.text, a.confidence, a.tokens_used, a.new_tokens) == (b.text, b.confidence, b.tokens_used, b.new_tokens)
    assert [s for s, _ in a.stages] == [exact.name]


def test_cascade_errors():
    v0, v1, exact = models()
    with pytest.raises(ApproxError, match=r"cascade knob 5 is outside 0..4"):
        ModelCascade([v0, v1], exact, [0.1, 0.2], 5)
    with pytest.raises(ApproxError, match="at least one variant"):
        ModelCascade([], exact, [0.1])
    with pytest.raises(ApproxError, match="gives no confidence"):
        ModelCascade([v0], exact, [0.1], 1, confidence=lambda a: None).answer(QUESTION, CONTEXTS, N)


def test_fallback_on_an_unreachable_endpoint_and_on_a_rejected_answer():
    dead = OpenAIAnswerModel("http://127.0.0.1:9/v1", "none", timeout=2.0)  # port 9: nothing listens
    local = causal(0)
    a = Fallback(dead, local).answer(QUESTION, CONTEXTS, N)
    assert a.text == local.answer(QUESTION, CONTEXTS, N).text
    assert "cannot reach" in a.error and a.stages[0] == (dead.name, None)
    b = Fallback(causal(1), local, checker=lambda ans: False).answer(QUESTION, CONTEXTS, N)
    assert b.model == local.name and "checker rejected" in b.error
    c = Fallback(causal(1), local, checker=lambda ans: True).answer(QUESTION, CONTEXTS, N)
    assert c.model == causal(1).name and c.error is None


def program(*tune: Tune):
    """A decorated function asking the exact model through its op, with `tune` as its knobs."""
    answer = Generate("answer", models()[2], max_new_tokens=N, tune=tune)

    def ask(question, contexts):
        return answer(question, contexts)

    ask.__qualname__ = "ask"
    return Knob()(ask)


def knobbed():
    v0, v1, _ = models()
    return program(Tune.substitute("model", v0, v1), Tune.param("max_new_tokens", 2, 4), Tune.param("passages", 1),
                   Tune.param("context_chars", 20), Tune.param("sentences", 1), Tune.precision("bfloat16"))


def ask(prog, **knobs):
    return prog.build({f"answer.{k}": {"knob_val": v} for k, v in knobs.items()})(QUESTION, CONTEXTS)


def test_generate_knobs_are_listed_as_knob_specs():
    specs = {s.name: (s.transform_type, s.values) for s in knobbed().knobs()}
    assert specs == {
        "answer.model": ("func_substitute", (0, 1, 2)),
        "answer.max_new_tokens": ("param", (0, 1, 2)),
        "answer.passages": ("param", (0, 1)),
        "answer.context_chars": ("param", (0, 1)),
        "answer.sentences": ("param", (0, 1)),
        "answer.precision": ("precision_reduce", (0, 1)),
    }


def test_generate_at_knob_zero_is_the_exact_model_called_directly():
    a, b = ask(knobbed(), model=0, max_new_tokens=0, precision=0), models()[2].answer(QUESTION, CONTEXTS, N)
    assert (a.text, a.confidence, a.tokens_used, a.new_tokens, a.model) == \
        (b.text, b.confidence, b.tokens_used, b.new_tokens, b.model)


def test_generate_knobs_do_what_they_say():
    prog = knobbed()
    v0, v1, exact = models()
    sub = ask(prog, model=1)
    assert sub.model == v0.name and sub.text == v0.answer(QUESTION, CONTEXTS, N).text
    assert ask(prog, max_new_tokens=1).new_tokens == 2
    assert ask(prog, max_new_tokens=2).new_tokens == 4
    assert ask(prog, passages=1).tokens_used == exact.answer(QUESTION, CONTEXTS[:1], N).tokens_used
    assert ask(prog, context_chars=1).text == exact.answer(QUESTION, [c[:20] for c in CONTEXTS], N).text
    assert ask(prog, sentences=1).text == exact.answer(QUESTION, select_sentences(QUESTION, CONTEXTS, 1), N).text
    assert ask(prog, precision=1).model == exact.name + "[bfloat16]"
    casc = ask(program(Tune.cascade([v0, v1], [1.0])), model=2)  # no tiny model is that sure: v1, then exact
    assert casc.model == exact.name and casc.text == exact.answer(QUESTION, CONTEXTS, N).text


def test_generate_configuration_errors():
    prog = knobbed()
    with pytest.raises(ApproxError, match="answer.top_k"):
        prog.build({"answer.top_k": {"knob_val": 1}})
    with pytest.raises(ApproxError, match="7"):
        prog.build({"answer.max_new_tokens": {"knob_val": 7}})


def test_select_sentences_keeps_the_question_words_sentences_in_order():
    passage = "Paris is large. The Seine flows through Paris in France. Rome is old. Bread is sold in France."
    q = "Which river flows through Paris?"
    assert select_sentences(q, [passage], 1) == ["The Seine flows through Paris in France."]
    assert select_sentences(q, [passage], 2) == ["Paris is large. The Seine flows through Paris in France."]
    assert select_sentences(q, [passage, "One sentence."], 4) == [passage, "One sentence."]  # nothing to drop
    assert select_sentences(q, [passage], None) == [passage]  # knob 0: unchanged
    assert select_sentences("what is it?", ["A b. C d. E f."], 1) == ["A b."]  # no shared words: the first
