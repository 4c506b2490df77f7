"""Calls inside numeric kernels: `math` and NumPy scalar functions -> math ops,
Python builtins (abs, min, max, int, float, bool, len, round), NumPy scalar casts,
and calls of other Python functions (decorated or not), which are lowered into the
same module, specialised on the argument types of the call."""

from __future__ import annotations

import ast
import builtins
import inspect
import math

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects import math as mmath
from xdsl.dialects.builtin import FloatAttr, MemRefType, f64, i1, i64

from frontends.kernel_types import DTYPES, is_float
from frontends.lowering import Val
from frontends.source import MISSING

_M1 = {"sqrt": mmath.SqrtOp, "exp": mmath.ExpOp, "log": mmath.LogOp, "sin": mmath.SinOp,
       "cos": mmath.CosOp, "tan": mmath.TanOp, "tanh": mmath.TanhOp, "atan": mmath.AtanOp,
       "asin": mmath.AsinOp, "acos": mmath.AcosOp, "sinh": mmath.SinhOp, "cosh": mmath.CoshOp,
       "asinh": mmath.AsinhOp, "acosh": mmath.AcoshOp, "atanh": mmath.AtanhOp, "log2": mmath.Log2Op,
       "log10": mmath.Log10Op, "log1p": mmath.Log1pOp, "expm1": mmath.ExpM1Op, "erf": mmath.ErfOp,
       "cbrt": mmath.CbrtOp, "fabs": mmath.AbsFOp}
_M2 = {"atan2": mmath.Atan2Op, "pow": mmath.PowFOp, "copysign": mmath.CopySignOp}
MATH_UNARY = {getattr(math, n): op for n, op in _M1.items() if hasattr(math, n)}
MATH_BINARY = {getattr(math, n): op for n, op in _M2.items()}
NP_UNARY = {getattr(np, n): op for n, op in {**_M1, "abs": None, "arctan": mmath.AtanOp,
            "arcsin": mmath.AsinOp, "arccos": mmath.AcosOp, "floor": mmath.FloorOp,
            "ceil": mmath.CeilOp}.items() if n != "fabs" and hasattr(np, n) and op is not None}
NP_CASTS = (np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.bool_)


