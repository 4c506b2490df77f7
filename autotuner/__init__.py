"""Optuna search over knobs and the Pareto report.

`autotuner.tune(program, inputs, ...) -> TuningResult`; the command is
`approx-tune` (`autotuner.cli`). Names are imported on first use, so importing
`autotuner.decision_tree` does not load Optuna. The tuner sits on top: it may
import every other package of the toolchain (programs, metrics, components) and
drives programs only through the `Program` protocol (`approx_opt.program`).
"""

from __future__ import annotations

_EXPORTS = {
    "tune": "autotuner.study",
    "open_storage": "autotuner.workers",
    "TuningResult": "autotuner.results",
    "FrontPoint": "autotuner.results",
    "TrialPoint": "autotuner.results",
    "load_result": "autotuner.results",
    "read_result": "autotuner.results",
    "SearchSpace": "autotuner.space",
    "Measurer": "autotuner.measure",
    "get_metric": "autotuner.metrics",
    "MlirProgram": "approx_opt.program",
    "load_program": "autotuner.loading",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'autotuner' has no attribute {name!r}")
