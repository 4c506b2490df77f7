"""loop_perforate (ApproxMLIR): the first `scf.for` in the region runs with its
step multiplied by k, i.e. iterations lb, lb+k*s, lb+2k*s, ...; k <= 1 is exact."""

from __future__ import annotations

from xdsl.dialects import scf

from approx_dialect import TransformOp
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols, first_in_region
from passes.transformations.loop_bounds import Emitter, scaled_step


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
    step = scaled_step(Emitter(loop), loop, k)
    loop.operands = (loop.lb, loop.ub, step, *loop.operands[3:])
