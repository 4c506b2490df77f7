"""The prompt budgets of the generate op (`context_tokens`, `compress_tokens`):
the cuts themselves (words as tokens), each declared value on real RAG prompts
counted with the answer model's tokenizer (None: the identical prompt; every value: a
different, shorter one), and the LLM RAG system deciding them per question."""

from __future__ import annotations

import pytest

from examples.systems import common
from examples.systems.rag import bm25 as rag_bm25
from examples.systems.rag.program import COMPRESS_TOKENS, PROMPT_TOKENS
from frontends.components.llm.base import build_prompt
from frontends.components.llm.context_cuts import compress_tokens, truncate_tokens, word_spans
from frontends.components.llm.verifier import Verified
from frontends.components.settings import GenerateSettings

PASSAGES = ["Paris is large. The Seine flows through Paris in France. It has bridges.",
            "Rome is old. The Tiber flows through Rome."]
QUESTION = "Which river flows through Paris?"
SQUAD_QUESTIONS = ["Which NFL team represented the AFC at Super Bowl 50?",
                   "What is Southern California often abbreviated as?",
                   "What Revolutionary War midnight rider was a Huguenot descendant?"]


def tokens(contexts, spans=word_spans) -> int:
    return sum(len(spans(c)) for c in contexts)


def test_truncate_keeps_the_first_tokens_in_passage_order():
    assert truncate_tokens(PASSAGES, None) == PASSAGES  # knob 0
    assert truncate_tokens(PASSAGES, 100) == PASSAGES  # fits
    assert truncate_tokens(PASSAGES, 5) == ["Paris is large. The Seine"]
    assert truncate_tokens(PASSAGES, 15) == [PASSAGES[0], "Rome is"]  # 13 + 2


def test_compress_drops_the_sentences_sharing_fewest_words_with_the_question():
    assert compress_tokens(QUESTION, PASSAGES, None) == PASSAGES
    assert compress_tokens(QUESTION, PASSAGES, 100) == PASSAGES
    # the Seine sentence (river? no; flows, through, paris) first, then the Tiber one (flows, through)
    assert compress_tokens(QUESTION, PASSAGES, 14) == ["The Seine flows through Paris in France.",
                                                       "The Tiber flows through Rome."]
    assert compress_tokens(QUESTION, PASSAGES, 8) == ["The Seine flows through Paris in France."]
    for budget in (3, 8, 14):
        assert tokens(compress_tokens(QUESTION, PASSAGES, budget)) <= budget


@pytest.fixture(scope="module")
def rag():
    system = rag_bm25.llm_system()
    llm = Verified(common.gemma(), common.readers()[1])  # the exact program's answer model
    cases = [(q, [system.corpus[i] for i in system.search(q).ids]) for q in SQUAD_QUESTIONS]
    return system, llm, cases


@pytest.mark.parametrize("setting, values", [("context_tokens", PROMPT_TOKENS), ("compress_tokens", COMPRESS_TOKENS)])
def test_each_declared_value_changes_the_prompt_and_none_keeps_it(rag, setting, values):
    _, llm, cases = rag
    for q, passages in cases:
        exact = build_prompt(q, passages)
        assert build_prompt(q, GenerateSettings().cut(q, passages, llm.token_spans)) == exact
        for v in values:
            cut = GenerateSettings(**{setting: v}).cut(q, passages, llm.token_spans)
            assert build_prompt(q, cut) != exact, (setting, v, q)
            assert tokens(cut, llm.token_spans) <= v


def test_the_prompt_ladder_decides_the_budgets_per_question(rag):
    """Questions below the margin threshold read every passage; those above read the
    passages cut to the second budgets; the IR has the budgets only in that case."""
    system, llm, cases = rag
    states = system.states([q for q, _ in cases])
    assert len(set(states)) > 1
    threshold = sorted(states)[1]
    config = {"prompt": {"thresholds": [threshold, threshold], "decisions": [0, 2, 2]}}
    assert "context_tokens = 200" in system.ir(after=True, config=config)
    run = system.build(config)
    for (q, passages), state in zip(cases, states):
        budgets = GenerateSettings(context_tokens=PROMPT_TOKENS[1], compress_tokens=COMPRESS_TOKENS[1])
        read = budgets.cut(q, passages, llm.token_spans) if state >= threshold else passages
        assert run(q) == llm.answer(q, read, 16).text, q
