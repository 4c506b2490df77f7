"""Numeric kernels: Python on ints, floats, bools and numpy arrays -> arith / math /
memref / scf, JIT-compiled through upstream MLIR (`approx_opt.jit`).

Types follow Python, and NumPy for array elements: `int` -> i64, `float` -> f64,
`bool` -> i1, `np.ndarray` -> `memref<?x...xT>` (dtype and rank from the call);
int op float promotes to float, `/` is always float, Python scalars are "weak"
(NEP 50: `x_f32 * 2.0` stays f32). `//` and `%` on ints round as Python does,
negative indices count from the end. Not checked at run time (documented limits):
i64 overflow wraps, indices are not bounds-checked, division by zero gives a
meaningless value instead of an exception, a non-constant range() step must be > 0.
"""

from __future__ import annotations

import ast

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects import math as mmath
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute

from frontends.kernel_arrays import KernelArrays
from frontends.kernel_calls import KernelCalls
from frontends.kernel_types import DTYPES, SCALARS, is_float, promote, width
from frontends.lowering import BodyLowering, Val
from frontends.source import MISSING

_CMPI = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "slt", ast.LtE: "sle", ast.Gt: "sgt", ast.GtE: "sge"}
_CMPF = {ast.Eq: "oeq", ast.NotEq: "une", ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge"}
_INT_OPS = {ast.Add: arith.AddiOp, ast.Sub: arith.SubiOp, ast.Mult: arith.MuliOp,
            ast.BitAnd: arith.AndIOp, ast.BitOr: arith.OrIOp, ast.BitXor: arith.XOrIOp,
            ast.LShift: arith.ShLIOp, ast.RShift: arith.ShRSIOp}
_FLOAT_OPS = {ast.Add: arith.AddfOp, ast.Sub: arith.SubfOp, ast.Mult: arith.MulfOp, ast.Div: arith.DivfOp}


class KernelLowering(KernelArrays, KernelCalls, BodyLowering):
    """One numeric Python function -> func.func on scalars and memrefs."""

    def __init__(self, src, builder, name, result_types=None):
        super().__init__(src, builder, name)
        self.result_types = result_types

    def entry_value(self, index, arg):
        return Val(arg, not isinstance(arg.type, MemRefType), 0 if arg.type == i1 else None)

    def finish_returns(self, out):
        values = super().finish_returns(out)
        if self.result_types is None:
            return values
        if len(values) != len(self.result_types):
            raise self.error(f"'{self.src.name}' returns {len(values)} value(s) where "
                             f"{len(self.result_types)} are needed", self.src.tree)
        return [self.convert(v, t) for v, t in zip(values, self.result_types)]

    def implicit_return(self):
        return []

    def return_values(self, node):
        if node is None:
            return []
        v = self.expr(node)
        values = list(v) if isinstance(v, tuple) else [v]
        for x in values:
            if isinstance(x.type, MemRefType):
                raise self.error("a kernel cannot return an array (write into an argument instead)", node)
        return values

    def placeholder(self, t):
        return self.constant(0.0 if is_float(t) else 0, t)

    # ------------------------------------------------------------ types
    def constant(self, value, t: Attribute | None = None, weak: bool = True) -> Val:
        if isinstance(value, (bool, np.bool_)):
            return self.const_bool(bool(value))
        if isinstance(value, (int, np.integer)):
            t = t or (DTYPES[value.dtype] if isinstance(value, np.integer) else i64)
            if not -(2 ** 63) <= int(value) < 2 ** 63:
                raise self.error(f"integer {value} does not fit in 64 bits")
            return Val(self.emit(arith.ConstantOp(IntegerAttr(int(value), t))).result,
                       weak and not isinstance(value, np.integer), int(value))
        if isinstance(value, (float, np.floating)):
            t = t or (DTYPES[value.dtype] if isinstance(value, np.floating) else f64)
            return Val(self.emit(arith.ConstantOp(FloatAttr(float(value), t))).result,
                       weak and not isinstance(value, np.floating))
        raise self.error(f"a kernel works on numbers and arrays; {type(value).__name__} constant "
                         f"{value!r:.40} is not one")

    def unify_types(self, a: Val, b: Val) -> Attribute:
        if a.type == b.type:
            return a.type
        if isinstance(a.type, MemRefType) or isinstance(b.type, MemRefType):
            raise self.error(f"a variable holds both {a.type} and {b.type}")
        t, _ = promote(a, b)
        return t

    def convert(self, v: Val, t: Attribute) -> Val:
        s = v.type
        if s == t:
            return v
        if isinstance(s, MemRefType) or isinstance(t, MemRefType):
            raise self.error(f"cannot convert {s} to {t}")
        if t == i1:
            return Val(self.truth(v), v.weak, 0)
        if isinstance(t, IntegerType):
            if s == i1:
                op = arith.ExtUIOp(v.ssa, t)
            elif isinstance(s, IntegerType):
                op = arith.ExtSIOp(v.ssa, t) if width(s) < width(t) else arith.TruncIOp(v.ssa, t)
            else:
                op = arith.FPToSIOp(v.ssa, t)
            return Val(self.emit(op).result, v.weak, v.lo if isinstance(s, IntegerType) else None)
        if s == i1:
            op = arith.UIToFPOp(v.ssa, t)
        elif isinstance(s, IntegerType):
            op = arith.SIToFPOp(v.ssa, t)
        else:
            op = arith.ExtFOp(v.ssa, t) if width(s) < width(t) else arith.TruncFOp(v.ssa, t)
        return Val(self.emit(op).result, v.weak)

    def truth(self, v: Val):
        self.scalar(v, "a condition")
        if v.type == i1:
            return v.ssa
        zero = self.constant(0.0 if is_float(v.type) else 0, v.type)
        op = arith.CmpfOp(v.ssa, zero.ssa, "une") if is_float(v.type) else arith.CmpiOp(v.ssa, zero.ssa, "ne")
        return self.emit(op).result

    def scalar(self, v, what: str) -> Val:
        if isinstance(v, tuple):
            raise self.error(f"a tuple cannot be used as {what} in a kernel (unpack it first)")
        if isinstance(v.type, MemRefType):
            raise self.error(f"an array cannot be used as {what} (index it: a[i])")
        return v

    def as_int(self, v: Val, what: str) -> Val:
        self.scalar(v, what)
        if is_float(v.type):
            raise self.error(f"{what} must be an integer, got a float")
        return self.convert(v, i64) if v.type != i64 else v

    def annotated_value(self, annotation, value):
        t = SCALARS.get(self.src.resolve(annotation.id) if isinstance(annotation, ast.Name) else None)
        return self.convert(self.scalar(value, "a value"), t) if t is not None else value

    # ------------------------------------------------------------ expressions
    def other_expr(self, node: ast.expr):
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Tuple):
            return tuple(self.scalar(self.expr(e), "a tuple element") for e in node.elts)
        raise self.unsupported(f"{type(node).__name__} expression in a kernel", node)

    def global_value(self, value, name: str) -> Val:
        if isinstance(value, (bool, int, float, np.number, np.bool_)):
            return self.constant(value)
        raise self.error(f"'{name}' is a {type(value).__name__}; a kernel can read numbers from "
                         "globals, arrays must be passed as arguments")

    def attribute(self, node: ast.Attribute) -> Val:
        value = self.resolve_static(node)
        if value is not MISSING:
            if isinstance(value, (bool, int, float, np.number)):
                return self.constant(value)
            raise self.error(f"'{ast.unparse(node)}' is not a number", node)
        base = self.expr(node.value)
        if isinstance(base, Val) and isinstance(base.type, MemRefType):
            if node.attr == "ndim":
                return self.constant(len(base.type.shape))
            if node.attr == "size":
                size = self.constant(1)
                for d in range(len(base.type.shape)):
                    size = self.binop(ast.Mult(), size, self.dim(base, d))
                return size
        raise self.unsupported(f"attribute '.{node.attr}' in a kernel (arrays have .shape[d], .size, .ndim)", node)

    def resolve_static(self, node: ast.expr):
        """A dotted name of globals (math.pi, np.sqrt, mod.func) resolved now, or MISSING."""
        if isinstance(node, ast.Name):
            return MISSING if node.id in self.vars else self.src.resolve(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve_static(node.value)
            if base is not MISSING and type(base).__name__ == "module":
                return getattr(base, node.attr, MISSING)
        return MISSING

    def binop(self, op: ast.operator, a, b, inplace: bool = False) -> Val:
        a, b = self.scalar(a, "an operand"), self.scalar(b, "an operand")
        kop = type(op)
        t, weak = promote(a, b)
        if kop is ast.Div:
            t = t if is_float(t) else f64
        elif kop in (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift):
            if is_float(t):
                raise self.error(f"bitwise {type(op).__name__} needs integers")
            if t == i1 and kop in (ast.LShift, ast.RShift):
                t = i64
        elif t == i1:
            t = i64  # True + True == 2
        if kop is ast.Pow:
            return self.power(a, b, t, weak)
        x, y = self.convert(a, t), self.convert(b, t)
        if is_float(t):
            if kop in _FLOAT_OPS:
                return Val(self.emit(_FLOAT_OPS[kop](x.ssa, y.ssa)).result, weak)
            if kop is ast.FloorDiv:
                q = self.emit(arith.DivfOp(x.ssa, y.ssa)).result
                return Val(self.emit(mmath.FloorOp(q)).result, weak)
            raise self.unsupported(f"{type(op).__name__} on floats in a kernel", self.node)
        if kop in _INT_OPS:
            lo = None
            if x.lo is not None and y.lo is not None:
                if kop is ast.Add:
                    lo = x.lo + y.lo
                elif kop is ast.Mult and x.lo >= 0 and y.lo >= 0:
                    lo = x.lo * y.lo
                elif kop is ast.Sub and self.is_const(y):
                    lo = x.lo - y.lo
            return Val(self.emit(_INT_OPS[kop](x.ssa, y.ssa)).result, weak, lo)
        if kop in (ast.FloorDiv, ast.Mod):
            return self.int_div(kop, x, y, weak)
        raise self.unsupported(f"operator {type(op).__name__} in a kernel", self.node)

    @staticmethod
    def is_const(v: Val) -> bool:
        return isinstance(v.ssa.owner, arith.ConstantOp)

    def int_div(self, kop, x: Val, y: Val, weak: bool) -> Val:
        """Python's // and % (round toward -inf); a zero divisor is replaced by 1."""
        nonneg = x.lo is not None and x.lo >= 0 and y.lo is not None and y.lo >= 0
        if not (self.is_const(y) and y.lo != 0):
            zero, one = self.constant(0, y.type), self.constant(1, y.type)
            is_zero = self.emit(arith.CmpiOp(y.ssa, zero.ssa, "eq")).result
            y = Val(self.emit(arith.SelectOp(is_zero, one.ssa, y.ssa)).result, y.weak, y.lo)
        if kop is ast.FloorDiv:
            op = arith.DivSIOp(x.ssa, y.ssa) if nonneg else arith.FloorDivSIOp(x.ssa, y.ssa)
            return Val(self.emit(op).result, weak, 0 if nonneg else None)
        r = self.emit(arith.RemSIOp(x.ssa, y.ssa)).result
        if nonneg:
            return Val(r, weak, 0)
        zero = self.constant(0, y.type).ssa
        r_ne = self.emit(arith.CmpiOp(r, zero, "ne")).result
        signs = self.emit(arith.XOrIOp(self.emit(arith.CmpiOp(r, zero, "slt")).result,
                                       self.emit(arith.CmpiOp(y.ssa, zero, "slt")).result)).result
        fix = self.emit(arith.AndIOp(r_ne, signs)).result
        fixed = self.emit(arith.AddiOp(r, y.ssa)).result
        return Val(self.emit(arith.SelectOp(fix, fixed, r)).result, weak)

    def power(self, a: Val, b: Val, t, weak: bool) -> Val:
        if not is_float(t):  # int ** int (a negative exponent is not supported: Python gives a float)
            x, y = self.convert(a, t), self.convert(b, t)
            return Val(self.emit(mmath.IPowIOp(x.ssa, y.ssa)).result, weak)
        x, y = self.convert(a, t), self.convert(b, t)
        return Val(self.emit(mmath.PowFOp(x.ssa, y.ssa)).result, weak)

    def unaryop(self, node: ast.UnaryOp) -> Val:
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and type(node.operand.value) in (int, float):
            return self.constant(-node.operand.value)
        v = self.scalar(self.expr(node.operand), "an operand")
        self.node = node
        if isinstance(node.op, ast.Not):
            return Val(self.emit(arith.XOrIOp(self.truth(v), self.const_bool(True).ssa)).result, True, 0)
        if v.type == i1:
            v = self.convert(v, i64)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.USub):
            if is_float(v.type):
                return Val(self.emit(arith.NegfOp(v.ssa)).result, v.weak)
            if self.is_const(v):
                return self.constant(-v.ssa.owner.value.value.data, v.type, v.weak)
            return Val(self.emit(arith.SubiOp(self.constant(0, v.type).ssa, v.ssa)).result, v.weak)
        if isinstance(node.op, ast.Invert) and not is_float(v.type):
            return Val(self.emit(arith.XOrIOp(v.ssa, self.constant(-1, v.type).ssa)).result, v.weak)
        raise self.unsupported(f"unary {type(node.op).__name__} on {v.type}", node)

    def compare(self, op: ast.cmpop, a, b) -> Val:
        a, b = self.scalar(a, "an operand"), self.scalar(b, "an operand")
        if type(op) not in _CMPI:
            raise self.unsupported(f"comparison {type(op).__name__} in a kernel", self.node)
        t, _ = promote(a, b)
        x, y = self.convert(a, t), self.convert(b, t)
        if is_float(t):
            return Val(self.emit(arith.CmpfOp(x.ssa, y.ssa, _CMPF[type(op)])).result, True, 0)
        return Val(self.emit(arith.CmpiOp(x.ssa, y.ssa, _CMPI[type(op)])).result, True, 0)

    def lower_raise(self, s):
        raise self.unsupported("raise in a kernel", s)

    def lower_assert(self, s):
        raise self.unsupported("assert in a kernel", s)


def kernel_function(src, builder, name: str, arg_types, result_types=None) -> func.FuncOp:
    return KernelLowering(src, builder, name, result_types).lower_function(list(arg_types))

