"""BM25 retrieval as a tunable program: Python preprocessing and index, scoring
and top-k in the JIT-compiled kernel of `kernels.bm25_module`.

Knobs (names as the autotuner and approx-opt see them, all exact at 0):
  bm25_terms  loop_truncate: score only the ceil(n/k) rarest query terms (term skipping)
  bm25_docs   document loop (loop_perforate: every k-th document; loop_truncate: the
              first ceil(N/k); chosen at construction): corpus subsetting
  bm25        param top_k: return values[k-1] documents instead of `top_k`
  preprocess  func_substitute of the Python preprocessing: 1 skips stemming, 2 also
              keeps stopwords (documents are indexed at the same level)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from frontends.components.retrieval.bm25_index import Bm25Index, bm25_scores
from frontends.components.retrieval.kernels import bm25_module
from frontends.components.retrieval.ranking import Hits, check_top_k, guarded_search, run_topk_kernel
from frontends.components.retrieval.text import LEVELS, tokenize
from passes.knobs import KnobSpec

PREPROCESS = "preprocess"


class Bm25Search:
    """One built configuration: `search(question) -> Hits`. `prepare` (preprocessing
    and gathering the query's term rows) and `run` (the kernel) can be timed apart."""

    def __init__(self, fn, index: Bm25Index, level: int, top_k: int):
        self.fn, self.index, self.level, self.top_k = fn, index, level, top_k

    def prepare(self, question: str) -> tuple:
        terms = self.index.query_terms(tokenize(question, self.level))
        return (self.index.tf_rows(terms), self.index.idf[terms], self.index.doc_len, self.index.avgdl, len(terms))

    def run(self, prepared: tuple) -> Hits:
        return run_topk_kernel(self.fn, prepared, self.top_k)

    def __call__(self, question: str) -> Hits:
        return guarded_search(self, question, "retrieval.bm25")


class Bm25Retriever:
    """BM25 (k1, b) over `corpus`; `build(config)` gives a `Bm25Search`."""

    supports = frozenset({"preprocess", "terms", "docs"})  # the settings of a retrieve op it applies

    def __init__(self, corpus: Sequence[str], k1: float = 1.5, b: float = 0.75, top_k: int = 10,
                 top_k_values: Sequence[int] = (1, 3, 5), doc_transform: str = "loop_perforate",
                 name: str = "bm25"):
        self.corpus, self.k1, self.b, self.name = list(corpus), float(k1), float(b), name
        self.top_k = check_top_k(top_k)
        self.kernel = MlirProgram(bm25_module(k1, b, top_k_values, doc_transform), "bm25", f"<{name}>")
        self._indexes: dict[int, Bm25Index] = {}
        self._searches: dict[tuple, Bm25Search] = {}

    def index(self, level: int = 0) -> Bm25Index:
        """The index of the corpus preprocessed at `level` (built on first use)."""
        if level not in self._indexes:
            self._indexes[level] = Bm25Index.build([tokenize(doc, level) for doc in self.corpus])
        return self._indexes[level]

    def knobs(self) -> list[KnobSpec]:
        return [*self.kernel.knobs(),
                KnobSpec(PREPROCESS, PREPROCESS, "func_substitute", "static", LEVELS, current={"knob_val": 0})]

    def build(self, config: dict[str, dict] | None = None) -> Bm25Search:
        config = dict(config or {})
        setting = config.pop(PREPROCESS, {"knob_val": 0})
        level = setting.get("knob_val") if isinstance(setting, dict) else None
        if level not in LEVELS:
            raise ApproxError(f"knob '{PREPROCESS}': setting {setting!r} must be {{\"knob_val\": k}} with k in "
                              f"{list(LEVELS)}", where="<config>")
        return Bm25Search(self.kernel.build(config), self.index(level), level, self.top_k)

    def search(self, question: str, top_k: int, preprocess: int = 0, terms: int | None = None,
               docs: int | None = None) -> Hits:
        """`component.retrieve`'s entry: the top_k hits, the question preprocessed at
        level `preprocess`, the scoring kernel run with `terms` / `docs` as the knob
        values of `bm25_terms` / `bm25_docs` (None: exact)."""
        key = (preprocess, terms, docs, top_k)
        search = self._searches.get(key)
        if search is None:
            config = {PREPROCESS: {"knob_val": preprocess}}
            config.update({name: {"knob_val": k} for name, k in (("bm25_terms", terms), ("bm25_docs", docs)) if k})
            search = self._searches[key] = self.build(config)
            search.top_k = check_top_k(top_k)
        return search(question)

    def reference(self, question: str, level: int = 0) -> np.ndarray:
        """Exact BM25 scores of every document, by the plain numpy implementation."""
        index = self.index(level)
        return bm25_scores(index, index.query_terms(tokenize(question, level)), self.k1, self.b)
