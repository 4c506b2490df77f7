"""The decorator's surface: ApproxMLIR-compatible arguments, configuration from
outside, the IR before/after the pipeline, `approx-opt --from-python`, and errors
that name the Python file and line."""

from __future__ import annotations

import inspect

import frontend_programs as P
import numpy as np
import pytest

from approx_dialect.diagnostics import ApproxError
from frontends import DecisionTree, Knob, KnobError, SafetyContract, StaticTransform, get_config

HERE = __file__


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def uses_try(x):
    try:
        return x
    except ValueError:
        return None


def uses_break(xs):
    for x in xs:
        if x:
            break
    return xs


def returns_in_loop(xs):
    for x in xs:
        return x
    return None


def kernel_method(x: np.ndarray) -> float:
    return x.sum()


def kernel_string(n: int) -> int:
    s = "abc"  # noqa: F841 (the string is what the lowering refuses)
    return n


def no_loop(x):
    return x


@pytest.mark.parametrize("fn, marker, message", [
    (uses_try, "try:", "unsupported Python syntax: try statement"),
    (uses_break, "            break", "unsupported Python syntax: break"),
    (returns_in_loop, "return x", "unsupported Python syntax: return inside a loop"),
    (kernel_method, "x.sum()", "unsupported Python syntax: method call 'x.sum(...)' in a kernel"),
    (kernel_string, '"abc"', "a kernel works on numbers and arrays"),
])
def test_unsupported_syntax_names_file_and_line(fn, marker, message):
    with pytest.raises(ApproxError) as err:
        Knob()(fn).ir()
    text = str(err.value)
    assert text.startswith(f"{HERE}:{line_of(fn, marker)}:"), text
    assert message in text


def test_pass_errors_point_at_the_decorator_line():
    f = Knob(static_transform=StaticTransform("loop_perforate", 2))(no_loop)
    with pytest.raises(ApproxError, match="no scf.for in the region of this knob") as err:
        f(1)
    assert str(err.value).startswith(f"{HERE}:{line_of(no_loop, 'def no_loop')}:")


def test_undefined_and_partially_assigned_names():
    def maybe(x):
        if x:
            y = 1
        return y

    def missing(x):
        return x + not_defined_anywhere  # noqa: F821

    with pytest.raises(ApproxError, match="'y' is not assigned on every path"):
        Knob()(maybe).ir()
    with pytest.raises(ApproxError, match="name 'not_defined_anywhere' is not defined"):
        Knob()(missing).ir()


def test_decorator_arguments_follow_approxmlir():
    with pytest.raises(ValueError, match="decisions length"):
        DecisionTree(P.n_state, [0], [1, 2], [0, 1], "loop_perforate")
    with pytest.raises(KnobError, match="transform_type must be one of"):
        StaticTransform("invalid", 1)
    with pytest.raises(ValueError, match="requires approx_kernel"):
        StaticTransform("func_substitute", 1)
    with pytest.raises(ValueError, match="Cannot specify both"):
        Knob(decision_tree=DecisionTree(P.n_state, [0], [1], [0, 2], "loop_perforate"),
             static_transform=StaticTransform("loop_perforate", 2))
    cfg = get_config(P.checked_mean)
    assert isinstance(cfg["safety_contract"], SafetyContract) and cfg["decision_tree"] is None
    assert get_config(P.mean_ok) is None
    assert StaticTransform("memoize", 16).knob_val == 16  # every transform_type of the table


def test_set_config_is_checked():
    with pytest.raises(ApproxError, match="unknown knob 'nope'"):
        P.strided_sum.set_config({"nope": {"knob_val": 2}})
    with pytest.raises(ApproxError, match="knob value 5 is not among its values"):
        P.strided_sum.set_config({"strided_sum": {"knob_val": 5}})
    x = np.arange(10.0)
    P.strided_sum.set_config({"strided_sum": {"knob_val": 2}})
    try:
        assert P.strided_sum(x, 10) == 20.0
    finally:
        P.strided_sum.set_config(None)
    assert P.strided_sum(x, 10) == 45.0


