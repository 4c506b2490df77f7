"""The models of `autotuner.predictive`: which values of a parameter are searched
(its levels), the features of a configuration (knob levels, ladder cells, pairs
of knobs), and a Bayesian linear model over them whose posterior draws give the
expected hypervolume gain of every candidate.

The prior is a random walk over each knob's levels (level 0 is exact: effect 0;
each next level adds an effect of prior scale `scale`), so a level never measured
is interpolated from its neighbours and still carries the uncertainty of the
steps to it; a ladder's cells (state ranges between neighbouring threshold values)
are tied to their neighbours the same way. Pairs of knobs get a small interaction
effect each (two knobs that cut the same work do not save it twice), zero unless
the measurements say otherwise, but uncertain until a configuration with both has
been measured.
"""

from __future__ import annotations

import re

import numpy as np
from optuna.distributions import CategoricalDistribution, IntDistribution

MAX_INT_LEVELS = 64  # an integer parameter with at most this many values is searched value by value
GRID_LEVELS = 16  # a wider one (a ladder's thresholds over a wide range) on a grid of this many values
LADDER_PARAM = re.compile(r"^(?P<knob>.+)\.(?P<kind>[td])(?P<i>\d+)$")  # autotuner.space's ladder names


def levels_of(dist) -> list | None:
    """The ordered values of a parameter searched as levels, or None (a float):
    every value of a categorical or a narrow integer range; of a wide integer range
    (thresholds) an evenly spaced grid, geometric for a log-scale range."""
    if isinstance(dist, CategoricalDistribution):
        return sorted(dist.choices)
    if not isinstance(dist, IntDistribution):
        return None
    n = (dist.high - dist.low) // dist.step + 1
    if n <= MAX_INT_LEVELS and not dist.log:
        return list(range(dist.low, dist.high + 1, dist.step))
    if dist.log:
        grid = np.geomspace(max(dist.low, 1), dist.high, GRID_LEVELS)
    else:
        grid = np.linspace(dist.low, dist.high, GRID_LEVELS)
    snapped = dist.low + np.round((grid - dist.low) / dist.step) * dist.step
    return sorted({int(min(max(v, dist.low), dist.high)) for v in snapped})


def level_index(levels: list, value, nearest: bool = False) -> int | None:
    """Index of `value` among `levels`, or None; with `nearest` (an integer range on a
    grid) the nearest level: a threshold between two grid values behaves mostly as
    the nearer."""
    if value in levels:
        return levels.index(value)
    if nearest and isinstance(value, (int, np.integer)):
        return int(np.argmin(np.abs(np.asarray(levels) - value)))
    return None


