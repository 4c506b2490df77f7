"""A model-based sampler for knob spaces (categorical knobs, integer parameters such
as a ladder's thresholds): Bayesian linear models of QoS loss and of run time over
the knobs' levels (each knob adds its own effect, as ApproxTuner's predictive
tuning assumes, plus small effects of pairs of knobs), and the next configuration
measured is the one whose predicted point adds the most hypervolume to the
measured front within the QoS-loss budget, in expectation over the models'
posterior (`autotuner/predictive_model.py`).

Why: the knobs of one program mostly act on different parts of it, so their
effects on loss and time nearly add up; a handful of measurements then predicts
the rest, where generic samplers (NSGA-II, TPE, a GP) need many more evaluations
(`bench/tuning_bench.py` measures them on three landscapes). The posterior is
wide where nothing was measured (a knob level, a pair of knobs, a ladder cell), so
the expected gain also values learning there, and the QoS-loss constraint is in
the gain itself: a point predicted over the budget adds nothing.

Time adds up; loss is predicted both as a sum and in quadrature (independent
numeric errors), each draw somewhere between the two. A decision ladder is
modelled by cells (the state ranges between neighbouring threshold values), each
with its own effect per decision: thresholds matter only where the decisions on
their two sides differ. Wide threshold ranges are searched on a grid
(`predictive_model.levels_of`); a space too large to enumerate is searched over
a pool of random configurations and the neighbours of the front and of the best
candidates. Spaces with float parameters fall back to NSGA-II.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import optuna
from optuna.distributions import IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import TrialState

from autotuner.pareto import pareto_indices
from autotuner.predictive_model import Design, Posterior, hv_gains, level_index, levels_of

MAX_ENUMERATED = 20_000  # spaces up to this size: every configuration is a candidate
POOL = 4_000  # random configurations of a larger space, besides neighbours
REFINE = 16  # best candidates of a pool whose neighbours are scored too
DRAWS = 64  # posterior draws per proposal
TIME_STEP, LOSS_STEP = 0.05, 0.2  # prior scale of one level's effect: of exact time, of the QoS-loss budget
TIME_DRIFT, LOSS_DRIFT = -0.05, 0.3  # prior mean of one level's effect (a more approximate level: faster, lossier)
DESIGN_EVERY = 3  # while some knob was never measured alone, every third proposal is one knob alone
PAIR_SHARE = 0.25  # prior scale of a pair's effect, relative to one level's
TIME_NOISE, LOSS_NOISE = 0.03, 0.1  # measurement noise: of exact time, of the budget


class PredictiveSampler(BaseSampler):
    def __init__(self, budget: float, seed: int | None = None, n_trials: int = 40):
        self.budget = budget
        self._rng = np.random.default_rng(seed)
        self._fallback = optuna.samplers.NSGAIISampler(population_size=max(4, min(50, n_trials // 5)), seed=seed)
        self._use_fallback = False

    def infer_relative_search_space(self, study, trial):
        space = optuna.search_space.IntersectionSearchSpace().calculate(study)
        self._use_fallback = not space or any(levels_of(d) is None for d in space.values())
        if self._use_fallback:
            return self._fallback.infer_relative_search_space(study, trial)
        return space

    def sample_relative(self, study, trial, search_space):
        if self._use_fallback or not search_space:
            return self._fallback.sample_relative(study, trial, search_space)
        names = sorted(search_space)
        choices = [levels_of(search_space[n]) for n in names]
        sizes = [len(c) for c in choices]
        on_grid = [isinstance(search_space[n], IntDistribution) for n in names]

        def levels(trials) -> tuple[np.ndarray, list]:
            """Level indices of the trials that have every parameter, and those trials."""
            rows, kept = [], []
            for t in trials:
                row = [level_index(choices[k], t.params.get(n), on_grid[k]) if n in t.params else None
                       for k, n in enumerate(names)]
                if None not in row:
                    rows.append(row)
                    kept.append(t)
            return np.array(rows, dtype=np.int64).reshape(-1, len(names)), kept

        lev, done = levels(t for t in study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
                           if "duplicate_of" not in t.user_attrs)
        if not done:
            return {}
        busy, _ = levels(t for t in study._get_trials(  # running elsewhere, failed, or a repeat
            deepcopy=False, states=(TrialState.RUNNING, TrialState.FAIL, TrialState.COMPLETE), use_cache=True)
            if t.number != trial.number)
        design = Design(names, sizes)
        x_done = design.rows(lev)
        loss = np.array([t.values[0] for t in done]) / self.budget
        time = np.array([1.0 / max(t.values[1], 1e-9) for t in done])
        front = [(t.values[0], t.values[1]) for t in done if not t.user_attrs.get("pruned")]
        p_loss = design.prior(LOSS_STEP, PAIR_SHARE * LOSS_STEP, LOSS_DRIFT)
        p_rss = design.prior(LOSS_STEP, PAIR_SHARE * LOSS_STEP, LOSS_DRIFT ** 2)
        models = [Posterior(x_done, loss, p_loss, LOSS_NOISE).draws(DRAWS, self._rng),
                  Posterior(x_done, np.maximum(loss, 0.0) ** 2, p_rss, LOSS_NOISE).draws(DRAWS, self._rng),
                  Posterior(x_done, time, design.prior(TIME_STEP, PAIR_SHARE * TIME_STEP, TIME_DRIFT), TIME_NOISE)
                  .draws(DRAWS, self._rng)]
        mix = self._rng.random(DRAWS)
        taken = {r.tobytes() for r in np.vstack([x_done, design.rows(busy)])}

        def score(cand: np.ndarray):
            """The candidates that behave unlike any measured or running configuration
            (one of those alike), with their expected gain and predicted loss and speed."""
            x = design.rows(cand)
            _, first = np.unique(x, axis=0, return_index=True)
            first = np.sort(first)
            keep = first[[x[i].tobytes() not in taken for i in first]]
            x, cand = x[keep], cand[keep]
            l_sum, l_rss = x @ models[0], np.sqrt(np.clip(x @ models[1], 0.0, None))
            l_draw = self.budget * (mix * l_sum + (1 - mix) * l_rss)
            s_draw = 1.0 / np.maximum(x @ models[2], 1e-3)
            gains = np.zeros(len(cand))
            for k in range(DRAWS):
                gains += hv_gains(front, l_draw[:, k], s_draw[:, k], self.budget)
            return cand, gains / DRAWS, l_draw, s_draw

        total = math.prod(sizes)
        alone = design.alone()
        alone = alone[[r.tobytes() not in taken for r in design.rows(alone)]]
        if DESIGN_EVERY and len(alone) and len(done) % DESIGN_EVERY == 0:
            cand, gains, l_draw, s_draw = score(alone)
        elif total <= MAX_ENUMERATED:
            cand, gains, l_draw, s_draw = score(np.array(list(itertools.product(*map(range, sizes))),
                                                        dtype=np.int64).reshape(-1, len(sizes)))
        else:
            feasible = [i for i, t in enumerate(done) if t.values[0] <= self.budget]
            anchors = lev[[feasible[i] for i in pareto_indices([done[i].values for i in feasible])]]
            pool = np.vstack([self._rng.integers(0, sizes, size=(POOL, len(sizes))), _neighbours(anchors, sizes)])
            cand, gains, l_draw, s_draw = score(np.unique(pool, axis=0))
            if len(cand):
                top = cand[np.argsort(-gains)[:REFINE]]
                cand, gains, l_draw, s_draw = score(np.unique(np.vstack([cand, _neighbours(top, sizes)]), axis=0))
        if len(cand) == 0:
            return {}
        if gains.max() <= 0:  # nothing predicted to add: the fastest expected within budget, else least lossy
            feasible = l_draw <= self.budget
            fast = (np.where(feasible, s_draw, 0.0)).mean(axis=1)
            pick = fast if fast.max() > 0 else -l_draw.mean(axis=1)
        else:
            pick = gains
        best = int(np.argmax(pick + 1e-12 * self._rng.random(len(pick))))
        return {n: choices[k][int(cand[best, k])] for k, n in enumerate(names)}

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial):
        self._fallback.before_trial(study, trial)

    def after_trial(self, study, trial, state, values):
        self._fallback.after_trial(study, trial, state, values)


def _neighbours(rows: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Every configuration one parameter's level away from one of `rows`."""
    out = []
    for row in rows:
        for col, size in enumerate(sizes):
            for v in range(size):
                if v != row[col]:
                    n = row.copy()
                    n[col] = v
                    out.append(n)
    return np.array(out, dtype=np.int64).reshape(-1, len(sizes))
