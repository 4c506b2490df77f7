"""The per-token exit of the fine-tuned SmolLM2 for real (the model, its adapters and
trained exits, SQuAD evaluation questions): never exiting, the layer-by-layer loop
gives `generate`'s tokens and log-probabilities bit for bit, and the op's knob at 0
the unannotated answer; at a low threshold tokens leave at the trained exits, every
layer's cache still holds every position (the skipped layers' keys and values
filled), and the answer is still text. Few questions and tokens keep it quick."""

from __future__ import annotations

import pytest

from approx_dialect.diagnostics import ApproxError
from examples import squad
from frontends import Knob
from frontends.components.declare import Generate, Tune
from frontends.components.llm.smollm import chat_turn
from frontends.components.llm.token_exit import greedy
from tests.test_llm_support import fine_tuned_smollm, one_torch_thread  # noqa: F401 (fixtures: lm, autouse)

TOKENS = 8
LOW = 50  # percent: a threshold the trained exits pass on most tokens


@pytest.fixture(scope="module")
def questions():
    """Three evaluation-article questions with the gold paragraph and the next one."""
    pars = squad.paragraphs()
    return [(q.question, [pars[q.paragraph], pars[q.paragraph + 1]])
            for q in (squad.questions_of("eval")[i] for i in (0, 5, 7))]


def prompt_ids(lm, question, contexts):
    return lm.tokenizer(chat_turn(lm.tokenizer, lm.prompt(question, contexts)), return_tensors="pt")["input_ids"]


def test_never_exiting_is_generate_bit_for_bit(lm, questions):
    for question, contexts in questions:
        tokens, logps, _ = lm.generate(question, contexts, TOKENS)
        out = greedy(lm.model, prompt_ids(lm, question, contexts), TOKENS, None, lm.exits, lm.stop_rule(True))
        assert (out.tokens, out.logps) == (tokens, logps)
        assert out.depths == [lm.depth] * len(tokens)


def test_a_low_threshold_exits_and_fills_the_skipped_layers(lm, questions):
    from transformers import DynamicCache

    exited = 0
    for question, contexts in questions:
        ids = prompt_ids(lm, question, contexts)
        cache = DynamicCache(config=lm.model.config)
        out = greedy(lm.model, ids, TOKENS, LOW / 100, lm.exits, lm.stop_rule(True), cache=cache)
        assert out.depths[0] == lm.depth and set(out.depths) <= {lm.depth, *lm.exits}  # the prefill: every layer
        exited += sum(d < lm.depth for d in out.depths)
        # every layer holds every position but the last token's (never fed back), exited or not
        assert {cache.get_seq_length(i) for i in range(lm.depth)} == {ids.shape[1] + len(out.tokens) - 1}
    assert exited > 0


def program(lm):
    answer = Generate("answer", lm, max_new_tokens=TOKENS, tune=[Tune.param("token_exit", 99, LOW)])

    def ask(question, contexts):
        return answer(question, contexts)

    ask.__qualname__ = "ask"
    return Knob()(ask)


def test_the_knob_at_zero_is_exact_and_at_low_changes_what_runs(lm, questions):
    knobbed = program(lm)
    assert [k.name for k in knobbed.knobs()] == ["answer.token_exit"]
    config = {"answer.token_exit": {"knob_val": 2}}
    exact, low = knobbed.build({"answer.token_exit": {"knob_val": 0}}), knobbed.build(config)
    assert f"token_exit = {LOW}" in next(line for line in knobbed.ir(after=True, config=config).splitlines()
                                         if "component.generate" in line)
    for question, contexts in questions[:2]:
        a, b = lm.answer(question, contexts, TOKENS), exact(question, contexts)
        assert (b.text, b.model, b.new_tokens, b.confidence) == (a.text, a.model, a.new_tokens, a.confidence)
        c = low(question, contexts)
        assert c.model == f"{lm.name}[token exit {LOW}%]" and c.text.strip()


def test_variants_and_errors(lm, questions):
    early = lm.with_layers(25).with_token_exit(LOW)  # 25 layers: exit 20 below, its own exit map at the top
    assert early is lm.with_layers(25).with_token_exit(LOW) and early.model is lm.with_layers(25).model
    assert early.with_token_exit(None) is lm.with_layers(25) and lm.with_token_exit(None) is lm
    assert lm.token_exit is None and lm.with_layers(25).token_exit is None
    question, contexts = questions[0]
    out = greedy(early.model, prompt_ids(lm, question, contexts), TOKENS, LOW / 100, early.exits, lm.stop_rule(True))
    assert set(out.depths) <= {25, 20} and early.answer(question, contexts, TOKENS).text.strip()
    with pytest.raises(ApproxError, match=r"token_exit is a confidence in percent, 1\.\.100, got 101"):
        lm.with_token_exit(101)
