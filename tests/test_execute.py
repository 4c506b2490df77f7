"""The execution API: lowered, JIT-compiled functions called with Python values and numpy arrays."""

import math

import numpy as np
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.jit import PIPELINE, compile_module

SCALARS = """
func.func @add_i32(%a: i32, %b: i32) -> i32 {
  %r = arith.addi %a, %b : i32
  return %r : i32
}
func.func @mul_i64(%a: i64, %b: i64) -> i64 {
  %r = arith.muli %a, %b : i64
  return %r : i64
}
func.func @half(%a: f64) -> f64 {
  %c = arith.constant 0.5 : f64
  %r = arith.mulf %a, %c : f64
  return %r : f64
}
func.func @next(%i: index) -> index {
  %c = arith.constant 1 : index
  %r = arith.addi %i, %c : index
  return %r : index
}
func.func @neg(%b: i1) -> i1 {
  %t = arith.constant true
  %r = arith.xori %b, %t : i1
  return %r : i1
}
func.func @root(%x: f64) -> f64 {
  %r = math.sqrt %x : f64
  return %r : f64
}
func.func @scaled(%x: f32, %h: f16) -> (f32, f16) {
  %e = math.exp %x : f32
  %l = math.log %e : f32
  %c = math.cos %h : f16
  return %l, %c : f32, f16
}
func.func @divmod(%a: i64, %b: i64) -> (i64, i64) {
  %q = arith.divsi %a, %b : i64
  %r = arith.remsi %a, %b : i64
  return %q, %r : i64, i64
}
func.func private @external(i64) -> i64
"""

MEMREFS = """
func.func @sum(%m: memref<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %n = memref.dim %m, %c0 : memref<?xf64>
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> f64 {
    %v = memref.load %m[%i] : memref<?xf64>
    %a = arith.addf %acc, %v : f64
    scf.yield %a : f64
  }
  return %s : f64
}
func.func @scale(%m: memref<?x3xf32>, %k: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = memref.dim %m, %c0 : memref<?x3xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %c3 step %c1 {
      %v = memref.load %m[%i, %j] : memref<?x3xf32>
      %w = arith.mulf %v, %k : f32
      memref.store %w, %m[%i, %j] : memref<?x3xf32>
    }
  }
  return
}
func.func @iota(%n: index) -> memref<?xi64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.alloc(%n) : memref<?xi64>
  scf.for %i = %c0 to %n step %c1 {
    %v = arith.index_cast %i : index to i64
    memref.store %v, %m[%i] : memref<?xi64>
  }
  return %m : memref<?xi64>
}
func.func @corner(%m: memref<?x?xf64>) -> (memref<2x2xf64>, f64) {
  %c0 = arith.constant 0 : index
  %sv = memref.subview %m[0, 0][2, 2][1, 1] : memref<?x?xf64> to memref<2x2xf64, strided<[?, 1]>>
  %o = memref.alloc() : memref<2x2xf64>
  memref.copy %sv, %o : memref<2x2xf64, strided<[?, 1]>> to memref<2x2xf64>
  %v = memref.load %m[%c0, %c0] : memref<?x?xf64>
  return %o, %v : memref<2x2xf64>, f64
}
func.func @count_true(%m: memref<4xi1>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0 : i32
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %z) -> i32 {
    %b = memref.load %m[%i] : memref<4xi1>
    %e = arith.extui %b : i1 to i32
    %a = arith.addi %acc, %e : i32
    scf.yield %a : i32
  }
  return %s : i32
}
"""

CONTROL = """
func.func private @state(%x: f64) -> index {
  %c = arith.constant 10.0 : f64
  %b = arith.cmpf olt, %x, %c : f64
  %r = scf.if %b -> (index) {
    %z = arith.constant 0 : index
    scf.yield %z : index
  } else {
    %o = arith.constant 1 : index
    scf.yield %o : index
  }
  return %r : index
}
func.func @pick(%x: f64) -> f64 {
  %k = func.call @state(%x) : (f64) -> index
  %r = scf.index_switch %k -> f64
  case 0 {
    %s = math.sqrt %x : f64
    scf.yield %s : f64
  }
  default {
    %n = arith.negf %x : f64
    scf.yield %n : f64
  }
  return %r : f64
}
func.func @triangle(%n: i64) -> i64 {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %r:2 = scf.while (%i = %c0, %s = %c0) : (i64, i64) -> (i64, i64) {
    %c = arith.cmpi slt, %i, %n : i64
    scf.condition(%c) %i, %s : i64, i64
  } do {
  ^bb0(%i: i64, %s: i64):
    %i2 = arith.addi %i, %c1 : i64
    %s2 = arith.addi %s, %i2 : i64
    scf.yield %i2, %s2 : i64, i64
  }
  return %r#1 : i64
}
"""


