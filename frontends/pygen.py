"""Run transformed orchestration IR as Python generated from it.

After the approx passes, an orchestration module is func/scf/arith plus `pyobj`
ops; each func.func becomes a Python function whose loops, branches and calls are
the IR's (so perforation, truncation, skipping and substitution act on the real
Python loops and calls). Safety: every identifier in the generated source is made
here (`v0`, `f1`, ...), never taken from the IR's text; callees are integers into
the environment table `E`; constants come from typed attributes (ints and bools
as their repr, everything else through the constant table `K`). No text of a
symbol name, a string attribute or a file is ever executed. Component ops
(`component.*`) call `R.run(op, settings, *operands)` of the component runtime
(`frontends.components.runtime`) with the attributes of the transformed op.
"""

from __future__ import annotations

import itertools
import linecache
import math
import operator

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import Block, Operation, SSAValue

from approx_dialect.component import ComponentOp, ConfidenceOp, FallbackOp
from approx_dialect.diagnostics import ApproxError
from approx_dialect.pyobj import BoxOp, CallOp, ConstOp, GlobalOp, UnboxOp, UnpackOp, const_value

_counter = itertools.count()


def _divsi(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _remsi(a, b):
    return a - b * _divsi(a, b)


def _ceildivsi(a, b):
    return -(-a // b)


def _divf(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        return math.copysign(math.inf, a) * math.copysign(1.0, b) if a and not math.isnan(a) else math.nan


def _wrap(x, bits):
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


_INT_BIN = {arith.AddiOp: "({} + {})", arith.SubiOp: "({} - {})", arith.MuliOp: "({} * {})",
            arith.DivSIOp: "_divsi({}, {})", arith.RemSIOp: "_remsi({}, {})",
            arith.FloorDivSIOp: "({} // {})", arith.CeilDivSIOp: "_ceildivsi({}, {})",
            arith.MaxSIOp: "max({}, {})", arith.MinSIOp: "min({}, {})", arith.AndIOp: "({} & {})",
            arith.OrIOp: "({} | {})", arith.XOrIOp: "({} ^ {})", arith.ShLIOp: "({} << {})",
            arith.ShRSIOp: "({} >> {})", arith.AddfOp: "({} + {})", arith.SubfOp: "({} - {})",
            arith.MulfOp: "({} * {})", arith.DivfOp: "_divf({}, {})"}
_CMP = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
        "oeq": "==", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">=", "une": "!="}


class PythonModule:
    """The generated functions of one module; `fn(name)` is a Python callable."""

    def __init__(self, functions: dict, source: str):
        self.functions, self.source = functions, source

    def fn(self, name: str):
        try:
            return self.functions[name]
        except KeyError:
            raise ApproxError(f"no function @{name} in the module") from None


def generate(module: ModuleOp, env: list, label: str = "module", runtime=None) -> PythonModule:
    """Python source for every func.func of `module`, compiled and returned;
    `runtime` (a `ComponentRuntime`) runs its component ops."""
    gen = _Generator(module, env)
    source = gen.source()
    label = "".join(c if c.isprintable() else "?" for c in label)  # a file name: no NUL, no line breaks
    filename = f"<approx-pygen {label} #{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    if gen.uses_components and runtime is None:
        raise ApproxError("cannot run as Python: the module calls components (component.*) and no component "
                          "registry was given")
    namespace = {"__builtins__": __builtins__, "E": env, "K": gen.consts, "R": runtime, "_index": operator.index,
                 "_divsi": _divsi, "_remsi": _remsi, "_ceildivsi": _ceildivsi, "_divf": _divf, "_wrap": _wrap}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - source made above from typed IR only
    return PythonModule({name: namespace[f"f{i}"] for name, i in gen.index.items()}, source)


class _Generator:
    def __init__(self, module: ModuleOp, env: list):
        self.module, self.env = module, env
        self.lines: list[str] = []
        self.names: dict[SSAValue, str] = {}
        self.consts: list = []
        self.funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and not op.is_declaration]
        self.index = {f.sym_name.data: i for i, f in enumerate(self.funcs)}
        self.uses_components = False

    # ---------------------------------------------------------------- helpers
    def fail(self, op: Operation, what: str) -> ApproxError:
        return ApproxError(f"cannot run as Python: {what}", op)

    def new(self, v: SSAValue) -> str:
        name = f"v{len(self.names)}"
        self.names[v] = name
        return name

    def alias(self, v: SSAValue, name: str) -> None:
        self.names[v] = name

    def val(self, v: SSAValue) -> str:
        return self.names[v]

    def out(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def assign(self, depth: int, targets: list[str], values: list[str]) -> None:
        if targets:
            self.out(depth, f"{', '.join(targets)} = {', '.join(values)}")

    def constant(self, attr) -> str:
        if isinstance(attr, IntegerAttr):
            v = attr.value.data
            if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
                return "True" if v else "False"
            return repr(int(v))
        if isinstance(attr, FloatAttr) and math.isfinite(attr.value.data):
            return repr(float(attr.value.data))
        self.consts.append(self.python_value(attr))
        return f"K[{len(self.consts) - 1}]"

    def python_value(self, attr):
        try:
            return const_value(attr)
        except ValueError:
            raise ApproxError(f"cannot run as Python: constant {attr}") from None

    # ---------------------------------------------------------------- structure
    def source(self) -> str:
        for i, f in enumerate(self.funcs):
            args = [self.new(a) for a in f.body.block.args]
            self.out(0, f"def f{i}({', '.join(args)}):")
            self.block(f.body.block, 1)
        return "\n".join(self.lines) + "\n"

    def block(self, block: Block, depth: int, results: list[str] | None = None) -> None:
        """The ops of a block; its terminator assigns `results` (scf.yield) or returns."""
        start = len(self.lines)
        for op in block.ops:
            if isinstance(op, scf.YieldOp):
                self.assign(depth, results or [], [self.val(v) for v in op.operands])
            else:
                self.op(op, depth)
        if len(self.lines) == start:
            self.out(depth, "pass")

    def op(self, op: Operation, depth: int) -> None:
        if isinstance(op, scf.ForOp):
            return self.for_(op, depth)
        if isinstance(op, scf.IfOp):
            res = [self.new(r) for r in op.results]
            self.out(depth, f"if {self.val(op.cond)}:")
            self.block(op.true_region.block, depth + 1, res)
            if op.false_region.blocks:
                self.out(depth, "else:")
                self.block(op.false_region.block, depth + 1, res)
            return None
        if isinstance(op, scf.IndexSwitchOp):
            res = [self.new(r) for r in op.results]
            x = self.val(op.arg)
            for k, (case, region) in enumerate(zip(op.cases.get_values(), op.case_regions)):
                self.out(depth, f"{'if' if k == 0 else 'elif'} {x} == {int(case)}:")
                self.block(region.block, depth + 1, res)
            if op.case_regions:
                self.out(depth, "else:")
                self.block(op.default_region.block, depth + 1, res)
            else:
                self.block(op.default_region.block, depth, res)
            return None
        if isinstance(op, scf.WhileOp):
            return self.while_(op, depth)
        if isinstance(op, func.ReturnOp):
            vals = [self.val(v) for v in op.operands]
            self.out(depth, "return" if not vals else f"return {vals[0]}" if len(vals) == 1
                     else f"return ({', '.join(vals)})")
            return None
        if isinstance(op, func.CallOp):
            callee = op.callee.string_value()
            if callee not in self.index:
                raise self.fail(op, f"call of @{callee}, which has no body in the module")
            res = [self.new(r) for r in op.res]
            call = f"f{self.index[callee]}({', '.join(self.val(a) for a in op.arguments)})"
            self.out(depth, call if not res else f"{', '.join(res)} = {call}")
            return None
        expr = self.expression(op)
        targets = [self.new(r) for r in op.results]
        if len(targets) == 1 and isinstance(op, UnpackOp):
            targets[0] += ","  # `v, = x` checks the length, as Python's unpacking does
        self.out(depth, f"{', '.join(targets)} = {expr}" if targets else expr)
        return None

    def for_(self, op: scf.ForOp, depth: int) -> None:
        res = [self.new(r) for r in op.results]
        self.assign(depth, res, [self.val(v) for v in op.iter_args])
        body = op.body.block
        iv = self.new(body.args[0])
        for arg, name in zip(body.args[1:], res):
            self.alias(arg, name)
        self.out(depth, f"for {iv} in range({self.val(op.lb)}, {self.val(op.ub)}, {self.val(op.step)}):")
        self.block(body, depth + 1, res)

    def while_(self, op: scf.WhileOp, depth: int) -> None:
        before, after = op.before_region.block, op.after_region.block
        carried = [self.new(a) for a in before.args]
        self.assign(depth, carried, [self.val(v) for v in op.arguments])
        res = [self.new(r) for r in op.results]
        self.out(depth, "while True:")
        for o in before.ops:
            if isinstance(o, scf.ConditionOp):
                fwd = [self.val(v) for v in o.args]
                self.out(depth + 1, f"if not {self.val(o.condition)}:")
                self.assign(depth + 2, res, fwd)
                self.out(depth + 2, "break")
                self.assign(depth + 1, [self.new(a) for a in after.args], fwd)
            else:
                self.op(o, depth + 1)
        self.block(after, depth + 1, carried)

    # ---------------------------------------------------------------- expressions
    def expression(self, op: Operation) -> str:
        a = [self.val(v) for v in op.operands]
        if isinstance(op, ConstOp):
            return self.constant(op.value)
        if isinstance(op, GlobalOp):
            return f"E[{self._entry(op, op.index.value.data)}]"
        if isinstance(op, CallOp):
            k = op.keywords()
            pos, kws = a[: len(a) - len(k)], a[len(a) - len(k):]
            args = list(pos)
            if k:
                self.consts.append(tuple(k))
                args.append(f"**dict(zip(K[{len(self.consts) - 1}], ({', '.join(kws)},)))")
            return f"E[{self._entry(op, op.callee.value.data)}]({', '.join(args)})"
        if isinstance(op, ComponentOp | ConfidenceOp | FallbackOp):
            from frontends.components.settings import settings_of

            self.uses_components = True
            self.consts.append(settings_of(op.name, dict(op.properties)))
            return f"R.run({op.name!r}, K[{len(self.consts) - 1}], {', '.join(a)})"
        if isinstance(op, BoxOp):
            return a[0]
        if isinstance(op, UnboxOp):
            t = op.result.type
            if isinstance(t, IntegerType) and t.width.data == 1:
                return f"bool({a[0]})"
            return f"_index({a[0]})" if isinstance(t, (IntegerType, IndexType)) else f"float({a[0]})"
        if isinstance(op, UnpackOp):
            return a[0]
        if isinstance(op, arith.ConstantOp):
            return self.constant(op.value)
        if type(op) in _INT_BIN:
            return _INT_BIN[type(op)].format(*a)
        if isinstance(op, (arith.CmpiOp, arith.CmpfOp)):
            pred = op.predicate.value.data
            name = (arith.CMPI_COMPARISON_OPERATIONS if isinstance(op, arith.CmpiOp)
                    else arith.CMPF_COMPARISON_OPERATIONS)[pred]
            if name == "one":  # ordered: false when either is NaN
                return f"({a[0]} != {a[1]} and {a[0]} == {a[0]} and {a[1]} == {a[1]})"
            if name not in _CMP:
                raise self.fail(op, f"comparison predicate '{name}'")
            return f"({a[0]} {_CMP[name]} {a[1]})"
        if isinstance(op, arith.SelectOp):
            return f"({a[1]} if {a[0]} else {a[2]})"
        if isinstance(op, (arith.IndexCastOp, arith.ExtSIOp)):
            return a[0]
        if isinstance(op, arith.ExtUIOp):
            return f"int({a[0]})"
        if isinstance(op, arith.TruncIOp):
            w = op.result.type.width.data
            return f"bool({a[0]} & 1)" if w == 1 else f"_wrap({a[0]}, {w})"
        if isinstance(op, (arith.SIToFPOp, arith.UIToFPOp)):
            return f"float({a[0]})"
        if isinstance(op, arith.FPToSIOp):
            return f"int({a[0]})"
        if isinstance(op, arith.NegfOp):
            return f"(-{a[0]})"
        raise self.fail(op, f"'{op.name}' has no Python equivalent here (orchestration code runs "
                        "func/scf/arith/pyobj; numeric kernels run JIT-compiled)")

    def _entry(self, op: Operation, i: int) -> int:
        if not 0 <= i < len(self.env):
            raise self.fail(op, f"environment entry {i} does not exist (the table has {len(self.env)})")
        return i
