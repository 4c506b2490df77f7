"""A model-based sampler for knob spaces of ordinal levels (categorical knobs, and
integer parameters of a few dozen values such as a ladder's thresholds): fit
additive models of QoS loss and of run time (each knob adds its own effect, as
ApproxTuner's predictive tuning assumes), predict every configuration not yet
measured, and propose the one whose predicted point adds the most hypervolume to
the measured front within the budget.

Why: the knobs of one program mostly act on different parts of it, so their
effects on loss and time nearly add up; a handful of measurements then predicts
the rest, where generic samplers (NSGA-II, TPE, a GP) need many more evaluations
(`bench/tuning_bench.py` measures them on three landscapes). Each knob's effect
per level is fitted by least squares with a penalty on the difference of
neighbouring levels (levels ordered by value), so a level never measured is
interpolated from its neighbours.

A decision ladder's parameters interact (a threshold matters only where the
decisions on its two sides differ), but its effect still adds up over the inputs:
every input whose state lies between two neighbouring threshold values takes the
same decision. So a ladder is modelled by cells (the state ranges between
neighbouring threshold values), each with its own effect per decision level,
smoothed across neighbouring cells and levels; configurations that behave alike
(equal decisions, any thresholds) have one prediction and are measured once.

Time adds up; loss is predicted both as a sum and in quadrature (independent
numeric errors), and the proposal maximises the hypervolume gain expected over
draws between the two and a relative model error (wider where the configuration
uses effects never measured). Other spaces (wide thresholds, decision trees, too
many configurations) fall back to NSGA-II.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import TrialState

MAX_CANDIDATES = 200_000
MAX_INT_LEVELS = 64  # an integer parameter with at most this many values is searched as levels
SMOOTH = 0.1  # weight of the neighbouring-level (and neighbouring-cell) penalty
DRAWS = 32  # samples of the models' error per proposal
LOSS_SPREAD, TIME_SPREAD = 0.2, 0.1  # relative error assumed for predicted loss and time
UNSEEN_SPREAD = 0.2  # added relative loss error per effect not measured yet
UNSEEN_TIME_SPREAD = 0.2  # added relative time error per effect not measured yet
LADDER_PARAM = re.compile(r"^(?P<knob>.+)\.(?P<kind>[td])(?P<i>\d+)$")  # autotuner.space's ladder names


def levels_of(dist) -> list | None:
    """The ordered values of a parameter searched as levels, or None (not enumerable)."""
    if isinstance(dist, CategoricalDistribution):
        return sorted(dist.choices)
    if isinstance(dist, IntDistribution) and not dist.log and (dist.high - dist.low) // dist.step < MAX_INT_LEVELS:
        return list(range(dist.low, dist.high + 1, dist.step))
    return None


class Design:
    """Features of the additive model for configurations given as level indices
    (one column per parameter of `names`): an intercept, one indicator per (plain
    parameter, level > 0), and per ladder one indicator per (cell, decision level > 0);
    `penalty` rows tie neighbouring levels (and cells) together."""

    def __init__(self, names: list[str], sizes: list[int]):
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
        self.ncoef = n

    def rows(self, lev: np.ndarray) -> np.ndarray:
        x = np.zeros((len(lev), self.ncoef), dtype=np.float32)
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
        return x

    def penalty(self) -> np.ndarray:
        pen = []
        for off, cells, levels in self.blocks:
            for cell in range(cells):
                for j in range(levels):  # effect(level j+1) - effect(level j), effect(level 0) = 0
                    r = np.zeros(self.ncoef)
                    r[off + cell * levels + j] = 1.0
                    if j > 0:
                        r[off + cell * levels + j - 1] = -1.0
                    pen.append(r)
                    if cell > 0:  # neighbouring cells alike
                        r = np.zeros(self.ncoef)
                        r[off + cell * levels + j], r[off + (cell - 1) * levels + j] = 1.0, -1.0
                        pen.append(r)
        return np.array(pen).reshape(-1, self.ncoef)


def _fit(x: np.ndarray, pen: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with the smoothing penalty; the coefficient vector."""
    a = np.vstack([x, SMOOTH * pen])
    rhs = np.concatenate([y, np.zeros(len(pen))])
    coef, *_ = np.linalg.lstsq(a, rhs, rcond=None)
    return coef


def hv_gains(front: list[tuple[float, float]], loss: np.ndarray, speed: np.ndarray, budget: float) -> np.ndarray:
    """Hypervolume each (loss, speed) point would add to `front` (reference point
    (budget, speedup 1)), for arrays of points at once."""
    pts = sorted((max(lo, 0.0), sp) for lo, sp in front if lo <= budget)  # losses below 0 count as 0
    lows, best, steps = [0.0], 1.0, [1.0]
    for lo, sp in pts:
        best = max(best, sp)
        lows.append(lo)
        steps.append(best)
    lows_a = np.array(lows)
    highs = np.append(lows_a[1:], budget)
    start = np.maximum(lows_a[None, :], np.maximum(loss, 0.0)[:, None])
    width = np.clip(np.minimum(highs, budget)[None, :] - start, 0.0, None)
    gain = (width * np.clip(speed[:, None] - np.array(steps)[None, :], 0.0, None)).sum(axis=1)
    return np.where(loss <= budget, gain, 0.0)


