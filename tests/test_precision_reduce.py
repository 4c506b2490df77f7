"""precision_reduce, JIT-run through upstream MLIR: knob 1 computes exactly what
numpy float32 computes op by op, knob 2 what numpy float16 computes, knob 0 is the
exact program; bad annotations give one clear error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import exact_program, run_pipeline
from approx_opt.jit import compile_module
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module, static_transform

LOW = {0: np.float64, 1: np.float32, 2: np.float16}

SQUARE = """
  func.func @sq(%x: f64) -> f64 {
    %y = arith.mulf %x, %x : f64
    return %y : f64
  }"""

NEG_ALL = """
  func.func @neg(%x: memref<?xf64>, %y: memref<?xf64>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf64>
      %r = arith.negf %v : f64
      memref.store %r, %y[%i] : memref<?xf64>
    }
    return
  }"""

BRANCHY = """
  func.func @g(%x: f64) -> f64 {
    %zero = arith.constant 0.0 : f64
    %third = arith.constant 0.333333333333 : f64
    %c = arith.cmpf ogt, %x, %zero : f64
    %r = scf.if %c -> (f64) {
      %q = math.sqrt %x : f64
      %d = arith.divf %q, %third : f64
      scf.yield %d : f64
    } else {
      %m = arith.subf %third, %x : f64
      scf.yield %m : f64
    }
    return %r : f64
  }"""

MATMUL = """
  func.func @mm(%a: tensor<?x?xf64>, %b: tensor<?x?xf64>, %c: tensor<?x?xf64>) -> tensor<?x?xf64> {
    %r = linalg.matmul ins(%a, %b : tensor<?x?xf64>, tensor<?x?xf64>)
                       outs(%c : tensor<?x?xf64>) -> tensor<?x?xf64>
    return %r : tensor<?x?xf64>
  }"""

RNG = np.random.default_rng(3)


def jit(text: str, name: str):
    return compile_module(run_pipeline(text, "approx-pipeline")).fn(name)


def reduced(func_text: str, name: str, k: int):
    return jit(module(func_text, static_transform(name, "precision_reduce", k)), name)


XS = [1.2345678901234, -3.3, 0.1, 1e-3, 257.3, 1 / 3]


@pytest.mark.parametrize("k", [0, 1, 2])
def test_square_is_the_product_in_the_lower_type(k):
    fn = reduced(SQUARE, "sq", k)
    t = LOW[k]
    for x in XS:  # 257.3**2 overflows f16: inf on both sides
        with np.errstate(over="ignore"):
            assert fn(x) == float(t(x) * t(x))


@pytest.mark.parametrize("k", [0, 1, 2])
def test_reduction_accumulates_sequentially_in_the_lower_type(k):
    fn = reduced(SUM_LOOP, "sum", k)
    data = RNG.standard_normal(500)
    t = LOW[k]
    acc = t(0)
    for v in data.astype(t):
        acc = t(acc + v)
    assert fn(data, len(data)) == float(acc)
    if k:
        assert fn(data, len(data)) != data.sum()


def test_f64_to_f16_rounds_correctly_at_ties():
    """Midpoints between f16 neighbours and values just off them (where rounding
    through f32 twice goes wrong) convert like numpy's correctly rounded cast."""
    h = RNG.integers(0, 0x7BFF, 4000).astype(np.uint16).view(np.float16)
    lo, hi = h.astype(np.float64), np.nextafter(h, np.float16(np.inf)).astype(np.float64)
    mid = (lo + hi) / 2
    x = np.concatenate([mid, mid * (1 + 2.0**-30), mid * (1 - 2.0**-30), [0.0, -0.0, 1e300, 7e4, 6e-8]])
    x = np.concatenate([x, -x, [np.inf, -np.inf, np.nan]])
    y = np.zeros_like(x)
    reduced(NEG_ALL, "neg", 2)(x, y, len(x))
    with np.errstate(over="ignore"):
        want = -x.astype(np.float16).astype(np.float64)
    assert np.array_equal(y, want, equal_nan=True)
    assert np.array_equal(np.signbit(y[:-1]), np.signbit(want[:-1]))


@pytest.mark.parametrize("k", [1, 2])
def test_if_with_sqrt_and_divide_follows_the_lower_type(k):
    fn = reduced(BRANCHY, "g", k)
    t = LOW[k]
    third = t(0.333333333333)
    for x in [2.0, 0.7, 123.456, -1.25, -0.001]:
        want = np.sqrt(t(x)) / third if x > 0 else third - t(x)
        assert fn(x) == float(t(want))


