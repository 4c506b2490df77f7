"""What a retriever returns, the numpy top-k it is checked against, and the call
into a compiled top-k kernel (buffers allocated here, sliced to what it found)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from approx_dialect.diagnostics import ApproxError


@dataclass(frozen=True)
class Hits:
    """Retrieved documents, best first: indices into the corpus and their scores."""

    ids: np.ndarray  # int64
    scores: np.ndarray  # f64

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self):  # a Hits is the ranking itself for metrics (rbo, recall_at_k)
        return iter(self.ids.tolist())

    def __getitem__(self, i):
        return self.ids[i]


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores, best first, earlier index first on ties
    (the order the kernels' top-k insertion keeps)."""
    return np.argsort(-np.asarray(scores), kind="stable")[:k]


def check_top_k(k: int) -> int:
    if int(k) < 1:
        raise ApproxError(f"top_k must be >= 1, got {k}", where="retrieval")
    return int(k)


def run_topk_kernel(fn: Callable, args: tuple, k: int) -> Hits:
    """Call an entry `fn(*args, k, ids, vals) -> count` with fresh k-long buffers."""
    ids = np.empty(k, np.int64)
    vals = np.empty(k, np.float64)
    n = fn(*args, k, ids, vals)
    return Hits(ids[:n], vals[:n])


def guarded_search(search, question, where: str) -> Hits:
    """`search.run(search.prepare(question))`; whatever a retriever raises (a
    broken index, an encoder crash) is one ApproxError naming it, which a
    SafetyContract recovers from and the tuner records as a failed trial."""
    try:
        return search.run(search.prepare(question))
    except ApproxError:
        raise
    except Exception as err:
        raise ApproxError(f"retrieval failed: {type(err).__name__}: {err}", where=where) from None