class Design:
    """Features of configurations given as level indices (one column per parameter
    of `names`): an intercept; per plain parameter one indicator per level > 0; per
    ladder one indicator per (cell, decision level > 0); per pair of plain parameters
    one indicator per pair of levels > 0 (`pairs`). `prior(scale, pair_scale)` is
    the prior precision of the coefficients."""

    def __init__(self, names: list[str], sizes: list[int], pairs: bool = True):
        self.plain: list[int] = []
        ladders: dict[str, dict[str, dict[int, int]]] = {}
        for col, name in enumerate(names):
            m = LADDER_PARAM.match(name)
            if m:
                ladders.setdefault(m["knob"], {"t": {}, "d": {}})[m["kind"]][int(m["i"])] = col
            else:
                self.plain.append(col)
        self.ladders = []  # (threshold columns, decision columns in order, number of threshold levels)
        for parts in ladders.values():
            ts, ds = [parts["t"][i] for i in sorted(parts["t"])], [parts["d"][i] for i in sorted(parts["d"])]
            t_sizes = {sizes[c] for c in ts}
            if ts and len(ds) == len(ts) + 1 and len(t_sizes) == 1 and len({sizes[c] for c in ds}) == 1:
                self.ladders.append((ts, ds, t_sizes.pop()))
            else:
                self.plain += ts + ds
        self.sizes = sizes
        self.blocks: list[tuple[int, int, int]] = []  # (offset, rows, levels - 1): a grid of coefficients
        n = 1
        for col in self.plain:
            self.blocks.append((n, 1, sizes[col] - 1))
            n += sizes[col] - 1
        for ts, ds, t_levels in self.ladders:
            cells, levels = t_levels + 1, sizes[ds[0]] - 1
            self.blocks.append((n, cells, levels))
            n += cells * levels
        self.pairs: list[tuple[int, int, int]] = []  # (column a, column b, offset)
        if pairs:
            for i, a in enumerate(self.plain):
                for b in self.plain[i + 1:]:
                    self.pairs.append((a, b, n))
                    n += (sizes[a] - 1) * (sizes[b] - 1)
        self.nmain = self.pairs[0][2] if self.pairs else n
        self.ncoef = n

    def alone(self) -> np.ndarray:
        """Level rows of each knob alone at its middle level (a ladder: every decision
        there, thresholds at their middle), the others exact (level 0)."""
        out = []
        for col in self.plain:
            if self.sizes[col] > 1:
                out.append(np.zeros(len(self.sizes), dtype=np.int64))
                out[-1][col] = self.sizes[col] // 2
        for ts, ds, t_levels in self.ladders:
            out.append(np.zeros(len(self.sizes), dtype=np.int64))
            out[-1][ts], out[-1][ds] = t_levels // 2, self.sizes[ds[0]] // 2
        return np.array(out, dtype=np.int64).reshape(-1, len(self.sizes))

    def rows(self, lev: np.ndarray) -> np.ndarray:
        x = np.zeros((len(lev), self.ncoef), dtype=np.float64)
        x[:, 0] = 1.0
        at = np.arange(len(lev))
        blocks = iter(self.blocks)
        for col in self.plain:
            off, _, _ = next(blocks)
            on = lev[:, col] > 0
            x[at[on], off + lev[on, col] - 1] = 1.0
        for ts, ds, t_levels in self.ladders:
            off, cells, levels = next(blocks)
            t_idx = lev[:, ts]
            for cell in range(cells):  # states in `cell` are at or above the thresholds of lower level index
                region = (t_idx < cell).sum(axis=1)
                decision = lev[:, ds][at, region]
                on = decision > 0
                x[at[on], off + cell * levels + decision[on] - 1] = 1.0
        for a, b, off in self.pairs:
            on = (lev[:, a] > 0) & (lev[:, b] > 0)
            x[at[on], off + (lev[on, a] - 1) * (self.sizes[b] - 1) + lev[on, b] - 1] = 1.0
        return x

    def prior(self, scale: float, pair_scale: float, drift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Prior precision and precision-weighted mean: a random walk over each knob's
        levels (from exact, effect 0), each step `drift` on average (levels run from
        least to most approximate) give or take `scale`, and over a ladder's
        neighbouring cells (alike, give or take `scale`); independent pair effects of
        scale `pair_scale`; a vague intercept."""
        rows, steps = [], []
        for off, cells, levels in self.blocks:
            for cell in range(cells):
                for j in range(levels):  # effect(level j+1) - effect(level j), effect(level 0) = 0
                    r = np.zeros(self.ncoef)
                    r[off + cell * levels + j] = 1.0
                    if j > 0:
                        r[off + cell * levels + j - 1] = -1.0
                    rows.append(r)
                    steps.append(drift)
                    if cell > 0:  # neighbouring cells alike
                        r = np.zeros(self.ncoef)
                        r[off + cell * levels + j], r[off + (cell - 1) * levels + j] = 1.0, -1.0
                        rows.append(r)
                        steps.append(0.0)
        walk = np.array(rows).reshape(-1, self.ncoef)
        prec = walk.T @ walk / scale ** 2
        prec[0, 0] += 1e-6
        idx = np.arange(self.nmain, self.ncoef)
        prec[idx, idx] += 1.0 / pair_scale ** 2
        return prec, walk.T @ np.array(steps) / scale ** 2


class Posterior:
    """Bayesian linear regression y = X b + noise with the prior `Design.prior`
    (precision, precision-weighted mean): `draws(k, rng)` gives k coefficient
    vectors from the posterior (columns)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, prior: tuple[np.ndarray, np.ndarray], noise: float):
        prec, shift = prior
        a = x.T @ x / noise ** 2 + prec
        self.chol = np.linalg.cholesky(a + 1e-9 * np.eye(len(a)))
        self.mean = np.linalg.solve(a, x.T @ y / noise ** 2 + shift)

    def draws(self, k: int, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal((len(self.mean), k))
        return self.mean[:, None] + np.linalg.solve(self.chol.T, z)  # covariance = (L L^T)^-1


def hv_gains(front: list[tuple[float, float]], loss: np.ndarray, speed: np.ndarray, budget: float) -> np.ndarray:
    """Hypervolume each (loss, speed) point would add to `front` (reference point
    (budget, speedup 1)), for arrays of points at once."""
    pts = sorted((max(lo, 0.0), -sp) for lo, sp in front if lo <= budget)  # losses below 0 count as 0
    lows, best, steps = [0.0], 1.0, [1.0]
    for lo, neg in pts:  # the staircase's steps: a point that raises no step would add an equal one
        if -neg > best:
            best = -neg
            lows.append(lo)
            steps.append(best)
    lows_a = np.array(lows)
    highs = np.append(lows_a[1:], budget)
    start = np.maximum(lows_a[None, :], np.maximum(loss, 0.0)[:, None])
    width = np.clip(np.minimum(highs, budget)[None, :] - start, 0.0, None)
    gain = (width * np.clip(speed[:, None] - np.array(steps)[None, :], 0.0, None)).sum(axis=1)
    return np.where(loss <= budget, gain, 0.0)
