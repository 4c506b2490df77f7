"""Options of loop perforation beyond ApproxMLIR's stride (`loop_perforate`, which is
unchanged), each a transform_type of its own so it flows through annotations and
decision trees like any other:

- `loop_perforate_modulo`: skip every k-th iteration (iteration i, counted from 0,
  is skipped when i mod k == k - 1), keeping (k-1)/k of the work, for loops where
  dropping half of it (stride 2) is too coarse;
- `loop_perforate_rescale` / `loop_perforate_modulo_rescale`: the same perforations,
  and every floating-point sum among the loop's iter_args is extrapolated to the
  full trip count, result' = init + (result - init) * n / kept, so a perforated
  sum estimates the exact sum instead of a fraction of it.

k <= 1 is exact for all of them (the loop is not touched). n and kept are computed
at run time from the loop's bounds."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.ir import Block, Region, SSAValue

from approx_dialect import TransformOp
from passes.ir_utils import ModuleSymbols, body_ops
from passes.transformations import loop_perforate
from passes.transformations.loop_bounds import Emitter, knob_const, rescale_sums, sum_iter_args, trip_count, type_max
from passes.transformations.loop_perforate import target_loop

UNROLL_MAX = 16
"""Up to this many kept iterations per block are cloned (straight-line code: no
per-iteration branch, which would cost more than the skipped work saves); larger
blocks run as an inner loop."""


def _clone_body(body: Block, iv: SSAValue, carried: list[SSAValue], dest: Block) -> list[SSAValue]:
    """Append a copy of the loop body for induction value `iv` and iter_args
    `carried` to `dest`; returns the values it yields."""
    mapping: dict[SSAValue, SSAValue] = {body.args[0]: iv, **dict(zip(body.args[1:], carried))}
    for op in body_ops(body):
        dest.add_op(op.clone(value_mapper=mapping))
    return [mapping.get(v, v) for v in body.last_op.operands]


def skip_every_kth(loop: scf.ForOp, k: int, kc: SSAValue, blocks: SSAValue) -> None:
    """for i = lb to ub step s { body }  ->
    for j = lb to mid step k*s { body(j); body(j+s); ...; body(j+(k-2)*s) }
    for i = mid to ub step s { body }
    with mid = lb + blocks*k*s, blocks = floor(n/k) (`kc` is k): full blocks keep
    their first k-1 iterations, the last partial one (< k iterations) is kept whole."""
    emit = Emitter(loop)
    t = loop.lb.type
    block_step = emit(arith.MuliOp(loop.step, kc))
    mid = emit(arith.AddiOp(loop.lb, emit(arith.MuliOp(blocks, block_step))))
    outer_block = Block(arg_types=[t, *[a.type for a in loop.iter_args]])
    start, *carried = outer_block.args
    body = loop.body.block
    if k - 1 <= UNROLL_MAX:
        iv = start
        for i in range(k - 1):
            if i:  # j + i*s, the offset i*s computed before the loop
                offset = loop.step if i == 1 else emit(arith.MuliOp(loop.step, emit.const(i, t)))
                add = arith.AddiOp(start, offset)
                outer_block.add_op(add)
                iv = add.result
            carried = _clone_body(body, iv, carried, outer_block)
    else:
        end = arith.AddiOp(start, emit(arith.MuliOp(loop.step, emit.const(k - 1, t))))
        inner_block = Block(arg_types=[t, *[a.type for a in loop.iter_args]])
        cloned = _clone_body(body, inner_block.args[0], list(inner_block.args[1:]), inner_block)
        inner_block.add_op(scf.YieldOp(*cloned))
        inner = scf.ForOp(start, end, loop.step, carried, Region(inner_block))
        inner.location = loop.location
        outer_block.add_ops([end, inner])
        carried = list(inner.results)
    outer_block.add_op(scf.YieldOp(*carried))
    outer = scf.ForOp(loop.lb, mid, block_step, list(loop.iter_args), Region(outer_block))
    outer.location = loop.location
    loop.parent_block().insert_op_before(outer, loop)
    loop.operands = (mid, loop.ub, loop.step, *outer.results)


def _perforate(transform: TransformOp, symbols: ModuleSymbols, modulo: bool, rescale: bool) -> None:
    loop = target_loop(transform)
    k = transform.knob_val.value.data
    if k <= 1 or (modulo and k > type_max(loop.lb.type)):  # no trip count reaches k: nothing skipped
        return
    sums = sum_iter_args(loop) if rescale else []
    inits = list(loop.iter_args)
    n = kept = blocks = kc = None
    if sums or modulo:
        emit = Emitter(loop)
        n = trip_count(emit, loop)
        kc = knob_const(emit, k, loop.lb.type)
    if modulo:  # floor(n / k) blocks of k, one iteration skipped in each
        blocks = emit(arith.DivSIOp(n, kc))
    if sums:  # modulo: n - floor(n/k) kept; stride: iterations 0, k, 2k, ... < n
        kept = emit(arith.SubiOp(n, blocks)) if modulo else emit(arith.CeilDivSIOp(n, kc))
    if modulo:
        skip_every_kth(loop, k, kc, blocks)
    else:
        loop_perforate.apply(transform, symbols)
    if sums:
        rescale_sums(loop, sums, inits, n, kept)


def apply_modulo(transform: TransformOp, symbols: ModuleSymbols) -> None:
    _perforate(transform, symbols, modulo=True, rescale=False)


def apply_rescale(transform: TransformOp, symbols: ModuleSymbols) -> None:
    _perforate(transform, symbols, modulo=False, rescale=True)


def apply_modulo_rescale(transform: TransformOp, symbols: ModuleSymbols) -> None:
    _perforate(transform, symbols, modulo=True, rescale=True)
