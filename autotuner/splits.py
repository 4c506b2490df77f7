"""The tuning and held-out splits of a run's inputs: disjoint, seeded, so that a
resumed study and `approx-tune verify` find the same held-out inputs again."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from approx_dialect.diagnostics import ApproxError

WHERE = "<measure>"


def split_inputs(inputs: Sequence, references: Sequence | None, eval_ratio: float, seed: int,
                 eval_inputs: Sequence | None = None, eval_references: Sequence | None = None):
    """Disjoint tuning and evaluation splits, the evaluation split `eval_ratio` times
    the tuning one (seeded permutation); or the given evaluation inputs."""
    if references is not None and len(references) != len(inputs):
        raise ApproxError(f"{len(references)} references for {len(inputs)} inputs", where=WHERE)
    if eval_inputs is not None:
        return (list(inputs), references), (list(eval_inputs), eval_references)
    if len(inputs) < 2:
        raise ApproxError(f"need at least 2 inputs to split into tuning and evaluation, got {len(inputs)}",
                          where=WHERE)
    if not eval_ratio > 0:
        raise ApproxError(f"eval_ratio must be > 0, got {eval_ratio}", where=WHERE)
    order = np.random.default_rng(seed).permutation(len(inputs))
    n_tune = min(len(inputs) - 1, max(1, round(len(inputs) / (1 + eval_ratio))))
    pick = lambda xs, idx: None if xs is None else [xs[i] for i in idx]  # noqa: E731
    tune_idx, eval_idx = order[:n_tune], order[n_tune:]  # shuffled: any prefix is a random slice
    return (pick(inputs, tune_idx), pick(references, tune_idx)), (pick(inputs, eval_idx), pick(references, eval_idx))
