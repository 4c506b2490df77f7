"""The README's tour program: the mean of n samples, as a decorated Python function
(`mean`), with the inputs generator that `approx-tune run` takes for it and for the
same kernel in MLIR (`examples/mlir/adaptive_sum.mlir:mean`)."""

from __future__ import annotations

import numpy as np

from frontends import DecisionTree, Knob


def size(n: int) -> int:
    """The decision's state: the number of samples."""
    return n


@Knob(decision_tree=DecisionTree(size, state_indices=[1], thresholds=[1000], decisions=[0, 4],
                                 transform_type="loop_perforate_rescale", thresholds_upper=[10**6]))
def mean(x: np.ndarray, n: int) -> float:
    s = 0.0
    for i in range(n):
        s += x[i]
    return s / n


def make_inputs():
    """12 arrays of 100 .. 100,000 samples, seeded; no ground truth (QoS against the exact program)."""
    rng = np.random.default_rng(1)
    return [(x, len(x)) for x in (rng.random(int(n)) + 1.0 for n in np.geomspace(100, 100_000, 12))], None
