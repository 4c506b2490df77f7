"""Running trials in this process until the search is done: enough evaluations,
the space exhausted, proposals that keep repeating, a front that has stopped
growing (`patience`), or the time is up (`deadline`); and the whole search on a
caller's own evaluation function (`run_search`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import optuna
from optuna.trial import FrozenTrial

from autotuner._objective import Objective, TrialFailed
from autotuner._records import counts, hypervolume_of_study, stalled
from autotuner._sampling import DEFAULT_SAMPLER, TrialSeeded
from autotuner._seeding import enqueue_seeds
from autotuner.space import SearchSpace


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


def stopper_for(n_trials: int, space_size: int | None, patience: int | None, budget: float,
                deadline: float | None) -> Stopper:
    """When a search of `n_trials` evaluations is done (at most 5x as many trials in all)."""
    return Stopper(n_trials, space_size, 5 * n_trials + 20, patience, budget, deadline)


def optimize(study: optuna.Study, objective: Objective, n_trials: int, space_size: int | None = None,
             callbacks: Sequence[Callable] = (), patience: int | None = None, deadline: float | None = None) -> None:
    """Run trials in this process until the study is done (see `Stopper`)."""
    stopper = stopper_for(n_trials, space_size, patience, objective.budget, deadline)
    if stopper.done(study):
        return
    study.optimize(objective, n_trials=None, catch=(TrialFailed,), callbacks=[stopper, *callbacks],
                   gc_after_trial=False, show_progress_bar=False)


def run_search(space: SearchSpace, evaluate: Callable, budget: float, n_trials: int, *,
               sampler: str = DEFAULT_SAMPLER, seed: int = 0, seeds: bool = True,
               patience: int | None = None) -> optuna.Study:
    """The search `tune()` runs in each mode, on the caller's `evaluate(config, n=None)
    -> autotuner.Measurement`, in an in-memory study (no program, storage, workers,
    staged or held-out evaluation): to replay recorded measurements with the tuner's
    own sampler, seeding and repeat handling. `seeds`: start with the exact
    configuration (and each knob alone, but for the predictive sampler), as `tune()` does."""
    study = optuna.create_study(directions=["minimize", "maximize"],
                                sampler=TrialSeeded(sampler, seed, n_trials, budget))
    if seeds:
        enqueue_seeds(study, space, sampler)
    optimize(study, Objective(space, evaluate, budget), n_trials, space.size(), patience=patience)
    return study
