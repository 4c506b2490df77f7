"""loop_perforate (ApproxMLIR): the first `scf.for` in the region runs with its
step multiplied by k, i.e. iterations lb, lb+k*s, lb+2k*s, ...; k <= 1 is exact."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr

from approx_dialect import TransformOp
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols, first_in_region


def target_loop(transform: TransformOp) -> scf.ForOp:
    loop = first_in_region(transform.parent_region(), (scf.ForOp,))
    if loop is None:
        raise ApproxError(
            f"{transform.transform_type.data}: no scf.for in the region of this knob to rewrite",
            transform,
        )
    return loop


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    loop = target_loop(transform)
    k = transform.knob_val.value.data
    if k <= 1:
        return
    factor = arith.ConstantOp(IntegerAttr(k, loop.step.type))
    step = arith.MuliOp(loop.step, factor)
    loop.parent_block().insert_ops_before([factor, step], loop)
    loop.operands = (loop.lb, loop.ub, step.result, *loop.operands[3:])
