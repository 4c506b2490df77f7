"""The types of numeric kernels: NumPy dtypes and Python scalars -> MLIR types, and
the result type of a binary operation (Python's rules for Python scalars, NumPy's
for array elements). Shared by the kernel lowering and its calls and arrays."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DYNAMIC_INDEX, AnyFloat, MemRefType, f16, f32, f64, i1, i8, i16, i32, i64
from xdsl.ir import Attribute

from frontends.lowering import Val

DTYPES = {np.dtype(np.float64): f64, np.dtype(np.float32): f32, np.dtype(np.float16): f16,
          np.dtype(np.int64): i64, np.dtype(np.int32): i32, np.dtype(np.int16): i16,
          np.dtype(np.int8): i8, np.dtype(np.bool_): i1}
SCALARS = {bool: i1, int: i64, float: f64}


def memref_of(dtype, ndim: int) -> MemRefType:
    return MemRefType(DTYPES[np.dtype(dtype)], [DYNAMIC_INDEX] * ndim)


def is_float(t) -> bool:
    return isinstance(t, AnyFloat)


def kind(t) -> int:
    """0 bool, 1 int, 2 float."""
    return 2 if is_float(t) else (0 if t == i1 else 1)


def width(t) -> int:
    return t.bitwidth if is_float(t) else t.width.data


def promote(a: Val, b: Val) -> tuple[Attribute, bool]:
    """Result type of `a op b` (Python for Python scalars, NumPy for elements)."""
    ka, kb = kind(a.type), kind(b.type)
    if a.weak and b.weak:
        return (i1, i64, f64)[max(ka, kb)], True
    if a.weak != b.weak:
        s, w = (b, a) if a.weak else (a, b)
        ks, kw = kind(s.type), kind(w.type)
        if ks == 0:
            return (i1, i64, f64)[kw], False
        if kw <= ks:
            return s.type, False
        return f64, False  # a Python float with an integer element
    if ka == kb:
        return (a.type if width(a.type) >= width(b.type) else b.type), False
    if ka == 0 or kb == 0:
        return (b.type if ka == 0 else a.type), False
    ft, it = (a.type, b.type) if ka == 2 else (b.type, a.type)
    need = min(64, 2 * width(it))
    return (ft if width(ft) >= need else {16: f16, 32: f32, 64: f64}[need]), False
