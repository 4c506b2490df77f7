"""Running trials in this process until the search is done: enough evaluations,
the space exhausted, proposals that keep repeating, a front that has stopped
growing (`patience`), or the time is up (`deadline`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import optuna
from optuna.storages._heartbeat import is_heartbeat_enabled
from optuna.trial import FrozenTrial

from autotuner._objective import Objective, TrialFailed
from autotuner._records import counts, hypervolume_of_study, stalled
from autotuner._seeding import end_abandoned

WAIT_SECONDS = 1.0  # how often a run waiting on the trials of other runs looks at them


class Stopper:
    """Stops a worker once the study holds `n_trials` evaluations (running trials of
    other workers included, so several workers do not overshoot), or the space is
    exhausted, or proposals keep repeating (more than `max_total` trials proposed here:
    configurations scored from kept outputs or reused from another study are not proposals,
    and a sweep adds thousands of them), or (with
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
        if c["evaluated"] + c["running"] >= self.n_trials or proposed(c) >= self.max_total:
            return True
        if self.patience and stalled(hypervolume_of_study(study, self.budget), self.patience):
            return True
        return self.space_size is not None and c["evaluated"] >= self.space_size

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if self.done(study):
            study.stop()


def proposed(c: dict[str, int]) -> int:
    """Trials the sampler proposed, of the `counts` `c`."""
    return c["total"] - c["scored"] - c["reused"]


def stopper_for(n_trials: int, space_size: int | None, patience: int | None, budget: float,
                deadline: float | None) -> Stopper:
    """When a search of `n_trials` evaluations is done (at most 5x as many trials in all)."""
    return Stopper(n_trials, space_size, 5 * n_trials + 20, patience, budget, deadline)


def optimize(study: optuna.Study, objective: Objective, n_trials: int, space_size: int | None = None,
             callbacks: Sequence[Callable] = (), patience: int | None = None, deadline: float | None = None) -> None:
    """Run trials in this process until the study is done (see `Stopper`)."""
    stopper = stopper_for(n_trials, space_size, patience, objective.budget, deadline)
    while True:
        if not stopper.done(study):
            study.optimize(objective, n_trials=None, catch=(TrialFailed,), callbacks=[stopper, *callbacks],
                           gc_after_trial=False, show_progress_bar=False)
        if not _wait_for_others(study, stopper):
            return


def _wait_for_others(study: optuna.Study, stopper: Stopper) -> bool:
    """On a storage shared by runs (PostgreSQL, with heartbeats): a run whose study has
    its evaluations only by counting trials that other runs are still running waits
    until they end, so that the trial of a run killed meanwhile (its process gone, or
    its heartbeat stopped) is ended as interrupted, queued again and run here: True
    when there is such a trial to run, False when nothing is left running. Else the
    last runs would end and leave it RUNNING, one evaluation short."""
    if not is_heartbeat_enabled(study._storage):
        return False  # SQLite: one run per file; its parent recovers dead workers
    while True:
        end_abandoned(study)
        c = counts(study)
        if c["evaluated"] + c["running"] < stopper.n_trials:  # a re-run queued, or room for one
            return not stopper.done(study)
        if not c["running"] or c["evaluated"] >= stopper.n_trials or stopper.done(study) and (
                proposed(c) >= stopper.max_total or stopper.deadline is not None and time.time() >= stopper.deadline):
            return False
        time.sleep(WAIT_SECONDS)
