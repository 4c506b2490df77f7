"""95 % intervals of the figures a measurement gives: percentile bootstraps over
paired units (timed blocks for a speedup, inputs for a QoS loss), seeded so a
figure re-computed from the same samples is the same."""

from __future__ import annotations

import numpy as np

BOOTSTRAP_SAMPLES = 2000


def ratio(exact: float, approx: float) -> float:
    return exact / approx if approx > 0 else (1.0 if exact <= 0 else float("inf"))


def bootstrap_ratio(exact: np.ndarray, approx: np.ndarray, level: float = 0.95,
                    seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap of sum(exact) / sum(approx), resampling paired units."""
    exact, approx = np.asarray(exact, dtype=float), np.asarray(approx, dtype=float)
    if len(exact) < 2:
        r = ratio(float(exact.sum()), float(approx.sum()))
        return r, r
    idx = np.random.default_rng(seed).integers(0, len(exact), size=(BOOTSTRAP_SAMPLES, len(exact)))
    e, a = exact[idx].sum(axis=1), approx[idx].sum(axis=1)
    rs = np.divide(e, a, out=np.full_like(e, np.inf), where=a > 0)
    lo, hi = np.quantile(rs, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def bootstrap_loss(exact: np.ndarray, approx: np.ndarray, relative: bool, level: float = 0.95,
                   seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap of the QoS loss over inputs (resampled paired: each input's
    exact and approximate score together): (mean(exact) - mean(approx)) / mean(exact)
    when `relative` (ground truth), else mean(1 - approx) (agreement with the exact
    outputs). A resample where the exact program scores 0 compares scores directly."""
    exact, approx = np.asarray(exact, dtype=float), np.asarray(approx, dtype=float)
    n = len(approx)
    if n == 0:
        return 0.0, 0.0
    idx = np.random.default_rng(seed).integers(0, n, size=(BOOTSTRAP_SAMPLES, n)) if n > 1 else np.zeros((1, 1), int)
    a = approx[idx].mean(axis=1)
    if relative:
        e = exact[idx].mean(axis=1)
        base = np.where(e > 0, e, 1.0)
        losses = (e - a) / base
    else:
        losses = 1.0 - a
    lo, hi = np.quantile(losses, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
