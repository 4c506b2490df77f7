"""The generate op's exact path on a GPU: the compiled decode (static KV cache, one CUDA
graph per token) gives the eager path's greedy tokens. Runs where CUDA is (the device
machine: `python -m pytest tests/test_llm_gpu.py`); skipped elsewhere."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device: the compiled GPU decode path is tested on a GPU machine")


def test_compiled_decode_gives_the_eager_tokens():
    from frontends.components.llm.gpu_decode import CompiledGreedy, eager_greedy, smollm2_shape

    torch.backends.cuda.matmul.allow_tf32 = False
    model = smollm2_shape()
    decoder = CompiledGreedy(model, max_len=1024)
    gen = torch.Generator().manual_seed(1)
    for length in (300, 517, 900, 411):
        ids = torch.randint(100, 49000, (1, length), generator=gen).to("cuda")
        tokens, logps = decoder(ids, 16)
        assert tokens == eager_greedy(model, ids, 16), length
        assert len(logps) == 16 and all(lp <= 0 for lp in logps)


def test_a_stop_ends_decoding_after_its_token():
    from frontends.components.llm.gpu_decode import CompiledGreedy, smollm2_shape

    model = smollm2_shape()
    decoder = CompiledGreedy(model, max_len=1024)
    ids = torch.randint(100, 49000, (1, 400), generator=torch.Generator().manual_seed(2)).to("cuda")
    full, _ = decoder(ids, 12)
    stopped, _ = decoder(ids, 12, stop=lambda toks: len(toks) == 5)
    assert stopped == full[:5]


def test_compiled_decode_under_a_generation_option_gives_generates_tokens():
    """With the logits processors of a generation option (`repetition_penalty`), the compiled
    decode picks the tokens transformers' eager `generate` picks under the same option."""
    from transformers import GenerationConfig

    from frontends.components.llm.generation import processors
    from frontends.components.llm.gpu_decode import CompiledGreedy, smollm2_shape

    torch.backends.cuda.matmul.allow_tf32 = False
    model = smollm2_shape()
    decoder = CompiledGreedy(model, max_len=1024)
    gen = torch.Generator().manual_seed(3)
    for length in (300, 611):
        ids = torch.randint(100, 49000, (1, length), generator=gen).to("cuda")
        config = GenerationConfig(max_new_tokens=16, min_new_tokens=16, do_sample=False, num_beams=1, use_cache=True,
                                  eos_token_id=None, pad_token_id=0, repetition_penalty=1.3)
        with torch.inference_mode():
            want = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=config)
        tokens, _ = decoder(ids, 16, processors=processors(model, {"repetition_penalty": 1.3}, length))
        assert tokens == want[0, length:].tolist(), length
        assert tokens != decoder(ids, 16)[0]  # the option changed what was decoded


def test_the_reader_on_the_gpu_answers_as_on_the_cpu():
    """On a GPU run the extractive reader (the RAG cascade's cheap stage) runs on the GPU
    too; its spans are those the CPU reads, and int8 (a CPU kernel) is not offered there."""
    from examples import squad
    from examples.systems.common import MODELS
    from frontends.components.llm.reader import ExtractiveReader

    torch.backends.cuda.matmul.allow_tf32 = False
    cpu = ExtractiveReader.from_path(MODELS / "reader_l6.npz")
    gpu = ExtractiveReader.from_path(MODELS / "reader_l6.npz", device="cuda")
    assert "int8" in cpu.precisions and "int8" not in gpu.precisions
    assert next(gpu.with_precision("bfloat16").module.parameters()).device.type == "cuda"
    passages = list(squad.paragraphs()[:3])
    for q in ("Which team won the game?", "Who was the most valuable player?", "Where was the game played?"):
        assert gpu.answer(q, passages).text == cpu.answer(q, passages).text, q


def test_a_variant_is_compiled_before_its_first_question():
    """Making a variant (what the runtime does before it times a call) compiles its decode
    step: its first question compiles nothing, so the kept seconds of that call (the cost
    model's figure for it) hold no compile time."""
    from types import SimpleNamespace

    from torch._dynamo.utils import counters

    from frontends.components.llm.smollm import SmolLM2

    model = SmolLM2.load(None, device="cuda")
    variant = model.variant_for(SimpleNamespace(precision=None, layers=12, token_exit=None))
    assert variant is not model and id(variant.model) in variant._decoders
    graphs = counters["stats"]["unique_graphs"]
    assert variant.answer("Who won the game?", ["The Broncos won the game in Santa Clara."], 8).text is not None
    assert counters["stats"]["unique_graphs"] == graphs
    assert model.variant_for(SimpleNamespace(precision=None, layers=12, token_exit=None)) is variant
