"""Small approx programs shared by the tests, in ApproxMLIR's annotation format.

`ladder(...)`, `annotated_sum(...)` etc. build text so that each test states only
what it varies."""

from __future__ import annotations


def decision_tree(func, transform, state_fn, thresholds, decisions, state_indices=(0,),
                  lowers=(0,), uppers=(1000,), values=None) -> str:
    values = values if values is not None else sorted(set(decisions) | {0})
    arr = lambda xs, t="i32": f"array<{t}: {', '.join(map(str, xs))}>" if xs else f"array<{t}>"  # noqa: E731
    return (
        f'"approx.util.annotation.decision_tree"() <{{func_name = "{func}", transform_type = "{transform}", '
        f'state_indices = {arr(state_indices, "i64")}, state_function = "{state_fn}", '
        f"num_thresholds = {len(thresholds)} : i32, thresholds_uppers = {arr(uppers)}, "
        f"thresholds_lowers = {arr(lowers)}, decision_values = {arr(values)}, "
        f"thresholds = {arr(thresholds)}, decisions = {arr(decisions)}}}> : () -> ()"
    )


def static_transform(func, transform, knob) -> str:
    return (
        f'"approx.util.annotation.transform"() <{{func_name = "{func}", '
        f'transform_type = "{transform}", knob_val = {knob} : i32}}> : () -> ()'
    )


SUM_LOOP = """
  func.func @sum(%m: memref<?xf64>, %n: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
      %v = memref.load %m[%i] : memref<?xf64>
      %s = arith.addf %acc, %v : f64
      scf.yield %s : f64
    }
    return %r : f64
  }
"""

STATE_OF_N = """
  func.func @state(%n: index) -> i32 {
    %c = arith.index_cast %n : index to i32
    return %c : i32
  }
"""


def module(*parts: str) -> str:
    return "module {\n" + "\n".join(parts) + "\n}\n"
