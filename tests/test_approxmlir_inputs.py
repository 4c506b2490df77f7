"""Inputs written in ApproxMLIR's conventions (uiuc-arc/approxMLIR, test/approxMLIR/*.mlir):
they parse at any size, run through the pipeline, and the output JIT-runs.

The programs are our own, small, in the same conventions as the files named."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from approx_dialect.context import print_module
from approx_dialect.diagnostics import ApproxError, ApproxWarning
from approx_opt import upstream_import
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from approx_opt.parsing import parse_module
from passes.knobs import knob_specs

# base1.mlir: a bare result type after iter_args, decisions [1, 2] with decision_values [0, 1]
BASE1 = """module {
"approx.util.annotation.knob"() <{func_name = "total"}> : () -> ()
"approx.util.annotation.decision_tree"() <{
    func_name = "total",
    transform_type = "loop_perforate",
    state_indices = array<i64: 0>,
    state_function = "size_state",
    num_thresholds = 1 : i32,
    thresholds_uppers = array<i32: 100>,
    thresholds_lowers = array<i32: 0>,
    decision_values = array<i32: 0, 1>,
    thresholds = array<i32: 50>,
    decisions = array<i32: 1, 2>
}> : () -> ()
func.func @size_state(%n: i32) -> i32 {
  return %n : i32
}
func.func @total(%n: i32, %xs: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %end = arith.index_cast %n : i32 to index
  %sum = scf.for %i = %c0 to %end step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %xs[%i] : memref<?xf32>
    %next = arith.addf %acc, %v : f32
    scf.yield %next : f32
  }
  return %sum : f32
}
}
"""

# loop2.mlir: a decision_tree without state_indices / state_function (the state is the
# last argument), task_skipping on a function whose last argument is an i32
LOOP2 = """module {
  "approx.util.annotation.knob"() <{func_name = "pick"}> : () -> ()
  "approx.util.annotation.decision_tree"() <{decision_values = array<i32: 0, 1>, decisions = array<i32: 0, 2>, func_name = "pick", num_thresholds = 1 : i32, thresholds = array<i32: 2>, thresholds_lowers = array<i32: 0>, thresholds_uppers = array<i32: 4>, transform_type = "task_skipping"}> : () -> ()
  func.func @pick(%out: memref<1xf32>, %x: f32, %state: i32) {
    %c0 = arith.constant 0 : index
    %big = arith.constant 1.0 : f32
    %c = arith.cmpf ogt, %x, %big : f32
    scf.if %c {
      %d = arith.addf %x, %x : f32
      memref.store %d, %out[%c0] : memref<1xf32>
    } else {
      memref.store %x, %out[%c0] : memref<1xf32>
    }
    return
  }
}
"""  # noqa: E501 (MLIR text)

# base2.mlir: a safety contract (checker and recovery take every argument of the function)
BASE2 = """module {
  func.func @recover_impl(%a: f32, %b: f32, %state: i32) -> f32 {
    %z = arith.constant 0.0 : f32
    return %z : f32
  }
  func.func @checker_impl(%result: f32, %a: f32, %b: f32, %state: i32) -> i1 {
    %limit = arith.constant 100.0 : f32
    %ok = arith.cmpf olt, %result, %limit : f32
    return %ok : i1
  }
  "approx.util.annotation.try"() <{
    func_name = "_sum", recover = "@recover_impl", checker = "@checker_impl"
  }> : () -> ()
  "approx.util.annotation.knob"() <{func_name = "_sum"}> : () -> ()
  func.func @_sum(%a: f32, %b: f32, %state: i32) -> f32 {
      %attempt = arith.addf %a, %b : f32
      return %attempt : f32
  }
}
"""

# loopwithcontrol.mlir: affine loops, tensor constants, `scf.if %c -> f32` (bare result type)
LOOPWITHCONTROL = """module {
  func.func @row_max(%m: memref<4x4xf32>, %out: memref<4xf32>, %c: i1) {
    affine.for %i = 0 to 4 {
      %init = affine.load %m[%i, 0] : memref<4x4xf32>
      %best = memref.alloca() : memref<f32>
      affine.store %init, %best[] : memref<f32>
      %table = arith.constant dense<[0, 1, 2]> : tensor<3xi32>
      affine.for %j = 1 to 4 {
        %v = affine.load %m[%i, %j] : memref<4x4xf32>
        %prev = affine.load %best[] : memref<f32>
        %gt = arith.cmpf ogt, %v, %prev : f32
        %pick = scf.if %gt -> f32 {
          scf.yield %v : f32
        } else {
          scf.yield %prev : f32
        }
        %new = arith.select %c, %pick, %prev : f32
        affine.store %new, %best[] : memref<f32>
      }
      %final = affine.load %best[] : memref<f32>
      affine.store %final, %out[%i] : memref<4xf32>
    }
    return
  }
}
"""


def padded(text: str, chars: int = upstream_import.FAST_PATH_MIN_CHARS) -> str:
    """`text` with a comment line making it longer than `chars`, so that the size
    does not decide which parser reads it."""
    return "// " + "x" * chars + "\n" + text


def jit(text: str):
    return compile_module(run_pipeline(text, "approx-pipeline"))


@pytest.mark.parametrize("text", [BASE1, LOOPWITHCONTROL], ids=["base1", "loopwithcontrol"])
def test_bare_result_types_parse_at_any_size(text):
    small = print_module(parse_module(text))
    large = print_module(parse_module(padded(text)))
    assert small == large and "scf" in small


def test_errors_keep_their_location_at_any_size():
    text = BASE1.replace("iter_args(%acc = %zero)", "iter_args(%acc = %nothing)")
    for t, line in ((text, 23), (padded(text), 24)):
        with pytest.raises(ApproxError) as info:
            parse_module(t, "b.mlir")
        assert str(info.value) == f"b.mlir:{line}:61: error: use of undefined value '%nothing'"


def test_decisions_outside_decision_values_warn_and_run():
    with pytest.warns(ApproxWarning, match="decision 2 is outside the range 0..1 of decision_values"):
        total = jit(BASE1).fn("total")
    xs = np.arange(100, dtype=np.float32)
    assert total(10, xs) == xs[:10].sum()  # state 10 < 50: decision 1 (stride 1, exact)
    assert total(60, xs) == xs[:60:2].sum()  # state 60 >= 50: decision 2 (every other element)


def test_the_tuner_searches_the_range_of_decision_values():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproxWarning)
        (spec,) = knob_specs(parse_module(BASE1))
        (ranged,) = knob_specs(parse_module(BASE1.replace("array<i32: 0, 1>", "array<i32: 0, 3>")))
    assert spec.kind == "ladder" and spec.values == (0, 1)
    assert ranged.values == (0, 1, 2, 3)


def test_the_state_defaults_to_the_last_argument():
    pick = jit(LOOP2).fn("pick")
    out = np.zeros(1, dtype=np.float32)
    pick(out, 3.0, 1)  # state 1 < 2: decision 0, exact
    assert out[0] == 6.0
    out[0] = -1.0
    pick(out, 3.0, 2)  # state 2: decision 2 keeps the second branch
    assert out[0] == 3.0


def test_without_a_state_function_the_state_argument_must_be_one_i32():
    text = LOOP2.replace("%state: i32", "%state: f32")
    with pytest.raises(ApproxError, match="without a state_function the state is the argument"):
        parse_module(text, "l.mlir")


def test_safety_contract_runs():
    fn = jit(BASE2).fn("_sum")
    assert fn(1.0, 2.0, 0) == 3.0
    assert fn(100.0, 2.0, 0) == 0.0  # checker fails: recovery


def test_affine_control_flow_runs():
    row_max = jit(LOOPWITHCONTROL).fn("row_max")
    m = np.arange(16, dtype=np.float32).reshape(4, 4)[:, ::-1].copy()
    out = np.zeros(4, dtype=np.float32)
    row_max(m, out, True)
    assert list(out) == list(m.max(axis=1))


def test_declared_runtime_functions_are_linked_from_python():
    """As in base2.mlir: the checker and recovery functions are only declared; a runtime
    gives them (`compile_module(..., externals=...)`)."""
    declared = BASE2.replace(
        BASE2[BASE2.index("  func.func @recover_impl"):BASE2.index('  "approx.util.annotation.try"')],
        "  func.func private @recover_impl(%a: f32, %b: f32, %state: i32) -> f32\n"
        "  func.func private @checker_impl(%result: f32, %a: f32, %b: f32, %state: i32) -> i1\n")
    seen = []

    def checker(result, a, b, state):
        seen.append((result, a, b, state))
        return result < 100.0

    fn = compile_module(run_pipeline(declared, "approx-pipeline"),
                        externals={"checker_impl": checker, "recover_impl": lambda a, b, state: -1.0}).fn("_sum")
    assert fn(1.0, 2.0, 0) == 3.0 and fn(100.0, 2.0, 7) == -1.0
    assert seen == [(3.0, 1.0, 2.0, 0), (102.0, 100.0, 2.0, 7)]

    def broken(*args):
        raise ValueError("checker failed")

    fn = compile_module(run_pipeline(declared, "approx-pipeline"),
                        externals={"checker_impl": broken, "recover_impl": lambda a, b, state: -1.0}).fn("_sum")
    with pytest.raises(ValueError, match="checker failed"):
        fn(1.0, 2.0, 0)
    with pytest.raises(ApproxError, match="externals given for @nope"):
        compile_module(run_pipeline(declared, "approx-pipeline"), externals={"nope": broken})
