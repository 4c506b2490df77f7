"""The approx dialect: generic-form round trips and verifier messages."""

from __future__ import annotations

import pytest

from approx_dialect.context import parse_module, print_module
from approx_dialect.diagnostics import ApproxError
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module, static_transform

KNOB = """
func.func @f(%x: i32) -> i32 {
  %0 = "approx.knob"(%x) <{id = 3 : i32, rf = 1 : i32, QoS_in = array<i32: 1, 2>, QoS_out = array<i32>}> ({
    "approx.transform"() <{transform_type = "loop_perforate", knob_val = 2 : i32}> : () -> ()
    "approx.try"(%x) <{recover = "@r"}> ({
    ^bb0(%a: i32):
      %t = arith.constant true
      "approx.yield"(%t) : (i1) -> ()
    }) : (i32) -> ()
    "approx.yield"(%x) : (i32) -> ()
  }) : (i32) -> i32
  return %0 : i32
}
func.func @r(%x: i32) -> i32 {
  return %x : i32
}
"""

ROUND_TRIP_PROGRAMS = [
    KNOB,
    module(STATE_OF_N, SUM_LOOP,
           decision_tree("sum", "loop_perforate", "state", [5, 9], [0, 2, 3], state_indices=(1,))),
    module(SUM_LOOP, static_transform("sum", "loop_perforate", 4)),
    module(SUM_LOOP, '"approx.util.annotation.knob"() <{func_name = "sum"}> : () -> ()',
           '"approx.util.annotation.convert_to_call"() <{func_name = "sum"}> : () -> ()'),
]


@pytest.mark.parametrize("text", ROUND_TRIP_PROGRAMS)
@pytest.mark.parametrize("generic", [True, False])
def test_round_trip_is_a_fixed_point(text, generic):
    once = print_module(parse_module(text), generic=generic)
    twice = print_module(parse_module(once), generic=generic)
    assert once == twice


@pytest.mark.parametrize("text", ROUND_TRIP_PROGRAMS)
def test_properties_in_attribute_dictionary_are_accepted(text):
    """Upstream MLIR with IRDL needs inherent attributes in `{...}`; both forms parse
    to the same module."""
    as_attrs = print_module(parse_module(text), generic=True, props_as_attrs=True)
    assert "<{" not in as_attrs
    assert parse_module(as_attrs).is_structurally_equivalent(parse_module(text))


def test_custom_yield_form_round_trips():
    text = print_module(parse_module(KNOB))
    assert "approx.yield %x : i32" in text
    assert "approx.yield %t : i1" in text


def error_of(text: str) -> str:
    with pytest.raises(ApproxError) as info:
        parse_module(text, "t.mlir")
    return str(info.value)


def ladder(**kw) -> str:
    args = dict(func="sum", transform="loop_perforate", state_fn="state", thresholds=[5], decisions=[0, 2],
                state_indices=(1,))
    args.update(kw)
    return module(STATE_OF_N, SUM_LOOP, decision_tree(**args))


@pytest.mark.parametrize(
    "text, message",
    [
        (ladder(decisions=[0, 2, 3]), "1 thresholds need 2 decisions (len(decisions) == len(thresholds) + 1), got 3"),
        (ladder(decisions=[0, -1], values=[0, 1, 2]), "decisions must be >= 0"),
        (ladder(thresholds=[50], uppers=(10,)), "threshold 0 = 50 is outside its range [0, 10]"),
        (ladder(thresholds=[9, 3], decisions=[0, 1, 2]), "thresholds must be ascending"),
        (ladder(transform="loop_unroll"), "unknown transform_type 'loop_unroll'"),
        (ladder(func="nope"), "function 'nope' named by approx.util.annotation.decision_tree is not a function"),
        (ladder(state_fn="missing"), "state function 'missing'"),
        (ladder(state_indices=(7,)), "state index 7 is out of range"),
        (ladder(state_indices=(0,)), "state function 'state' takes (index) but state_indices select (memref<?xf64>)"),
        (module(SUM_LOOP, static_transform("sum", "loop_perforate", -1)), "knob_val must be >= 0"),
    ],
)
def test_annotation_verifier_messages(text, message):
    err = error_of(text)
    assert message in err
    assert err.startswith("t.mlir:")


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('"approx.yield"(%x) : (i32) -> ()\n  }) : (i32) -> i32',
         '"approx.yield"(%x, %x) : (i32, i32) -> ()\n  }) : (i32) -> i32',
         "approx.knob body region yields (i32, i32) but (i32) is expected"),
        ('%t = arith.constant true\n      "approx.yield"(%t) : (i1) -> ()',
         '%t = arith.constant 1 : i32\n      "approx.yield"(%t) : (i32) -> ()',
         "approx.try check region yields (i32) but (i1) is expected"),
        ('^bb0(%a: i32):', '^bb0(%a: f32):', "approx.try check region takes (f32) but the op passes (i32)"),
        ('recover = "@r"', 'recover = "@"', "needs a non-empty 'recover' function name"),
    ],
)
def test_op_verifier_messages(old, new, message):
    assert old in KNOB
    assert message in error_of(KNOB.replace(old, new))


def test_decide_state_must_yield_one_i32():
    text = """
func.func @f(%x: i32) -> i32 {
  %0 = "approx.knob"(%x) <{id = 0 : i32, rf = 0 : i32, QoS_in = array<i32>, QoS_out = array<i32>}> ({
    "approx.decide"(%x) <{num_thresholds = 1 : i32, thresholds_uppers = array<i32: 9>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 1>, thresholds = array<i32: 3>, decisions = array<i32: 0, 1>, transform_type = "loop_perforate"}> ({
    ^bb0(%s: i32):
      %f = arith.constant 1.0 : f32
      approx.yield %f : f32
    }) : (i32) -> ()
    approx.yield %x : i32
  }) : (i32) -> i32
  return %0 : i32
}"""  # noqa: E501 (MLIR text)
    assert "approx.decide state region yields (f32) but (i32) is expected" in error_of(text)


def test_error_location_points_at_the_op():
    text = module(SUM_LOOP, static_transform("sum", "bogus", 1))
    line = text.splitlines().index(next(ln for ln in text.splitlines() if "bogus" in ln)) + 1
    assert error_of(text).startswith(f"t.mlir:{line}:")
