"""loop_truncate (early exit), JIT-run through upstream MLIR: knob k runs exactly
the first ceil(n / k) iterations, for dynamic bounds, integer-typed loops and
decision trees; knob 0 (and 1) is the unannotated program."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module, static_transform

DATA = np.random.default_rng(11).standard_normal(64)


def jit(text: str, pipeline: str = "approx-pipeline"):
    return compile_module(run_pipeline(text, pipeline))


def truncated_sum(k: int):
    return jit(module(SUM_LOOP, static_transform("sum", "loop_truncate", k))).fn("sum")


def test_half_of_eight_iterations_sums_iterations_0_to_3():
    ones_then_tens = np.array([1.0, 2.0, 4.0, 8.0, 100.0, 200.0, 400.0, 800.0])
    assert truncated_sum(2)(ones_then_tens, 8) == 15.0


def test_odd_trip_counts_round_up():
    fn = truncated_sum(2)
    assert fn(np.ones(16), 7) == 4.0  # ceil(7 / 2)
    assert fn(np.ones(16), 1) == 1.0
    assert fn(np.ones(16), 0) == 0.0


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 8, 100])
def test_truncation_sums_the_first_ceil_n_over_k_iterations(k):
    fn = truncated_sum(k)
    for n in (0, 1, 2, 7, 8, 37, 64):
        kept = n if k <= 1 else math.ceil(n / k)
        assert fn(DATA, n) == pytest.approx(DATA[:kept].sum(), rel=0, abs=1e-12), (k, n)


# Integer-typed loop (i32 bounds, lb and step not 0 / 1): sum of the induction variable.
SUM_IV = """
  func.func @iv(%lb: i32, %ub: i32, %s: i32) -> i32 {
    %z = arith.constant 0 : i32
    %r = scf.for %i = %lb to %ub step %s iter_args(%acc = %z) -> (i32) : i32 {
      %t = arith.addi %acc, %i : i32
      scf.yield %t : i32
    }
    return %r : i32
  }
"""


@pytest.mark.parametrize("k", [0, 2, 3])
def test_integer_typed_loop_with_offset_and_step(k):
    fn = jit(module(SUM_IV, static_transform("iv", "loop_truncate", k))).fn("iv")
    for lb, ub, s in [(5, 40, 3), (-7, 8, 2), (10, 10, 1), (10, 3, 1), (0, 1, 5), (-20, -3, 4)]:
        its = list(range(lb, ub, s))
        kept = its if k <= 1 else its[: math.ceil(len(its) / k)]
        assert fn(lb, ub, s) == sum(kept), (k, lb, ub, s)


def test_decision_tree_truncates_long_inputs_only():
    """state = n: n < 16 exact, 16 <= n < 32 half, n >= 32 a quarter."""
    text = module(STATE_OF_N, SUM_LOOP, decision_tree("sum", "loop_truncate", "state", [16, 32], [0, 2, 4],
                                                      state_indices=(1,)))
    fn = jit(text).fn("sum")
    for n, kept in [(8, 8), (15, 15), (16, 8), (31, 16), (32, 8), (64, 16)]:
        assert fn(DATA, n) == pytest.approx(DATA[:kept].sum(), abs=1e-12), n


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=40), st.sampled_from(["static", "tree"]))
def test_knob_zero_is_the_unannotated_program(values, how):
    data = np.array(values + [0.0], dtype=np.float64)
    n = len(values)
    plain = jit(module(SUM_LOOP), "").fn("sum")(data, n)
    ann = (static_transform("sum", "loop_truncate", 0) if how == "static" else
           decision_tree("sum", "loop_truncate", "state", [3], [0, 0], state_indices=(1,), values=[0, 2]))
    got = jit(module(STATE_OF_N, SUM_LOOP, ann)).fn("sum")(data, n)
    assert got == plain


NO_LOOP = """
  func.func @f(%x: f64) -> f64 {
    return %x : f64
  }
"""


@pytest.mark.parametrize(
    "text, message",
    [
        (module(NO_LOOP, static_transform("f", "loop_truncate", 2)),
         "loop_truncate: no scf.for in the region of this knob to rewrite"),
        (module(SUM_LOOP, static_transform("nope", "loop_truncate", 2)), "function 'nope'"),
        (module(SUM_LOOP, static_transform("sum", "loop_truncate", -1)), "knob_val must be >= 0"),
        (module(SUM_LOOP, static_transform("sum", "loop_truncat", 2)), "unknown transform_type 'loop_truncat'"),
    ],
)
def test_bad_annotations_give_one_clear_error(text, message):
    with pytest.raises(ApproxError) as err:
        run_pipeline(text, "approx-pipeline", filename="t.mlir")
    assert message in str(err.value)
    assert str(err.value).startswith("t.mlir:")
