"""`autotuner.decision_tree`: CART learns known axis-aligned rules exactly, is
deterministic, and the learned tree, written into IR and JIT-run, decides what
the learner predicts (numbers, on random points and on every threshold)."""

from __future__ import annotations

import numpy as np
import pytest

from approx_dialect import tree_decision
from approx_dialect.context import parse_module
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from autotuner.decision_tree import (
    TreeLearningError,
    annotation_text,
    learn_decision_tree,
    tree_properties,
)
from tests.programs import module
from tests.tree_programs import X, decision_of, pick_program

RNG = np.random.default_rng(2024)


def grid(*ranges: range) -> np.ndarray:
    return np.stack(np.meshgrid(*ranges, indexing="ij"), axis=-1).reshape(-1, len(ranges))


def test_recovers_a_two_feature_rule_exactly():
    """a < 7 ? (b < 12 ? 0 : 1) : 2 on the full 20x20 grid: the very arrays."""
    x = grid(range(20), range(20))
    y = np.where(x[:, 0] < 7, np.where(x[:, 1] < 12, 0, 1), 2)
    tree = learn_decision_tree(x, y)
    assert tree.arrays() == {
        "tree_features": [0, 1, -1, -1, -1],
        "tree_thresholds": [7, 12, 0, 0, 0],
        "tree_left": [1, 2, -1, -1, -1],
        "tree_right": [4, 3, -1, -1, -1],
        "tree_decisions": [0, 0, 0, 1, 2],
    }
    assert (tree.predict(x) == y).all()


def test_recovers_a_rule_that_ignores_a_feature_from_random_samples():
    """c is noise; thresholds land on the rule's where the samples touch them."""
    x = np.concatenate([grid(range(-10, 10), range(0, 30, 3), range(1)), RNG.integers(-10, 30, (600, 3))])
    x[:, 2] = RNG.integers(0, 1000, len(x))
    y = np.where(x[:, 1] >= 15, np.where(x[:, 0] >= -2, 3, 1), 0)
    tree = learn_decision_tree(x, y, max_depth=3)
    assert (tree.predict(x) == y).all()
    a = tree.arrays()
    assert 2 not in a["tree_features"]
    assert sorted(zip(a["tree_features"], a["tree_thresholds"]))[-2:] == [(0, -2), (1, 15)]


def test_is_deterministic_and_order_independent():
    x = RNG.integers(0, 50, (500, 4))
    y = RNG.integers(0, 3, 500)
    first = learn_decision_tree(x, y, max_depth=4).arrays()
    assert learn_decision_tree(x, y, max_depth=4).arrays() == first
    perm = RNG.permutation(len(x))
    assert learn_decision_tree(x[perm], y[perm], max_depth=4).arrays() == first


