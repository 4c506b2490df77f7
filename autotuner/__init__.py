"""Optuna search over knobs and the Pareto report.

`autotuner.tune(program, inputs, references, metric=, budget=, search=Search(...),
cost=Cost(...), held_out=HeldOut(...), storage=Storage(...)) -> TuningResult`; the
command is `approx-tune` (`autotuner.cli`), and `tune_command(argv)` runs `approx-tune
run ARGV` in this process. Names are imported on first use, so importing
`autotuner.decision_tree` does not load Optuna. The tuner sits on top:
it may import every other package of the toolchain (programs, metrics,
components) and drives programs only through the `Program` protocol and its
optional members (`approx_opt.program`).

The public surface is what this module exports (`__all__`, every name defined in
a public module), besides the QoS functions (`autotuner.metrics`), the report
(`autotuner.report`), the decision-tree learner (`autotuner.decision_tree`) and
the search strategy for programs of component calls (`autotuner.strategy`: its
constants and hooks); the `_`-prefixed modules are the search's internals:
`_sampling` (samplers, seeded per trial, repeats avoided), `_objective` (staged
evaluation of one trial), `_optimize` (the trial loop and when it stops),
`_seeding` (first trials, re-runs), `_records` (what the finished trials say:
records, front, counts).
"""

from __future__ import annotations

_EXPORTS = {
    "tune": "autotuner.study",
    "Search": "autotuner.settings",
    "Cost": "autotuner.settings",
    "HeldOut": "autotuner.settings",
    "Storage": "autotuner.settings",
    "TUNING_QOS": "autotuner.settings",
    "tune_command": "autotuner.cli",
    "SAMPLERS": "autotuner.settings",
    "DEFAULT_SAMPLER": "autotuner.settings",
    "open_storage": "autotuner.storage",
    "TuningResult": "autotuner.results",
    "FrontPoint": "autotuner.results",
    "TrialPoint": "autotuner.results",
    "load_result": "autotuner.results",
    "read_result": "autotuner.results",
    "SearchSpace": "autotuner.space",
    "Measurer": "autotuner.measure",
    "Measurement": "autotuner.figures",
    "get_metric": "autotuner.metrics",
    "MlirProgram": "approx_opt.program",
    "load_program": "autotuner.loading",
    "ablate_levels": "autotuner.explain",
    "config_key": "autotuner.space",
    "front_of": "autotuner.stored",
    "trial_counts": "autotuner.stored",
    "enqueue": "autotuner.stored",
    "run_search": "autotuner.replay",
    "pareto_indices": "autotuner.pareto",
    "hypervolume": "autotuner.pareto",
    "describe_machine": "autotuner.machine",
    "LoadProbe": "autotuner.machine",
    "Load": "autotuner.machine",
    "exact_dominated": "autotuner.dominance",
    "most_accurate": "autotuner.dominance",
    "Judgement": "autotuner.dominance",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'autotuner' has no attribute {name!r}")
