"""Multi-feature decision trees: `approx.decide_tree` and the module annotation
`approx.util.annotation.decision_tree_multi`.

ApproxMLIR's `approx.decide` is a 1-D ladder on one i32 state. Here the state
yields `num_features` i32 values and a binary tree, given as parallel arrays with
node 0 the root, picks the knob value:

- `tree_features[i]`: the feature node i tests, or -1 when node i is a leaf;
- `tree_thresholds[i]`: go to `tree_left[i]` when feature < threshold, else to
  `tree_right[i]` (a feature equal to the threshold takes the right, upper side,
  as on the ladder);
- `tree_left[i]`, `tree_right[i]`: child node indices, -1 at leaves;
- `tree_decisions[i]`: the knob value at leaf i.

Thresholds of leaves and decisions of inner nodes are ignored (write 0).
`thresholds_lowers` / `thresholds_uppers` bound the thresholds of each feature:
empty (no bound), one entry (every feature) or one per feature.

The existing ladder ops are untouched: a separate op keeps every ApproxMLIR
program valid unchanged, and upstream IRDL (no optional attributes) can still
require every attribute of both ops.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, i32, i64
from xdsl.ir import Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasParent
from xdsl.utils.exceptions import VerifyException

from approx_dialect.annotations import AnnotationOp, verify_decision_annotation
from approx_dialect.ladder import verify_threshold_bounds
from approx_dialect.ops import I32Array, KnobOp, i32_array, verify_decide

TREE_ARRAYS = ("tree_features", "tree_thresholds", "tree_left", "tree_right", "tree_decisions")


def tree_decision(point: Sequence[int], features, thresholds, left, right, decisions) -> int:
    """The knob value the tree picks for one feature vector (the reference the
    lowering is tested against)."""
    node = 0
    while features[node] >= 0:
        node = left[node] if point[features[node]] < thresholds[node] else right[node]
    return decisions[node]


def _arrays(op) -> dict[str, list[int]]:
    return {name: list(getattr(op, name).get_values()) for name in TREE_ARRAYS}


def leaf_decisions(op) -> list[int]:
    """Decisions of the leaves, in node order."""
    a = _arrays(op)
    return [d for f, d in zip(a["tree_features"], a["tree_decisions"]) if f < 0]


def _check_shape(a: dict[str, list[int]]) -> int:
    lengths = {name: len(v) for name, v in a.items()}
    if len(set(lengths.values())) != 1:
        shown = ", ".join(f"{k} {v}" for k, v in lengths.items())
        raise VerifyException(f"tree arrays must have equal lengths, got {shown}")
    n = lengths["tree_features"]
    if n == 0:
        raise VerifyException(
            "the tree has no nodes; a single leaf is tree_features = array<i32: -1>"
        )
    return n


def _check_nodes(a, n: int, num_features: int, values: list[int], lowers, uppers) -> None:
    for i in range(n):
        f, t = a["tree_features"][i], a["tree_thresholds"][i]
        kids = (a["tree_left"][i], a["tree_right"][i])
        if f == -1:
            if kids != (-1, -1):
                raise VerifyException(
                    f"node {i} is a leaf (tree_features = -1) but has children "
                    f"(tree_left = {kids[0]}, tree_right = {kids[1]}); use -1 for both"
                )
            d = a["tree_decisions"][i]
            if d not in values:
                raise VerifyException(
                    f"leaf {i} decides {d}, which is not among decision_values {values}"
                )
            continue
        if not 0 <= f < num_features:
            raise VerifyException(
                f"node {i} tests feature {f} but there are {num_features} features "
                f"(0..{num_features - 1}); use -1 for a leaf"
            )
        for side, child in zip(("tree_left", "tree_right"), kids):
            if not 0 <= child < n:
                raise VerifyException(
                    f"node {i}: {side} = {child} is out of range (the tree has {n} nodes, 0..{n - 1})"
                )
        verify_threshold_bounds(t, f, lowers, uppers, f"node {i}: threshold {t} of feature {f}")


def _check_is_tree(a, n: int) -> None:
    """Every node but the root has exactly one parent and is reached from the root."""
    parent: dict[int, int] = {}
    for i in range(n):
        if a["tree_features"][i] < 0:
            continue
        left, right = a["tree_left"][i], a["tree_right"][i]
        if left == right:
            raise VerifyException(f"node {i} has node {left} as both its left and right child")
        for child in (left, right):
            if child == 0:
                raise VerifyException(f"node 0 is the root but node {i} names it as a child")
            if child in parent:
                raise VerifyException(
                    f"node {child} is a child of both node {parent[child]} and node {i}; "
                    "each node has exactly one parent"
                )
            parent[child] = i
    rooted = {0}
    for i in range(1, n):
        path, on_path = [i], {i}
        while path[-1] not in rooted:
            up = parent.get(path[-1])
            if up is None:
                raise VerifyException(f"node {path[-1]} is not reachable from the root (node 0)")
            if up in on_path:
                cycle = path[path.index(up):] + [up]
                raise VerifyException(
                    "the tree has a cycle: " + " -> ".join(str(c) for c in reversed(cycle))
                )
            path.append(up)
            on_path.add(up)
        rooted.update(path)


def verify_tree(op) -> None:
    """The tree properties of `op` (decide_tree op or decision_tree_multi annotation)."""
    a = _arrays(op)
    n = _check_shape(a)
    num_features = op.num_features.value.data
    if num_features < 1:
        raise VerifyException(f"num_features must be >= 1, got {num_features}")
    lowers = list(op.thresholds_lowers.get_values())
    uppers = list(op.thresholds_uppers.get_values())
    for name, bounds in (("thresholds_lowers", lowers), ("thresholds_uppers", uppers)):
        if len(bounds) not in (0, 1, num_features):
            raise VerifyException(
                f"{name} has {len(bounds)} entries; give none, one, or one per feature ({num_features})"
            )
    values = list(op.decision_values.get_values())
    if not values:
        raise VerifyException("decision_values is empty; list the allowed knob values")
    if any(v < 0 for v in values):
        raise VerifyException(f"decision_values must be >= 0 (0 is exact), got {values}")
    _check_nodes(a, n, num_features, values, lowers, uppers)
    _check_is_tree(a, n)


def _tree_properties(tree: dict[str, Sequence[int]], num_features: int, lowers, uppers,
                     decision_values, transform_type: str) -> dict:
    props: dict = {"num_features": IntegerAttr(num_features, i32)}
    props.update({name: i32_array(tree[name]) for name in TREE_ARRAYS})
    props.update(
        thresholds_lowers=i32_array(lowers),
        thresholds_uppers=i32_array(uppers),
        decision_values=i32_array(decision_values),
        transform_type=StringAttr(transform_type),
    )
    return props


@irdl_op_definition
class DecideTreeOp(IRDLOperation):
    """Dynamic approximation on several features: the state region yields
    `num_features` i32 values; the tree (see the module docstring) picks the knob
    value. config-approx lowers it to nested scf.if and one scf.index_switch."""

    name = "approx.decide_tree"
    state_args = var_operand_def()
    num_features = prop_def(IntegerAttr.constr(i32))
    tree_features = prop_def(I32Array)
    tree_thresholds = prop_def(I32Array)
    tree_left = prop_def(I32Array)
    tree_right = prop_def(I32Array)
    tree_decisions = prop_def(I32Array)
    thresholds_lowers = prop_def(I32Array)
    thresholds_uppers = prop_def(I32Array)
    decision_values = prop_def(I32Array)
    transform_type = prop_def(StringAttr)
    state = region_def("single_block")
    traits = traits_def(HasParent(KnobOp))

    def __init__(self, state_args: Sequence[SSAValue], state: Region, *, transform_type: str,
                 tree: dict[str, Sequence[int]], num_features: int, thresholds_lowers: Sequence[int] = (),
                 thresholds_uppers: Sequence[int] = (), decision_values: Sequence[int]):
        super().__init__(
            operands=[state_args],
            regions=[state],
            properties=_tree_properties(tree, num_features, thresholds_lowers, thresholds_uppers,
                                        decision_values, transform_type),
        )

    def verify_(self) -> None:
        n = self.num_features.value.data
        verify_decide(self, verify_tree, n, f"approx.decide_tree (num_features = {n}) state")

    def tree(self) -> dict[str, list[int]]:
        return _arrays(self)


@irdl_op_definition
class AnnotationDecisionTreeMultiOp(AnnotationOp):
    """`decision_tree` with a multi-feature tree: `state_function` takes the
    arguments at `state_indices` and returns `num_features` i32 values."""

    name = "approx.util.annotation.decision_tree_multi"
    transform_type = prop_def(StringAttr)
    state_indices = prop_def(DenseArrayBase.constr(i64))
    state_function = prop_def(StringAttr)
    num_features = prop_def(IntegerAttr.constr(i32))
    tree_features = prop_def(I32Array)
    tree_thresholds = prop_def(I32Array)
    tree_left = prop_def(I32Array)
    tree_right = prop_def(I32Array)
    tree_decisions = prop_def(I32Array)
    thresholds_lowers = prop_def(I32Array)
    thresholds_uppers = prop_def(I32Array)
    decision_values = prop_def(I32Array)

    def verify_(self) -> None:
        verify_decision_annotation(self, verify_tree, self.num_features.value.data)

    def tree(self) -> dict[str, list[int]]:
        return _arrays(self)
