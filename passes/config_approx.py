"""config-approx: lower `approx.try` to `scf.if` and `approx.decide` to a state
call, a threshold count and an `scf.index_switch` with one cloned body per decision."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, ModuleOp, i32, i64
from xdsl.dialects.func import CallOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from approx_dialect import DecideOp, TransformOp, TryOp, YieldOp
from passes.ir_utils import ops_of


def inline_region_before(region: Region, anchor: Operation, args) -> list[SSAValue]:
    """Clone a single-block region before `anchor` with its block arguments bound
    to `args`; returns the values its terminator yields."""
    block = region.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args))
    parent = anchor.parent_block()
    for op in list(block.ops)[:-1]:
        parent.insert_op_before(op.clone(value_mapper=mapping), anchor)
    return [mapping.get(v, v) for v in block.last_op.operands]


def lower_try(try_op: TryOp) -> None:
    """ok = check(...); results = scf.if ok { original } else { recover(args) }"""
    block = try_op.parent_block()
    terminator = block.last_op
    (ok,) = inline_region_before(try_op.check, try_op, try_op.recovery_args)
    results = list(terminator.operands)
    types = [v.type for v in results]
    then_block = Block()
    then_block.add_op(scf.YieldOp(*results))
    else_block = Block()
    recover = CallOp(try_op.recover.data.lstrip("@"), list(try_op.recovery_args), types)
    else_block.add_ops([recover, scf.YieldOp(*recover.results)])
    if_op = scf.IfOp(ok, types, Region(then_block), Region(else_block))
    if_op.location = try_op.location
    block.insert_op_before(if_op, try_op)
    terminator.operands = tuple(if_op.results)
    try_op.detach()
    try_op.erase()


def _index_of_state(state: SSAValue, thresholds, anchor: Operation) -> SSAValue:
    """sum over thresholds t of (state >= t), as an index."""
    block = anchor.parent_block()

    def emit(op):
        block.insert_op_before(op, anchor)
        return op.result

    count = emit(arith.ConstantOp(IntegerAttr(0, IndexType())))
    one = emit(arith.ConstantOp(IntegerAttr(1, IndexType())))
    zero = count
    for t in thresholds:
        bound = emit(arith.ConstantOp(IntegerAttr(t, i32)))
        ge = emit(arith.CmpiOp(state, bound, "sge"))
        step = emit(arith.SelectOp(ge, one, zero))
        count = emit(arith.AddiOp(count, step))
    return count


def lower_decide(decide: DecideOp) -> None:
    """Everything after the decide up to the block's terminator is cloned into
    one switch case per decision, each case starting with its approx.transform."""
    block = decide.parent_block()
    terminator = block.last_op
    tail = []
    op = decide.next_op
    while op is not None and op is not terminator:
        tail.append(op)
        op = op.next_op
    transform_type = decide.transform_type.data
    decisions = list(decide.decisions.get_values())
    results = list(terminator.operands)
    types = [v.type for v in results]

    def case_region(knob_val: int) -> Region:
        case = Block()
        mapping: dict[SSAValue, SSAValue] = {}
        transform = TransformOp(transform_type, knob_val)
        transform.location = decide.location
        case.add_op(transform)
        for tail_op in tail:
            case.add_op(tail_op.clone(value_mapper=mapping))
        case.add_op(scf.YieldOp(*[mapping.get(v, v) for v in results]))
        return Region(case)

    (state,) = inline_region_before(decide.state, decide, decide.state_args)
    index = _index_of_state(state, decide.thresholds.get_values(), decide)
    switch = scf.IndexSwitchOp(
        index,
        DenseArrayBase.from_list(i64, list(range(len(decisions) - 1))),
        case_region(decisions[-1]),
        [case_region(d) for d in decisions[:-1]],
        types,
    )
    switch.location = decide.location
    block.insert_op_before(switch, decide)
    terminator.operands = tuple(switch.results)
    for tail_op in reversed(tail):
        tail_op.detach()
        tail_op.erase()
    decide.detach()
    decide.erase()


@dataclass(frozen=True)
class ConfigApproxPass(ModulePass):
    """Lower dynamic management ops: decide -> index_switch, try -> scf.if.

    `approx.try` becomes: the check region inlined, then `scf.if %ok` yielding the
    knob's results or, on failure, `func.call @recover(args)`. `approx.decide`
    becomes: the state region inlined (a call to the state function), the index
    `#{t in thresholds : state >= t}` and an `scf.index_switch` on it whose case
    i holds `approx.transform(decisions[i])` and a clone of the knob body.
    """

    name = "config-approx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for try_op in ops_of(op, TryOp):
            lower_try(try_op)
        for decide in ops_of(op, DecideOp):
            lower_decide(decide)
