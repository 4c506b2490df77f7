"""precision_reduce: compute the f64 floating-point work of the knob's region in a
narrower type (k = 1: f32, k = 2: f16; k = 0 exact), so it runs in cheaper
arithmetic (wider SIMD, half the memory traffic) at a bounded loss of accuracy.

The region is the one the `approx.transform` stands in (the knob body, or one
case of a decision's switch). Inside it, every convertible op on f64 values
(scalars, or tensors of f64) is retyped in place:
  arith float ops (addf subf mulf divf remf negf max/min cmpf select, sitofp/
  uitofp/fptosi/fptoui), constants (re-materialised, rounded to the lower type),
  every `math.*` op, `scf.for` iter_args and `scf.if`/`scf.index_switch`/
  `scf.execute_region` results (with their `scf.yield`s), and `tensor.*` /
  `linalg.*` ops on tensors (linalg ops touching a memref are left alone: their
  element type is fixed by the buffer).
At the boundary, `arith.truncf` converts each f64 value that a converted op
uses but that is not itself converted (function arguments, values from before
the region, memref loads, call results, block arguments of unconverted ops),
once, right after its definition (or at the start of the region for values
from outside); `arith.extf` converts each converted value back to f64 for its
unconverted users (the region's yield, memref.store, calls). The function's
signature and memrefs keep their types. Every op is rounded to the lower type,
as if written in it: f32 results equal numpy float32 arithmetic op by op.
Values carried by other ops (scf.while, affine.for iter_args, func.call) stay
f64; the arithmetic inside them is still reduced, with conversions around it.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from approx_dialect import TransformOp
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols
from passes.transformations.precision_casts import truncate

#: knob -> (MLIR type, numpy dtype). f16 rather than bf16: numpy has float16 (exact
#: tests, QoS) and no bfloat16, approx_opt/jit/abi.py passes f16 at the C interface, and f16
#: keeps 11 bits (bf16: 8). x86 CPUs here convert f32<->f16 in hardware (F16C) but
#: compute neither f16 nor bf16 natively; f64 -> f16 is done by precision_casts.
LOWER: dict[int, tuple[Attribute, type]] = {
    1: (Float32Type(), np.float32),
    2: (Float16Type(), np.float16),
}

_ARITH = {
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf",
    "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.cmpf",
    "arith.select", "arith.constant", "arith.sitofp", "arith.uitofp", "arith.fptosi",
    "arith.fptoui",
}
_SCF_WITH_RESULTS = (scf.ForOp, scf.IfOp, scf.IndexSwitchOp, scf.ExecuteRegionOp)
_TERMINATORS = {"scf.yield", "linalg.yield", "tensor.yield"}
#: Ops that read only the shape of a tensor: never retyped, and they take a lowered
#: tensor as it is (no conversion of the whole tensor to ask for its size).
_SHAPE_ONLY = {"tensor.dim", "tensor.rank"}


def lower_of(t: Attribute, low: Attribute) -> Attribute | None:
    """The lowered type of an f64 or tensor-of-f64 type; None for any other type."""
    if isinstance(t, Float64Type):
        return low
    if isinstance(t, TensorType) and isinstance(t.element_type, Float64Type):
        return TensorType(low, t.get_shape(), t.encoding)
    return None


def _f64ish(value: SSAValue) -> bool:
    return lower_of(value.type, Float32Type()) is not None


def _touches_f64(op: Operation) -> bool:
    return any(_f64ish(v) for v in (*op.operands, *op.results)) or any(
        _f64ish(a) for r in op.regions for b in r.blocks for a in b.args
    )


def convertible(op: Operation, converted: set[Operation]) -> bool:
    """Whether `op` is retyped; `converted` holds the ops already chosen (pre-order,
    so a terminator's parent has been decided)."""
    name = op.name
    if name in _TERMINATORS:
        return op.parent_op() in converted
    if name in _SHAPE_ONLY or not _touches_f64(op):
        return False
    if name == "arith.constant":
        return isinstance(op.properties.get("value"), FloatAttr | DenseIntOrFPElementsAttr)
    if name in _ARITH or name.startswith("math."):
        return True
    if isinstance(op, _SCF_WITH_RESULTS):
        return any(_f64ish(r) for r in op.results)
    if name.startswith("linalg."):
        return not any(isinstance(v.type, MemRefType) for v in op.operands)
    return name.startswith("tensor.") and name != "tensor.bitcast"


def _defined_in(value: SSAValue, region: Region) -> bool:
    return region.is_ancestor(value.owner)


def _insert_after_def(ops: list[Operation], value: SSAValue, region: Region, prologue: list) -> None:
    """Right after the definition of `value`, or, for a value defined outside the
    region, in the region's prologue (its first ops, in order of creation)."""
    if not _defined_in(value, region):
        block, after = region.block, (prologue[-1] if prologue else None)
        prologue.extend(ops)
    elif isinstance(value, BlockArgument):
        block, after = value.owner, None
    else:
        block, after = value.owner.parent_block(), value.owner
    if after is not None:
        block.insert_ops_after(ops, after)
    elif block.first_op is None:
        block.add_ops(ops)
    else:
        block.insert_ops_before(ops, block.first_op)


def _round_constant(op: arith.ConstantOp, low: Attribute, dtype: type) -> None:
    """Round to nearest; beyond the lower type's range that is +-inf, as in IEEE."""
    value = op.value
    with np.errstate(over="ignore"):
        if isinstance(value, FloatAttr):
            op.properties["value"] = FloatAttr(float(dtype(value.value.data)), low)
            return
        data = np.frombuffer(cast(Any, value).data.data, "<f8").astype(dtype).tobytes()
    new_type = lower_of(value.type, low)
    op.properties["value"] = DenseIntOrFPElementsAttr(new_type, BytesAttr(data))


def check(transform: TransformOp) -> tuple[Region, list[Operation]]:
    """The region and its ops to retype; raises the errors of a bad annotation."""
    k = transform.knob_val.value.data
    if k not in (0, *LOWER):
        raise ApproxError(
            f"precision_reduce: knob {k} is out of range (0 exact, 1 computes in f32, "
            "2 in f16)",
            transform,
        )
    region = transform.parent_region()
    chosen: set[Operation] = set()
    ordered: list[Operation] = []
    for op in region.walk():
        if op is not transform and convertible(op, chosen):
            chosen.add(op)
            ordered.append(op)
    if not any(op.name not in _TERMINATORS for op in ordered):
        raise ApproxError(
            "precision_reduce: no f64 floating-point op (arith/math on f64, scf.for/if "
            "carrying f64, linalg/tensor on tensors of f64) in the region of this knob",
            transform,
        )
    return region, ordered


def reduce_precision(region: Region, ops: list[Operation], k: int) -> None:
    """Retype `ops` (all inside `region`) to the type of knob k, with truncf/extf
    at the boundary."""
    low, dtype = LOWER[k]
    converted = set(ops)
    lowered: dict[SSAValue, Attribute] = {}  # new low value -> its original type
    for op in ops:
        values = [r for r in op.results if _f64ish(r)]
        values += [a for r in op.regions for b in r.blocks for a in b.args if _f64ish(a)]
        for v in values:
            old_type = v.type
            lowered[Rewriter.replace_value_with_new_type(v, lower_of(old_type, low))] = old_type
        if isinstance(op, arith.ConstantOp):
            _round_constant(op, low, dtype)
    prologue: list[Operation] = []
    for v, old_type in lowered.items():
        outside = [
            u for u in v.uses if u.operation not in converted and u.operation.name not in _SHAPE_ONLY
        ]
        if outside:
            ext = arith.ExtFOp(v, old_type)
            _insert_after_def([ext], v, region, prologue)
            for use in outside:
                use.operation.operands[use.index] = ext.result
    truncated: dict[SSAValue, SSAValue] = {}
    for op in ops:
        for i, v in enumerate(op.operands):
            if v in lowered or not _f64ish(v):
                continue
            if v not in truncated:
                casts = truncate(v, lower_of(v.type, low))
                _insert_after_def(casts, v, region, prologue)
                truncated[v] = casts[-1].results[0]
            op.operands[i] = truncated[v]


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    region, ops = check(transform)
    k = transform.knob_val.value.data
    if k == 0:
        return
    reduce_precision(region, ops, k)
