"""Learn a multi-feature decision tree from tuning results (CART, Gini), and write
it as an `approx.util.annotation.decision_tree_multi` annotation.

Given integer features of many inputs and the best knob value found for each,
`learn_decision_tree` fits an axis-aligned tree in the dialect's form (parallel
arrays, node 0 the root, go left when feature < threshold, a feature equal to the
threshold goes right), so the tree the compiler runs is exactly the one learned.
Own numpy implementation: deterministic (ties go to the lower feature, the lower
split point and, at leaves, the lower knob value), no sklearn dependency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from approx_dialect.diagnostics import ApproxError

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
ARRAY_NAMES = ("tree_features", "tree_thresholds", "tree_left", "tree_right", "tree_decisions")


class TreeLearningError(ApproxError, ValueError):
    """Bad arguments to the learner (a ValueError too, for Python callers)."""


@dataclass(frozen=True)
class LearnedTree:
    """A tree in the dialect's array form. Leaves: feature -1, children -1,
    threshold 0; inner nodes: decision 0."""

    features: np.ndarray
    thresholds: np.ndarray
    left: np.ndarray
    right: np.ndarray
    decisions: np.ndarray
    num_features: int

    def arrays(self) -> dict[str, list[int]]:
        """`tree_*` name -> list of ints (the op's / annotation's properties)."""
        cols = (self.features, self.thresholds, self.left, self.right, self.decisions)
        return {name: [int(v) for v in col] for name, col in zip(ARRAY_NAMES, cols)}

    def leaf_decisions(self) -> list[int]:
        return [int(d) for f, d in zip(self.features, self.decisions) if f < 0]

    def depth(self) -> int:
        depth = {0: 0}
        for i, f in enumerate(self.features):  # pre-order: parents come first
            if f >= 0:
                depth[int(self.left[i])] = depth[int(self.right[i])] = depth[i] + 1
        return max(depth.values())

    def predict(self, features) -> np.ndarray:
        """The knob value for each row of `features` ([n_samples, n_features])."""
        x = np.asarray(features)
        if x.ndim != 2 or x.shape[1] != self.num_features:
            raise TreeLearningError(
                f"predict needs shape [n_samples, {self.num_features}], got {list(x.shape)}"
            )
        rows = np.arange(len(x))
        node = np.zeros(len(x), dtype=np.int64)
        while True:
            f = self.features[node]
            inner = f >= 0
            if not inner.any():
                return self.decisions[node].astype(np.int64)
            value = x[rows[inner], f[inner]]
            go_left = value < self.thresholds[node[inner]]
            node[inner] = np.where(go_left, self.left[node[inner]], self.right[node[inner]])


def _check_inputs(features, best_decisions, max_depth, min_samples_leaf):
    x = np.asarray(features)
    y = np.asarray(best_decisions)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise TreeLearningError(
            f"features must be a non-empty [n_samples, n_features] array, got shape {list(x.shape)}"
        )
    if y.shape != (x.shape[0],):
        raise TreeLearningError(
            f"best_decisions must have shape [{x.shape[0]}] (one per sample), got {list(y.shape)}"
        )
    for name, arr in (("features", x), ("best_decisions", y)):
        if not np.issubdtype(arr.dtype, np.integer):
            raise TreeLearningError(f"{name} must be integers (the state is i32), got dtype {arr.dtype}")
    if x.min() < I32_MIN or x.max() > I32_MAX:
        raise TreeLearningError("features must fit in i32")
    if y.min() < 0 or y.max() > I32_MAX:
        raise TreeLearningError("best_decisions must be knob values in [0, 2**31 - 1]")
    if max_depth < 0 or min_samples_leaf < 1:
        raise TreeLearningError(
            f"need max_depth >= 0 and min_samples_leaf >= 1, got {max_depth} and {min_samples_leaf}"
        )
    return x.astype(np.int64), y.astype(np.int64)


def _gini(counts: np.ndarray, n: np.ndarray) -> np.ndarray:
    return 1.0 - (counts.astype(np.float64) ** 2).sum(axis=-1) / np.maximum(n, 1) ** 2


def _best_split(x: np.ndarray, onehot: np.ndarray, min_leaf: int):
    """(weighted Gini, feature, threshold) of the best split of these samples, or None."""
    n = len(x)
    if n < 2 * min_leaf:
        return None
    n_left = np.arange(1, n)
    best = None
    for f in range(x.shape[1]):
        order = np.argsort(x[:, f], kind="stable")
        xs = x[order, f]
        left = np.cumsum(onehot[order], axis=0)[:-1]
        right = left[-1] + onehot[order[-1]] - left
        score = (n_left * _gini(left, n_left) + (n - n_left) * _gini(right, n - n_left)) / n
        valid = (xs[:-1] < xs[1:]) & (n_left >= min_leaf) & (n - n_left >= min_leaf)
        if not valid.any():
            continue
        score = np.where(valid, score, np.inf)
        i = int(np.argmin(score))  # first minimum: lowest split point
        if best is None or score[i] < best[0] - 1e-12:  # strict: lowest feature on ties
            best = (float(score[i]), f, int((xs[i] + xs[i + 1] + 1) // 2))
    return best


def learn_decision_tree(
    features,
    best_decisions,
    max_depth: int = 3,
    min_samples_leaf: int = 1,
) -> LearnedTree:
    """CART with Gini impurity on integer features.

    A node is split on the (feature, threshold) of least weighted Gini impurity,
    threshold the integer midpoint between two neighbouring sample values (rounded
    up), so samples below go left. It stays a leaf at `max_depth`, when pure, when
    either side would hold fewer than `min_samples_leaf` samples, or when no split
    lowers the impurity. A split whose two children are leaves with the same
    decision is merged into one leaf (same predictions, smaller IR). A leaf takes
    the most frequent best decision of its samples (the lowest on ties).
    """
    x, y = _check_inputs(features, best_decisions, max_depth, min_samples_leaf)
    classes, labels = np.unique(y, return_inverse=True)
    onehot = np.eye(len(classes), dtype=np.int64)[labels]

    def grow(rows: np.ndarray, depth: int):
        counts = onehot[rows].sum(axis=0)
        leaf = ("leaf", int(classes[int(np.argmax(counts))]))
        if depth >= max_depth or (counts > 0).sum() == 1:
            return leaf
        split = _best_split(x[rows], onehot[rows], min_samples_leaf)
        if split is None or split[0] >= _gini(counts, len(rows)) - 1e-12:
            return leaf
        _, f, t = split
        below = x[rows, f] < t
        lo, hi = grow(rows[below], depth + 1), grow(rows[~below], depth + 1)
        if lo[0] == hi[0] == "leaf" and lo[1] == hi[1]:
            return lo
        return ("split", f, t, lo, hi)

    cols: list[list[int]] = [[], [], [], [], []]

    def flatten(node) -> int:  # pre-order, root 0
        i = len(cols[0])
        for c in cols:
            c.append(0)
        if node[0] == "leaf":
            cols[0][i] = cols[2][i] = cols[3][i] = -1
            cols[4][i] = node[1]
            return i
        _, f, t, lo, hi = node
        cols[0][i], cols[1][i] = f, t
        cols[2][i] = flatten(lo)
        cols[3][i] = flatten(hi)
        return i

    flatten(grow(np.arange(len(x)), 0))
    features_, thresholds, left, right, decisions = (np.array(c, dtype=np.int32) for c in cols)
    return LearnedTree(features_, thresholds, left, right, decisions, x.shape[1])


def _arr(values: Sequence[int], t: str = "i32") -> str:
    return f"array<{t}: {', '.join(str(int(v)) for v in values)}>" if len(values) else f"array<{t}>"


def tree_properties(
    tree: LearnedTree,
    transform_type: str,
    decision_values: Sequence[int] | None = None,
    thresholds_lowers: Sequence[int] = (),
    thresholds_uppers: Sequence[int] = (),
) -> str:
    """The properties of `approx.decide_tree` for this tree, as `<{...}>` body text.
    decision_values defaults to the leaf decisions plus 0."""
    values = decision_values if decision_values is not None else sorted({0, *tree.leaf_decisions()})
    parts = [f"num_features = {tree.num_features} : i32"]
    parts += [f"{name} = {_arr(v)}" for name, v in tree.arrays().items()]
    parts += [
        f"thresholds_lowers = {_arr(thresholds_lowers)}",
        f"thresholds_uppers = {_arr(thresholds_uppers)}",
        f"decision_values = {_arr(values)}",
        f'transform_type = "{transform_type}"',
    ]
    return ", ".join(parts)


def annotation_text(
    tree: LearnedTree,
    func_name: str,
    state_function: str,
    state_indices: Sequence[int],
    transform_type: str,
    **bounds,
) -> str:
    """One `approx.util.annotation.decision_tree_multi` line applying the tree to
    `func_name`: `state_function(args at state_indices)` returns the features.
    `bounds`: decision_values, thresholds_lowers, thresholds_uppers."""
    return (
        f'"approx.util.annotation.decision_tree_multi"() <{{func_name = "{func_name}", '
        f'state_indices = {_arr(state_indices, "i64")}, state_function = "{state_function}", '
        f"{tree_properties(tree, transform_type, **bounds)}}}> : () -> ()"
    )
