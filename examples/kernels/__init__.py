"""The five kernels of ApproxMLIR's evaluation, written in Python and JIT-compiled
through the decorator: bm25, kb (dense similarity search), kmeans, lavamd, pagerank.

Each module has `program` (a `KernelProgram`: the decorated kernel plus the numpy
code that allocates its outputs; what `autotuner.tune` runs), `METRIC` (its QoS),
`make_inputs(n_tune, seed) -> (tune_inputs, eval_inputs)` (disjoint, eval = 5x
tune) and `reference(*input)` (numpy, for the exact output)."""

from __future__ import annotations

import importlib
from types import ModuleType

KERNELS = ("bm25", "kb", "kmeans", "lavamd", "pagerank")


def kernel(name: str) -> ModuleType:
    """The module of one kernel, by name."""
    if name not in KERNELS:
        raise KeyError(f"unknown kernel {name!r} (kernels: {', '.join(KERNELS)})")
    return importlib.import_module(f"examples.kernels.{name}")


def held_out_inputs(name: str, n_tune: int, seed: int = 0) -> list:
    """The evaluation inputs of `make_inputs`: what `approx-tune verify` re-measures a kernel's front on."""
    return kernel(name).make_inputs(n_tune, seed)[1]


__all__ = ["KERNELS", "held_out_inputs", "kernel"]
