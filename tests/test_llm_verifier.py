"""Gemma 3 verifying the reader's span (`verifier.Verified`), for real: the scored decoding
decodes what the plain one does and, teacher-forced on its own answer, gives that answer's
log-probabilities back, on eager torch and on each engine decoder (rewound to the prompt's
end between continuations); the verifier answers with the span or with its own answer as the
margin says, and records both models."""

from __future__ import annotations

import math

import pytest

from examples.systems import common
from frontends.components.llm import engine
from frontends.components.llm.policy import PROBE_TOKENS, rag_probe
from frontends.components.llm.verifier import Verified, mean
from frontends.components.settings import GenerateSettings


@pytest.fixture(scope="module")
def torch_gemma():
    from frontends.components.llm.gemma import Gemma3

    common.one_thread()
    return Gemma3.load(common.GEMMA_ADAPTER)


def models(torch_gemma):
    """Eager torch and, where the engines are installed, its exact engine and int8 value."""
    found = [torch_gemma]
    if engine.available():
        from frontends.components.llm.engine_model import through_engine

        exact = through_engine(torch_gemma, engine.EXACT)
        found += [exact, exact.with_precision("int8")]
    return found


def test_scored_decoding_decodes_as_the_plain_one_and_scores_its_own_answer_as_decoded(torch_gemma):
    question, passages = rag_probe()[0]
    for lm in models(torch_gemma):
        content = lm.prompt(question, passages)
        plain, plain_logps, prompt = lm.generate_turn(content, PROBE_TOKENS)
        other = lm.continuation_ids("a different answer")
        tokens, logps, scored_prompt, (own, different) = lm.generate_scored(content, [plain, other], PROBE_TOKENS)
        assert (tokens, scored_prompt) == (plain, prompt), lm.name
        assert own == pytest.approx(logps, abs=2e-3) and logps == pytest.approx(plain_logps, abs=2e-3), lm.name
        assert len(different) == len(other) and mean(different) < mean(own) - 1.0, lm.name  # a worse answer


def test_the_verifier_answers_with_the_span_or_its_own_answer_as_the_margin_says(torch_gemma):
    reader = common.readers()[1]
    question, passages = rag_probe()[0]
    span = reader.answer(question, passages).text
    own = torch_gemma.answer(question, passages, PROBE_TOKENS).text
    always, never = Verified(torch_gemma, reader, -math.inf), Verified(torch_gemma, reader, math.inf)
    assert always.answer(question, passages, PROBE_TOKENS).text == span
    verified = never.answer(question, passages, PROBE_TOKENS)
    assert verified.text == own
    assert [name for name, _ in verified.stages] == [reader.name, torch_gemma.name]
    assert verified.tokens_used > torch_gemma.answer(question, passages, PROBE_TOKENS).tokens_used
    assert "template" not in always.supports and "precision" in always.supports
    bf16 = always.variant_for(GenerateSettings(model="answer", precision="bfloat16"))
    assert bf16.model.precision == "bfloat16" and bf16.candidate is reader and bf16.margin == -math.inf


def test_the_prompt_budgets_count_the_verifying_models_tokens(torch_gemma):
    verified = Verified(torch_gemma, common.readers()[1])
    text = "The Normans conquered England in 1066."
    assert verified.token_spans(text) == torch_gemma.token_spans(text) != common.readers()[1].token_spans(text)


def test_a_hinted_verifier_answers_from_a_prompt_that_holds_the_span(torch_gemma):
    from frontends.components.llm.base import build_prompt, first_line

    reader = common.readers()[1]
    question, passages = rag_probe()[0]
    span = reader.answer(question, passages).text
    hinted = Verified(torch_gemma, reader, math.inf, hinted=True)
    content = build_prompt(question, passages, span)
    assert span in content and span not in torch_gemma.prompt(question, passages).split("Question:")[1]
    tokens, _, _ = torch_gemma.generate_turn(content, PROBE_TOKENS)
    own = first_line(torch_gemma.tokenizer.decode(tokens, skip_special_tokens=True))
    assert hinted.answer(question, passages, PROBE_TOKENS).text == own
    assert Verified(torch_gemma, reader, -math.inf, hinted=True).answer(question, passages, PROBE_TOKENS).text == span
    assert hinted.identity() != Verified(torch_gemma, reader, math.inf).identity()  # kept outputs apart
    assert hinted.variant_for(GenerateSettings(model="answer", precision="bfloat16")).hinted
