"""loop_truncate: early exit. The first `scf.for` in the region runs only its first
ceil(n / k) iterations (n = its trip count), for loops whose later iterations
matter less (converging sums, refinement passes); k <= 1 is exact.

The upper bound is rewritten, at run time, to ub' = lb + ceil(n / k) * step with
n = max(0, ceil((ub - lb) / step)), in the loop's own bound type."""

from __future__ import annotations

from xdsl.dialects import arith

from approx_dialect import TransformOp
from passes.ir_utils import ModuleSymbols
from passes.transformations.loop_bounds import Emitter, knob_const, trip_count
from passes.transformations.loop_perforate import target_loop


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    loop = target_loop(transform)
    k = transform.knob_val.value.data
    if k <= 1:
        return
    emit = Emitter(loop)
    n = trip_count(emit, loop)
    kept = emit(arith.CeilDivSIOp(n, knob_const(emit, k, loop.lb.type)))
    ub = emit(arith.AddiOp(loop.lb, emit(arith.MuliOp(kept, loop.step))))
    loop.operands = (loop.lb, ub, loop.step, *loop.operands[3:])
