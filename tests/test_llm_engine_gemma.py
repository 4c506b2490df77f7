"""The fine-tuned Gemma 3 270M (`common.GEMMA_ADAPTER`) through the CPU engine builds: the ort-fp32
build (made by onnxruntime-genai's builder with `engine_gemma`'s fixes) gives eager torch
float32's greedy answers on the knob probe's RAG questions (knob 0 is exact, compared with
torch on this machine), and an int8 value decodes another build and answers. The builds are
cached under the cache dir (a first run builds them: ~45 s each here)."""

from __future__ import annotations

import pytest

from examples.systems import common
from frontends.components.kept import provider_identity
from frontends.components.llm import engine
from frontends.components.llm.policy import PROBE_TOKENS, rag_probe

pytestmark = pytest.mark.skipif(not engine.available(), reason="onnxruntime-genai not installed (.[engine])")
TOKENS = PROBE_TOKENS


@pytest.fixture(scope="module")
def gemma():
    """(eager torch Gemma, the same weights with the exact path through ort-fp32), on the CPU
    whatever this machine's exact path (`policy.exact_path`) is."""
    from frontends.components.llm.engine_model import through_engine
    from frontends.components.llm.gemma import Gemma3

    common.one_thread()
    lm = Gemma3.load(common.GEMMA_ADAPTER)
    return lm, through_engine(lm, engine.EXACT)


def test_knob_zero_through_ort_fp32_gives_eager_torch_answers(gemma):
    lm, exact = gemma
    assert type(exact).__name__ == "EngineGemma3" and exact.engine == engine.EXACT
    assert exact.turn("x") == lm.turn("x") and exact.eos == lm.eos  # Gemma's prompt turn and stop tokens
    assert "layers" not in exact.supports  # no trained early exits: none through the engine either
    for question, passages in rag_probe():
        tokens, _, prompt = exact.generate(question, passages, TOKENS)
        assert (tokens, prompt) == lm.generate(question, passages, TOKENS)[::2], question
    assert provider_identity(exact) != provider_identity(lm)  # kept outputs of one never read for the other


def test_an_int8_value_decodes_another_build_and_answers(gemma):
    _, exact = gemma
    assert "int8" in exact.engines and exact.engines["int4"] == "ort-int4"
    value = exact.with_precision("int8")
    assert value._engine_runs({}) and value.decoder is not exact.decoder
    assert engine.build_info(value.build)["precision"] == "int8"
    question, passages = rag_probe()[0]
    assert value.answer(question, passages, TOKENS).text.strip()
