"""cascade: cheap variants first, escalation to the next one exactly when the
confidence of a result is below the threshold, the exact function last. JIT-run
through upstream MLIR and checked against a Python model of the knob encoding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_dialect.cascade import decode
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from tests.programs import decision_tree, module, static_transform

# Exact f(x) = x*x + n. Variant j returns x*x + n + 1000*j (so we see who answered);
# its confidence is 100*j - |x| (variant 1 is sure of small inputs only, variant 2 of
# larger ones too), read back from the result.
PROGRAM = """
  func.func @f(%x: f64, %n: i32) -> f64 {
    %sq = arith.mulf %x, %x : f64
    %nf = arith.sitofp %n : i32 to f64
    %y = arith.addf %sq, %nf : f64
    return %y : f64
  }
  func.func @approx_f_1(%x: f64, %n: i32) -> f64 {
    %sq = arith.mulf %x, %x : f64
    %nf = arith.sitofp %n : i32 to f64
    %e = arith.addf %sq, %nf : f64
    %c = arith.constant 1000.0 : f64
    %y = arith.addf %e, %c : f64
    return %y : f64
  }
  func.func @approx_f_2(%x: f64, %n: i32) -> f64 {
    %sq = arith.mulf %x, %x : f64
    %nf = arith.sitofp %n : i32 to f64
    %e = arith.addf %sq, %nf : f64
    %c = arith.constant 2000.0 : f64
    %y = arith.addf %e, %c : f64
    return %y : f64
  }
  func.func @conf(%r: f64, %x: f64, %n: i32) -> i32 {
    %sq = arith.mulf %x, %x : f64
    %nf = arith.sitofp %n : i32 to f64
    %e = arith.addf %sq, %nf : f64
    %d = arith.subf %r, %e : f64
    %ten = arith.constant 10.0 : f64
    %j100 = arith.divf %d, %ten : f64
    %a = math.absf %x : f64
    %s = arith.subf %j100, %a : f64
    %i = arith.fptosi %s : f64 to i32
    return %i : i32
  }
  func.func @state(%n: i32) -> i32 {
    return %n : i32
  }
"""
THRESHOLDS = [50, 150]


def cascade_ann(func="f", confidence="conf", variants=2, thresholds=THRESHOLDS) -> str:
    arr = f"array<i32: {', '.join(map(str, thresholds))}>" if thresholds else "array<i32>"
    return (f'"approx.util.annotation.cascade"() <{{func_name = "{func}", confidence = "{confidence}", '
            f"variants = {variants} : i32, thresholds = {arr}}}> : () -> ()")


def model(k: int, x: float, n: int) -> float:
    """The knob encoding and escalation rule, independently of the compiler."""
    exact = x * x + n
    if k == 0:
        return exact
    start, t = (k - 1) // len(THRESHOLDS) + 1, THRESHOLDS[(k - 1) % len(THRESHOLDS)]
    for j in range(start, 3):
        if int(100 * j - abs(x)) >= t:  # fptosi truncates toward zero
            return exact + 1000 * j
    return exact


def jit(text: str, pipeline: str = "approx-pipeline"):
    return compile_module(run_pipeline(text, pipeline))


XS = [0.0, 10.5, -40.0, 49.5, 50.0, 50.5, 60.0, -99.0, 140.0, 150.0, 151.0, 400.0]


def test_knob_encoding():
    assert [decode(k, 2, 2) for k in range(5)] == [None, (1, 0), (1, 1), (2, 0), (2, 1)]
    assert decode(7, 3, 3) == (3, 0)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4])
def test_cascade_escalates_exactly_when_confidence_is_below_the_threshold(k):
    fn = jit(module(PROGRAM, cascade_ann(), static_transform("f", "cascade", k))).fn("f")
    for x in XS:
        assert fn(x, 3) == model(k, x, 3), (k, x)


def test_small_inputs_stay_cheap_large_ones_escalate():
    """Knob 1 (variant 1, threshold 50): |x| <= 50 answered by variant 1, up to 150
    by variant 2, beyond that by the exact function; a score equal to the threshold
    is accepted."""
    fn = jit(module(PROGRAM, cascade_ann(), static_transform("f", "cascade", 1))).fn("f")
    assert fn(50.0, 0) == 2500.0 + 1000  # score 50 == threshold: accepted
    assert fn(50.5, 0) == 50.5 ** 2 + 2000  # score 49 < 50: escalated to variant 2
    assert fn(150.0, 0) == 22500.0 + 2000
    assert fn(151.0, 0) == 151.0 ** 2  # both below: exact


@pytest.mark.parametrize("split", [False, True])
def test_decision_tree_picks_the_cascade_per_input(split):
    """state = n: n < 10 exact, 10 <= n < 20 knob 1, n >= 20 knob 4 (variant 2 only,
    threshold 150); with or without convert_to_call."""
    convert = ['"approx.util.annotation.convert_to_call"() <{func_name = "f"}> : () -> ()'] if split else []
    tree = decision_tree("f", "cascade", "state", [10, 20], [0, 1, 4], state_indices=(1,), values=[0, 1, 2, 3, 4])
    fn = jit(module(PROGRAM, *convert, cascade_ann(), tree)).fn("f")
    for n, k in [(0, 0), (9, 0), (10, 1), (19, 1), (20, 4), (99, 4)]:
        for x in XS:
            assert fn(x, n) == model(k, x, n), (n, x)


TWO_RESULTS = """
  func.func @g(%x: i32) -> (i32, i32) {
    %c = arith.constant 7 : i32
    %y = arith.muli %x, %c : i32
    return %y, %x : i32, i32
  }
  func.func @approx_g_1(%x: i32) -> (i32, i32) {
    %z = arith.constant -1 : i32
    return %z, %x : i32, i32
  }
  func.func @sure_if_even(%a: i32, %b: i32, %x: i32) -> i32 {
    %two = arith.constant 2 : i32
    %r = arith.remsi %x, %two : i32
    %one = arith.constant 1 : i32
    %s = arith.subi %one, %r : i32
    return %s : i32
  }
