"""cascade: model cascade with confidence-based escalation, the generalisation of
`try` (one check, one fallback) to a chain cheap -> ... -> exact whose starting
variant and acceptance threshold are a knob, so the tuner and decision trees pick
how much to trust the cheap variants.

The region after the `approx.transform` (the exact body, or the call that
convert_to_call made) becomes, for knob k >= 1 with s = ((k-1) // T) + 1 and
t = thresholds[(k-1) % T] of the function's `approx.util.annotation.cascade`:

    r_s = approx_f_s(args); if confidence(r_s, args) >= t { r_s } else {
      r_{s+1} = ...               ... else { exact body } }

as nested `scf.if`; k = 0 leaves the region exact. The annotation is erased with
the last cascade transform of its function."""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block, Region, SSAValue

from approx_dialect import KnobOp, TransformOp, symbol_name
from approx_dialect.cascade import CASCADE, AnnotationCascadeOp, escalation, variant_name
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols, parent_func


def cascade_of(symbols: ModuleSymbols, fname: str, transform: TransformOp) -> AnnotationCascadeOp:
    for op in symbols.module.ops:
        if isinstance(op, AnnotationCascadeOp) and symbol_name(op.func_name.data) == fname:
            return op
    raise ApproxError(
        f"cascade: '{fname}' has no approx.util.annotation.cascade naming its variants, "
        "confidence function and thresholds",
        transform,
    )


def _arguments(transform: TransformOp) -> list[SSAValue]:
    """The function's arguments as the region sees them: the knob's operands, or
    the function's own where there is no knob."""
    op = transform.parent_op()
    while not isinstance(op, (KnobOp, FuncOp)):
        op = op.parent_op()
    return list(op.args) if isinstance(op, KnobOp) else list(op.body.block.args)


def _stage(j: int, fname: str, confidence: str, args, types, threshold, rest: Region):
    """Ops of one stage: run variant j, accept it or fall through to `rest`."""
    call = CallOp(variant_name(fname, j), args, types)
    score = CallOp(symbol_name(confidence), [*call.results, *args], [i32])
    ok = arith.CmpiOp(score.results[0], threshold, "sge")
    accept = Block()
    accept.add_op(scf.YieldOp(*call.results))
    branch = scf.IfOp(ok, types, Region(accept), rest)
    return [call, score, ok, branch]


def lower(transform: TransformOp, func: FuncOp, ann: AnnotationCascadeOp, asked: list[int], threshold: int) -> None:
    """The region -> variants `asked` (numbers, in order), each kept when confident, then the exact body."""
    fname = func.sym_name.data
    block = transform.parent_block()
    terminator = block.last_op
    results = list(terminator.operands)
    types = [v.type for v in results]
    args = _arguments(transform)
    ftype = func.function_type
    if [a.type for a in args] != list(ftype.inputs.data) or types != list(ftype.outputs.data):
        raise ApproxError(
            f"cascade: the region of this transform does not take and yield what '{fname}' "
            "does; put the cascade on the whole function",
            transform,
        )
    exact = Block()
    op = transform.next_op
    while op is not terminator:
        after = op.next_op
        op.detach()
        exact.add_op(op)
        op = after
    exact.add_op(scf.YieldOp(*results))
    t = arith.ConstantOp(IntegerAttr(threshold, i32))
    block.insert_op_before(t, terminator)
    rest = Region(exact)
    for j in reversed(asked[1:]):
        ops = _stage(j, fname, ann.confidence.data, args, types, t.result, rest)
        inner = Block()
        inner.add_ops([*ops, scf.YieldOp(*ops[-1].results)])
        rest = Region(inner)
    ops = _stage(asked[0], fname, ann.confidence.data, args, types, t.result, rest)
    for new in ops:
        new.location = transform.location
        block.insert_op_before(new, terminator)
    terminator.operands = tuple(ops[-1].results)


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    func = parent_func(transform)
    fname = func.sym_name.data
    ann = cascade_of(symbols, fname, transform)
    k = transform.knob_val.value.data
    n_variants, thresholds = ann.variants.value.data, ann.threshold_values
    if k > n_variants * len(thresholds):
        raise ApproxError(
            f"cascade: knob {k} is out of range for '{fname}': {n_variants} variant(s) x "
            f"{len(thresholds)} threshold(s) give knobs 1..{n_variants * len(thresholds)} (0 is exact)",
            transform,
        )
    chain = escalation(k, range(1, n_variants + 1), thresholds)
    if chain is not None:
        lower(transform, func, ann, *chain)
    others = [op for op in func.walk() if isinstance(op, TransformOp) and op is not transform
              and op.transform_type.data == CASCADE]
    if not others:
        ann.detach()
        ann.erase()
