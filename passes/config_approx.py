"""config-approx: lower `approx.try` to `scf.if` and `approx.decide` to a state
call, a threshold count and an `scf.index_switch` with one cloned body per decision;
`approx.decide_tree` to nested `scf.if` giving the case index of that switch."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, ModuleOp, i32, i64
from xdsl.dialects.func import CallOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from approx_dialect import DecideOp, DecideTreeOp, TransformOp, TryOp
from approx_dialect.tree import leaf_decisions
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


def switch_over_tail(
    decide: DecideOp | DecideTreeOp, index: SSAValue, decisions: list[int]
) -> scf.IndexSwitchOp:
    """Everything after the decide up to the block's terminator is cloned into
    one switch case per decision (case i: decisions[i], the last one is the
    default), each case starting with its approx.transform; the decide is erased."""
    block = decide.parent_block()
    terminator = block.last_op
    tail = []
    op = decide.next_op
    while op is not None and op is not terminator:
        tail.append(op)
        op = op.next_op
    transform_type = decide.transform_type.data
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
    return switch


def lower_decide(decide: DecideOp) -> scf.IndexSwitchOp:
    """state call, index = #{t : state >= t}, then one switch case per decision."""
    (state,) = inline_region_before(decide.state, decide, decide.state_args)
    index = _index_of_state(state, decide.thresholds.get_values(), decide)
    return switch_over_tail(decide, index, list(decide.decisions.get_values()))


def _tree_case_index(tree: DecideTreeOp, features: list[SSAValue], case_of: dict[int, int]) -> SSAValue:
    """Nested `scf.if (feature < threshold) -> index`; each leaf yields the case
    of its decision. Built in a scratch block, then moved before the decide."""
    a = tree.tree()

    def build(node: int, block: Block) -> SSAValue:
        if a["tree_features"][node] < 0:
            leaf = arith.ConstantOp(IntegerAttr(case_of[a["tree_decisions"][node]], IndexType()))
            block.add_op(leaf)
            return leaf.result
        bound = arith.ConstantOp(IntegerAttr(a["tree_thresholds"][node], i32))
        below = arith.CmpiOp(features[a["tree_features"][node]], bound, "slt")
        sides = []
        for child in (a["tree_left"][node], a["tree_right"][node]):
            side = Block()
            side.add_op(scf.YieldOp(build(child, side)))
            sides.append(Region(side))
        branch = scf.IfOp(below, [IndexType()], *sides)
        branch.location = tree.location
        block.add_ops([bound, below, branch])
        return branch.results[0]

    scratch = Block()
    index = build(0, scratch)
    for op in list(scratch.ops):
        op.detach()
        tree.parent_block().insert_op_before(op, tree)
    return index


def lower_decide_tree(tree: DecideTreeOp) -> scf.IndexSwitchOp:
    """state call (num_features i32), nested scf.if giving the case index of the
    leaf reached, then one switch case per distinct leaf decision (ascending)."""
    features = inline_region_before(tree.state, tree, tree.state_args)
    decisions = sorted(set(leaf_decisions(tree)))
    index = _tree_case_index(tree, features, {d: i for i, d in enumerate(decisions)})
    return switch_over_tail(tree, index, decisions)


@dataclass(frozen=True)
class ConfigApproxPass(ModulePass):
    """Lower dynamic management ops: decide -> index_switch, try -> scf.if.

    `approx.try` becomes: the check region inlined, then `scf.if %ok` yielding the
    knob's results or, on failure, `func.call @recover(args)`. `approx.decide`
    becomes: the state region inlined (a call to the state function), the index
    `#{t in thresholds : state >= t}` and an `scf.index_switch` on it whose case
    i holds `approx.transform(decisions[i])` and a clone of the knob body.
    `approx.decide_tree` becomes: the state region inlined (num_features i32),
    nested `scf.if %f < %t -> index` down to the leaf reached, which yields the
    case of its decision, and the same switch with one case per distinct leaf
    decision (so leaves sharing a decision share one cloned body).
    """

    name = "config-approx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for try_op in ops_of(op, TryOp):
            lower_try(try_op)
        # A decision later in the same knob is cloned into every case of the
        # earlier one's switch (decisions compose); lower the clones in turn.
        pending = deque(ops_of(op, (DecideOp, DecideTreeOp)))
        while pending:
            decision = pending.popleft()
            if decision.parent is None:  # erased: it was in an earlier decision's tail
                continue
            lower = lower_decide if isinstance(decision, DecideOp) else lower_decide_tree
            switch = lower(decision)
            pending.extend(d for d in switch.walk() if isinstance(d, (DecideOp, DecideTreeOp)))
