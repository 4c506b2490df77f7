"""The f64 -> lower-precision conversions precision_reduce puts where f64 values
enter a region, as ops to insert.

f64 -> f32 is one `arith.truncf`. f64 -> f16 is not: x86 has no instruction for
it, LLVM lowers `arith.truncf f64 to f16` to a call of `__truncdfhf2` per element
(a loop with it measured ~30x slower than the f64 loop). Rounding through f32 with
round-to-nearest twice is wrong in rare ties, so the value is first rounded to f32
*to odd* (round toward zero, then set the last bit if the conversion was
inexact), then to f16 to nearest with F16C's conversion: with 24 >= 11 + 2 bits,
this gives the correctly rounded f16 (Boldo & Melquiond, "Emulation of FMA and
correctly rounded sums: proved algorithms using rounding to odd", 2008), in ~12
vectorisable ops. Tensors of f64 get the same sequence in an elementwise
`linalg.generic`.
"""

from __future__ import annotations

from xdsl.dialects import arith, math, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    TensorType,
    i32,
)
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import GenericOp, YieldOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap


def _scalar_f64_to_f16(v: SSAValue) -> list[Operation]:
    """Correctly rounded f64 -> f16; the last op's result is the f16 value.
    NaN, infinities, zeros and overflow keep IEEE semantics: NaN compares
    unordered (no bit change), a value beyond f32's range rounds to f32's inf,
    which moves one ulp down to FLT_MAX and then overflows f16 to inf."""
    t = arith.TruncFOp(v, Float32Type())  # round to nearest
    back = arith.ExtFOp(t, Float64Type())
    bits = arith.BitcastOp(t, i32)
    abs_back = math.AbsFOp(back)
    abs_v = math.AbsFOp(v)
    rounded_up = arith.CmpfOp(abs_back, abs_v, "ogt")  # |t| > |v|: step back to toward-zero
    inexact = arith.CmpfOp(back, v, "one")
    down = arith.ExtUIOp(rounded_up, i32)
    sticky = arith.ExtUIOp(inexact, i32)
    toward_zero = arith.SubiOp(bits, down)
    odd = arith.OrIOp(toward_zero, sticky)
    t_odd = arith.BitcastOp(odd, Float32Type())
    half = arith.TruncFOp(t_odd, Float16Type())
    return [t, back, bits, abs_back, abs_v, rounded_up, inexact, down, sticky,
            toward_zero, odd, t_odd, half]


def _tensor_f64_to_f16(v: SSAValue, t: TensorType) -> list[Operation]:
    """The scalar sequence applied to every element by a linalg.generic."""
    shape = t.get_shape()
    ops: list[Operation] = []
    sizes = []
    for d, n in enumerate(shape):
        if n < 0:
            index = arith.ConstantOp(IntegerAttr(d, IndexType()))
            dim = tensor.DimOp(v, index)
            ops += [index, dim]
            sizes.append(dim.results[0])
    out_type = TensorType(Float16Type(), shape, t.encoding)
    empty = tensor.EmptyOp(sizes, out_type)
    body = Block(arg_types=[Float64Type(), Float16Type()])
    scalar = _scalar_f64_to_f16(body.args[0])
    body.add_ops([*scalar, YieldOp(scalar[-1].results[0])])
    identity = AffineMapAttr(AffineMap.identity(len(shape)))
    generic = GenericOp(
        [v], [empty.results[0]], Region(body), [identity, identity],
        [IteratorTypeAttr.parallel()] * len(shape), [out_type],
    )
    return [*ops, empty, generic]


def truncate(v: SSAValue, low_type: Attribute) -> list[Operation]:
    """Ops converting `v` (f64 or tensor of f64) to `low_type`; the last op's first
    result is the converted value."""
    element = low_type.element_type if isinstance(low_type, TensorType) else low_type
    if not isinstance(element, Float16Type):
        return [arith.TruncFOp(v, low_type)]
    if isinstance(low_type, TensorType):
        return _tensor_f64_to_f16(v, v.type)
    return _scalar_f64_to_f16(v)
