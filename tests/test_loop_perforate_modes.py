"""Perforation options next to ApproxMLIR's stride (`loop_perforate`, unchanged):
skip every k-th iteration, and rescaling of floating-point sums to the full trip
count. JIT-run through upstream MLIR and checked against a numpy model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module, static_transform

DATA = np.random.default_rng(5).standard_normal(64)
MODES = ["loop_perforate_modulo", "loop_perforate_rescale", "loop_perforate_modulo_rescale"]
NS = (0, 1, 2, 3, 7, 8, 37, 64)


def jit(text: str, pipeline: str = "approx-pipeline"):
    return compile_module(run_pipeline(text, pipeline))


def sum_fn(transform: str, k: int):
    return jit(module(SUM_LOOP, static_transform("sum", transform, k))).fn("sum")


def kept_indices(n: int, k: int, modulo: bool) -> np.ndarray:
    i = np.arange(n)
    if k <= 1:
        return i
    return i[i % k != k - 1] if modulo else i[::k]


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 8, 17, 18, 25])  # 18, 25: blocks run as an inner loop
def test_modulo_skips_iterations_with_i_mod_k_equal_k_minus_1(k):
    fn = sum_fn("loop_perforate_modulo", k)
    for n in NS:
        want = DATA[kept_indices(n, k, modulo=True)].sum()
        assert fn(DATA, n) == pytest.approx(want, rel=0, abs=1e-12), (k, n)


def test_modulo_by_3_keeps_two_of_every_three():
    powers = 2.0 ** np.arange(9)
    assert sum_fn("loop_perforate_modulo", 3)(powers, 9) == 1 + 2 + 8 + 16 + 64 + 128


@pytest.mark.parametrize("transform", ["loop_perforate_rescale", "loop_perforate_modulo_rescale"])
@pytest.mark.parametrize("k", [2, 3, 4, 7])
def test_rescaled_sum_of_ones_is_the_trip_count(transform, k):
    fn = sum_fn(transform, k)
    for n in range(0, 50):
        assert fn(np.ones(64), n) == float(n), (k, n)


@pytest.mark.parametrize("transform", ["loop_perforate_rescale", "loop_perforate_modulo_rescale"])
@pytest.mark.parametrize("k", [0, 1, 2, 3, 5])
def test_rescaled_sum_is_kept_sum_times_n_over_kept(transform, k):
    fn = sum_fn(transform, k)
    for n in NS:
        idx = kept_indices(n, k, modulo="modulo" in transform)
        part = DATA[idx].sum()
        want = part if len(idx) in (0, n) else part * n / len(idx)
        assert fn(DATA, n) == pytest.approx(want, rel=1e-12, abs=1e-12), (k, n)


def test_default_perforation_is_not_rescaled():
    assert sum_fn("loop_perforate", 2)(np.ones(64), 10) == 5.0


# Two iter_args: a sum written `x + acc` with a nonzero init (rescaled), and a
# product (not a sum: left as the perforated loop computes it); f32 throughout.
TWO = """
  func.func @two(%m: memref<?xf32>, %n: index) -> (f32, f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %init = arith.constant 10.0 : f32
    %one = arith.constant 1.0 : f32
    %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init, %p = %one) -> (f32, f32) {
      %v = memref.load %m[%i] : memref<?xf32>
      %s = arith.addf %v, %acc : f32
      %q = arith.mulf %p, %v : f32
      scf.yield %s, %q : f32, f32
    }
    return %r#0, %r#1 : f32, f32
  }
"""


@pytest.mark.parametrize("modulo", [False, True])
def test_only_sums_are_rescaled_from_their_init(modulo):
    name = "loop_perforate_modulo_rescale" if modulo else "loop_perforate_rescale"
    fn = jit(module(TWO, static_transform("two", name, 3))).fn("two")
    m = np.arange(1, 13, dtype=np.float32)
    idx = kept_indices(12, 3, modulo)
    s, p = fn(m, 12)
    assert s == pytest.approx(10.0 + m[idx].sum() * 12 / len(idx), rel=1e-6)
    assert p == pytest.approx(np.prod(m[idx]), rel=1e-6)


# A body with a nested region that reads the induction variable (cloned per kept
# iteration): even iterations add, odd ones subtract.
SIGNED = """
  func.func @alt(%m: memref<?xf64>, %n: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
      %v = memref.load %m[%i] : memref<?xf64>
      %odd = arith.remui %i, %c2 : index
      %is_odd = arith.cmpi ne, %odd, %c0 : index
      %w = scf.if %is_odd -> (f64) {
        %neg = arith.negf %v : f64
        scf.yield %neg : f64
      } else {
        scf.yield %v : f64
      }
      %s = arith.addf %acc, %w : f64
      scf.yield %s : f64
    }
    return %r : f64
  }
