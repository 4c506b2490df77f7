"""The tuner's search on a caller's own measurements: its sampler, seeding and
repeat handling without a program, storage, workers, stages or held-out split
(`bench/tuning_bench.py` replays recorded landscapes through it)."""

from __future__ import annotations

from collections.abc import Callable

import optuna

from autotuner._objective import Objective
from autotuner._optimize import optimize
from autotuner._sampling import TrialSeeded
from autotuner._seeding import enqueue_seeds
from autotuner.settings import DEFAULT_SAMPLER
from autotuner.space import SearchSpace


def run_search(space: SearchSpace, evaluate: Callable, budget: float, n_trials: int, *,
               sampler: str = DEFAULT_SAMPLER, seed: int = 0, seeds: bool = True,
               patience: int | None = None) -> optuna.Study:
    """The search `tune()` runs in each mode, on the caller's `evaluate(config, n=None)
    -> autotuner.Measurement`, in an in-memory study. `seeds`: start with the exact
    configuration (and each knob alone, but for the predictive sampler), as `tune()` does."""
    study = optuna.create_study(directions=["minimize", "maximize"],
                                sampler=TrialSeeded(sampler, seed, n_trials, budget))
    if seeds:
        enqueue_seeds(study, space, sampler)
    optimize(study, Objective(space, evaluate, budget), n_trials, space.size(), patience=patience)
    return study
