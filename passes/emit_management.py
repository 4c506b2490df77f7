"""emit-management: turn decision_tree / transform / try annotations into
`approx.decide`, `approx.transform` and `approx.try` ops inside the knob."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, i1
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from approx_dialect import (
    AnnotationDecisionTreeMultiOp,
    AnnotationDecisionTreeOp,
    AnnotationTransformOp,
    AnnotationTryOp,
    DecideOp,
    DecideTreeOp,
    KnobOp,
    TransformOp,
    TryOp,
    YieldOp,
    symbol_name,
)
from approx_dialect.annotations import state_indices
from approx_dialect.diagnostics import ApproxError
from approx_dialect.param import AnnotationParamOp
from passes.ir_utils import ModuleSymbols, first_knob
from passes.transformations.param import emit_param


def knob_of(symbols: ModuleSymbols, annotation) -> KnobOp:
    func = symbols.lookup(annotation.func_name.data, annotation)
    knob = first_knob(func)
    if knob is None:
        raise ApproxError(
            f"'{func.sym_name.data}' has no approx.knob; run emit-approx before emit-management",
            annotation,
        )
    return knob


def _at_start(knob: KnobOp, op) -> None:
    block = knob.body.block
    block.insert_op_before(op, block.first_op)


def _state_region(symbols: ModuleSymbols, knob: KnobOp, ann) -> tuple[list, Region]:
    """The function arguments at `state_indices`, and a region calling the state function on them."""
    func = cast(FuncOp, knob.parent_op())
    state_args = [func.body.block.args[i] for i in state_indices(ann, func)]
    block = Block(arg_types=[a.type for a in state_args])
    if ann.state_function is None:  # the argument is the state (ApproxMLIR's identity default)
        block.add_op(YieldOp(*block.args))
        return state_args, Region(block)
    state_fn = symbols.lookup(ann.state_function.data, ann, "state function")
    call = CallOp(symbol_name(ann.state_function.data), block.args, state_fn.function_type.outputs.data)
    block.add_ops([call, YieldOp(*call.results)])
    return state_args, Region(block)


def knob_for_decision(symbols: ModuleSymbols, ann) -> KnobOp:
    """One decision per knob: a second would have to re-decide the same region,
    and which loop or call each one rewrites would be ambiguous."""
    knob = knob_of(symbols, ann)
    if any(isinstance(op, (DecideOp, DecideTreeOp)) for op in knob.body.block.ops):
        raise ApproxError(
            f"'{symbol_name(ann.func_name.data)}' already has a decision tree; a knob takes "
            "one decision (merge them into one tree, or put the second on another function)",
            ann,
        )
    return knob


def _emit_decide(symbols: ModuleSymbols, ann, op_type: type[DecideOp] | type[DecideTreeOp], **decisions) -> None:
    """decision_tree and decision_tree_multi become their decide op alike (the state
    region, the transform, the bounds, at the start of the knob); only how the
    decisions are given differs (`decisions`, the op's own keywords)."""
    knob = knob_for_decision(symbols, ann)
    decide = op_type(
        *_state_region(symbols, knob, ann),
        transform_type=ann.transform_type.data,
        thresholds_lowers=ann.thresholds_lowers.get_values(),
        thresholds_uppers=ann.thresholds_uppers.get_values(),
        decision_values=ann.decision_values.get_values(),
        **decisions,
    )
    decide.location = ann.location
    _at_start(knob, decide)


def emit_decide(symbols: ModuleSymbols, ann: AnnotationDecisionTreeOp) -> None:
    _emit_decide(symbols, ann, DecideOp, thresholds=ann.thresholds.get_values(), decisions=ann.decisions.get_values())


def emit_decide_tree(symbols: ModuleSymbols, ann: AnnotationDecisionTreeMultiOp) -> None:
    _emit_decide(symbols, ann, DecideTreeOp, tree=ann.tree(), num_features=ann.num_features.value.data)


def emit_transform(symbols: ModuleSymbols, ann: AnnotationTransformOp) -> None:
    transform = TransformOp(ann.transform_type.data, ann.knob_val.value.data)
    transform.location = ann.location
    _at_start(knob_of(symbols, ann), transform)


def emit_try(symbols: ModuleSymbols, ann: AnnotationTryOp) -> None:
    """The checker sees the knob's results, then the recovery arguments; the
    recovery function gets the recovery arguments (the knob's arguments)."""
    knob = knob_of(symbols, ann)
    checker = symbols.lookup(ann.checker.data, ann, "checker function")
    recover = symbols.lookup(ann.recover.data, ann, "recovery function")
    yield_op = knob.body.block.last_op
    args = list(knob.args)
    want_check = [v.type for v in yield_op.operands] + [a.type for a in args]
    if list(checker.function_type.inputs.data) != want_check or list(
        checker.function_type.outputs.data
    ) != [i1]:
        raise ApproxError(
            f"checker '{checker.sym_name.data}' must have type "
            f"({', '.join(map(str, want_check))}) -> i1 (the knob's results, then its arguments)",
            ann,
        )
    want_rec_in = [a.type for a in args]
    want_rec_out = [v.type for v in yield_op.operands]
    if list(recover.function_type.inputs.data) != want_rec_in or list(
        recover.function_type.outputs.data
    ) != want_rec_out:
        raise ApproxError(
            f"recovery function '{recover.sym_name.data}' must have type "
            f"({', '.join(map(str, want_rec_in))}) -> ({', '.join(map(str, want_rec_out))})",
            ann,
        )
    block = Block(arg_types=want_rec_in)
    call = CallOp(checker.sym_name.data, [*yield_op.operands, *block.args], [i1])
    block.add_ops([call, YieldOp(*call.results)])
    try_op = TryOp(args, recover.sym_name.data, Region(block))
    try_op.location = ann.location
    knob.body.block.insert_op_before(try_op, yield_op)


_EMITTERS: dict[type, Callable[..., None]] = {
    AnnotationDecisionTreeOp: emit_decide,
    AnnotationDecisionTreeMultiOp: emit_decide_tree,
    AnnotationTransformOp: emit_transform,
    AnnotationTryOp: emit_try,
    AnnotationParamOp: emit_param,
}


@dataclass(frozen=True)
class EmitManagementPass(ModulePass):
    """Inject decide / transform / try ops from module annotations.

    `decision_tree` -> `approx.decide` at the start of the knob, its state region
    calling `state_function` on the arguments at `state_indices`;
    `decision_tree_multi` -> `approx.decide_tree` the same way; `transform` ->
    `approx.transform` at the start of the knob; `try` -> `approx.try` before the
    knob's yield, its check region calling `checker(results..., args...)` and
    `recover` named for the fallback; `param` -> `approx.param` on the argument
    `arg_index`, after the knob's leading management ops, whose result the body
    uses instead of the argument. Names may carry a leading '@'.
    """

    name = "emit-management"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        symbols = ModuleSymbols(op)
        for annotation in [a for a in op.ops if type(a) in _EMITTERS]:
            _EMITTERS[type(annotation)](symbols, annotation)
            annotation.detach()
            annotation.erase()
