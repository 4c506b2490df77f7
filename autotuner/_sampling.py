"""Proposing configurations: the sampler by name, seeded afresh for every trial
from (seed, trial index) so a resumed or multi-worker study proposes what an
uninterrupted one would, and a proposal that repeats a measured configuration of
a small discrete space swapped for one not measured yet."""

from __future__ import annotations

import math
import os
import socket
import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from approx_dialect.diagnostics import ApproxError
from autotuner.settings import SAMPLERS


def population_size(n_trials: int) -> int:
    """NSGA-II population: about a fifth of the trials (Optuna's 50 never leaves the
    random first generation in a budget of tens of trials)."""
    return max(4, min(50, n_trials // 5))


def sampler_factory(name: str, n_trials: int, budget: float) -> Callable[[int], BaseSampler]:
    """seed -> a new sampler `name`, sized for a search of `n_trials` evaluations."""
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


class TrialSeeded(BaseSampler):
    """A sampler made afresh for every trial, seeded from (seed, trial index):
    what it proposes depends only on the seed and the trials in storage, not on
    what this process sampled before (so resuming does not change the sequence)."""

    def __init__(self, name: str, seed: int, n_trials: int, budget: float = 0.05):
        self.name, self.seed = name, seed
        self._make = sampler_factory(name, n_trials, budget)
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
        return avoid_repeats(study, search_space, params, self._number, [self.seed, self._index])

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


SAMPLING_WAIT = 10.0  # seconds an earlier trial may take to get its configuration (a dead process's never does)


def _pause() -> None:
    time.sleep(0.01)


def _trials_before(study, number: int) -> list[FrozenTrial]:
    """The trials before trial `number` (measured, running or interrupted), read once none of
    them is still being sampled (RUNNING with no configuration yet: another process between
    creating and sampling it), or SAMPLING_WAIT has passed: a proposal made while one had none
    could repeat it unseen, and the study would then hold a repeat (a lost evaluation) or
    not, as the two processes happened to run."""
    deadline = time.monotonic() + SAMPLING_WAIT
    while True:
        trials = [t for t in study._storage.get_all_trials(
            study._study_id, deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING, TrialState.FAIL))
            if t.number < number]
        if time.monotonic() >= deadline or all(t.params or t.state != TrialState.RUNNING for t in trials):
            return trials
        _pause()


def avoid_repeats(study, search_space: dict, params: dict, number: int, seed: list[int]) -> dict:
    """A proposal that repeats the configuration of an earlier trial (measured, running or
    interrupted) of an all-categorical space becomes a random configuration no earlier
    trial has: no evaluation is wasted on a repeat (samplers converge onto their best
    points in small discrete spaces)."""
    if not params or set(params) != set(search_space) or not all(
            isinstance(d, optuna.distributions.CategoricalDistribution) for d in search_space.values()):
        return params
    names = sorted(search_space)
    # the trials before this one only (interrupted ones too: they are re-run anyway): what later trials, running
    # in other processes by now or not, took must not change this proposal, or a study killed and resumed would
    # propose other configurations than the same study run straight through
    taken = {tuple(t.params.get(n) for n in names) for t in _trials_before(study, number)}
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