class KernelCalls:
    """Mixin of KernelLowering: `call(node)`."""

    def call(self, node: ast.Call):
        fn = self.resolve_static(node.func)
        if fn is MISSING:
            what = ast.unparse(node.func)
            if isinstance(node.func, ast.Attribute):
                raise self.unsupported(f"method call '{what}(...)' in a kernel", node)
            raise self.error(f"'{what}' is not a function this kernel can call", node)
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise self.unsupported("*args / **kwargs in a call", node)
        if fn is range:
            raise self.unsupported("range() outside the iterable of a for loop", node)
        if self.builder.is_lowerable(fn):
            return self.call_function(fn, node)
        if node.keywords:
            raise self.error(f"'{ast.unparse(node.func)}' takes no keyword arguments in a kernel", node)
        args = [self.scalar(self.expr(a), "an argument") if not self._is_len(fn) else self.expr(a)
                for a in node.args]
        self.node = node
        try:
            return self.builtin(fn, args, node)
        except TypeError:  # unhashable callables are not in the tables
            raise self.error(f"'{ast.unparse(node.func)}' cannot be called in a kernel", node) from None

    @staticmethod
    def _is_len(fn) -> bool:
        return fn is builtins.len

    def _arity(self, args, n: int, name: str, node) -> None:
        if len(args) != n:
            raise self.error(f"{name}() takes {n} argument(s) in a kernel, got {len(args)}", node)

    def _float(self, v: Val) -> Val:
        return self.convert(v, f64) if v.type != f64 else v

    def builtin(self, fn, args: list, node) -> Val:
        name = getattr(fn, "__name__", str(fn))
        if fn in MATH_UNARY:
            self._arity(args, 1, name, node)
            return Val(self.emit(MATH_UNARY[fn](self._float(args[0]).ssa)).results[0], True)
        if fn is math.log and len(args) == 2:  # log(x, base) == log(x) / log(base), as CPython
            x, b = (self.emit(mmath.LogOp(self._float(a).ssa)).results[0] for a in args)
            return Val(self.emit(arith.DivfOp(x, b)).result, True)
        if fn in MATH_BINARY:
            self._arity(args, 2, name, node)
            x, y = (self._float(a).ssa for a in args)
            return Val(self.emit(MATH_BINARY[fn](x, y)).results[0], True)
        if fn in (math.floor, math.ceil, math.trunc, builtins.round):
            self._arity(args, 1, name, node)
            v = args[0]
            if not is_float(v.type):
                return self.convert(v, i64)
            op = {math.floor: mmath.FloorOp, math.ceil: mmath.CeilOp, builtins.round: mmath.RoundEvenOp}.get(fn)
            r = self.emit(op(v.ssa)).results[0] if op else v.ssa
            return self.convert(Val(r, v.weak), i64)
        if fn in (math.isnan, math.isinf, math.isfinite):
            self._arity(args, 1, name, node)
            x = self._float(args[0]).ssa
            if fn is math.isnan:
                return Val(self.emit(arith.CmpfOp(x, x, "uno")).result, True, 0)
            inf = self.emit(arith.ConstantOp(FloatAttr(math.inf, f64))).result
            absx = self.emit(mmath.AbsFOp(x)).results[0]
            return Val(self.emit(arith.CmpfOp(absx, inf, "oeq" if fn is math.isinf else "olt")).result, True, 0)
        if fn in NP_UNARY:
            self._arity(args, 1, name, node)
            v = args[0] if is_float(args[0].type) else self.convert(args[0], f64)
            return Val(self.emit(NP_UNARY[fn](v.ssa)).results[0], False)
        if fn in (builtins.abs, np.abs):
            self._arity(args, 1, name, node)
            v = args[0] if args[0].type != i1 else self.convert(args[0], i64)
            op = mmath.AbsFOp if is_float(v.type) else mmath.AbsIOp
            return Val(self.emit(op(v.ssa)).results[0], v.weak and fn is builtins.abs, 0)
        if fn in (builtins.min, builtins.max):
            if len(args) < 2:
                raise self.error(f"{name}() takes two or more numbers in a kernel", node)
            cur = args[0]
            for x in args[1:]:  # Python: the first of equal values wins; x replaces cur only if strictly better
                t = self.unify_types(cur, x)
                c, y = self.convert(cur, t), self.convert(x, t)
                better = self.compare(ast.Lt() if fn is builtins.min else ast.Gt(), y, c)
                lo = min(c.lo, y.lo) if c.lo is not None and y.lo is not None else None
                cur = Val(self.emit(arith.SelectOp(better.ssa, y.ssa, c.ssa)).result, c.weak and y.weak, lo)
            return cur
        if fn in (builtins.int, builtins.float, builtins.bool):
            self._arity(args, 1, name, node)
            t = {builtins.int: i64, builtins.float: f64, builtins.bool: i1}[fn]
            return Val(self.convert(args[0], t).ssa, True, args[0].lo if fn is builtins.int else None)
        if fn is builtins.len:
            self._arity(args, 1, name, node)
            if not isinstance(args[0], Val) or not isinstance(args[0].type, MemRefType):
                raise self.error("len() takes an array in a kernel", node)
            return self.dim(args[0], 0)
        if fn in NP_CASTS:
            self._arity(args, 1, name, node)
            t = DTYPES[np.dtype(fn)]
            return Val(self.convert(args[0], t).ssa, False)
        raise self.error(f"'{ast.unparse(node.func)}' cannot be called in a kernel (math functions, "
                         "abs/min/max/int/float/bool/len/round and Python functions can)", node)

    def call_function(self, fn, node: ast.Call):
        """A call of another Python function: lowered into this module for these argument types."""
        target = getattr(fn, "python", fn)
        try:
            bound = inspect.signature(target).bind(*node.args, **{k.arg: k.value for k in node.keywords})
        except TypeError as err:
            raise self.error(f"call of '{target.__name__}': {err}", node) from None
        bound.apply_defaults()
        args = []
        for value in bound.arguments.values():
            if isinstance(value, ast.AST):
                args.append(self.expr(value))
            else:
                args.append(self.constant(value))
        for a in args:
            if isinstance(a, tuple):
                raise self.error("a tuple cannot be passed to a kernel function", node)
        self.node = node
        name, results = self.builder.kernel_call(fn, [a.type for a in args], node, self.src)
        op = self.emit(func.CallOp(name, [a.ssa for a in args], results))
        vals = [Val(r, True) for r in op.results]
        if not vals:
            return Val(self.const_bool(False).ssa, True, 0)  # the None of a procedure; unused
        return vals[0] if len(vals) == 1 else tuple(vals)
