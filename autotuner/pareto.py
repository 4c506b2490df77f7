"""Pareto maths on (QoS loss, speedup) points: dominance, the front, and its
hypervolume within the QoS-loss budget (the measure of a search's progress)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """(loss, speedup) a dominates b: no worse in both, better in one."""
    return a[0] <= b[0] and a[1] >= b[1] and (a[0] < b[0] or a[1] > b[1])


def pareto_indices(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices of the nondominated (loss, speedup) points; of equal points the first."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1], i))
    front, best = [], -math.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return sorted(front)


def hypervolume(points: Sequence[Sequence[float]], budget: float, ref_speedup: float = 1.0) -> float:
    """Area dominated by the points within the budget, above speedup `ref_speedup`
    (reference point (budget, ref_speedup)); 2-D, exact."""
    pts = sorted((max(0.0, p[0]), p[1]) for p in points if p[0] <= budget and p[1] > ref_speedup)
    area, best = 0.0, ref_speedup
    for i, (loss, speed) in enumerate(pts):
        best = max(best, speed)
        nxt = pts[i + 1][0] if i + 1 < len(pts) else budget
        area += (nxt - loss) * (best - ref_speedup)
    return area


def hypervolume_curve(points: Sequence[Sequence[float] | None], budget: float,
                      start: Sequence[Sequence[float]] = ()) -> list[float]:
    """Hypervolume of the front after 0, 1, 2, ... evaluations: `start` holds the
    points known before the first (reused measurements), `points` one entry per
    evaluation in order (None: an evaluation that gave no point, e.g. a failure)."""
    front = [tuple(p) for p in start if p[0] <= budget and p[1] > 1.0]
    curve = [hypervolume(front, budget)]
    for p in points:
        if p is not None and p[0] <= budget and p[1] > 1.0:
            front = [x for i, x in enumerate(front + [tuple(p)]) if i in set(pareto_indices(front + [tuple(p)]))]
            curve.append(hypervolume(front, budget))
        else:
            curve.append(curve[-1])
    return curve
