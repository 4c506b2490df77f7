"""memoize, JIT-run: a call whose inputs quantise to the key of an earlier call gets
that call's result; other calls recompute; the table is direct-mapped and bounded;
knob 0 is the unannotated program; non-scalar or impure functions are refused.

Memo tables live as long as a compiled module and `compile_module` caches modules
by text, so every test uses its own function name (its own table)."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_dialect.diagnostics import ApproxError
from approx_dialect.quantize import MEMO_CAPACITY, float_word, int_word, slot_of
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from frontends.memo import QuantizedMemo
from tests.programs import decision_tree, module, static_transform


def kernel(name: str) -> str:
    """name(x, n) = 3x + n: injective, so a result tells which input computed it."""
    return f"""
  func.func @{name}(%x: f64, %n: i32) -> f64 {{
    %c = arith.constant 3.0 : f64
    %y = arith.mulf %x, %c : f64
    %m = arith.sitofp %n : i32 to f64
    %z = arith.addf %y, %m : f64
    return %z : f64
  }}"""


def memoized(name: str, k: int, *extra: str):
    return compile_module(run_pipeline(module(kernel(name), *extra, static_transform(name, "memoize", k)),
                                       "approx-pipeline")).fn(name)


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


@pytest.mark.parametrize("k", [1, 8, 20, 33, 52])
def test_inputs_of_one_bucket_reuse_the_first_result_others_recompute(k):
    f = memoized(f"bucket{k}", k)
    first = 1.5  # 1.5 has no low mantissa bits set: the first value of its bucket
    last = from_bits(bits(first) | ((1 << k) - 1))  # the last value of the same bucket
    beyond = from_bits(bits(first) + (1 << k))  # the first value of the next bucket
    assert float_word(first, k) == float_word(last, k) != float_word(beyond, k)
    assert f(first, 2) == 3 * first + 2
    assert f(last, 2) == 3 * first + 2  # reused: not 3 * last + 2
    assert f(beyond, 2) == 3 * beyond + 2  # recomputed
    assert f(last, 3) == 3 * last + 3  # the integer input is compared exactly


def test_nearby_inputs_reuse_at_coarse_knob_and_recompute_at_fine_knob():
    """k = 40: inputs in [1, 2) agreeing to 2^-12 ~ 2.4e-4 share a key."""
    coarse, fine = memoized("near40", 40), memoized("near10", 10)
    assert coarse(1.0, 0) == 3.0
    assert coarse(1.0001, 0) == 3.0
    assert coarse(1.001, 0) == pytest.approx(3.003, abs=1e-12)
    assert fine(1.0, 0) == 3.0
    assert fine(1.0001, 0) == pytest.approx(3.0003, abs=1e-12)
    assert coarse(-1.0001, 0) == pytest.approx(-3.0003, abs=1e-12)  # the sign is kept


def test_table_is_direct_mapped_and_bounded():
    """Two keys of one slot evict each other; the table has 1024 entries whatever
    the number of distinct inputs."""
    k = 10
    text = run_pipeline(module(kernel("evict"), static_transform("evict", "memoize", k)), "approx-pipeline")
    assert text.count(f"memref<{MEMO_CAPACITY}x") >= 3 and "memref<?" not in text
    f = compile_module(text).fn("evict")
    a = 1.25
    key = lambda x: [float_word(x, k), int_word(0, 32)]  # noqa: E731
    b = next(x for x in np.linspace(1.3, 1.9, 20000) if slot_of(key(x)) == slot_of(key(a)))
    a_near = from_bits(bits(a) + 1)
    assert f(a, 0) == 3 * a
    assert f(a_near, 0) == 3 * a  # hit
    assert f(b, 0) == 3 * b  # same slot, other key: replaces a's entry
    assert f(a_near, 0) == 3 * a_near  # a was evicted: recomputed
    xs = np.linspace(-50, 50, 5 * MEMO_CAPACITY)
    assert all(f(x, 1) == 3 * x + 1 for x in xs)  # 5x more keys than entries: no stale hit


def test_jit_table_and_python_memo_agree_call_by_call():
    """One definition of k: the kernel and QuantizedMemo hit on the same calls of a stream."""
    k = 30
    rng = np.random.default_rng(3)
    centres = rng.uniform(-4, 4, 300)
    stream = centres[rng.integers(0, 300, 3000)] * (1 + rng.uniform(-1e-9, 1e-9, 3000))
    ns = rng.integers(0, 3, 3000)
    f = memoized("agree", k)
    py = QuantizedMemo(k)(lambda x, n: x * 3.0 + float(n))
    jit_out = [f(float(x), int(n)) for x, n in zip(stream, ns)]
    py_out = [py(float(x), int(n)) for x, n in zip(stream, ns)]
    assert jit_out == py_out
    reused = sum(y != 3 * x + n for y, x, n in zip(jit_out, stream, ns))
    assert reused > 1000 and py.memo.hits >= reused


F32 = """
  func.func @g(%x: f32, %i: index) -> f32 {
    %c = arith.index_cast %i : index to i32
    %ci = arith.sitofp %c : i32 to f32
    %y = arith.mulf %x, %ci : f32
    return %y : f32
  }"""


def test_f32_and_index_inputs():
    """k = 23 drops every f32 mantissa bit: one key per binade and sign; index exact."""
    g = compile_module(run_pipeline(module(F32, static_transform("g", "memoize", 23)), "approx-pipeline")).fn("g")
    assert g(1.0, 3) == 3.0
    assert g(1.75, 3) == 3.0
    assert g(2.5, 3) == 7.5
    assert g(1.75, 4) == 7.0


def test_decision_tree_memoizes_only_where_it_decides_so():
    """n < 10: exact; 10 <= n < 20: k = 20; n >= 20: k = 52 (one key per binade);
    each memoizing case has its own table."""
    state = """
  func.func @mstate(%x: f64, %n: i32) -> i32 {
    return %n : i32
  }"""
    text = run_pipeline(module(kernel("dyn"), state, decision_tree(
        "dyn", "memoize", "mstate", [10, 20], [0, 20, 52], state_indices=(0, 1), values=[0, 20, 52])),
        "approx-pipeline")
    assert "__approx_memo_dyn_0_val0" in text and "__approx_memo_dyn_1_val0" in text
    f = compile_module(text).fn("dyn")
    assert f(1.0, 22) == 25.0
    assert f(1.5, 22) == 25.0  # k = 52
    assert f(1.0, 12) == 15.0
    assert f(1.5, 12) == 16.5  # k = 20: 1.5 is another key
    assert f(1.5 + 1e-12, 12) == 16.5
    assert f(1.0, 3) == 6.0
    assert f(1.0 + 1e-12, 3) == 3 * (1.0 + 1e-12) + 3  # exact: recomputed


BASE = compile_module(run_pipeline(module(kernel("exact")), "")).fn("exact")
STATE = """
  func.func @st(%x: f64, %n: i32) -> i32 {
    return %n : i32
  }"""
STATIC0 = memoized("exact", 0)
DYNAMIC0 = compile_module(run_pipeline(
    module(kernel("exact"), STATE, decision_tree("exact", "memoize", "st", [0], [0, 0], state_indices=(0, 1),
                                                 lowers=(-1000,), values=[0, 30])), "approx-pipeline")).fn("exact")


@settings(max_examples=25, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64), st.integers(-(2**31), 2**31 - 1))
def test_knob_zero_is_the_unannotated_program(x, n):
    want = BASE(x, n)
    assert STATIC0(x, n) == want
    assert DYNAMIC0(x, n) == STATIC0(x, n)


SUM = """
  func.func @sum(%m: memref<?xf64>, %n: index) -> f64 {
    %z = arith.constant 0.0 : f64
    return %z : f64
  }"""
WRITES = """
  "memref.global"() <{sym_name = "counter", type = memref<1xf64>, initial_value = dense<0.0> : tensor<1xf64>, sym_visibility = "private"}> : () -> ()
  func.func @bump(%x: f64) -> f64 {
    %g = memref.get_global @counter : memref<1xf64>
    %c0 = arith.constant 0 : index
    memref.store %x, %g[%c0] : memref<1xf64>
    return %x : f64
  }
  func.func @h(%x: f64) -> f64 {
    %y = func.call @bump(%x) : (f64) -> f64
    return %y : f64
  }"""  # noqa: E501 (MLIR text)
EXTERNAL = """
  func.func private @log_value(f64) -> ()
  func.func @h(%x: f64) -> f64 {
    func.call @log_value(%x) : (f64) -> ()
    return %x : f64
  }"""
ALLOC = """
  func.func @h(%x: f64) -> memref<2xf64> {
    %m = memref.alloc() : memref<2xf64>
    return %m : memref<2xf64>
  }"""


@pytest.mark.parametrize(
    "text, message",
    [
        (module(SUM, static_transform("sum", "memoize", 3)),
         r"t.mlir:\d+:\d+: error: memoize needs scalar arguments: 'sum' argument 0 is memref<\?xf64>"),
        (module(WRITES, static_transform("h", "memoize", 3)),
         "memoize needs a pure function: 'h' \\(or a function it calls\\) contains memref.store"),
        (module(EXTERNAL, static_transform("h", "memoize", 3)),
         "memoize needs a pure function: 'h' calls the external declaration 'log_value'"),
        (module(ALLOC, static_transform("h", "memoize", 3)), "memoize needs scalar results: 'h' result 0 is memref"),
        (module(kernel("big"), static_transform("big", "memoize", 53)), "memoize: knob 53 is out of range"),
        (module(kernel("big"), static_transform("nope", "memoize", 3)), "'nope' named by"),
        (module(kernel("big"), static_transform("big", "memoise", 3)), "unknown transform_type 'memoise'"),
    ],
)
def test_bad_memoize_gives_one_clear_error(text, message):
    with pytest.raises(ApproxError, match=message) as info:
        run_pipeline(text, "approx-pipeline", filename="t.mlir")
    assert "\n" not in str(info.value)
