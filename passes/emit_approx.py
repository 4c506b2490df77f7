"""emit-approx: wrap the body of each annotated function in an `approx.knob`."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from approx_dialect import (
    AnnotationDecisionTreeMultiOp,
    AnnotationDecisionTreeOp,
    AnnotationKnobOp,
    AnnotationTransformOp,
    AnnotationTryOp,
    KnobOp,
    YieldOp,
)
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols, first_knob, ops_of

# Annotations that need a knob in their function; a knob annotation only asks for one.
KNOB_IMPLYING = (
    AnnotationKnobOp,
    AnnotationDecisionTreeOp,
    AnnotationDecisionTreeMultiOp,
    AnnotationTransformOp,
    AnnotationTryOp,
)


def wrap_body_in_knob(func: FuncOp, knob_id: int) -> KnobOp:
    """f(args) { ops; return v }  ->  f(args) { r = approx.knob(args) { ops; yield v }; return r }"""
    name = func.sym_name.data
    if func.is_declaration:
        raise ApproxError(f"cannot put a knob on '{name}': it is a declaration without a body", func)
    if len(func.body.blocks) != 1:
        raise ApproxError(
            f"cannot put a knob on '{name}': its body has {len(func.body.blocks)} blocks "
            "(structured control flow, one block, is required)",
            func,
        )
    old = func.body.block
    ret = old.last_op
    if not isinstance(ret, ReturnOp):
        raise ApproxError(f"cannot put a knob on '{name}': its body does not end in func.return", func)
    new_entry = Block(arg_types=[a.type for a in old.args])
    for old_arg, new_arg in zip(old.args, new_entry.args):
        old_arg.replace_all_uses_with(new_arg)
        new_arg.name_hint = old_arg.name_hint
    for old_arg in reversed(old.args):
        old.erase_arg(old_arg)
    values = list(ret.operands)
    ret.detach()
    ret.erase()
    old.add_op(YieldOp(*values))
    func.body.detach_block(old)
    knob = KnobOp(new_entry.args, [v.type for v in values], Region(old), knob_id=knob_id)
    knob.location = func.location
    new_entry.add_ops([knob, ReturnOp(*knob.results)])
    func.body.add_block(new_entry)
    return knob


@dataclass(frozen=True)
class EmitApproxPass(ModulePass):
    """Wrap annotated function bodies in `approx.knob`.

    A function gets a knob when it is named by `util.annotation.knob`, or by a
    `decision_tree`, `transform` or `try` annotation (each implies the knob). The
    knob takes the function's arguments and yields its results; a function that
    already has a knob keeps it. `knob` annotations are erased here, the others
    are left for emit-management.
    """

    name = "emit-approx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        next_id = sum(1 for _ in ops_of(op, KnobOp))
        done: set[str] = set()
        symbols = ModuleSymbols(op)
        for annotation in [a for a in op.ops if isinstance(a, KNOB_IMPLYING)]:
            func = symbols.lookup(annotation.func_name.data, annotation)
            fname = func.sym_name.data
            if fname not in done and first_knob(func) is None:
                wrap_body_in_knob(func, next_id)
                next_id += 1
            done.add(fname)
            if isinstance(annotation, AnnotationKnobOp):
                annotation.detach()
                annotation.erase()
