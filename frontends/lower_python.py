"""Orchestration code -> func/scf + `pyobj`: the glue of a compound AI system
(strings, lists, model outputs, calls to retrievers and models).

Values are `!pyobj.obj`; parameters annotated int / float / bool are i64 / f64 / i1
(so `Param` and decision trees can read them). Every operator, call, attribute
access and index is a `pyobj.call` of the Python callable that performs it
(resolved now from the function's closure, globals and builtins), so the generated
Python (`frontends.pygen`) does exactly what the source does, in the same order.
Loops stay loops (`python_loops`: `for` over a range or any sequence, comprehensions),
`while` is scf.while, `if` is scf.if; what orchestration code and kernels read alike
(statements, names, operators, calls) is dispatched in `lowering.BodyLowering`.
"""

from __future__ import annotations

import ast
import builtins
import operator

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, StringAttr, UnitAttr, f64, i1, i64
from xdsl.ir import Block, Region

from approx_dialect.diagnostics import ApproxError
from approx_dialect.pyobj import OBJ, BoxOp, CallOp, ConstOp, GlobalOp, ObjType, UnboxOp, UnpackOp
from frontends import pyruntime as rt
from frontends.components.declare import Component
from frontends.knob_config import Decorated
from frontends.lowering import BodyLowering, Val
from frontends.python_loops import PythonLoops
from frontends.source import MISSING, FunctionSource

SCALAR_ANNOTATIONS = {int: i64, float: f64, bool: i1}


