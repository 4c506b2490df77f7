"""Multi-feature decision trees (`approx.decide_tree`, `decision_tree_multi`): the
JIT-run program takes the leaf's decision on every side of every threshold
(a feature equal to a threshold goes right), all-0 leaves are exact, and each
malformed tree is one clear error."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_dialect import tree_decision
from approx_dialect.context import parse_module, print_module
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from tests.tree_programs import (
    ARRAYS,
    X,
    decision_of,
    leaf,
    pick_module,
    sum2_module,
    tree,
    tree_props,
)

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
RNG = np.random.default_rng(11)
DATA = RNG.standard_normal(256)


def jit(text: str, pipeline: str = "approx-pipeline"):
    return compile_module(run_pipeline(text, pipeline))


# a < 5 ? (b < 3 ? 0 : 1) : (b < 7 ? 2 : 3)
GRID = tree((0, 5, 1, 4, 0), (1, 3, 2, 3, 0), leaf(0), leaf(1), (1, 7, 5, 6, 0), leaf(2), leaf(3))


def grid_rule(a: int, b: int) -> int:
    return (0 if b < 3 else 1) if a < 5 else (2 if b < 7 else 3)


@pytest.mark.parametrize("a", [I32_MIN, -1, 4, 5, 6, I32_MAX])
def test_two_feature_tree_on_every_side_of_each_threshold(a):
    pick = jit(pick_module(GRID, 2)).fn("pick")
    for b in (I32_MIN, 2, 3, 4, 6, 7, 8, I32_MAX):
        want = grid_rule(a, b)
        assert tree_decision((a, b), *(GRID[n] for n in ARRAYS)) == want
        assert decision_of(pick(X, a, b)) == want, (a, b)


def test_leaves_sharing_a_decision_and_a_root_leaf():
    # f1 < 10 -> 2; else f0 < 5 -> 0 else 2 (knob 2 written at two leaves)
    shared = tree((1, 10, 1, 2, 0), leaf(2), (0, 5, 3, 4, 0), leaf(0), leaf(2))
    pick = jit(pick_module(shared, 2)).fn("pick")
    got = {(a, b): decision_of(pick(X, a, b)) for a in (4, 5) for b in (9, 10)}
    assert got == {(4, 9): 2, (5, 9): 2, (4, 10): 0, (5, 10): 2}
    one_leaf = jit(pick_module(tree(leaf(3)), 2)).fn("pick")
    assert [decision_of(one_leaf(X, a, -a)) for a in (-9, 0, 9)] == [3, 3, 3]


@pytest.mark.parametrize("n, m, stride",
                         [(0, 0, 1), (99, 19, 1), (99, 20, 2), (100, 19, 3), (100, 20, 4), (256, -7, 3)])
def test_perforation_stride_follows_the_tree(n, m, stride):
    """n < 100 ? (m < 20 ? exact : 2) : (m < 20 ? 3 : 4), on the real sum loop."""
    t = tree((0, 100, 1, 4, 0), (1, 20, 2, 3, 0), leaf(0), leaf(2), (1, 20, 5, 6, 0), leaf(3), leaf(4))
    got = jit(sum2_module(t)).fn("sum")(DATA, n, m)
    assert got == pytest.approx(DATA[:n][::stride].sum(), abs=1e-12)


OP_FORM = f'''
  func.func @g(%x: i32, %a: i32, %b: i32) -> i32 {{
    %0 = "approx.knob"(%x, %a, %b) <{{id = 0 : i32, rf = 0 : i32, QoS_in = array<i32>, QoS_out = array<i32>}}> ({{
      "approx.decide_tree"(%a, %b) <{{{tree_props(GRID, 2, [0, 1, 2, 3], "loop_perforate")}}}> ({{
      ^bb0(%s: i32, %t: i32):
        approx.yield %s, %t : i32, i32
      }}) : (i32, i32) -> ()
      %c0 = arith.constant 0 : index
      %c8 = arith.constant 8 : index
      %c1 = arith.constant 1 : index
      %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %x) -> (i32) {{
        %one = arith.constant 1 : i32
        %s = arith.addi %acc, %one : i32
        scf.yield %s : i32
      }}
      approx.yield %r : i32
    }}) : (i32, i32, i32) -> i32
    return %0 : i32
  }}'''


def test_the_op_form_runs_without_the_annotation():
    g = jit(f"module {{{OP_FORM}\n}}").fn("g")
    # 8 iterations at stride k (k <= 1: all 8) add ceil(8 / k) to x
    for a, b in [(4, 2), (4, 3), (5, 6), (5, 7)]:
        k = grid_rule(a, b)
        assert g(100, a, b) == 100 + (8 if k <= 1 else -(-8 // k))


def test_round_trip_and_upstream_irdl_accept_the_new_ops():
    ir = pytest.importorskip("torch_mlir.ir")
    from approx_dialect.irdl_export import load_upstream

    ctx = ir.Context()
    keep = load_upstream(ctx)
    # (the op form's knob has only i32 operands: upstream IRDL binds one type to
    # all values of a variadic, so knobs over mixed argument types fail there)
    for text in (pick_module(GRID, 2), f"module {{{OP_FORM}\n}}"):
        once = print_module(parse_module(text), generic=True)
        assert print_module(parse_module(once), generic=True) == once
        out = print_module(parse_module(text), generic=True, props_as_attrs=True)
        assert ir.Module.parse(out, context=ctx).operation.verify()
    del keep


# ------------------------------------------------ knob 0 everywhere is exact


@st.composite
def zero_trees(draw, depth: int = 0):
    """Random tree shapes over 2 features, every leaf deciding 0, as nested tuples."""
    if depth >= 3 or draw(st.booleans()):
        return ("leaf",)
    return (draw(st.integers(0, 1)), draw(st.integers(-5, 300)),
            draw(zero_trees(depth + 1)), draw(zero_trees(depth + 1)))


def flatten(node, rows=None) -> list:
    rows = [] if rows is None else rows
    i = len(rows)
    rows.append(None)
    if node[0] == "leaf":
        rows[i] = leaf(0)
    else:
        f, t, lo, hi = node
        left = len(rows)
        flatten(lo, rows)
        right = len(rows)
        flatten(hi, rows)
        rows[i] = (f, t, left, right, 0)
    return rows


@functools.cache
def plain_sum():
    return jit(sum2_module(None), "").fn("sum")


@settings(max_examples=25, deadline=None)
@given(shape=zero_trees(), n=st.integers(0, 256), m=st.integers(I32_MIN, I32_MAX))
def test_all_zero_leaves_equal_the_unannotated_program(shape, n, m):
    t = tree(*flatten(shape))
    got = jit(sum2_module(t, values=[0, 2, 3])).fn("sum")(DATA, n, m)
    assert got == plain_sum()(DATA, n, m)  # bit-identical


# ------------------------------------------------ malformed trees: one error each

STUMP = tree((0, 5, 1, 2, 0), leaf(0), leaf(2))  # a < 5 ? 0 : 2


def with_(t: dict, **changes) -> dict:
    return {**t, **changes}


MALFORMED = [
    (with_(STUMP, tree_left=[1, -1]), {},
     "tree arrays must have equal lengths, got tree_features 3, tree_thresholds 3, tree_left 2"),
    ({n: [] for n in ARRAYS}, {}, "the tree has no nodes"),
    (with_(STUMP, tree_right=[7, -1, -1]), {}, "node 0: tree_right = 7 is out of range (the tree has 3 nodes, 0..2)"),
    (with_(STUMP, tree_features=[2, -1, -1]), {}, "node 0 tests feature 2 but there are 2 features (0..1)"),
    (with_(STUMP, tree_left=[1, 0, -1], tree_features=[0, -1, -1]), {},
     "node 1 is a leaf (tree_features = -1) but has children"),
    (tree((0, 5, 1, 2, 0), (1, 3, 0, 3, 0), leaf(0), leaf(1)), {}, "node 0 is the root but node 1 names it as a child"),
    (tree((0, 5, 1, 2, 0), (1, 3, 3, 2, 0), leaf(0), leaf(1)), {}, "node 2 is a child of both node 0 and node 1"),
    (tree((0, 5, 1, 1, 0), leaf(0)), {}, "node 0 has node 1 as both its left and right child"),
    (tree(leaf(0), (0, 1, 2, 3, 0), (0, 2, 1, 4, 0), leaf(0), leaf(0)), {}, "the tree has a cycle: 1 -> 2 -> 1"),
    (tree(leaf(0), leaf(1)), {}, "node 1 is not reachable from the root (node 0)"),
    (with_(STUMP, tree_decisions=[0, 0, 5]), {"values": [0, 2]},
     "leaf 2 decides 5, which is not among decision_values [0, 2]"),
    (STUMP, {"lowers": [0], "uppers": [4]}, "node 0: threshold 5 of feature 0 is outside its range [0, 4]"),
    (STUMP, {"lowers": [0, 0, 0]}, "thresholds_lowers has 3 entries; give none, one, or one per feature (2)"),
    (STUMP, {"values": []}, "decision_values is empty"),
]


@pytest.mark.parametrize("t, kw, message", MALFORMED)
def test_malformed_annotation_is_one_clear_error(t, kw, message):
    with pytest.raises(ApproxError) as err:
        parse_module(pick_module(t, 2, **kw), "t.mlir")
    line = str(err.value)
    assert message in line and line.startswith("t.mlir:") and "\n" not in line


def test_malformed_op_is_reported_at_the_op():
    text = run_pipeline(pick_module(STUMP, 2), "pre-emit-transform,emit-approx,emit-management")
    bad = text.replace("tree_right = array<i32: 2, -1, -1>", "tree_right = array<i32: 9, -1, -1>")
    want = r"t.mlir:\d+:\d+: error: 'approx.decide_tree' op node 0: tree_right = 9 is out of range"
    with pytest.raises(ApproxError, match=want):
        parse_module(bad, "t.mlir")


@pytest.mark.parametrize("old, new, message", [
    ("return %s0, %s1 : i32, i32", "return %s0 : i32",
     "state function 'feat' must return 2 i32 (num_features), returns (i32)"),
    ('transform_type = "func_substitute"', 'transform_type = "loop_unroll"', "unknown transform_type 'loop_unroll'"),
    ("state_indices = array<i64: 1, 2>", "state_indices = array<i64: 1, 9>", "state index 9 is out of range"),
    ('func_name = "pick", state_indices', 'func_name = "nope", state_indices',
     "function 'nope' named by approx.util.annotation.decision_tree_multi"),
    ("num_features = 2 : i32", "num_features = 0 : i32", "num_features must be >= 1, got 0"),
])
def test_annotation_context_errors(old, new, message):
    text = pick_module(STUMP, 2)
    if old.startswith("return"):
        text = text.replace("-> (i32, i32)", "-> (i32)")
    assert old in text
    with pytest.raises(ApproxError) as err:
        parse_module(text.replace(old, new), "t.mlir")
    assert message in str(err.value)


def test_state_region_must_yield_num_features_i32():
    text = run_pipeline(pick_module(STUMP, 2), "pre-emit-transform,emit-approx,emit-management")
    m = re.search(r"approx\.yield (%\w+), (%\w+) : i32, i32", text)
    assert m, text
    bad = text.replace(m.group(0), f"approx.yield {m.group(1)} : i32")
    want = r"approx.decide_tree \(num_features = 2\) state region yields \(i32\) but \(i32, i32\) is expected"
    with pytest.raises(ApproxError, match=want):
        parse_module(bad)


def test_ladder_programs_are_unchanged():
    """The 1-D ladder keeps its op and its lowering: no decide_tree appears."""
    from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module

    text = module(STATE_OF_N, SUM_LOOP,
                  decision_tree("sum", "loop_perforate", "state", [5], [0, 2], state_indices=(1,)))
    out = run_pipeline(text, "pre-emit-transform,emit-approx,emit-management")
    assert '"approx.decide"' in out and "decide_tree" not in out
