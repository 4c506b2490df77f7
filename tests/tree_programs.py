"""Programs for the multi-feature decision tree tests (`approx.decide_tree`,
`decision_tree_multi`): `pick` returns which knob value ran, so a test can read
the tree's decision off the result."""

from __future__ import annotations

from collections.abc import Sequence

from tests.programs import SUM_LOOP, module

ARRAYS = ("tree_features", "tree_thresholds", "tree_left", "tree_right", "tree_decisions")


def arr(xs: Sequence[int], t: str = "i32") -> str:
    return f"array<{t}: {', '.join(map(str, xs))}>" if len(xs) else f"array<{t}>"


def tree_props(tree: dict, num_features: int, values: Sequence[int], transform: str,
               lowers: Sequence[int] = (), uppers: Sequence[int] = ()) -> str:
    parts = [f"num_features = {num_features} : i32"]
    parts += [f"{name} = {arr(tree[name])}" for name in ARRAYS]
    parts += [f"thresholds_lowers = {arr(lowers)}", f"thresholds_uppers = {arr(uppers)}",
              f"decision_values = {arr(values)}", f'transform_type = "{transform}"']
    return ", ".join(parts)


def multi_annotation(func: str, transform: str, state_fn: str, state_indices: Sequence[int],
                     tree: dict, num_features: int, values: Sequence[int] | None = None, **bounds) -> str:
    leaves = [d for f, d in zip(tree["tree_features"], tree["tree_decisions"]) if f < 0]
    values = values if values is not None else sorted({0, *leaves})
    return (
        f'"approx.util.annotation.decision_tree_multi"() <{{func_name = "{func}", '
        f'state_indices = {arr(state_indices, "i64")}, state_function = "{state_fn}", '
        f"{tree_props(tree, num_features, values, transform, **bounds)}}}> : () -> ()"
    )


def tree(*nodes: tuple[int, int, int, int, int]) -> dict:
    """Nodes as (feature, threshold, left, right, decision) rows -> the five arrays."""
    return {name: [n[i] for n in nodes] for i, name in enumerate(ARRAYS)}


def leaf(d: int) -> tuple[int, int, int, int, int]:
    return (-1, 0, -1, -1, d)


def pick_program(num_features: int, knobs: Sequence[int] = (1, 2, 3)) -> str:
    """@pick(x: f64, s0..s{F-1}: i32) returns x*x exactly; approx_pick_k returns k.
    @feat returns the i32 arguments unchanged (the features)."""
    params = ", ".join(f"%s{i}: i32" for i in range(num_features))
    types = ", ".join(["i32"] * num_features)
    vals = ", ".join(f"%s{i}" for i in range(num_features))
    parts = [f"""
  func.func @pick(%x: f64, {params}) -> f64 {{
    %y = arith.mulf %x, %x : f64
    return %y : f64
  }}
  func.func @feat({params}) -> ({types}) {{
    return {vals} : {types}
  }}"""]
    for k in knobs:
        parts.append(f"""
  func.func @approx_pick_{k}(%x: f64, {params}) -> f64 {{
    %c = arith.constant {float(k)} : f64
    return %c : f64
  }}""")
    parts.append('"approx.util.annotation.convert_to_call"() <{func_name = "pick"}> : () -> ()')
    return "\n".join(parts)


X = 0.5  # pick(X, ...) is 0.25 exactly when knob 0 runs


def decision_of(result: float) -> int:
    return 0 if result == X * X else int(result)


def pick_module(t: dict, num_features: int, **kw) -> str:
    knobs = sorted({d for d in t["tree_decisions"] if d > 0} | {1})
    return module(
        pick_program(num_features, knobs),
        multi_annotation("pick", "func_substitute", "feat", range(1, num_features + 1), t, num_features, **kw),
    )


SUM2_STATE = """
  func.func @feat2(%n: index, %m: i32) -> (i32, i32) {
    %a = arith.index_cast %n : index to i32
    return %a, %m : i32, i32
  }
"""
# @sum(buf, n) plus an unused i32 so that the tree has a second feature.
SUM2 = SUM_LOOP.replace("%n: index) -> f64", "%n: index, %k: i32) -> f64")


def sum2_module(t: dict | None, **kw) -> str:
    """Sum of buf[0:n] (loop_perforate), features (n, m); t None: unannotated."""
    if t is None:
        return module(SUM2)
    return module(SUM2, SUM2_STATE, multi_annotation("sum", "loop_perforate", "feat2", (1, 2), t, 2, **kw))