class PythonLowering(PythonLoops, BodyLowering):
    """One orchestration function -> func.func over !pyobj.obj."""

    # ------------------------------------------------------------ building blocks
    def pycall(self, fn, args: list, name: str | None = None, kw: list[str] = (), results: int = 1):
        """`fn(*args)` through the environment table; the last len(kw) args by keyword."""
        idx = self.builder.global_index(fn)
        name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
        op = self.emit(CallOp(idx, name, [self.obj(a).ssa for a in args], list(kw), [OBJ] * results))
        return Val(op.res[0]) if results == 1 else None

    def constant(self, value) -> Val:
        return Val(self.emit(ConstOp(self.const_attr(value))).result)

    def const_attr(self, value):
        if value is None:
            return UnitAttr()
        if isinstance(value, bool):
            return IntegerAttr(int(value), i1)
        if isinstance(value, int):
            if not -(2 ** 63) <= value < 2 ** 63:
                raise self.unsupported(f"integer constant {value} (more than 64 bits)")
            return IntegerAttr(value, i64)
        if isinstance(value, float):
            return FloatAttr(value, f64)
        if isinstance(value, str):
            return StringAttr(value)
        if isinstance(value, tuple):
            return ArrayAttr([self.const_attr(v) for v in value])
        raise self.unsupported(f"{type(value).__name__} constant")

    def obj(self, v: Val) -> Val:
        return self.convert(v, OBJ)

    def global_value(self, value, name: str) -> Val:
        return Val(self.emit(GlobalOp(self.builder.global_index(value), name)).result)

    # ------------------------------------------------------------ hooks of BodyLowering
    def implicit_return(self):
        return [self.constant(None)]

    def return_values(self, node):
        return [self.obj(self.expr(node))] if node is not None else [self.constant(None)]

    def placeholder(self, t):
        if isinstance(t, ObjType):
            return self.constant(None)
        return Val(self.emit(arith.ConstantOp(FloatAttr(0.0, t) if t == f64 else IntegerAttr(0, t))).result)

    def unify_types(self, a: Val, b: Val):
        return a.type if a.type == b.type else OBJ

    def convert(self, v: Val, t) -> Val:
        if v.type == t:
            return v
        if isinstance(t, ObjType):
            return Val(self.emit(BoxOp(v.ssa)).result)
        if isinstance(v.type, ObjType):
            return Val(self.emit(UnboxOp(v.ssa, t)).result)
        return self.convert(self.convert(v, OBJ), t)

    def truth(self, v: Val):
        if v.type == i1:
            return v.ssa
        return self.emit(UnboxOp(self.obj(v).ssa, i1)).result

    def annotated_value(self, annotation, value):
        return value

    # ------------------------------------------------------------ expressions
    def other_expr(self, node: ast.expr) -> Val:
        if isinstance(node, ast.Attribute):
            static = self.resolve_static(node)
            if static is not MISSING:
                return self.global_value(static, ast.unparse(node))
            base = self.expr(node.value)
            self.node = node
            return self.pycall(builtins.getattr, [base, self.constant(node.attr)])
        if isinstance(node, ast.Subscript):
            base = self.expr(node.value)
            index = self.index(node.slice)
            self.node = node
            return self.pycall(operator.getitem, [base, index])
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise self.unsupported("starred items in a display", node)
            items = [self.expr(e) for e in node.elts]
            self.node = node
            builder = {ast.List: rt.build_list, ast.Tuple: rt.build_tuple, ast.Set: rt.build_set}[type(node)]
            return self.pycall(builder, items)
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise self.unsupported("**mapping in a dict display", node)
            items = []
            for k, v in zip(node.keys, node.values):
                items += [self.expr(k), self.expr(v)]
            self.node = node
            return self.pycall(rt.build_dict, items)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return self.comprehension(node)
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        if isinstance(node, ast.Lambda):
            raise self.unsupported("lambda (define it with def at module level and pass its name)", node)
        raise self.unsupported(f"{type(node).__name__} expression", node)

    def resolve_static(self, node: ast.expr):
        """`mod.attr.attr` through modules and classes, resolved now (MISSING otherwise)."""
        if isinstance(node, ast.Name):
            return MISSING if (node.id in self.vars or node.id in self.partial) else self.src.resolve(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve_static(node.value)
            if base is not MISSING and (type(base).__name__ == "module" or isinstance(base, type)):
                return getattr(base, node.attr, MISSING)
        return MISSING

    def index(self, node: ast.expr) -> Val:
        if isinstance(node, ast.Slice):
            parts = [self.expr(p) if p is not None else self.constant(None)
                     for p in (node.lower, node.upper, node.step)]
            return self.pycall(builtins.slice, parts)
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            return self.pycall(rt.build_tuple, [self.index(e) for e in node.elts])
        return self.expr(node)

    def binop(self, op, a: Val, b: Val, inplace: bool = False) -> Val:
        table = rt.INPLACE if inplace else rt.BINARY
        return self.pycall(table[type(op).__name__], [a, b])

    def unaryop(self, node: ast.UnaryOp) -> Val:
        v = self.expr(node.operand)
        self.node = node
        return self.pycall(rt.UNARY[type(node.op).__name__], [v])

    def compare(self, op, a: Val, b: Val) -> Val:
        return self.pycall(rt.COMPARE[type(op).__name__], [a, b])

    def call(self, node: ast.Call) -> Val:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.unsupported("*args / **kwargs in a call", node)
        fn = self.resolve_static(node.func)
        if fn is MISSING:  # a method, or a callable computed at run time
            callee = self.expr(node.func)
        args = [self.expr(a) for a in node.args] + [self.expr(k.value) for k in node.keywords]
        kw = [k.arg for k in node.keywords]
        self.node = node
        if fn is MISSING:
            return self.pycall(rt.call, [callee, *args], "call", kw)
        if isinstance(fn, Component):
            return self.component_call(fn, args, kw, node)
        if _is_orchestration(fn):
            if kw:
                raise self.unsupported("keyword arguments in a call of a decorated function", node)
            return self.decorated_call(fn, args, node)
        return self.pycall(fn, args, ast.unparse(node.func), kw)

    def component_call(self, comp, args: list, kw: list, node) -> Val:
        """A call of a registered component: its op, with the written attributes."""
        if kw:
            raise self.unsupported(f"keyword arguments in a call of component '{comp.label}'", node)
        if len(args) != comp.ARITY:
            raise self.error(f"component '{comp.label}' takes {comp.ARITY} argument(s), got {len(args)}", node)
        operands = [self.obj(a).ssa for a in args]
        first = len(self.builder.annotations)
        try:
            self.builder.component(comp, self.name)
            op = comp.op(operands)
        except ApproxError as err:  # its declaration is wrong: said at the call that lowers it
            raise self.src.relocate(err, node) from None
        for ann in self.builder.annotations[first:]:  # its knobs, declared by this first call: errors point here
            ann.location = self.src.loc(node)
        self.builder.call_sites.setdefault(comp.label, (self.src, node))
        return Val(self.emit(op).results[0])

    def decorated_call(self, fn, args: list, node) -> Val:
        """A call of another decorated orchestration function: lowered into this module
        (with its annotations), so one IR holds the whole program."""
        symbol = self.builder.orchestration.get(id(fn))
        if symbol is None:
            symbol = self.builder.python_callee(fn)
        n = len(fn._signature.parameters)
        if len(args) != n:
            raise self.error(f"'{fn.python.__name__}' takes {n} argument(s), got {len(args)}", node)
        callee = self.builder.function(symbol)
        ins = callee.function_type.inputs.data
        call = self.emit(func.CallOp(symbol, [self.convert(a, t).ssa for a, t in zip(args, ins)],
                                     list(callee.function_type.outputs.data)))
        return Val(call.res[0])

    def fstring(self, node: ast.JoinedStr) -> Val:
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(self.constant(v.value))
            else:
                value = self.expr(v.value)
                spec = self.fstring(v.format_spec) if v.format_spec is not None else self.constant("")
                self.node = node
                parts.append(self.pycall(rt.format_value, [value, self.constant(v.conversion), spec]))
        self.node = node
        return self.pycall(rt.fstring, parts)

    # ------------------------------------------------------------ statements
    def store(self, target: ast.expr, value: Val) -> None:
        if isinstance(target, ast.Subscript):
            base, index = self.expr(target.value), self.index(target.slice)
            self.node = target
            self.pycall(operator.setitem, [base, index, value])
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value)
            self.node = target
            self.pycall(builtins.setattr, [base, self.constant(target.attr), value])
        else:
            raise self.unsupported(f"assignment to {type(target).__name__}", target)

    def aug_store(self, s: ast.AugAssign) -> None:
        t = s.target
        base = self.expr(t.value)
        if isinstance(t, ast.Subscript):
            key = self.index(t.slice)
            get, put, keyv = operator.getitem, operator.setitem, key
        elif isinstance(t, ast.Attribute):
            get, put, keyv = builtins.getattr, builtins.setattr, self.constant(t.attr)
        else:
            raise self.unsupported(f"augmented assignment to {type(t).__name__}", t)
        old = self.pycall(get, [base, keyv])
        new = self.binop(s.op, old, self.expr(s.value), inplace=True)
        self.node = s
        self.pycall(put, [base, keyv, new])

    def unpack_assign(self, target, value: Val) -> None:
        if any(isinstance(e, ast.Starred) for e in target.elts):
            raise self.unsupported("starred assignment targets", target)
        op = self.emit(UnpackOp(self.obj(value).ssa, len(target.elts)))
        for t, r in zip(target.elts, op.res):
            self.assign(t, Val(r))

    def lower_raise(self, s: ast.Raise) -> None:
        if s.exc is None:
            raise self.unsupported("bare raise (re-raising needs try/except, which is not supported)", s)
        exc = self.expr(s.exc)
        if s.cause is not None:
            self.pycall(rt.raise_from, [exc, self.expr(s.cause)])
        else:
            self.pycall(rt.raise_, [exc])

    def lower_assert(self, s: ast.Assert) -> None:
        ok = self.truth(self.expr(s.test))
        fail = Block()
        saved, self.block = self.block, fail
        self.node = s
        self.pycall(rt.assert_fail, [self.expr(s.msg)] if s.msg is not None else [])
        self.emit(scf.YieldOp())
        self.block = saved
        passed = Block()
        passed.add_op(scf.YieldOp())
        self.node = s
        self.emit(scf.IfOp(ok, [], Region(passed), Region(fail)))