@pytest.mark.parametrize("max_depth, min_leaf", [(0, 1), (1, 1), (2, 40), (5, 10)])
def test_limits_are_respected(max_depth, min_leaf):
    x = RNG.integers(0, 100, (400, 3))
    y = (x[:, 0] // 10 + x[:, 1] // 30) % 4
    tree = learn_decision_tree(x, y, max_depth=max_depth, min_samples_leaf=min_leaf)
    assert tree.depth() <= max_depth
    leaves = tree.predict(x)
    # every leaf holds >= min_leaf training samples: count samples per reached leaf
    node = np.zeros(len(x), dtype=int)
    for _ in range(max_depth):
        f = tree.features[node]
        inner = f >= 0
        go = x[np.arange(len(x))[inner], f[inner]] < tree.thresholds[node[inner]]
        node[inner] = np.where(go, tree.left[node[inner]], tree.right[node[inner]])
    assert np.bincount(node)[np.unique(node)].min() >= min_leaf
    assert set(leaves) <= set(y)


def test_majority_leaf_and_ties_take_the_lower_knob():
    x = np.array([[0], [0], [0], [0]])
    assert learn_decision_tree(x, np.array([2, 2, 1, 3])).arrays()["tree_decisions"] == [2]
    assert learn_decision_tree(x, np.array([3, 1, 3, 1])).arrays()["tree_decisions"] == [1]


def test_noisy_labels_give_a_good_but_bounded_tree():
    x = RNG.integers(0, 100, (2000, 2))
    y = np.where(x[:, 0] < 50, 0, 2)
    flip = RNG.random(len(y)) < 0.1
    y[flip] = 1
    tree = learn_decision_tree(x, y, max_depth=3, min_samples_leaf=20)
    clean = np.where(x[:, 0] < 50, 0, 2)
    accuracy = (tree.predict(x) == clean).mean()
    assert accuracy == 1.0, accuracy  # 10% noise never wins a leaf of >= 20 samples
    assert tree.arrays()["tree_thresholds"][0] == 50


def test_learned_tree_in_ir_decides_what_the_learner_predicts():
    """3 features, 4 knob values, depth 3: JIT decisions == predict == reference walk."""
    x = RNG.integers(-50, 50, (3000, 3))
    y = np.select([x[:, 0] + x[:, 1] < -20, x[:, 2] > 25, x[:, 0] > 30], [1, 2, 3], 0)
    tree = learn_decision_tree(x, y, max_depth=3, min_samples_leaf=5)
    knobs = sorted(set(tree.leaf_decisions()) - {0})
    text = module(pick_program(3, knobs), annotation_text(tree, "pick", "feat", [1, 2, 3], "func_substitute"))
    pick = compile_module(run_pipeline(text, "approx-pipeline")).fn("pick")
    points = RNG.integers(-60, 60, (300, 3))
    a = tree.arrays()
    for f, t in zip(a["tree_features"], a["tree_thresholds"]):  # both sides of every threshold
        if f >= 0:
            for d in (-1, 0, 1):
                p = RNG.integers(-60, 60, 3)
                p[f] = t + d
                points = np.vstack([points, p])
    want = tree.predict(points)
    got = np.array([decision_of(pick(X, *map(int, p))) for p in points])
    assert (got == want).all()
    assert [tree_decision(p, *a.values()) for p in points] == list(want)
    train_accuracy = (tree.predict(x) == y).mean()
    assert train_accuracy > 0.85, train_accuracy
    assert len(set(want)) >= 3  # the points exercise several leaves


def test_emitted_text_verifies_and_respects_bounds():
    x = grid(range(10), range(10))
    y = (x[:, 0] >= 4).astype(int) * 2
    tree = learn_decision_tree(x, y)
    props = tree_properties(tree, "loop_perforate", decision_values=[0, 2, 4],
                            thresholds_lowers=[0], thresholds_uppers=[9])
    assert "tree_thresholds = array<i32: 4, 0, 0>" in props and "decision_values = array<i32: 0, 2, 4>" in props
    text = module(pick_program(2, [2]), annotation_text(tree, "pick", "feat", [1, 2], "func_substitute",
                                                         thresholds_lowers=[0], thresholds_uppers=[9]))
    parse_module(text)


@pytest.mark.parametrize("x, y, kw, message", [
    (np.zeros((3, 2)), np.zeros(3, int), {}, "features must be integers"),
    (np.zeros((3, 2), int), np.zeros(4, int), {}, "best_decisions must have shape [3]"),
    (np.zeros((0, 2), int), np.zeros(0, int), {}, "non-empty [n_samples, n_features]"),
    (np.zeros((3, 2), int), -np.ones(3, int), {}, "knob values in [0, 2**31 - 1]"),
    (np.full((3, 2), 2**40), np.zeros(3, int), {}, "features must fit in i32"),
    (np.zeros((3, 2), int), np.zeros(3, int), {"min_samples_leaf": 0}, "min_samples_leaf >= 1"),
])
def test_bad_inputs_are_one_clear_error(x, y, kw, message):
    with pytest.raises(TreeLearningError) as err:
        learn_decision_tree(x, y, **kw)
    assert message in str(err.value) and "\n" not in str(err.value)