"""


def test_functions_with_several_results():
    text = module(TWO_RESULTS, cascade_ann("g", "sure_if_even", 1, [1]), static_transform("g", "cascade", 1))
    fn = jit(text).fn("g")
    assert fn(4) == (-1, 4)
    assert fn(5) == (35, 5)


@settings(max_examples=25, deadline=None)
@given(st.floats(-1e3, 1e3), st.integers(0, 40), st.booleans())
def test_knob_zero_is_the_unannotated_program(x, n, tree):
    plain = jit(module(PROGRAM), "").fn("f")(x, n)
    ann = (decision_tree("f", "cascade", "state", [10], [0, 0], state_indices=(1,), values=[0, 1]) if tree
           else static_transform("f", "cascade", 0))
    assert jit(module(PROGRAM, cascade_ann(), ann)).fn("f")(x, n) == plain


@pytest.mark.parametrize(
    "parts, message",
    [
        ([static_transform("f", "cascade", 1)],
         "cascade: 'f' has no approx.util.annotation.cascade naming its variants"),
        ([cascade_ann(), static_transform("f", "cascade", 5)],
         "cascade: knob 5 is out of range for 'f': 2 variant(s) x 2 threshold(s) give knobs 1..4 (0 is exact)"),
        ([cascade_ann()], "the cascade of 'f' is never selected"),
        ([cascade_ann(variants=3), static_transform("f", "cascade", 1)],
         "cascade variant 'approx_f_3' named by approx.util.annotation.cascade is not a function"),
        ([cascade_ann(confidence="nope"), static_transform("f", "cascade", 1)], "confidence function 'nope'"),
        ([cascade_ann(confidence="state"), static_transform("f", "cascade", 1)],
         "confidence function 'state' must have type (f64, f64, i32) -> (i32)"),
        ([cascade_ann(variants=0), static_transform("f", "cascade", 1)], "needs variants >= 1"),
        ([cascade_ann(thresholds=[]), static_transform("f", "cascade", 1)], "needs at least one threshold"),
        ([cascade_ann(), cascade_ann(), static_transform("f", "cascade", 1)], "more than one"),
        ([cascade_ann(func="h"), static_transform("f", "cascade", 1)], "function 'h'"),
    ],
)
def test_bad_cascades_give_one_clear_error(parts, message):
    with pytest.raises(ApproxError) as err:
        run_pipeline(module(PROGRAM, *parts), "approx-pipeline", filename="t.mlir")
    assert message in str(err.value)
    assert str(err.value).startswith("t.mlir:")


def test_a_variant_of_the_wrong_type_is_named():
    bad = PROGRAM.replace("@approx_f_2", "@other") + "func.func @approx_f_2(%x: f64) -> f64 {\n return %x : f64\n}\n"
    with pytest.raises(ApproxError, match=r"cascade variant 'approx_f_2' has type \(f64\) -> \(f64\) but 'f' has"):
        run_pipeline(module(bad, cascade_ann(), static_transform("f", "cascade", 1)), "approx-pipeline")


def test_annotation_round_trips_and_upstream_mlir_accepts_it():
    """Both property spellings parse to the same module, and upstream MLIR with the
    IRDL export loaded verifies the annotation."""
    from torch_mlir import ir

    from approx_dialect.context import parse_module, print_module
    from approx_dialect.irdl_export import load_upstream

    text = module(PROGRAM, cascade_ann(), static_transform("f", "cascade", 1))
    as_attrs = print_module(parse_module(text), generic=True, props_as_attrs=True)
    assert parse_module(as_attrs).is_structurally_equivalent(parse_module(text))
    ctx = ir.Context()
    keep = load_upstream(ctx)  # noqa: F841 (keeps the IRDL module alive)
    assert ir.Module.parse(as_attrs, context=ctx).operation.verify()
