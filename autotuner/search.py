"""The search: an Optuna multi-objective study (minimise QoS loss, maximise
speedup) under the constraint QoS loss <= budget, with staged evaluation.

- Samplers: predictive (default: Bayesian additive models of loss and time, expected
  hypervolume gain; `autotuner/predictive.py`), NSGA-II, TPE (multivariate,
  constant liar), GP, random.
  Each trial's sampler is seeded from (seed, index of the trial among those that
  are not re-runs). An interrupted trial (Ctrl-C, a killed worker or run) is run
  again as a queued re-run of its configuration with its index, so a study
  stopped and resumed evaluates what an uninterrupted one would have: the same
  seed gives the same front (one worker, or any number with a sampler that does
  not read results, e.g. random; and a deterministic cost, or timings that do
  not reorder the front). `MAX_ATTEMPTS` interruptions make a failed trial.
- Staged evaluation: a configuration first runs on a slice of the tuning inputs
  and goes on to the full split only if it might still reach the front. Optuna
  cannot prune multi-objective trials, so a pruned trial is COMPLETE with its
  slice figures, the user attr `pruned` (and `prune_reason`), and a positive
  constraint value (infeasible), which samplers rank below every feasible trial.
- A configuration proposed again is not measured again, nor stored as a new
  finished trial: the trial ends PRUNED with the user attr `duplicate_of` (so
  Optuna's `study.best_trials` is the front) and does not count as an evaluation.
- Failures: a configuration that does not build or run is a FAIL trial with the
  user attr `error`; a FAIL trial without it was interrupted (Ctrl-C, a killed
  worker) and is excluded from counts and seeding.
"""

from __future__ import annotations

import json
import math
import os
import socket
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from approx_dialect.diagnostics import ApproxError
from autotuner.pareto import dominates, hypervolume, hypervolume_curve, pareto_indices  # noqa: F401
from autotuner.space import SearchSpace

SAMPLERS = ("nsga2", "predictive", "tpe", "gp", "random")
DEFAULT_SAMPLER = "predictive"  # bench/tuning_bench.py: the best measured on every landscape
CONSTRAINT = "qos_loss_over_budget"
REUSED = "reused_from"  # user attr of a trial copied from another study (`autotuner.warm_start`)


