"""Index arithmetic that the loop transformations emit before (or after) an op:
trip counts of an `scf.for`, and the sum reductions among its iter_args.

Everything is computed at run time with arith ops in the loop's own bound type
(index or a signless integer), so loops with dynamic bounds are handled."""

from __future__ import annotations

from typing import cast

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerAttr, IntegerType, i64
from xdsl.ir import Attribute, Operation, SSAValue


class Emitter:
    """Inserts ops before `anchor` (or after it, with `after=True`) in order."""

    def __init__(self, anchor: Operation, after: bool = False):
        self.block = anchor.parent_block()
        self.anchor = anchor
        self.after = after
        self.emitted: list[Operation] = []

    def __call__(self, op: Operation) -> SSAValue:
        if self.after:
            self.block.insert_op_after(op, self.anchor)
            self.anchor = op
        else:
            self.block.insert_op_before(op, self.anchor)
        self.emitted.append(op)
        return op.results[0]

    def const(self, value: int, type_: Attribute) -> SSAValue:
        return self(arith.ConstantOp(IntegerAttr(value, type_)))


def type_max(t: Attribute) -> int:
    """Largest signed value of a loop bound type (index is 64-bit on every target here)."""
    return 2**63 - 1 if isinstance(t, IndexType) else max(1, 2 ** (cast(IntegerType, t).width.data - 1) - 1)


def knob_const(emit: Emitter, k: int, t: Attribute) -> SSAValue:
    """Knob k as a constant of the bound type, clamped to its largest value: a larger k
    acts the same (a trip count never exceeds it), and the constant must fit the type."""
    return emit.const(min(k, type_max(t)), t)


def scaled_step(emit: Emitter, loop: scf.ForOp, k: int) -> SSAValue:
    """step * k for a perforated loop, such that the induction variable does not wrap
    around (a wrapped, negative value would run iterations outside [lb, ub)). The
    factor is min(k, max(n, 1)) (n the trip count): the same iterations (only lb once
    k >= n), and then lb + step * factor stays below ub + step, as in the exact loop.
    A 64-bit loop with a small constant step keeps the plain product (its induction
    variable would wrap only with bounds within 2^32 of 2^63)."""
    t = loop.step.type
    owner = loop.step.owner
    step = owner.value.value.data if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr) else 0
    if type_max(t) >= 2**63 - 1 and 0 < step and step * k <= 2**32:
        return emit(arith.MuliOp(loop.step, emit.const(k, t)))
    n = trip_count(emit, loop)
    factor = emit(arith.MinSIOp(knob_const(emit, k, t), emit(arith.MaxSIOp(n, emit.const(1, t)))))
    return emit(arith.MuliOp(loop.step, factor))


def trip_count(emit: Emitter, loop: scf.ForOp) -> SSAValue:
    """n = max(0, ceil((ub - lb) / step)) in the loop's bound type (scf.for bounds
    compare signed and its step is positive)."""
    t = loop.lb.type
    span = emit(arith.SubiOp(loop.ub, loop.lb))
    n = emit(arith.CeilDivSIOp(span, loop.step))
    return emit(arith.MaxSIOp(n, emit.const(0, t)))


def to_float(emit: Emitter, value: SSAValue, float_type: Attribute) -> SSAValue:
    """Integer or index value -> float (index goes through i64)."""
    if isinstance(value.type, IndexType):
        value = emit(arith.IndexCastOp(value, i64))
    return emit(arith.SIToFPOp(value, float_type))


def sum_iter_args(loop: scf.ForOp) -> list[int]:
    """Positions j of the iter_args that are floating-point sums: the body yields
    `arith.addf %acc_j, x` (or `x, %acc_j`) and uses %acc_j nowhere else."""
    body = loop.body.block
    yielded = body.last_op.operands if isinstance(body.last_op, scf.YieldOp) else ()
    found = []
    for j, (acc, value) in enumerate(zip(body.args[1:], yielded)):
        add = value.owner
        if not isinstance(add, arith.AddfOp) or not isinstance(acc.type, AnyFloat):
            continue
        if (add.lhs is acc) != (add.rhs is acc) and acc.has_one_use():
            found.append(j)
    return found


def rescale_sums(loop: scf.ForOp, sums: list[int], inits: list[SSAValue], n: SSAValue, kept: SSAValue) -> None:
    """After the loop: result_j' = init_j + (result_j - init_j) * n / kept for each
    sum j (`inits`: the iter_args' initial values before the rewrite), so a sum
    over the kept iterations estimates the sum over all n. Where kept == n
    (including n == 0) the result is left as it is, bit for bit."""
    if not sums:
        return
    emit = Emitter(loop, after=True)
    same = emit(arith.CmpiOp(kept, n, "eq"))
    floats: dict[Attribute, tuple[SSAValue, SSAValue]] = {}
    for j in sums:
        result, init = loop.results[j], inits[j]
        t = result.type
        if t not in floats:
            floats[t] = (to_float(emit, n, t), to_float(emit, kept, t))
        nf, kf = floats[t]
        delta = emit(arith.SubfOp(result, init))
        scaled = emit(arith.DivfOp(emit(arith.MulfOp(delta, nf)), kf))
        estimate = emit(arith.AddfOp(init, scaled))
        new = emit(arith.SelectOp(same, result, estimate))
        ours = set(emit.emitted)
        result.replace_uses_with_if(new, lambda use: use.operation not in ours)