@pytest.fixture(scope="module")
def scalars():
    return compile_module(SCALARS)


@pytest.fixture(scope="module")
def memrefs():
    return compile_module(MEMREFS)


def test_scalars(scalars):
    assert scalars.add_i32(2, 40) == 42
    assert scalars.mul_i64(3, 2**40) == 3 * 2**40
    assert scalars.half(3.0) == 1.5 and scalars.half(3) == 1.5
    assert scalars.next(41) == 42 and scalars.fn("next")(np.int64(1)) == 2
    assert scalars.neg(True) is False
    assert scalars.root(2.0) == math.sqrt(2.0)
    assert scalars.divmod(17, 5) == (3, 2)
    scaled, c = scalars.scaled(1.5, 0.0)
    assert scaled == pytest.approx(1.5, rel=1e-6) and c == 1.0


def test_memref_sum(memrefs):
    x = np.arange(10, dtype=np.float64)
    assert memrefs.sum(x) == 45.0
    assert memrefs.sum(x[::2]) == 20.0  # non-contiguous: passed as a contiguous copy
    assert memrefs.sum(np.zeros(0)) == 0.0


def test_memref_in_place_2d(memrefs):
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert memrefs.scale(m, 2.0) is None
    np.testing.assert_array_equal(m, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    t = np.ones((3, 2), np.float32).T.copy(order="F")[:, :]  # a Fortran-ordered view is written back
    memrefs.scale(t.T.T, 3.0)
    assert (t == 3.0).all()


def test_memref_results(memrefs):
    r = memrefs.iota(5)
    assert isinstance(r, np.ndarray) and r.dtype == np.int64
    np.testing.assert_array_equal(r, np.arange(5))
    m = np.arange(12.0).reshape(3, 4)
    o, v = memrefs.corner(m)
    np.testing.assert_array_equal(o, [[0.0, 1.0], [4.0, 5.0]])
    assert v == 0.0
    assert memrefs.count_true(np.array([True, False, True, True])) == 3


def test_results_that_are_not_fresh_allocations():
    cm = compile_module("""
memref.global "private" constant @tbl : memref<3xf16> = dense<[1.0, 2.0, 3.0]>
func.func @same(%m: memref<?xf64>) -> memref<?xf64> {
  return %m : memref<?xf64>
}
func.func @tail(%m: memref<?xf64>) -> memref<2xf64, strided<[1], offset: 1>> {
  %s = memref.subview %m[1][2][1] : memref<?xf64> to memref<2xf64, strided<[1], offset: 1>>
  return %s : memref<2xf64, strided<[1], offset: 1>>
}
func.func @table() -> memref<3xf16> {
  %g = memref.get_global @tbl : memref<3xf16>
  return %g : memref<3xf16>
}
func.func @box(%x: f64) -> memref<f64> {
  %m = memref.alloc() : memref<f64>
  memref.store %x, %m[] : memref<f64>
  return %m : memref<f64>
}
""")
    x = np.arange(4.0)
    for _ in range(3):  # the memrefs are copied out; inputs and globals are never freed
        same = cm.same(x)
        np.testing.assert_array_equal(same, x)
        assert same is not x and not np.shares_memory(same, x)
        np.testing.assert_array_equal(cm.tail(x), [1.0, 2.0])
        np.testing.assert_array_equal(cm.table(), np.array([1, 2, 3], np.float16))
        assert cm.box(2.5).shape == () and cm.box(2.5)[()] == 2.5


def test_calls_switch_if_while():
    cm = compile_module(CONTROL)
    assert cm.pick(4.0) == 2.0
    assert cm.pick(16.0) == -16.0
    assert cm.state(3.0) == 0  # private functions with a body can be called too
    assert cm.triangle(4) == 10


def test_bad_arguments(scalars, memrefs):
    with pytest.raises(ApproxError, match=r"@add_i32 takes 2 argument\(s\), got 1"):
        scalars.add_i32(1)
    with pytest.raises(ApproxError, match="@add_i32 argument 1: expected i32"):
        scalars.add_i32(1, 2.5)
    with pytest.raises(ApproxError, match="@sum argument 0: expected memref<\\?xf64>.*int32"):
        memrefs.sum(np.arange(3, dtype=np.int32))
    with pytest.raises(ApproxError, match=r"@sum argument 0: .*rank 1\), got float64 array of rank 2"):
        memrefs.sum(np.zeros((2, 2)))
    with pytest.raises(ApproxError, match="@scale argument 0: expected memref<\\?x3xf32>, got shape"):
        memrefs.scale(np.zeros((2, 4), np.float32), 1.0)
    with pytest.raises(ApproxError, match="@sum argument 0: expected a numpy array"):
        memrefs.sum([1.0, 2.0])


def test_integers_outside_their_type_are_errors_not_wrapped(scalars):
    assert scalars.mul_i64(2**62, 1) == 2**62 and scalars.mul_i64(-(2**63), 1) == -(2**63)
    with pytest.raises(ApproxError, match=r"@mul_i64 argument 0: 18446744073709551619 does not fit in i64"):
        scalars.mul_i64(2**64 + 3, 1)
    with pytest.raises(ApproxError, match=r"@mul_i64 argument 1: -9223372036854775809 does not fit in i64"):
        scalars.mul_i64(1, -(2**63) - 1)
    with pytest.raises(ApproxError, match=r"@add_i32 argument 0: 2147483648 does not fit in i32"):
        scalars.add_i32(2**31, 0)
    with pytest.raises(ApproxError, match=r"@divmod argument 0: .* does not fit in i64"):
        scalars.divmod(2**64 + 3, 2)  # the path with results in a structure
    with pytest.raises(ApproxError, match="@next argument 0: expected index, got str"):
        scalars.next("3")


def test_private_declaration_and_unknown_names(scalars):
    with pytest.raises(ApproxError, match="@external is an external declaration"):
        scalars.external(1)
    with pytest.raises(ApproxError, match="no function @nope"):
        scalars.fn("nope")
    assert getattr(scalars, "nope", None) is None


def test_errors_from_upstream():
    with pytest.raises(ApproxError, match="cannot parse"):
        compile_module("func.func @f( {")
    with pytest.raises(ApproxError, match=r"<execute>:2:\d+: error: JIT compilation failed: LLVM Translation failed"):
        compile_module("func.func @g(%a: i64) -> f32 {\n"
                       "  %r = builtin.unrealized_conversion_cast %a : i64 to f32\n  return %r : f32\n}")
    with pytest.raises(ApproxError, match="unresolved external"):
        compile_module("func.func private @nowhere_to_be_found(i64) -> i64\n"
                       "func.func @g(%a: i64) -> i64 {\n"
                       "  %r = func.call @nowhere_to_be_found(%a) : (i64) -> i64\n  return %r : i64\n}")


def test_cache_and_xdsl_input():
    assert compile_module(SCALARS) is compile_module(SCALARS)
    from approx_dialect.context import parse_module

    cm = compile_module(parse_module(CONTROL))
    assert cm.triangle(3) == 6
    assert "convert-scf-to-cf" in PIPELINE


def test_what_needs_bufferizing_is_found_in_the_ops_not_the_text():
    """A tensor-typed value or a linalg op calls for the tensor pipeline; a dense
    initializer of a memref.global (its text says `tensor<`) does not."""
    from torch_mlir import ir

    from approx_opt.jit.lowering import has_tensors

    cases = {
        'memref.global "private" constant @g : memref<2xf64> = dense<[1.0, 2.0]>\n'
        "func.func @f(%m: memref<2xf64>) -> memref<2xf64> { return %m : memref<2xf64> }": False,
        "func.func @f(%t: tensor<2xf64>) -> f64 {\n  %c = arith.constant 0 : index\n"
        "  %v = tensor.extract %t[%c] : tensor<2xf64>\n  return %v : f64\n}": True,
        "func.func @f(%a: memref<2xf64>, %b: memref<2xf64>) {\n"
        "  linalg.copy ins(%a : memref<2xf64>) outs(%b : memref<2xf64>)\n  return\n}": True,
    }
    with ir.Context(), ir.Location.unknown():
        assert {text: has_tensors(ir.Module.parse(text)) for text in cases} == cases
