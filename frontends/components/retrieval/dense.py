"""Dense retrieval with all-MiniLM-L6-v2 as a tunable program: the query is embedded
by the model (part of the cost), similarity and top-k run in the JIT-compiled kernel
of `kernels.dense_module` over the (cached) corpus embedding matrix.

Knobs (all exact at 0):
  dense_dot    loop_truncate: dot product over the first ceil(384/k) dimensions
  dense_dot#2  precision_reduce: the dot product in f32 (1) or f16 (2) instead of f64
  dense_docs   document loop (loop_perforate / loop_truncate / loop_perforate_modulo,
               chosen at construction): document subsetting
  dense        param top_k: return values[k-1] documents instead of `top_k`
Embeddings are unit vectors, so the full dot product is the cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from frontends.components.retrieval.encoder import DIM, MiniLMEncoder, corpus_embeddings
from frontends.components.retrieval.kernels import dense_module
from frontends.components.retrieval.ranking import Hits, check_top_k, guarded_search, run_topk_kernel
from passes.knobs import KnobSpec


class DenseSearch:
    """One built configuration: `search(question) -> Hits`; `prepare` (embedding the
    question) and `run` (the kernel on a query vector) can be timed apart."""

    def __init__(self, fn, encoder: MiniLMEncoder, embeddings: np.ndarray, top_k: int):
        self.fn, self.encoder, self.embeddings, self.top_k = fn, encoder, embeddings, top_k

    def prepare(self, question: str) -> np.ndarray:
        return self.encoder.embed([question])[0]

    def run(self, query: np.ndarray) -> Hits:
        return run_topk_kernel(self.fn, (np.ascontiguousarray(query, np.float32), self.embeddings), self.top_k)

    def __call__(self, question: str) -> Hits:
        return guarded_search(self, question, "retrieval.dense")


class DenseRetriever:
    """MiniLM retrieval over `corpus`; `embeddings` (N, 384) f32 may be given, else
    they come from the on-disk cache (computed once)."""

    supports = frozenset({"dims", "docs", "precision"})  # the settings of a retrieve op it applies
    precisions = frozenset({"float32", "float16"})  # what its similarity kernel computes in

    def __init__(self, corpus: Sequence[str], encoder: MiniLMEncoder | None = None,
                 embeddings: np.ndarray | None = None, top_k: int = 10, top_k_values: Sequence[int] = (1, 3, 5),
                 doc_transform: str = "loop_perforate", cache: Path | None = None, name: str = "dense"):
        self.corpus, self.name = list(corpus), name
        self.encoder = encoder or MiniLMEncoder()
        self.top_k = check_top_k(top_k)
        if embeddings is None:
            embeddings = corpus_embeddings(self.corpus, self.encoder, cache)
        embeddings = np.ascontiguousarray(embeddings, np.float32)
        if embeddings.shape != (len(self.corpus), DIM):
            raise ApproxError(f"embeddings have shape {embeddings.shape}, expected ({len(self.corpus)}, {DIM})",
                              where=f"retrieval.{name}")
        self.embeddings = embeddings
        self.kernel = MlirProgram(dense_module(top_k_values, doc_transform), "dense", f"<{name}>")
        self._kernels: dict[tuple, object] = {}

    def knobs(self) -> list[KnobSpec]:
        return self.kernel.knobs()

    def build(self, config: dict[str, dict] | None = None) -> DenseSearch:
        return DenseSearch(self.kernel.build(dict(config or {})), self.encoder, self.embeddings, self.top_k)

    def search(self, query: np.ndarray, top_k: int, dims: int | None = None, docs: int | None = None,
               precision: str | None = None) -> Hits:
        """`component.retrieve`'s entry: the top_k hits of a query vector, the kernel run
        with `dims` / `docs` as the knob values of `dense_dot` / `dense_docs` and
        `precision` (float32, float16) as `dense_dot#2` (None: exact, f64)."""
        key = (dims, docs, precision)
        fn = self._kernels.get(key)
        if fn is None:
            kernel_precision = {None: 0, "float32": 1, "float16": 2}
            if precision not in kernel_precision:
                raise ApproxError(f"the similarity kernel computes in float32 or float16, not {precision}",
                                  where=f"retrieval.{self.name}")
            config = {name: {"knob_val": k} for name, k in (("dense_dot", dims), ("dense_docs", docs),
                                                             ("dense_dot#2", kernel_precision[precision])) if k}
            fn = self._kernels[key] = self.kernel.build(config)
        return run_topk_kernel(fn, (np.ascontiguousarray(query, np.float32), self.embeddings), check_top_k(top_k))

    def reference(self, query: np.ndarray, dims: int = DIM) -> np.ndarray:
        """Exact similarity of a query vector to every document (numpy, f64), over
        the first `dims` dimensions."""
        q = np.asarray(query, np.float64)[:dims]
        return self.embeddings[:, :dims].astype(np.float64) @ q
