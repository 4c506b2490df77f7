"""The extractive reader's plumbing (windows, span limits, confidence, precision,
weights files). The head here is UNTRAINED: answers are checked for shape and
determinism, never for being right (examples/train_reader.py trains and evaluates the readers)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.reader import ExtractiveReader
from frontends.components.llm.span_model import load_span_model
from tests.test_llm_support import CONTEXTS, QUESTION, one_torch_thread, untrained_reader  # noqa: F401 (autouse fixture)
from tests.tiny_models import untrained_span_model


def test_untrained_reader_is_deterministic_and_says_what_it_is():
    r = untrained_reader(0)
    assert "UNTRAINED" in r.name
    a, b = r.answer(QUESTION, CONTEXTS), r.answer(QUESTION, CONTEXTS)
    assert (a.text, a.confidence, a.tokens_used) == (b.text, b.confidence, b.tokens_used)
    assert any(a.text in c for c in CONTEXTS) and a.text
    assert 0 < a.confidence <= 1


def test_span_length_limit_is_max_new_tokens():
    r = untrained_reader(0)
    for n in (1, 2, 3):
        a = r.answer(QUESTION, CONTEXTS, max_new_tokens=n)
        assert 1 <= a.new_tokens <= n
        assert len(r.tokenizer(a.text, add_special_tokens=False)["input_ids"]) <= n


def test_long_passages_are_read_in_overlapping_windows():
    r = untrained_reader(0)
    long_ctx = " ".join(CONTEXTS * 12)
    enc = r.encode(QUESTION, [long_ctx])
    assert enc["input_ids"].shape[0] >= 2  # several windows of one passage
    a = r.answer(QUESTION, [long_ctx])
    assert a.text in long_ctx and a.tokens_used > 256


def test_empty_contexts_give_an_empty_answer():
    a = untrained_reader(0).answer(QUESTION, ["", "  "])
    assert (a.text, a.confidence, a.tokens_used) == ("", 0.0, 0)


def test_bfloat16_variant():
    r = untrained_reader(0)
    bf = r.with_precision("bfloat16")
    assert bf is r.with_precision("bfloat16") and bf.with_precision("float32") is r
    assert next(bf.module.parameters()).dtype == torch.bfloat16
    a = bf.answer(QUESTION, CONTEXTS)
    assert a.model.endswith("[bfloat16]") and any(a.text in c for c in CONTEXTS)


def test_a_reader_has_no_int8_variant_and_runs_float32_under_its_llms_int8():
    """Torch's weight-only int8 is a matrix-vector kernel (~30x slower than float32 on a
    reader's windows): asked for int8 itself, a reader says why; as the cheaper stage of
    an LLM's cascade (one label) it runs its own float32 under the LLM's int8."""
    from frontends.components.settings import GenerateSettings

    r = untrained_reader(0)
    with pytest.raises(ApproxError, match="has no int8 variant .*matrix-vector kernel"):
        r.with_precision("int8")
    assert GenerateSettings(model="answer", precision="int8").for_provider(r).precision is None
    assert GenerateSettings(model="answer", precision="bfloat16").for_provider(r).precision == "bfloat16"


def test_weights_round_trip_through_npz(tmp_path):
    model = untrained_span_model(layers=2, seed=3)
    with torch.no_grad():  # give the adapters something to carry
        for name, p in model.named_parameters():
            if name.endswith("lora_b"):
                p.normal_(std=0.01)
    model.save(tmp_path / "r.npz")
    loaded = load_span_model(tmp_path / "r.npz")
    enc = untrained_reader(0).encode(QUESTION, CONTEXTS)
    args = [enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")]
    with torch.no_grad():
        s0, _ = model(*args)
        s1, _ = loaded(*args)
    assert np.allclose(s0.numpy(), s1.numpy(), atol=2e-2)  # weights stored as float16
    r = ExtractiveReader.from_path(tmp_path / "r.npz")
    assert r.name == "r" and r.answer(QUESTION, CONTEXTS).text


def test_the_issue6_trainers_files_load_here(tmp_path):
    reader_mod = pytest.importorskip("examples.reader.model")
    theirs = reader_mod.Reader(layers=1, rank=2, alpha=4.0)
    theirs.save(tmp_path / "theirs.npz")
    ours = load_span_model(tmp_path / "theirs.npz")
    assert ours.layers == 1 and ours.rank == 2
    mine = dict(ours.named_parameters())
    for k, v in theirs.named_parameters():
        if v.requires_grad:
            assert torch.allclose(mine[k], v.detach().half().float())


def test_bad_weight_files_are_clear_errors(tmp_path):
    with pytest.raises(ApproxError, match="cannot read reader weights"):
        load_span_model(tmp_path / "missing.npz")
    np.savez(tmp_path / "nometa.npz", x=np.zeros(2))
    with pytest.raises(ApproxError, match="no __meta__"):
        load_span_model(tmp_path / "nometa.npz")
    np.savez(tmp_path / "partial.npz", __meta__=np.array([1.0, 2.0, 4.0]), **{"head.weight": np.zeros((2, 384))})
    with pytest.raises(ApproxError, match="lacks"):
        load_span_model(tmp_path / "partial.npz")


def test_trained_readers_in_a_cascade():
    """With the trained readers of examples/models (skipped where they are missing): the fast one
    answers alone when confident enough, else the pro one answers."""
    import math
    from pathlib import Path

    from frontends.components.llm.escalation import ModelCascade

    models = Path(__file__).resolve().parents[1] / "examples" / "models"
    if not (models / "reader_l6.npz").is_file() or not (models / "reader_l3.npz").is_file():
        pytest.skip("examples/models/reader_l{6,3}.npz not trained yet")
    fast = ExtractiveReader.from_path(models / "reader_l3.npz")
    pro = ExtractiveReader.from_path(models / "reader_l6.npz")
    exact = pro.answer(QUESTION, CONTEXTS)
    assert exact.text == "Denver Broncos" and exact.stages == (("reader_l6", exact.confidence),)
    c = fast.answer(QUESTION, CONTEXTS).confidence
    kept = ModelCascade([fast], pro, [c], 1).answer(QUESTION, CONTEXTS)
    assert [s for s, _ in kept.stages] == ["reader_l3"]
    up = ModelCascade([fast], pro, [math.nextafter(c, 2.0)], 1).answer(QUESTION, CONTEXTS)
    assert up.stages == (("reader_l3", c), ("reader_l6", exact.confidence)) and up.text == exact.text
