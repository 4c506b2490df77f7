"""task_skipping (ApproxMLIR): of the first `scf.if` chain / `scf.index_switch` in
the region, keep one branch. The branches, in source order, are numbered 1..n:
k in 1..n runs branch k unconditionally, k = n+1 skips them all, k = 0 is exact.
(ApproxMLIR skips all at 0; here 0 is exact everywhere, so 'skip all' is n+1.)"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation, Region, SSAValue

from approx_dialect import TransformOp
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols, body_ops, first_in_region

BRANCHING = (scf.IfOp, scf.IndexSwitchOp)


def branches(op: Operation, path: tuple[Region, ...] = ()) -> list[tuple[Region, ...]]:
    """Each branch as the path of regions from the root op down to it; an else
    region that holds another if/switch contributes that op's branches."""
    if isinstance(op, scf.IndexSwitchOp):
        return [(*path, r) for r in (*op.case_regions, op.default_region)]
    assert isinstance(op, scf.IfOp)
    found = [(*path, op.true_region)]
    else_region = op.false_region
    if else_region.blocks:
        nested = first_in_region(else_region, BRANCHING)
        if nested is not None:
            found += branches(nested, (*path, else_region))
        else:
            found.append((*path, else_region))
    return found


def keep_branch(root: Operation, path: tuple[Region, ...]) -> None:
    """Inline the chosen branch before the root: the ops of each region on the
    path (minus the nested if/switch and terminators) in order."""
    mapping: dict[SSAValue, SSAValue] = {}
    block = root.parent_block()
    for region in path:
        for op in body_ops(region.block):
            if isinstance(op, BRANCHING):
                continue
            block.insert_op_before(op.clone(value_mapper=mapping), root)
    root.detach()
    root.erase()


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    k = transform.knob_val.value.data
    root = first_in_region(transform.parent_region(), BRANCHING)
    if root is None:
        raise ApproxError(
            "task_skipping: no scf.if or scf.index_switch in the region of this knob", transform
        )
    chain = branches(root)
    if root.results:
        raise ApproxError(
            "task_skipping: the branches of the first scf.if/scf.index_switch must return nothing",
            transform,
        )
    if k == 0:
        return
    if k > len(chain) + 1:
        raise ApproxError(
            f"task_skipping: knob {k} is out of range; this chain has {len(chain)} branches "
            f"(1..{len(chain)} keep one, {len(chain) + 1} skips all, 0 is exact)",
            transform,
        )
    if k == len(chain) + 1:
        root.detach()
        root.erase()
        return
    keep_branch(root, chain[k - 1])
