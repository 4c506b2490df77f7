"""A model-based sampler for knob spaces of categorical (ordinal) knobs: fit
additive models of QoS loss and of run time (each knob adds its own effect,
as ApproxTuner's predictive tuning assumes), predict every configuration not yet
measured, and propose the one whose predicted point adds the most hypervolume to
the measured front within the budget.

Why: the knobs of one program mostly act on different parts of it, so their
effects on loss and time nearly add up; a handful of measurements then predicts
the rest, where generic samplers (NSGA-II, TPE) need many more evaluations. Each
knob's effect per level is fitted by least squares with a penalty on the
difference of neighbouring levels (levels ordered by value), so a level never
measured is interpolated from its neighbours. Time adds up; loss is predicted
both as a sum and in quadrature (independent numeric errors), and the proposal
maximises the hypervolume gain expected over draws between the two and a
relative model error (wider for levels never measured). Spaces with integer
parameters (thresholds of dynamic mode) or too many configurations fall back to
NSGA-II. `bench/tuning_bench.py` measures it against NSGA-II, TPE and random search.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.samplers import BaseSampler
from optuna.trial import TrialState

MAX_CANDIDATES = 200_000
SMOOTH = 0.05  # weight of the neighbouring-level penalty
DRAWS = 32  # samples of the models' error per proposal
LOSS_SPREAD, TIME_SPREAD = 0.2, 0.1  # relative error assumed for predicted loss and time
UNSEEN_SPREAD = 0.1  # added relative loss error per knob level not measured yet
UNSEEN_TIME_SPREAD = 0.1  # added relative time error per knob level not measured yet


def _fit(levels: np.ndarray, sizes: list[int], y: np.ndarray) -> np.ndarray:
    """Additive effects: intercept + one coefficient per (knob, level > 0); returns
    the coefficient vector over [intercept, knob0 levels 1.., knob1 levels 1.., ...]."""
    offsets = np.cumsum([1] + [s - 1 for s in sizes[:-1]])
    ncoef = 1 + sum(s - 1 for s in sizes)
    x = np.zeros((len(y), ncoef))
    x[:, 0] = 1.0
    for k, (off, s) in enumerate(zip(offsets, sizes)):
        for row, lev in enumerate(levels[:, k]):
            if lev > 0:
                x[row, off + lev - 1] = 1.0
    pen = []
    for off, s in zip(offsets, sizes):
        for j in range(s - 1):  # effect(level j+1) - effect(level j), effect(level 0) = 0
            r = np.zeros(ncoef)
            r[off + j] = 1.0
            if j > 0:
                r[off + j - 1] = -1.0
            pen.append(r)
    a = np.vstack([x, SMOOTH * np.array(pen)]) if pen else x
    rhs = np.concatenate([y, np.zeros(len(pen))])
    coef, *_ = np.linalg.lstsq(a, rhs, rcond=None)
    return coef


def _predict(coef: np.ndarray, levels: np.ndarray, sizes: list[int]) -> np.ndarray:
    out = np.full(len(levels), coef[0])
    off = 1
    for k, s in enumerate(sizes):
        eff = np.concatenate([[0.0], coef[off:off + s - 1]])
        out += eff[levels[:, k]]
        off += s - 1
    return out


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
        cats = {k: d for k, d in space.items() if isinstance(d, CategoricalDistribution)}
        size = math.prod(len(d.choices) for d in cats.values()) if cats else 0
        self._use_fallback = not cats or len(cats) != len(space) or size > MAX_CANDIDATES
        if self._use_fallback:
            return self._fallback.infer_relative_search_space(study, trial)
        return cats

    def sample_relative(self, study, trial, search_space):
        if self._use_fallback or not search_space:
            return self._fallback.sample_relative(study, trial, search_space)
        names = sorted(search_space)
        choices = [sorted(search_space[n].choices) for n in names]
        sizes = [len(c) for c in choices]
        index = [{v: i for i, v in enumerate(c)} for c in choices]
        done = [t for t in study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
                if all(n in t.params for n in names) and "duplicate_of" not in t.user_attrs]
        if len(done) < 2:
            return {}
        busy = {tuple(index[k][t.params[n]] for k, n in enumerate(names))  # running elsewhere, or failed
                for t in study._get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.FAIL),
                                           use_cache=True)
                if all(n in t.params for n in names) and t.number != trial.number}
        lev = np.array([[index[k][t.params[n]] for k, n in enumerate(names)] for t in done])
        loss = np.array([t.values[0] for t in done])
        time = np.array([1.0 / max(t.values[1], 1e-9) for t in done])
        full = [t for t in done if not t.user_attrs.get("pruned")]
        front = [(t.values[0], t.values[1]) for t in full]
        cand = np.array(list(itertools.product(*[range(s) for s in sizes])))
        seen = {tuple(r) for r in lev} | busy
        mask = np.array([tuple(r) not in seen for r in cand])
        cand = cand[mask]
        if len(cand) == 0:
            return {}
        # losses of knobs acting on different parts combine between adding up (a share of
        # wrong answers) and adding in quadrature (independent numeric errors): predict both
        p_sum = _predict(_fit(lev, sizes, loss), cand, sizes)
        p_rss = np.sqrt(np.clip(_predict(_fit(lev, sizes, np.maximum(loss, 0.0) ** 2), cand, sizes), 0.0, None))
        p_lo, p_hi = np.minimum(p_sum, p_rss), np.maximum(p_sum, p_rss)
        p_time = np.maximum(_predict(_fit(lev, sizes, time), cand, sizes), 1e-6)
        p_loss, p_speed = (p_lo + p_hi) / 2, 1.0 / p_time
        # the expected hypervolume gain over the models' uncertainty, larger for knob
        # levels never measured (interpolated from their neighbours)
        measured = [set(lev[:, k]) for k in range(len(sizes))]
        unseen = np.array([sum(int(c[k]) not in measured[k] for k in range(len(sizes))) for c in cand])
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
