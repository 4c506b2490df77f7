"""Generated Python programs for the decorator's lowering (`approx-opt --from-python
MODULE:f`): a module defining `f` decorated with `Knob(...)`, its parameters
annotated (numeric -> kernel lowering, anything else -> Python lowering), its body
mixing supported statements with syntax the lowering does not support (lambdas,
comprehensions, try, with, yield, nested defs, walrus, f-strings, slices, ...).
Lowering only: nothing here calls `f`."""

from __future__ import annotations

from hypothesis import strategies as st

ANNOTATIONS = ("int", "float", "bool", "np.ndarray", "np.ndarray", "str", "list", "", "'np.ndarray'", "dict",
               "np.ndarray[float]", "typing.Any", "None", "1")

#: Statements; {x}, {y} are parameter names, {a} an array parameter (or a name).
SUPPORTED = (
    "s = 0.0", "s = {x} + 1", "s = {x} * {y}", "t = {x} - {y} / 2", "t = {x} // 3", "t = {x} % 5",
    "t = -{x}", "t = abs({x})", "t = math.sqrt(abs({x}))", "t = math.exp({x})", "t = min({x}, {y})",
    "t = float({x})", "t = int({x})", "{x} = {x} + 1", "s += {x}", "t = {x} if {y} else 0",
    "t = {a}[0]", "{a}[0] = 1.0", "t = len({a})", "t = {a}.shape[0]",
    "for i in range(10):\n    s = i", "for i in range({x}):\n    t = i * 2", "for i in range(0, 10, 3):\n    pass",
    "for i in range(len({a})):\n    {a}[i] = {a}[i] * 2.0",
    "while {x} > 0:\n    {x} = {x} - 1", "if {x} > {y}:\n    t = 1\nelse:\n    t = 2",
    "if {x}:\n    return {y}", "return {x}", "return {x} + {y}", "return", "pass", "t = ({x} > 1) and ({y} < 2)",
    "t = 2 ** 100", "t = 1e400", "t = 10 ** 10 ** 2", "t = {x} << 70", "t = True", "t = None",
    "t = {x} < {y} < 3", "t = not {x}", "for i in range(3):\n    for j in range(i):\n        t = i + j",
    "for i in range(10):\n    if i > 5:\n        break\n    continue",
)
UNSUPPORTED = (
    "t = lambda q: q", "t = [i for i in range(3)]", "t = {{i: i for i in range(3)}}", "t = (i for i in range(3))",
    "t = {{1, 2}}", "try:\n    t = 1\nexcept Exception:\n    t = 2", "with open('x') as fh:\n    t = 1",
    "yield {x}", "def inner(q):\n    return q", "class C:\n    pass", "global G", "t = (u := 3)",
    "t = f'{{{x}}}'", "t = {a}[1:3]", "t = {a}[::2]", "t, u = 1, 2", "del t", "assert {x}", "raise ValueError('x')",
    "import os", "t = {x} is None", "t = {x} in [1, 2]", "t = [1, 2, 3]", "t = (1, 2)", "t = {{'k': 1}}",
    "t = 'text' + 'more'", "t = b'bytes'", "t = 1j", "t = ...", "t = print({x})", "t = f(1)", "t = undefined_name",
    "t = {x}.real", "t = np.zeros(3)", "t = np.sum({a})", "t = {a} + {a}", "t = {a} @ {a}",
    "match {x}:\n    case 1:\n        t = 1", "for i, v in enumerate({a}):\n    t = v", "for v in {a}:\n    t = v",
    "while True:\n    pass", "for i in range(1.5):\n    pass", "for i in range(0, 10, 0):\n    pass",
    "t = math.nosuch(1)", "t = {x}.__class__", "t = __import__('os')", "t = eval('1')", "exec('t = 1')",
    "nonlocal t", "t = *[1]", "async def g():\n    pass", "t = await {x}",
)
DECORATORS = (
    "Knob()", "Knob()", "Knob", "Knob(lowering='python')", "Knob(lowering='kernel')", "Knob(lowering='bogus')",
    "Knob(static_transform=StaticTransform('loop_perforate', {k}))",
    "Knob(static_transform=StaticTransform('loop_truncate', {k}))",
    "Knob(static_transform=StaticTransform('precision_reduce', {k}))",
    "Knob(static_transform=StaticTransform('task_skipping', {k}))",
    "Knob(static_transform=StaticTransform('memoize', {k}))",
    "Knob(static_transform=StaticTransform('no_such_transform', 1))",
    "Knob(static_transform='loop_perforate')",
    "Knob(param=Param('{x}', [1, 2, {k}]))", "Knob(param=Param(7, [1]))", "Knob(param=Param('{x}', []))",
    "Knob(decision_tree=DecisionTree(state, [0], [5], [0, {k}], 'loop_perforate'))",
    "Knob(decision_tree=DecisionTree(state, [9], [5], [0, {k}], 'loop_perforate'))",
    "Knob(decision_tree=DecisionTree(state, [0], [5, 1], [0, 2], 'loop_perforate'))",
    "Knob(safety_contract=SafetyContract(check, recover))", "Knob(memoize=Memoize({k}))",
)
HEADER = """import math
import typing

import numpy as np

from frontends import DecisionTree, Knob, Memoize, Param, SafetyContract, StaticTransform


def state(x: int) -> int:
    return x


def check(r, *args) -> bool:
    return True


def recover(*args):
    return 0

"""


def _indent(stmt: str, depth: int) -> str:
    return "\n".join("    " * depth + line for line in stmt.splitlines())


@st.composite
def python_modules(draw) -> str:
    """A module whose `f` the lowering must either lower or refuse in one line."""
    n = draw(st.integers(0, 4))
    names = ["x", "y", "a", "b"][:n]
    anns = [draw(st.sampled_from(ANNOTATIONS)) for _ in names]
    params = ", ".join(f"{p}: {t}" if t else p for p, t in zip(names, anns))
    if n and draw(st.integers(0, 9)) == 0:
        params += draw(st.sampled_from([", *rest", ", **kw", ", z=3", ", *, w: int"]))
    ret = draw(st.sampled_from(["", " -> float", " -> int", " -> np.ndarray", " -> str", " -> None"]))
    pick = lambda: draw(st.sampled_from(names)) if names else "0"  # noqa: E731
    arrays = [p for p, t in zip(names, anns) if "ndarray" in t] or names or ["q"]
    stmts = []
    for _ in range(draw(st.integers(0, 6))):
        pool = SUPPORTED if draw(st.integers(0, 3)) else UNSUPPORTED
        template = draw(st.sampled_from(pool))
        stmts.append(template.format(x=pick(), y=pick(), a=draw(st.sampled_from(arrays))))
    if draw(st.booleans()):
        stmts.append(f"return {pick()}")
    body = "\n".join(_indent(s, 1) for s in stmts) or "    pass"
    deco = draw(st.sampled_from(DECORATORS)).format(k=draw(st.sampled_from([0, 1, 2, 3, 64, 2**31, -1])),
                                                    x=pick())
    async_ = "async " if draw(st.integers(0, 19)) == 13 else ""  # not 0: hypothesis favours it
    return f"{HEADER}\n@{deco}\n{async_}def f({params}){ret}:\n{body}\n"
