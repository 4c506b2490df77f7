"""transformers causal LMs from a local folder: the greedy loop is transformers'
greedy decoding, and max_new_tokens truncates it (token counts, prefixes)."""

from __future__ import annotations

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import build_prompt, parse_prompt
from frontends.components.llm.causal import CausalLM
from tests.test_llm_support import CONTEXTS, QUESTION, causal, one_torch_thread, tiny_gpt2  # noqa: F401 (autouse fixture)


def test_greedy_loop_is_transformers_greedy_generate():
    m = causal(0)
    prompt = build_prompt(QUESTION, CONTEXTS)
    ids = m.tokenizer(prompt, return_tensors="pt")["input_ids"]
    ref = m.model.generate(ids, max_new_tokens=8, do_sample=False)[0, ids.shape[1]:].tolist()
    g = m.generate(prompt, 8)
    assert list(g.token_ids) == ref
    assert g.prompt_tokens == ids.shape[1] and g.finish_reason == "length"


def test_max_new_tokens_truncates_the_decoding_loop():
    m = causal(0)
    prompt = build_prompt(QUESTION, CONTEXTS)
    full = m.generate(prompt, 8)
    for n in (1, 3, 8):
        a = m.answer(QUESTION, CONTEXTS, max_new_tokens=n)
        assert a.new_tokens == n
        assert a.tokens_used == full.prompt_tokens + n
        assert m.generate(prompt, n).token_ids == full.token_ids[:n]  # a prefix: the loop is cut, not changed
        assert 0 < a.confidence <= 1


def test_default_max_new_tokens_and_knob_free_call():
    m = CausalLM.from_path(tiny_gpt2(0), max_new_tokens=5)
    a = m.answer(QUESTION, CONTEXTS)
    assert a.new_tokens == 5 and a.stages == ((m.name, a.confidence),)
    assert a.text == causal(0).answer(QUESTION, CONTEXTS, 5).text


def test_long_prompts_keep_their_end_within_the_context_window():
    m = causal(0)
    g = m.generate(build_prompt(QUESTION, ["word " * 600]), 6)
    assert g.prompt_tokens == 256 - 6 and len(g.token_ids) == 6


def test_precision_variant_is_cached_and_leaves_the_float32_model_alone():
    import torch

    m = causal(0)
    bf = m.with_precision("bfloat16")
    assert bf is m.with_precision("bfloat16") and bf.name.endswith("[bfloat16]")
    assert next(bf.model.parameters()).dtype == torch.bfloat16
    assert next(m.model.parameters()).dtype == torch.float32
    assert bf.answer(QUESTION, CONTEXTS, 4).new_tokens == 4
    with pytest.raises(ApproxError, match="has no int8 variant"):  # weight-only int8: SmolLM2's
        m.with_precision("int8")


def test_stop_strings_cut_the_generation():
    m = causal(0)
    prompt = build_prompt(QUESTION, CONTEXTS)
    full = m.generate(prompt, 6)
    piece = full.text[2:4]
    g = m.generate(prompt, 6, stop=(piece,))
    assert g.finish_reason == "stop" and piece not in g.text and full.text.startswith(g.text)


def test_errors_are_one_clear_line(tmp_path):
    with pytest.raises(ApproxError, match="config.json missing"):
        CausalLM.from_path(tmp_path)
    with pytest.raises(ApproxError, match="max_new_tokens must be >= 1"):
        causal(0).answer(QUESTION, CONTEXTS, 0)
    with pytest.raises(ApproxError, match="does not fit the context window"):
        causal(0).generate("x", 256)


def test_prompt_round_trip():
    q, ctx = parse_prompt(build_prompt(QUESTION, CONTEXTS))
    assert (q, ctx) == (QUESTION, CONTEXTS)
    assert parse_prompt(build_prompt(QUESTION, CONTEXTS, candidate="a span")) == (QUESTION, CONTEXTS)
    assert build_prompt(QUESTION, CONTEXTS, candidate="a span") != build_prompt(QUESTION, CONTEXTS)
    with pytest.raises(ApproxError, match="shape"):
        parse_prompt("hello")