"""


@pytest.mark.parametrize("k", [3, 5, 20])
def test_modulo_with_a_nested_region_in_the_body(k):
    fn = jit(module(SIGNED, static_transform("alt", "loop_perforate_modulo", k))).fn("alt")
    signs = np.where(np.arange(64) % 2 == 1, -1.0, 1.0)
    for n in NS:
        idx = kept_indices(n, k, modulo=True)
        assert fn(DATA, n) == pytest.approx((DATA * signs)[idx].sum(), rel=0, abs=1e-12), (k, n)


# Integer-typed loop, step 2 from lb 1: iterations are 1, 3, 5, ... (counted 0, 1, 2, ...).
SUM_I64 = """
  func.func @odd(%m: memref<?xf64>, %ub: i64) -> f64 {
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c1 to %ub step %c2 iter_args(%acc = %z) -> (f64) : i64 {
      %j = arith.index_cast %i : i64 to index
      %v = memref.load %m[%j] : memref<?xf64>
      %s = arith.addf %acc, %v : f64
      scf.yield %s : f64
    }
    return %r : f64
  }
"""


@pytest.mark.parametrize("transform", MODES)
def test_integer_typed_loop_with_offset_and_step(transform):
    fn = jit(module(SUM_I64, static_transform("odd", transform, 3))).fn("odd")
    for ub in (0, 1, 2, 8, 15, 40):
        its = np.arange(1, ub, 2)
        idx = kept_indices(len(its), 3, modulo="modulo" in transform)
        part = DATA[its[idx]].sum()
        want = part if "rescale" not in transform or len(idx) in (0, len(its)) else part * len(its) / len(idx)
        assert fn(DATA, ub) == pytest.approx(want, rel=1e-12, abs=1e-12), (transform, ub)


def test_modes_follow_a_decision_tree():
    text = module(STATE_OF_N, SUM_LOOP,
                  decision_tree("sum", "loop_perforate_modulo_rescale", "state", [16], [0, 2], state_indices=(1,)))
    fn = jit(text).fn("sum")
    assert fn(DATA, 15) == pytest.approx(DATA[:15].sum(), abs=1e-12)
    assert fn(np.ones(64), 40) == 40.0
    assert fn(DATA, 40) == pytest.approx(DATA[:40:2].sum() * 2, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=0, max_size=40), st.sampled_from(MODES),
       st.sampled_from([0, 1]), st.booleans())
def test_knob_zero_and_one_are_the_unannotated_program(values, transform, k, tree):
    data = np.array(values + [0.0], dtype=np.float64)
    n = len(values)
    plain = jit(module(SUM_LOOP), "").fn("sum")(data, n)
    ann = (decision_tree("sum", transform, "state", [3], [k, k], state_indices=(1,), values=[0, 1, 2]) if tree
           else static_transform("sum", transform, k))
    assert jit(module(STATE_OF_N, SUM_LOOP, ann)).fn("sum")(data, n) == plain


NO_LOOP = """
  func.func @f(%x: f64) -> f64 {
    return %x : f64
  }
"""


@pytest.mark.parametrize("transform", MODES)
def test_a_knob_without_a_loop_is_one_clear_error(transform):
    with pytest.raises(ApproxError) as err:
        run_pipeline(module(NO_LOOP, static_transform("f", transform, 2)), "approx-pipeline", filename="t.mlir")
    assert "t.mlir:" in str(err.value) and f"{transform}: no scf.for in the region of this knob" in str(err.value)


def test_unknown_mode_names_the_known_ones():
    with pytest.raises(ApproxError, match="unknown transform_type 'loop_perforate_mod'.*loop_perforate_modulo"):
        run_pipeline(module(SUM_LOOP, static_transform("sum", "loop_perforate_mod", 2)), "approx-pipeline")
