"""One test per bug the fuzzer found (bench/fuzz.py, tests/fuzz/): each input used
to end in an `internal error`, a traceback or a hang; now it is one located error
line with exit code 1, or output."""

from __future__ import annotations

import time

import pytest

from approx_dialect.context import parse_module
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from tests.fuzz.inputs import Case
from tests.fuzz.oracle import run_in_process, run_in_subprocess

TRANSFORM = ('"approx.util.annotation.transform"() '
             '<{{func_name = "f", transform_type = "loop_perforate", knob_val = {} }}> : () -> ()')
F = "func.func @f(%n: index) {\n  return\n}\n"


def one_error(text: str, passes: str = "approx-pipeline", config: str | None = None) -> str:
    out = run_in_process(Case("regression", text.encode(), passes, config))
    assert out.problem is None, out.problem
    assert out.rc == 1
    return out.stderr.strip()


@pytest.mark.parametrize("value", ["9223372036854775808 : i32", "-2147483649 : i32", "10" * 30 + " : si32"])
def test_integer_attribute_outside_its_type_is_a_located_error(value):
    """xDSL raised VerifyException from inside its parser (only ParseError was caught)."""
    err = one_error(F + TRANSFORM.format(value) + "\n")
    assert ":4:1: error: Integer value" in err and "out of range" in err


def test_float_literal_too_wide_for_its_type_is_a_located_error():
    """`arith.constant 0x7FF8000000000000 : f32`: OverflowError from the parser."""
    text = "func.func @g() -> f32 {\n  %o = arith.constant 0x7FF8000000000000 : f32\n  return %o : f32\n}\n"
    err = one_error(text)
    assert ":2:3: error: number out of range" in err


@pytest.mark.parametrize("op", [
    "%1 = linalg.fill x(%c : f64) outs(%t : tensor<4xf64>) -> tensor<4xf64>",
    'linalg.matmul "x"(%m: memref<4xf64>) {\n  }',
])
def test_malformed_linalg_op_is_a_located_error(op):
    """xDSL's linalg parsers raised IndexError on these (not ParseError)."""
    text = (f"func.func @g(%c: f64, %t: tensor<4xf64>, %m: memref<4xf64>) {{\n  {op}\n  return\n}}\n")
    err = one_error(text, passes="transform-approx")
    assert ":2:3: error: cannot parse this op: IndexError" in err


def test_unexpected_first_character_is_a_located_error():
    """The parser lexes its first token in its constructor, outside the guarded call."""
    err = one_error("\u202e\nfunc.func @f() {\n  return\n}\n")
    assert ":1:1: error: Unexpected character" in err


def test_unterminated_string_does_not_hang():
    """xDSL's string-literal regex backtracked exponentially: 40 characters took minutes."""
    text = '"' + "a" * 5000 + " }> : () -> ()\n"
    start = time.perf_counter()
    with pytest.raises(ApproxError, match="closing string literal"):
        parse_module(text)
    assert time.perf_counter() - start < 1.0
    assert "error:" in one_error('\n"apprnob_val = 1 : i32}> : () -> ()\n', "config-approx")


KNOB = F + TRANSFORM.format("2 : i32") + "\n"


@pytest.mark.parametrize("config, fragment", [
    ('{"f": {"knob_val": "x"}}', "is not an integer"),
    ('{"f": {"knob_val": null}}', "is not an integer"),
    ('{"f": {"knob_val": 1.5}}', "is not an integer"),
    ('{"f": {"knob_val": true}}', "is not an integer"),
    ('{"f": {"knob_val": 99999999999}}', "does not fit in i32"),
])
def test_malformed_config_values_are_clear_errors(config, fragment):
    """apply_config called int() on whatever JSON held (TypeError/ValueError -> internal error)."""
    err = one_error(KNOB, config=config)
    assert "<config>: error: knob 'f'" in err and fragment in err


def test_ladder_config_with_non_list_thresholds():
    from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module

    text = module(STATE_OF_N, SUM_LOOP,
                  decision_tree("sum", "loop_perforate", "state", [5], [0, 2], state_indices=(1,)))
    err = one_error(text, config='{"sum": {"thresholds": 7, "decisions": [0, 2]}}')
    assert "thresholds must be a list of integers" in err


NARROW = """
func.func @f(%n: i8) {
  %lb = arith.constant 0 : i8
  %st = arith.constant 1 : i8
  scf.for %i = %lb to %n step %st : i8 {
  }
  return
}
"""


@pytest.mark.parametrize("transform", ["loop_perforate", "loop_truncate", "loop_perforate_modulo",
                                       "loop_perforate_rescale", "loop_perforate_modulo_rescale"])
def test_knob_larger_than_an_i8_loop_bound_type(transform):
    """IntegerAttr(300, i8) raised inside the pass (internal error); the knob is now
    clamped to the type (no trip count of the type reaches it, so the loop acts the same)."""
    ann = TRANSFORM.format("300 : i32").replace("loop_perforate", transform)
    out = run_pipeline(NARROW + ann, "approx-pipeline")
    assert "approx." not in out


def test_python_warnings_are_one_line_each_before_the_error():
    """--from-python imports the user's module; Python's SyntaxWarning printed two
    lines (message and source) ahead of the one error line."""
    src = "from frontends import Knob\n\n\n@Knob()\ndef f(x: int) -> int:\n    t = x is 1\n    return x\n"
    out = run_in_subprocess(Case("regression", src.encode(), "approx-pipeline", python=True))  # pytest would catch it
    assert out.problem is None and out.rc == 1, out
    warning, error = out.stderr.strip().splitlines()
    assert ":6: warning: SyntaxWarning:" in warning
    assert ":6:" in error and ": error: " in error