def test_ir_before_and_after_the_pipeline():
    before = P.adaptive_sum.ir()
    assert '"approx.util.annotation.decision_tree"' in before and "func.func @n_state" in before
    assert "memref<?xf64>" in before and "scf.for" in before
    after = P.adaptive_sum.ir(after=True)
    assert "approx." not in after and "scf.index_switch" in after
    fixed = P.adaptive_sum.ir(after=True, config={"adaptive_sum": {"knob_val": 0}})
    assert "scf.index_switch" in fixed  # all decisions 0: still a switch, every case exact
    assert "pyobj.call" in P.respond.ir() and "pyobj.call" in P.respond.ir(after=True)


def test_methods_and_kinds():
    class Counter:
        def __init__(self):
            self.n = 0

        @Knob()
        def add(self, k):
            self.n += k
            return self.n

    c = Counter()
    assert c.add(2) == 2 and c.add(3) == 5
    assert Counter.add.kind == "python" and P.strided_sum.kind == "kernel"
    with pytest.raises(ApproxError, match="lowering='kernel' needs every parameter"):
        Knob(lowering="kernel")(no_loop).ir()


def test_cli_from_python(cli):
    out = cli("--from-python", "tests.frontend_programs:strided_sum")
    assert out.returncode == 0, out.stderr
    assert '"approx.util.annotation.transform"' in out.stdout and "func.func @strided_sum" in out.stdout
    out = cli("--from-python", "tests.frontend_programs:respond", "-p", "approx-pipeline")
    assert out.returncode == 0, out.stderr
    assert "approx." not in out.stdout and "pyobj.call" in out.stdout and "scf.index_switch" in out.stdout
    out = cli("--from-python", "tests.frontend_programs:repeat", "--list-knobs")
    assert out.returncode == 0 and '"repeat#2"' in out.stdout
    out = cli("--from-python", "tests.frontend_programs:nothing_here")
    assert out.returncode == 1
    assert out.stderr.strip() == "<command line>: error: 'tests.frontend_programs' has no 'nothing_here'"


PYOBJ = """func.func @f(%a: !pyobj.obj, %n: i64) -> !pyobj.obj {
  %b = "pyobj.box"(%n) : (i64) -> !pyobj.obj
  %c = "pyobj.const"() <{value = ["x", 1 : i64, 2.5 : f64, true]}> : () -> !pyobj.obj
  %g = "pyobj.global"() <{index = 0 : i64, name = "fn"}> : () -> !pyobj.obj
  %r = "pyobj.call"(%a, %b, %c) <{callee = 0 : i64, name = "fn", kwnames = ["key"]}> : (!pyobj.obj, !pyobj.obj, !pyobj.obj) -> !pyobj.obj
  %x, %y = "pyobj.unpack"(%r) : (!pyobj.obj) -> (!pyobj.obj, !pyobj.obj)
  %t = "pyobj.unbox"(%x) : (!pyobj.obj) -> i1
  func.return %y : !pyobj.obj
}
"""  # noqa: E501 (MLIR text)


def test_pyobj_dialect_round_trip_and_run():
    from approx_dialect.context import parse_module, print_module
    from frontends.pygen import generate

    module = parse_module(PYOBJ)
    assert parse_module(print_module(module)).is_structurally_equivalent(module)
    f = generate(module, [lambda a, b, key: (b, (a, key))]).fn("f")
    assert f("a", 7) == ("a", ("x", 1, 2.5, True))
    for bad, msg in [('"pyobj.box"(%a) : (!pyobj.obj) -> !pyobj.obj', "pyobj.box takes an integer"),
                     ('"pyobj.call"(%n) <{callee = 0 : i64, name = "f"}> : (i64) -> !pyobj.obj',
                      "pyobj.call takes and returns !pyobj.obj"),
                     ('"pyobj.const"() <{value = @sym}> : () -> !pyobj.obj', "pyobj.const value must be")]:
        text = PYOBJ.replace('%b = "pyobj.box"(%n) : (i64) -> !pyobj.obj', f"%b = {bad}")
        with pytest.raises(ApproxError, match=msg):
            parse_module(text)
    with pytest.raises(ApproxError, match="environment entry 0 does not exist"):
        generate(module, [])


def test_memoize_needs_scalars_on_python_objects():
    f = Knob(static_transform=StaticTransform("memoize", 16))(no_loop)
    with pytest.raises(ApproxError, match="memoize"):
        f("x")