def population_size(n_trials: int) -> int:
    """NSGA-II population: about a fifth of the trials (Optuna's 50 never leaves the
    random first generation in a budget of tens of trials)."""
    return max(4, min(50, n_trials // 5))


def _factory(name: str, n_trials: int, budget: float) -> Callable[[int], BaseSampler]:
    if name == "predictive":
        from autotuner.predictive import PredictiveSampler

        return lambda s: PredictiveSampler(budget, seed=s, n_trials=n_trials)
    if name == "nsga2":
        return lambda s: optuna.samplers.NSGAIISampler(population_size=population_size(n_trials), seed=s)
    if name == "tpe":
        startup = max(3, min(10, n_trials // 5))
        return lambda s: optuna.samplers.TPESampler(multivariate=True, constant_liar=True, seed=s,
                                                    n_startup_trials=startup)
    if name == "gp":
        startup = max(3, min(10, n_trials // 5))
        return lambda s: optuna.samplers.GPSampler(seed=s, n_startup_trials=startup)
    if name == "random":
        return lambda s: optuna.samplers.RandomSampler(seed=s)
    raise ApproxError(f"unknown sampler '{name}' (samplers: {', '.join(SAMPLERS)})", where="<search>")


MAX_ATTEMPTS = 3  # runs of one configuration cut short before it counts as failed


def interrupted(t: FrozenTrial) -> bool:
    return t.state == TrialState.FAIL and "error" not in t.user_attrs


def worker_id() -> str:
    """This process, as trials record who runs them (a dead worker's trials are found by it)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def trial_index(trials: Sequence[FrozenTrial], number: int) -> int:
    """The seeding index of trial `number`: trials before it that are not re-runs;
    a re-run has the index of the trial it re-runs. It never changes once the trial
    exists (states do not enter), so workers and resumes agree on it."""
    by_number = {t.number: t for t in trials}
    while number in by_number and "rerun_of" in by_number[number].user_attrs:
        number = by_number[number].user_attrs["rerun_of"]
    return sum(1 for t in trials if t.number < number and "rerun_of" not in t.user_attrs)


def requeue_interrupted(study: optuna.Study) -> int:
    """Queue a re-run of every interrupted trial not re-run yet (its parameters and
    seeding index); the number queued."""
    trials = study.get_trials(deepcopy=False)
    done = {t.user_attrs["rerun_of"] for t in trials if "rerun_of" in t.user_attrs}
    n = 0
    for t in trials:
        if interrupted(t) and t.number not in done:
            params = dict(t.system_attrs.get("fixed_params") or {})
            if "key" in t.user_attrs:  # it had its configuration (part of it: sampled again, same RNG draws)
                params.update(t.params)
            attempt = t.user_attrs.get("attempt", 1) + 1
            study.enqueue_trial(params, user_attrs={"rerun_of": t.number, "attempt": attempt})
            n += 1
    return n


class TrialSeeded(BaseSampler):
    """A sampler made afresh for every trial, seeded from (seed, trial index):
    what it proposes depends only on the seed and the trials in storage, not on
    what this process sampled before (so resuming does not change the sequence)."""

    def __init__(self, name: str, seed: int, n_trials: int, budget: float = 0.05):
        self.name, self.seed = name, seed
        self._make = _factory(name, n_trials, budget)
        self._inner: BaseSampler | None = None
        self._number = -1

    def _for(self, study, trial: FrozenTrial) -> BaseSampler:
        if self._inner is None or self._number != trial.number:
            index = trial_index(study._storage.get_all_trials(study._study_id, deepcopy=False), trial.number)
            s = int(np.random.SeedSequence([self.seed, index]).generate_state(1)[0] % (2**31))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                self._inner, self._number, self._index = self._make(s), trial.number, index
        return self._inner

    def infer_relative_search_space(self, study, trial):
        return self._for(study, trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        params = self._for(study, trial).sample_relative(study, trial, search_space)
        return _avoid_repeats(study, search_space, params, self._number, [self.seed, self._index])

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._for(study, trial).sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial):
        storage = study._storage
        storage.set_trial_system_attr(trial._trial_id, "worker", worker_id())  # first thing: who runs it
        if "rerun_of" in trial.user_attrs:  # to the sampler a re-run is its original (e.g. NSGA-II's generation)
            orig = storage.get_trial(storage.get_trial_id_from_study_id_trial_number(
                study._study_id, trial.user_attrs["rerun_of"]))
            for k, v in orig.system_attrs.items():
                if k not in ("fixed_params", "worker") and k not in trial.system_attrs:
                    storage.set_trial_system_attr(trial._trial_id, k, v)
        self._for(study, trial).before_trial(study, trial)

    def after_trial(self, study, trial, state, values):
        self._for(study, trial).after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:  # seeds come from the trial index
        pass


def _avoid_repeats(study, search_space: dict, params: dict, number: int, seed: list[int]) -> dict:
    """A proposal that repeats a measured (or running) configuration of an all-categorical
    space becomes a random configuration not measured yet: no evaluation is wasted
    on a repeat (samplers converge onto their best points in small discrete spaces)."""
    if not params or set(params) != set(search_space) or not all(
            isinstance(d, optuna.distributions.CategoricalDistribution) for d in search_space.values()):
        return params
    names = sorted(search_space)
    taken = {tuple(t.params.get(n) for n in names) for t in study._get_trials(  # interrupted: re-run anyway
        deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING, TrialState.FAIL), use_cache=True)
        if t.number != number}
    if tuple(params[n] for n in names) not in taken:
        return params
    sizes = [len(search_space[n].choices) for n in names]
    total = math.prod(sizes)
    if total > 100_000 or len(taken) >= total:
        return params
    rng = np.random.default_rng(seed)
    for _ in range(4 * total):  # random probes; a free one exists, the space is small
        pick = tuple(search_space[n].choices[int(rng.integers(s))] for n, s in zip(names, sizes))
        if pick not in taken:
            return dict(zip(names, pick))
    return params


# ---------------------------------------------------------------- trials

@dataclass
class Record:
    """A finished trial as the tuner sees it."""

    number: int
    config: dict
    qos_loss: float
    speedup: float
    pruned: bool
    duplicate: bool
    attrs: dict = field(default_factory=dict)

    def feasible(self, budget: float) -> bool:
        return self.qos_loss <= budget + 1e-12


def config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def records(study: optuna.Study, trials: list[FrozenTrial] | None = None) -> list[Record]:
    out = []
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    for t in (t for t in trials if t.state == TrialState.COMPLETE):
        if "config" not in t.user_attrs:
            continue
        out.append(Record(t.number, t.user_attrs["config"], float(t.values[0]), float(t.values[1]),
                          bool(t.user_attrs.get("pruned")), "duplicate_of" in t.user_attrs, dict(t.user_attrs)))
    return out


def front(recs: list[Record], budget: float) -> list[Record]:
    """Nondominated among fully measured, distinct, feasible trials."""
    cands = [r for r in recs if not r.pruned and not r.duplicate and r.feasible(budget)]
    return [cands[i] for i in pareto_indices([(r.qos_loss, r.speedup) for r in cands])]


def counts(study: optuna.Study) -> dict[str, int]:
    """evaluated (measured: complete, pruned or failed), pruned, failed, running, waiting, total,
    and reused (measurements copied from another study, not evaluations of this one)."""
    c = dict(evaluated=0, pruned=0, failed=0, running=0, total=0, duplicates=0, waiting=0, reused=0)
    for t in study.get_trials(deepcopy=False):
        c["total"] += 1
        if t.state == TrialState.RUNNING:
            c["running"] += 1
        elif t.state == TrialState.WAITING:
            c["waiting"] += 1
        elif t.state in (TrialState.FAIL, TrialState.PRUNED) and "duplicate_of" in t.user_attrs:
            c["duplicates"] += 1
        elif t.state == TrialState.FAIL and not interrupted(t):
            c["failed"] += 1
            c["evaluated"] += 1
        elif t.state == TrialState.COMPLETE:
            if "duplicate_of" in t.user_attrs:
                c["duplicates"] += 1
            elif REUSED in t.user_attrs:
                c["reused"] += 1
            else:
                c["evaluated"] += 1
                c["pruned"] += bool(t.user_attrs.get("pruned"))
    return c


def hypervolume_of_study(study: optuna.Study, budget: float) -> list[float]:
    """Hypervolume of the study's front after 0, 1, 2, ... evaluations (trial order;
    reused measurements count from the start; pruned trials and failures add nothing)."""
    start, points = [], []
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.COMPLETE and "duplicate_of" not in t.user_attrs:
            p = None if t.user_attrs.get("pruned") else (float(t.values[0]), float(t.values[1]))
            (start if REUSED in t.user_attrs else points).append(p)
        elif t.state == TrialState.FAIL and not interrupted(t) and "duplicate_of" not in t.user_attrs:
            points.append(None)
    return hypervolume_curve(points, budget, [p for p in start if p is not None])


def stalled(curve: Sequence[float], patience: int) -> bool:
    """The hypervolume has not grown over the last `patience` evaluations (and is not
    0: a search that has found nothing within the budget yet has not converged)."""
    return 0 < patience < len(curve) and 0 < curve[-1] <= curve[-1 - patience] * (1 + 1e-12)


class TrialFailed(Exception):
    """A configuration that does not build or run (caught by `optimize`)."""


class Objective:
    """Optuna objective: suggest a configuration, evaluate it (staged), record it.

    `evaluate(config, n=None)` -> `autotuner.measure.Measurement` on the first n
    tuning inputs (all when None)."""

    def __init__(self, space: SearchSpace, evaluate: Callable, budget: float, slice_n: int | None = None,
                 prune_slack: float = 0.5, dominance_margin: float = 0.25, worker: str | None = None,
                 n_trials: int | None = None):
        self.space, self.evaluate, self.budget, self.n_trials = space, evaluate, budget, n_trials
        self.slice_n, self.prune_slack, self.dominance_margin = slice_n, prune_slack, dominance_margin
        self.worker = worker or worker_id()

    def __call__(self, trial: optuna.Trial):
        if self.n_trials and self._surplus(trial):
            trial.set_user_attr("surplus", True)  # ends PRUNED: neither counted nor queued again
            raise optuna.TrialPruned("the study has its evaluations, or queued re-runs for the rest")
        config = self.space.suggest(trial)
        key = config_key(config)
        trial.set_user_attr("config", config)
        trial.set_user_attr("key", key)
        trial.set_user_attr("worker", self.worker)
        if trial.user_attrs.get("attempt", 1) > MAX_ATTEMPTS:  # e.g. a configuration that kills its worker
            msg = f"interrupted {MAX_ATTEMPTS} times (its worker process died or was stopped each time)"
            trial.set_user_attr("error", msg)
            raise TrialFailed(msg)
        trials = trial.study.get_trials(deepcopy=False)
        done = records(trial.study, trials)
        for r in done:
            if r.attrs.get("key") == key and not r.duplicate:
                trial.set_user_attr("duplicate_of", r.number)
                raise optuna.TrialPruned(f"configuration measured by trial {r.number}")
        for t in (t for t in trials if t.state == TrialState.FAIL):
            if t.user_attrs.get("key") == key and "error" in t.user_attrs and "duplicate_of" not in t.user_attrs:
                trial.set_user_attr("duplicate_of", t.number)
                trial.set_user_attr("error", t.user_attrs["error"])
                raise TrialFailed(t.user_attrs["error"])
        try:
            if self.slice_n:
                m = self.evaluate(config, n=self.slice_n)
                reason = self._prune_reason(m, done)
                if reason:
                    trial.set_user_attr("pruned", True)
                    trial.set_user_attr("prune_reason", reason)
                    self._record(trial, m)
                    return self._finish(trial, m.qos_loss, m.speedup, True)
            m = self.evaluate(config)
        except KeyboardInterrupt:
            raise  # the trial ends FAIL without an `error`: interrupted, not counted
        except Exception as err:
            msg = err.line() if isinstance(err, ApproxError) else f"{type(err).__name__}: {err}"
            trial.set_user_attr("error", msg.splitlines()[0][:500] if msg else type(err).__name__)
            raise TrialFailed(msg) from None
        self._record(trial, m)
        return self._finish(trial, m.qos_loss, m.speedup, False)

    def _surplus(self, trial: optuna.Trial) -> bool:
        """A new sampled trial beyond `n_trials` evaluations, counting running ones and
        queued re-runs of interrupted ones (several workers, or a worker that started
        while a dead one's trial was being queued again, would overshoot)."""
        if "fixed_params" in trial.study._storage.get_trial(trial._trial_id).system_attrs:
            return False  # a seed or a re-run: it is one of the evaluations
        c = counts(trial.study)
        return c["evaluated"] + c["running"] - 1 + c["waiting"] >= self.n_trials

    def _record(self, trial, m) -> None:
        trial.set_user_attr("n", m.n)
        trial.set_user_attr("qos", m.qos)
        if m.seconds == m.seconds:  # not NaN
            trial.set_user_attr("seconds", m.seconds)
        if m.money is not None:
            trial.set_user_attr("money", m.money)
        if m.speedup_low is not None:
            trial.set_user_attr("speedup_low", m.speedup_low)
            trial.set_user_attr("speedup_high", m.speedup_high)
            trial.set_user_attr("exact_seconds", m.exact_seconds)

    def _finish(self, trial, loss: float, speedup: float, pruned: bool):
        over = loss - self.budget
        trial.set_constraint(CONSTRAINT, max(over, 1e-3) if pruned else over)
        return float(loss), float(min(speedup, 1e9))

    def _prune_reason(self, m, done: list[Record]) -> str | None:
        """Why a configuration measured on the slice cannot reach the front, or None."""
        margin = max(self.prune_slack * self.budget, 2 * m.loss_stderr, 0.01)
        if m.qos_loss > self.budget + margin:
            return f"slice QoS loss {m.qos_loss:.4f} > budget {self.budget} + margin {margin:.4f}"
        for r in front(done, self.budget):
            if r.qos_loss <= m.qos_loss - margin and r.speedup >= m.speedup * (1 + self.dominance_margin):
                return f"dominated on the slice by trial {r.number}"
        return None


class Stopper:
    """Stops a worker once the study holds `n_trials` evaluations (running trials of
    other workers included, so several workers do not overshoot), or the space is
    exhausted, or proposals keep repeating (more than `max_total` trials), or (with
    `patience` N) the front's hypervolume has not grown over the last N evaluations,
    or (with `deadline`, a `time.time()`) the time is up."""

    def __init__(self, n_trials: int, space_size: int | None, max_total: int, patience: int | None = None,
                 budget: float = 0.05, deadline: float | None = None):
        self.n_trials, self.space_size, self.max_total = n_trials, space_size, max_total
        self.patience, self.budget, self.deadline = patience, budget, deadline

    def done(self, study: optuna.Study) -> bool:
        if self.deadline is not None and time.time() >= self.deadline:
            return True
        c = counts(study)
        if c["evaluated"] + c["running"] >= self.n_trials or c["total"] >= self.max_total:
            return True
        if self.patience and stalled(hypervolume_of_study(study, self.budget), self.patience):
            return True
        return self.space_size is not None and c["evaluated"] >= self.space_size

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if self.done(study):
            study.stop()


def optimize(study: optuna.Study, objective: Objective, n_trials: int, space_size: int | None = None,
             callbacks: Sequence[Callable] = (), patience: int | None = None, deadline: float | None = None) -> None:
    """Run trials in this process until the study is done (see `Stopper`)."""
    stopper = Stopper(n_trials, space_size, 5 * n_trials + 20, patience, objective.budget, deadline)
    if stopper.done(study):
        return
    study.optimize(objective, n_trials=None, catch=(TrialFailed,), callbacks=[stopper, *callbacks],
                   gc_after_trial=False, show_progress_bar=False)


def enqueue_seeds(study: optuna.Study, space: SearchSpace, sampler: str = DEFAULT_SAMPLER) -> int:
    """On a new study (no trials but reused measurements): queue the exact configuration
    and each knob alone at its middle value (`SearchSpace.seeds`), those not measured yet.
    The predictive sampler gets the exact one only: it measures each knob alone itself,
    between its own proposals (`autotuner.predictive`)."""
    trials = study.get_trials(deepcopy=False)
    if any(REUSED not in t.user_attrs for t in trials):
        return 0
    measured = {t.user_attrs.get("key") for t in trials}
    seeds = space.seeds()[:1] if sampler == "predictive" else space.seeds()
    seeds = [cfg for cfg in seeds if config_key(cfg) not in measured]
    for cfg in seeds:
        study.enqueue_trial(space.params_of(cfg), skip_if_exists=True)
    return len(seeds)

