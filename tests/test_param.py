"""param, JIT-run: knob k >= 1 replaces the named operand by values[k-1], 0 keeps it;
static, through a decision tree, and written as `approx.param` in the IR; bad
annotations give one clear error; upstream MLIR (IRDL) accepts the new ops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_dialect.context import parse_module, print_module
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from tests.programs import decision_tree, module, static_transform

TOPK = """
  func.func @topk_sum(%m: memref<?xf64>, %k: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %k step %c1 iter_args(%acc = %z) -> (f64) {
      %v = memref.load %m[%i] : memref<?xf64>
      %s = arith.addf %acc, %v : f64
      scf.yield %s : f64
    }
    return %r : f64
  }"""
SCALE = """
  func.func @scale(%x: f64, %t: f64, %n: i32) -> f64 {
    %y = arith.divf %x, %t : f64
    %m = arith.sitofp %n : i32 to f64
    %z = arith.addf %y, %m : f64
    return %z : f64
  }"""
STATE = """
  func.func @state(%m: memref<?xf64>, %k: index) -> i32 {
    %c = arith.index_cast %k : index to i32
    return %c : i32
  }"""
DATA = np.arange(1.0, 11.0)


def param(func: str, arg: int, values: str, name: str = "top_k") -> str:
    return (f'"approx.util.annotation.param"() <{{func_name = "{func}", arg_index = {arg} : i64, '
            f'name = "{name}", values = {values}}}> : () -> ()')


TOPK_PARAM = param("topk_sum", 1, "array<i64: 1, 2, 5>")


def jit(text: str, func: str, pipeline: str = "approx-pipeline"):
    return compile_module(run_pipeline(text, pipeline)).fn(func)


@pytest.mark.parametrize("k, want", [(0, 28.0), (1, 1.0), (2, 3.0), (3, 15.0)])
def test_top_k_takes_values_k_minus_1(k, want):
    """Sum of the first top_k of 1..10 with top_k = 7 passed: values [1, 2, 5]."""
    f = jit(module(TOPK, TOPK_PARAM, static_transform("topk_sum", "param", k)), "topk_sum")
    assert f(DATA, 7) == want


@pytest.mark.parametrize("k, want", [(0, 4.0 / 8.0 + 1), (1, 4.0 / 0.5 + 1), (2, 4.0 / 2.0 + 1)])
def test_float_param(k, want):
    ann = param("scale", 1, "array<f64: 0.5, 2.0>", "temperature")
    assert jit(module(SCALE, ann, static_transform("scale", "param", k)), "scale")(4.0, 8.0, 1) == want


def test_integer_param_of_i32():
    ann = param("scale", 2, "array<i64: -3, 100>", "offset")
    f = jit(module(SCALE, ann, static_transform("scale", "param", 1)), "scale")
    assert f(4.0, 2.0, 7) == 2.0 - 3


@pytest.mark.parametrize("k, want", [(3, 6.0), (4, 10.0), (5, 15.0), (9, 15.0)])
def test_decision_tree_picks_the_value_per_input(k, want):
    """state = the passed top_k: below 5 exact, from 5 on values[2] = 5."""
    text = module(STATE, TOPK, TOPK_PARAM,
                  decision_tree("topk_sum", "param", "state", [5], [0, 3], state_indices=(0, 1), values=[0, 1, 2, 3]))
    assert jit(text, "topk_sum")(DATA, k) == want


def test_param_written_in_the_ir():
    """`approx.param` in a function body, tuned by a transform annotation."""
    body = TOPK.replace(
        "%c0 = arith.constant 0 : index",
        '%kk = "approx.param"(%k) <{name = "top_k", values = array<i64: 2, 4>}> : (index) -> index\n'
        "    %c0 = arith.constant 0 : index",
    ).replace("to %k step", "to %kk step")
    assert jit(module(body, static_transform("topk_sum", "param", 2)), "topk_sum")(DATA, 9) == 10.0
    assert jit(module(body, static_transform("topk_sum", "param", 0)), "topk_sum")(DATA, 9) == 45.0


PLAIN = jit(module(TOPK), "topk_sum", "")
STATIC0 = jit(module(TOPK, TOPK_PARAM, static_transform("topk_sum", "param", 0)), "topk_sum")
DYNAMIC0 = jit(module(STATE, TOPK, TOPK_PARAM, decision_tree("topk_sum", "param", "state", [4], [0, 0],
                                                             state_indices=(0, 1), values=[0, 2])), "topk_sum")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40), st.data())
def test_knob_zero_is_the_unannotated_program(xs, data):
    m = np.array(xs)
    k = data.draw(st.integers(0, len(xs)))
    assert STATIC0(m, k) == PLAIN(m, k)
    assert DYNAMIC0(m, k) == PLAIN(m, k)


@pytest.mark.parametrize(
    "extra, message",
    [
        ([param("topk_sum", 1, "array<i64>"), static_transform("topk_sum", "param", 1)],
         "param 'top_k' has no values; list at least one"),
        ([param("topk_sum", 1, "array<f64: 1.0>"), static_transform("topk_sum", "param", 1)],
         r"argument 1 of 'topk_sum' has type index, so values must be array<i64: ...>, got array<f64>"),
        ([param("topk_sum", 2, "array<i64: 1>"), static_transform("topk_sum", "param", 1)],
         "arg_index 2 is out of range: 'topk_sum' has 2 arguments"),
        ([param("topk_sum", 0, "array<i64: 1>"), static_transform("topk_sum", "param", 1)],
         "has type memref<\\?xf64>; params are integer, index or float"),
        ([param("nope", 0, "array<i64: 1>")], "function 'nope' named by approx.util.annotation.param"),
        ([TOPK_PARAM, static_transform("topk_sum", "param", 4)],
         r"t.mlir:\d+:\d+: error: param: knob 4 is out of range for 'top_k' with values \[1, 2, 5\] "
         r"\(1..3 select a value, 0 keeps the original\)"),
        ([TOPK_PARAM, static_transform("topk_sum", "loop_perforate", 2)],
         "param 'top_k' of 'topk_sum' has no knob value: add an approx.util.annotation.transform or "
         'decision_tree with transform_type = "param"'),
        ([TOPK_PARAM], "param 'top_k' of 'topk_sum' has no knob value"),
        ([static_transform("topk_sum", "param", 1)], "param: no approx.param in the knob of 'topk_sum'"),
    ],
)
def test_bad_param_gives_one_clear_error(extra, message):
    with pytest.raises(ApproxError, match=message) as info:
        run_pipeline(module(TOPK, *extra), "approx-pipeline", filename="t.mlir")
    assert "\n" not in str(info.value)


def test_param_value_must_fit_the_integer_width():
    with pytest.raises(ApproxError, match="param 'offset': value 300 does not fit i8"):
        parse_module(module(SCALE.replace("i32", "i8"), param("scale", 2, "array<i64: 300>", "offset")))


def test_leftover_param_names_the_missing_transform():
    op = '%p = "approx.param"(%x) <{name = "t", values = array<f64: 1.0>}> : (f64) -> f64'
    text = module(f"func.func @g(%x: f64) -> f64 {{\n  {op}\n  return %p : f64\n}}")
    with pytest.raises(ApproxError, match="'approx.param' is still present; run transform-approx"):
        run_pipeline(text, "approx-pipeline")
    with pytest.raises(ApproxError, match="approx.param returns f32 but its operand is f64"):
        parse_module(text.replace("(f64) -> f64", "(f64) -> f32").replace("return %p : f64", "return %x : f64"))


def test_upstream_mlir_accepts_param_ops():
    """(Knob operands of different types are refused upstream: IRDL binds one
    constraint variable for all values of a variadic, so this knob's are all i32.)"""
    ir = pytest.importorskip("torch_mlir.ir")
    from approx_dialect.irdl_export import load_upstream

    ctx = ir.Context()
    keep = load_upstream(ctx)
    g = """
  func.func @g(%x: i32, %n: i32) -> i32 {
    %y = arith.muli %x, %n : i32
    return %y : i32
  }"""
    ann = param("g", 1, "array<i64: 1, 2>", "n")
    emitted = run_pipeline(module(g, ann, static_transform("g", "param", 2)),
                           "emit-approx,emit-management", generic=True, props_as_attrs=True)
    annotated = print_module(parse_module(module(TOPK, TOPK_PARAM)), generic=True, props_as_attrs=True)
    for text in (emitted, annotated):
        assert ir.Module.parse(text, context=ctx).operation.verify()
    assert '"approx.param"' in emitted and '"approx.util.annotation.param"' in annotated
    bad = emitted.replace("values = array<i64: 1, 2>", 'values = "1, 2"')
    with pytest.raises(ir.MLIRError, match="dense_array"):
        ir.Module.parse(bad, context=ctx)
    del keep