class PredictiveSampler(BaseSampler):
    def __init__(self, budget: float, seed: int | None = None, n_trials: int = 40):
        self.budget = budget
        self._rng = np.random.default_rng(seed)
        self._fallback = optuna.samplers.NSGAIISampler(population_size=max(4, min(50, n_trials // 5)), seed=seed)
        self._use_fallback = False

    def infer_relative_search_space(self, study, trial):
        space = optuna.search_space.IntersectionSearchSpace().calculate(study)
        levels = {k: levels_of(d) for k, d in space.items()}
        size = math.prod(len(v) for v in levels.values() if v) if space else 0
        self._use_fallback = not space or any(v is None for v in levels.values()) or size > MAX_CANDIDATES
        if self._use_fallback:
            return self._fallback.infer_relative_search_space(study, trial)
        return space

    def sample_relative(self, study, trial, search_space):
        if self._use_fallback or not search_space:
            return self._fallback.sample_relative(study, trial, search_space)
        names = sorted(search_space)
        choices = [levels_of(search_space[n]) for n in names]
        sizes = [len(c) for c in choices]
        index = [{v: i for i, v in enumerate(c)} for c in choices]

        def levels(trials) -> tuple[np.ndarray, list]:
            """Level indices of the trials that have every parameter (within its levels), and those trials."""
            trials = [t for t in trials if all(n in t.params and t.params[n] in index[k] for k, n in enumerate(names))]
            return np.array([[index[k][t.params[n]] for k, n in enumerate(names)] for t in trials],
                            dtype=np.int64).reshape(-1, len(names)), trials

        lev, done = levels(t for t in study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
                           if "duplicate_of" not in t.user_attrs)
        if len(done) < 2:
            return {}
        busy, _ = levels(t for t in study._get_trials(  # running elsewhere, failed, or a repeat
            deepcopy=False, states=(TrialState.RUNNING, TrialState.FAIL, TrialState.COMPLETE), use_cache=True)
            if t.number != trial.number)
        design = Design(names, sizes)
        cand = np.array(list(itertools.product(*[range(s) for s in sizes])), dtype=np.int64)
        x_cand, x_done, pen = design.rows(cand), design.rows(lev), design.penalty()
        # configurations that behave as a measured or running one (same features) are not candidates
        taken = {r.tobytes() for r in np.vstack([x_done, design.rows(busy)])}
        keep = np.array([r.tobytes() not in taken for r in x_cand])
        _, first = np.unique(x_cand, axis=0, return_index=True)  # of candidates that behave alike, one
        keep &= np.isin(np.arange(len(cand)), first)
        cand, x_cand = cand[keep], x_cand[keep]
        if len(cand) == 0:
            return {}
        loss = np.array([t.values[0] for t in done])
        time = np.array([1.0 / max(t.values[1], 1e-9) for t in done])
        front = [(t.values[0], t.values[1]) for t in done if not t.user_attrs.get("pruned")]
        # losses of knobs acting on different parts combine between adding up (a share of
        # wrong answers) and adding in quadrature (independent numeric errors): predict both
        p_sum = x_cand @ _fit(x_done, pen, loss)
        p_rss = np.sqrt(np.clip(x_cand @ _fit(x_done, pen, np.maximum(loss, 0.0) ** 2), 0.0, None))
        p_lo, p_hi = np.minimum(p_sum, p_rss), np.maximum(p_sum, p_rss)
        p_time = np.maximum(x_cand @ _fit(x_done, pen, time), 1e-6)
        p_loss, p_speed = (p_lo + p_hi) / 2, 1.0 / p_time
        # the expected hypervolume gain over the models' uncertainty, larger for
        # configurations using effects never measured (interpolated from their neighbours)
        measured = x_done.max(axis=0) > 0
        unseen = (x_cand[:, 1:] > 0).astype(np.int64) @ (~measured[1:]).astype(np.int64)
        spread_loss, spread_time = LOSS_SPREAD + UNSEEN_SPREAD * unseen, TIME_SPREAD + UNSEEN_TIME_SPREAD * unseen
        gains = np.zeros(len(cand))
        for u, z_loss, z_time in zip(self._rng.random(DRAWS), *self._rng.standard_normal((2, DRAWS))):
            draw = (p_lo + u * (p_hi - p_lo)) * (1.0 + spread_loss * z_loss)
            gains += hv_gains(front, draw, 1.0 / (p_time * np.maximum(1.0 + spread_time * z_time, 0.1)),
                              self.budget)
        gains /= DRAWS
        if gains.max() <= 0:
            ok = p_loss <= self.budget
            score = np.where(ok, p_speed, -p_loss)  # fastest predicted-feasible, else least lossy
            best = int(np.argmax(score + 1e-9 * self._rng.random(len(score))))
        else:
            best = int(np.argmax(gains + 1e-12 * self._rng.random(len(gains))))
        return {n: choices[k][int(cand[best, k])] for k, n in enumerate(names)}

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial):
        self._fallback.before_trial(study, trial)

    def after_trial(self, study, trial, state, values):
        self._fallback.after_trial(study, trial, state, values)