@pytest.mark.parametrize("k, rtol", [(1, 1e-5), (2, 2e-2)])
def test_linalg_matmul_on_tensors_is_the_lower_precision_matmul(k, rtol):
    a, b, c = RNG.standard_normal((7, 9)), RNG.standard_normal((9, 5)), RNG.standard_normal((7, 5))
    c_before = c.copy()
    got = reduced(MATMUL, "mm", k)(a, b, c)
    t = LOW[k]
    low = c.astype(t).astype(np.float32) + a.astype(t).astype(np.float32) @ b.astype(t).astype(np.float32)
    assert got.dtype == np.float64 and got.shape == (7, 5)
    np.testing.assert_allclose(got, low, rtol=rtol, atol=rtol * np.abs(low).max())
    exact = c + a @ b
    assert not np.array_equal(got, exact)
    assert np.array_equal(reduced(MATMUL, "mm", 0)(a, b, c), jit(module(MATMUL), "mm")(a, b, c))
    assert np.array_equal(c, c_before), "tensor arguments are values: never written"


# What torch-mlir's fx.export_and_import(..., output_type="linalg-on-tensors") gives
# for `torch.relu(a @ b).exp()` on float64 inputs.
TORCH_LINALG = """
  func.func @main(%arg0: tensor<4x5xf64>, %arg1: tensor<5x3xf64>) -> tensor<4x3xf64> {
    %cst = arith.constant 0.000000e+00 : f64
    %0 = tensor.empty() : tensor<4x3xf64>
    %1 = linalg.fill ins(%cst : f64) outs(%0 : tensor<4x3xf64>) -> tensor<4x3xf64>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<4x5xf64>, tensor<5x3xf64>) outs(%1 : tensor<4x3xf64>) -> tensor<4x3xf64>
    %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<4x3xf64>) outs(%0 : tensor<4x3xf64>) {
    ^bb0(%in: f64, %out: f64):
      %5 = arith.cmpf ugt, %in, %cst : f64
      %6 = arith.select %5, %in, %cst : f64
      linalg.yield %6 : f64
    } -> tensor<4x3xf64>
    %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%3 : tensor<4x3xf64>) outs(%0 : tensor<4x3xf64>) {
    ^bb0(%in: f64, %out: f64):
      %5 = math.exp %in : f64
      linalg.yield %5 : f64
    } -> tensor<4x3xf64>
    return %4 : tensor<4x3xf64>
  }"""  # noqa: E501 (MLIR text)


@pytest.mark.parametrize("k, rtol", [(0, 0), (1, 1e-5), (2, 2e-2)])
def test_torch_mlir_linalg_program(k, rtol):
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))
    t = LOW[k]
    a32, b32 = a.astype(t).astype(np.float32), b.astype(t).astype(np.float32)
    want = np.exp(np.maximum(a @ b, 0)) if k == 0 else np.exp(np.maximum(a32 @ b32, 0))
    got = reduced(TORCH_LINALG, "main", k)(a, b)
    np.testing.assert_allclose(got, want, rtol=rtol or 1e-15)
    if k:
        assert got.dtype == np.float64 and np.array_equal(got.astype(t).astype(np.float64), got)


def test_decision_tree_picks_the_precision_per_state():
    text = module(
        STATE_OF_N, SUM_LOOP,
        decision_tree("sum", "precision_reduce", "state", [10, 20], [0, 1, 2], state_indices=(1,)),
    )
    fn = jit(text, "sum")
    data = RNG.standard_normal(64)
    for n, t in [(5, np.float64), (15, np.float32), (30, np.float16)]:
        acc = t(0)
        for v in data[:n].astype(t):
            acc = t(acc + v)
        assert fn(data, n) == float(acc)


PROGRAMS = [(SQUARE, "sq"), (BRANCHY, "g")]


@settings(max_examples=25, deadline=None)
@given(
    x=st.floats(-1e6, 1e6, allow_nan=False),
    data=hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats(-1e3, 1e3)),
)
def test_knob_zero_is_the_unannotated_program(x, data):
    for text, name in PROGRAMS:
        exact = jit(exact_program(module(text, static_transform(name, "precision_reduce", 0))), name)
        assert reduced(text, name, 0)(x) == exact(x)
    assert reduced(SUM_LOOP, "sum", 0)(data, len(data)) == jit(module(SUM_LOOP), "sum")(data, len(data))


NO_FLOAT = """
  func.func @count(%n: index) -> index {
    %c1 = arith.constant 1 : index
    %r = arith.addi %n, %c1 : index
    return %r : index
  }"""


@pytest.mark.parametrize(
    "text, message",
    [
        (module(NO_FLOAT, static_transform("count", "precision_reduce", 1)), "no f64 floating-point op"),
        (module(NO_FLOAT, static_transform("count", "precision_reduce", 0)), "no f64 floating-point op"),
        (module(SQUARE, static_transform("sq", "precision_reduce", 3)), "knob 3 is out of range"),
        (module(SQUARE, static_transform("nope", "precision_reduce", 1)), "'nope'"),
        (module(SQUARE, static_transform("sq", "precision_reduction", 1)), "unknown transform_type"),
    ],
)
def test_bad_annotations_give_one_clear_error(text, message):
    with pytest.raises(ApproxError) as err:
        run_pipeline(text, "approx-pipeline", filename="prog.mlir")
    line = str(err.value)
    assert message in line and "\n" not in line and line.startswith("prog.mlir:")
