"""One test per bug the fuzzer found (bench/fuzz.py, tests/fuzz/): each input used
to end in an `internal error`, a traceback or a hang; now it is one located error
line with exit code 1, or output."""

from __future__ import annotations

import re
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
    start = time.thread_time()  # this thread's CPU time, not the wall a busy machine stretches
    with pytest.raises(ApproxError, match="closing string literal"):
        parse_module(text)
    assert time.thread_time() - start < 1.0  # milliseconds, linear: 500x room; backtracking would take minutes
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


# ---------------------------------------------------------------- component programs and decorated sources

COMPONENT_KNOB = '  "approx.util.annotation.component"() <{{func_name = "f", component = "hint", {}}}> : () -> ()\n'
SKIPPED_TWICE = (
    "module {\n"
    + COMPONENT_KNOB.format('parameter = "skip", transform_type = "task_skipping", values = [], knob_val = 1 : i32')
    + COMPONENT_KNOB.format('parameter = "top_k", transform_type = "param", values = [1 : i64], knob_val = 1 : i32')
    + "  func.func @f(%q: !pyobj.obj) -> !pyobj.obj {\n"
    + '    %h = "component.retrieve"(%q) <{component = "hint", retriever = @bm25, top_k = 3 : i64}> '
    + ": (!pyobj.obj) -> !pyobj.obj\n"
    + "    func.return %h : !pyobj.obj\n  }\n}\n")


def test_a_knob_after_a_skip_without_fallback_has_nothing_to_rewrite():
    """A skip with neither `input` nor a value leaves a `pyobj.const` naming no label, so
    the label's next knob said 'no component op labelled' (a tuner's skip = 1 failed)."""
    out = run_pipeline(SKIPPED_TWICE, "approx-pipeline")
    assert "component.retrieve" not in out and '"pyobj.const"() <{value}>' in out


PY_HEAD = """from frontends import DecisionTree, Knob, Param
from frontends.components.declare import Generate, Retrieve, Tune


class Provider:
    def __init__(self, name):
        self.name = name
        self.supports = frozenset()


def size(x) -> int:
    return len(str(x))

"""


def lowered(body: str, config: str | None = None, passes: str = "approx-pipeline"):
    """approx-opt --from-python on PY_HEAD + body (its `f`)."""
    return run_in_process(Case("regression", (PY_HEAD + body).encode(), passes, config, python=True, located=True))


def test_skip_without_fallback_then_another_knob_from_the_decorator():
    body = ('hint = Retrieve("hint", Provider("bm25"), top_k=3, tune=[Tune.skip(fallback=None), '
            'Tune.param("top_k", 2, 1)])\n\n\n@Knob()\ndef f(question):\n    return hint(question)\n')
    out = lowered(body, config='{"hint.skip": {"knob_val": 1}}')
    assert out.problem is None and out.rc == 0, out.stderr


DECIDED = ('answer = Generate("answer", Provider("pro"), tune=[Tune.param("passages", 2, 1, decided=True)])\n\n\n'
           "@Knob({tree}param=Param('n', [1, 2]))\ndef f(question, n: int):\n"
           "    return answer(question, [question] * n)\n")


@pytest.mark.parametrize("tree", ["", "decision_tree=DecisionTree(size, [0], [5], [0, 2], 'param'), "])
def test_param_of_a_function_whose_component_has_a_decided_knob(tree):
    """The function's static `Param` knob was taken for a case of a decision and set the
    decided knob instead of its own `approx.param` ('approx.param is still present');
    with a decision tree, the tree set the decided knob and never the `Param`."""
    out = lowered(DECIDED.replace("{tree}", tree))
    assert out.problem is None and out.rc == 0, out.stderr
    assert "approx.param" not in out.stdout
    if tree:  # decision 2 in the default case: passages = values[1], n = values[1]
        assert "passages = 1 : i64" in out.stdout and "arith.constant 2 : i64" in out.stdout
    else:  # no decision: the decided knob stays as written
        assert "passages" not in out.stdout


@pytest.mark.parametrize("body, line, fragment", [
    ('nameless = Generate("answer", Provider(""))\n\n\n@Knob()\ndef f(question):\n'
     '    return nameless(question, [question])\n', 19, "needs a non-empty 'name'"),
    ('a = Generate("answer", Provider("pro"))\nb = Generate("answer", Provider("fast"), '
     'tune=[Tune.param("passages", 1)])\n\n\n@Knob()\ndef f(question):\n    x = a(question, [question])\n'
     '    return b(question, [x])\n', 21, "declare different knobs"),
    ("@Knob(decision_tree=DecisionTree(size, [3], [5], [0, 1], 'param'))\ndef f(question):\n"
     "    return question\n", 14, "state index 3 is out of range"),
    ('a = Generate("answer", Provider("pro"), tune=[Tune.cascade([Provider("fast")], [])])\n\n\n@Knob()\n'
     "def f(question):\n    return a(question, [question])\n", 19, "cascade needs 'thresholds'"),
    ('a = Generate("answer", Provider("pro"), tune=[Tune.param("layers", 2)])\n\n\n@Knob()\n'
     "def f(question):\n    x = 1\n    return a(question, [question])\n", 20, "'layers' is not supported"),
])
def test_settings_found_wrong_while_lowering_are_errors_at_their_line(body, line, fragment):
    """Errors about a component or a decorator setting raised while lowering said
    `<component>` / `<decorator>`, or nothing (a component's knob that does not verify):
    now the call or the decorator, FILE:LINE:COL."""
    out = lowered(body)
    assert out.problem is None and out.rc == 1, out.stderr
    assert re.search(rf"fuzzpy_\w+\.py:{line}:\d+: error: .*{fragment}", out.stderr), out.stderr


def test_a_declaration_that_fails_at_import_is_an_error_at_its_line():
    """A component refused where it is declared failed the module's import: the error
    said `<command line>` and carried a second `<component>: error:` inside."""
    out = lowered('bad = Generate("a b", Provider("pro"))\n')
    assert out.problem is None and out.rc == 1, out.stderr
    assert re.search(r"fuzzpy_\w+\.py:14: error: cannot import '\w+': ApproxError: a component label is a name",
                     out.stderr), out.stderr


@pytest.mark.parametrize("body", [
    "  %c = arith.cmpf ogt, %x, %big : f32\n  %big = arith.constant 1.0 : f32\n",
    "  scf.if %t {\n    %c = arith.cmpf ogt, %x, %big : f32\n  }\n  %big = arith.constant 1.0 : f32\n",
])
def test_a_value_used_before_its_definition_is_a_located_error(body):
    """xDSL does not check dominance: `config-approx` then erased an op whose result was
    still used above it (`internal error: Attempting to delete SSA value that still has uses`)."""
    text = ('"approx.util.annotation.knob"() <{func_name = "pick"}> : () -> ()\n'
            '"approx.util.annotation.decision_tree"() <{decision_values = array<i32: 0, 1>, '
            'decisions = array<i32: 0, 1>, func_name = "pick", num_thresholds = 1 : i32, '
            'thresholds = array<i32: 2>, thresholds_lowers = array<i32: 0>, thresholds_uppers = array<i32: 4>, '
            'transform_type = "task_skipping"}> : () -> ()\n'
            "func.func @pick(%out: memref<1xf32>, %x: f32, %t: i1, %state: i32) {\n" + body + "  return\n}\n")
    err = one_error(text)
    assert re.search(r":\d+:\d+: error: 'arith.cmpf' op operand #1 is used before it is defined", err), err
