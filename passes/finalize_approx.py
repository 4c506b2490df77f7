"""finalize-approx: inline every `approx.knob` and check that no approx op is left."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from approx_dialect import KnobOp
from approx_dialect.diagnostics import ApproxError
from approx_dialect.nesting import walk
from passes.ir_utils import ops_of

# Which pass removes each leftover op, for the error message.
_REMOVED_BY = {
    "approx.decide": "config-approx",
    "approx.decide_tree": "config-approx",
    "approx.try": "config-approx",
    "approx.transform": "transform-approx",
    "approx.param": "transform-approx (with a `param` transform on its knob)",
    "approx.util.annotation.convert_to_call": "pre-emit-transform",
    "approx.util.annotation.knob": "emit-approx",
}


def inline_knob(knob: KnobOp) -> None:
    body = knob.body.block
    yield_op = body.last_op
    values = list(yield_op.operands)
    yield_op.detach()
    yield_op.erase()
    block = knob.parent_block()
    for op in list(body.ops):
        op.detach()
        block.insert_op_before(op, knob)
    for result, value in zip(knob.results, values):
        result.replace_all_uses_with(value)
    knob.detach()
    knob.erase()


@dataclass(frozen=True)
class FinalizeApproxPass(ModulePass):
    """Inline knobs into their functions; leave plain func/arith/scf/memref IR.

    Each `approx.knob` is replaced by its body and its results by the values its
    `approx.yield` returns. Any other approx op still present is an error that
    names the pass that should have removed it.
    """

    name = "finalize-approx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for knob in reversed(ops_of(op, KnobOp)):
            inline_knob(knob)
        for leftover in walk(op):
            if leftover.name.startswith("approx."):
                by = _REMOVED_BY.get(leftover.name, "emit-management")
                raise ApproxError(f"'{leftover.name}' is still present; run {by} before finalize-approx", leftover)
