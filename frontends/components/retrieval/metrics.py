"""Ranking quality measures: rank-biased overlap and recall@k.

RBO (Webber, Moffat, Zobel 2010) is the paper's QoS for rankings. `rbo` (the
autotuner's, re-exported) is the extrapolated RBO_ext (their eq. 32, for lists
of different lengths): 1 for equal lists and for a list against its own
extension (a top-3 is a prefix of the top-10: RBO 1, so the cost of a smaller
top-k shows in recall@k, not in RBO), 0 for disjoint lists. Lists are rankings:
no repeated items.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from autotuner.metrics import rbo  # the tuner's QoS for rankings: one definition for both

__all__ = ["rbo", "recall_at_k"]


def recall_at_k(ranking: Sequence, gold: int | Iterable[int], k: int | None = None) -> float:
    """1.0 if a gold document is among the first k of `ranking` (all of it when k is None), else 0.0."""
    golds = {int(gold)} if isinstance(gold, int) or hasattr(gold, "__index__") else {int(g) for g in gold}
    top = ranking if k is None else ranking[:k]
    return float(any(int(x) in golds for x in top))