def _is_orchestration(fn) -> bool:
    return isinstance(fn, Decorated) and fn.kind == "python"


def python_function(src, builder, name: str, arg_types) -> func.FuncOp:
    return PythonLowering(src, builder, name).lower_function(list(arg_types))


LOWERED_ROLES = ("approx kernel", "cascade variant", "recover function")


def python_helper(builder):
    """helper(role, fn, symbol, ins, outs) for annotations of orchestration code:
    variants of the program (approx kernels, cascade variants, recover functions)
    written in user Python are lowered like the program; other helpers (state
    functions, checkers, library callables) are a function calling the Python
    callable `fn` (typed arguments boxed, the result converted: i32 through int(),
    i1 through bool())."""

    def helper(role: str, fn, symbol: str, ins: list, outs: list) -> None:
        if not callable(fn):
            raise TypeError(f"the {role} must be callable, got {type(fn).__name__}")
        if role.startswith(LOWERED_ROLES) and builder.is_lowerable(fn) and all(isinstance(t, ObjType) for t in outs):
            # a variant of the program is IR too: its component calls are component ops the passes see
            py = fn.python if isinstance(fn, Decorated) else fn
            builder.functions.append(python_function(FunctionSource.of(py), builder, symbol, ins))
            return
        entry = Block(arg_types=ins)
        idx = builder.global_index(fn)
        name = getattr(fn, "__qualname__", type(fn).__name__)
        ops = []
        args = []
        for a in entry.args:
            if isinstance(a.type, ObjType):
                args.append(a)
            else:
                ops.append(BoxOp(a))
                args.append(ops[-1].result)
        ops.append(CallOp(idx, name, args))
        result = ops[-1].res[0]
        (out,) = outs
        if out == i1 or isinstance(out, ObjType):
            ops.append(UnboxOp(result, out) if out == i1 else None)
        else:
            ops.append(CallOp(builder.global_index(rt.to_int), "int", [result]))
            ops.append(UnboxOp(ops[-1].res[0], out))
        ops = [o for o in ops if o is not None]
        value = ops[-1].results[0] if not isinstance(out, ObjType) else result
        entry.add_ops([*ops, func.ReturnOp(value)])
        builder.functions.append(func.FuncOp(symbol, (ins, outs), Region(entry)))

    return helper
