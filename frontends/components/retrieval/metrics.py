"""Ranking quality measures: rank-biased overlap and recall@k.

RBO (Webber, Moffat, Zobel 2010) is the paper's QoS for rankings. `rbo` (also the
autotuner's QoS metric `rbo`) is the extrapolated RBO_ext (their eq. 32, for lists
of different lengths): 1 for equal lists and for a list against its own
extension (a top-3 is a prefix of the top-10: RBO 1, so the cost of a smaller
top-k shows in recall@k, not in RBO), 0 for disjoint lists. Lists are rankings:
no repeated items.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["rbo", "recall_at_k"]


def rbo(output: Sequence, reference: Sequence, p: float = 0.95) -> float:
    """Extrapolated rank-biased overlap (Webber et al. 2010, eq. 32) of two
    rankings, possibly of different lengths; 1 for identical rankings."""
    s_list, l_list = list(output), list(reference)
    if len(s_list) > len(l_list):
        s_list, l_list = l_list, s_list
    s, length = len(s_list), len(l_list)
    if length == 0:
        return 1.0
    if s == 0:
        return 0.0
    seen_s, seen_l, overlap = set(), set(), 0
    x = [0] * (length + 1)  # x[d]: overlap at depth d
    for d in range(1, length + 1):
        a = s_list[d - 1] if d <= s else None
        b = l_list[d - 1]
        if d <= s:
            overlap += (a in seen_l) + (b in seen_s) + (a == b)
            seen_s.add(a)
        else:
            overlap += b in seen_s
        seen_l.add(b)
        x[d] = overlap
    total = sum(x[d] / d * p**d for d in range(1, length + 1))
    total += sum(x[s] * (d - s) / (s * d) * p**d for d in range(s + 1, length + 1))
    value = (1 - p) / p * total + ((x[length] - x[s]) / length + x[s] / s) * p**length
    return min(1.0, max(0.0, value))


def recall_at_k(ranking: Sequence, gold: int | Iterable[int], k: int | None = None) -> float:
    """1.0 if a gold document is among the first k of `ranking` (all of it when k is None), else 0.0."""
    golds = {int(gold)} if isinstance(gold, int) or hasattr(gold, "__index__") else {int(g) for g in gold}
    top = ranking if k is None else ranking[:k]
    return float(any(int(x) in golds for x in top))
