"""param: a named integer/float operand (top-k, max tokens, context length, number of
candidates) takes a tuned value from its declared list.

Why: many components of a compound AI system trade quality for time through one
number; making that number a knob lets the tuner and decision trees set it like any
other approximation. `emit_param` (called by emit-management) turns
`approx.util.annotation.param {func_name, arg_index, name, values}` into an
`approx.param` on that argument inside the knob; `apply` (the `param` transform)
replaces every `approx.param` of its region by `values[k-1]` (k >= 1) or by its
operand (k = 0, exact).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Operation

from approx_dialect import TransformOp, symbol_name
from approx_dialect.diagnostics import ApproxError
from approx_dialect.param import AnnotationParamOp, ParamOp, param_values_text
from passes.ir_utils import ModuleSymbols, first_knob, parent_func

TRANSFORM = "param"


def _tuned_by_param(module: ModuleOp, knob, fname: str) -> bool:
    """Some annotation (still in the module) or management op (already in the knob)
    of `fname` selects a `param` knob value."""
    for op in module.ops:
        ttype = op.properties.get("transform_type")
        func = op.properties.get("func_name")
        if op.name.startswith("approx.util.annotation.") and ttype is not None and func is not None:
            if symbol_name(func.data) == fname and ttype.data == TRANSFORM:
                return True
    for op in knob.body.block.ops:
        ttype = op.properties.get("transform_type")
        if op.name.startswith("approx.") and ttype is not None and ttype.data == TRANSFORM:
            return True
    return False


def _top_level(op: Operation, block) -> Operation | None:
    """The ancestor of `op` (or itself) that lies directly in `block`."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


def emit_param(symbols: ModuleSymbols, ann: AnnotationParamOp) -> None:
    """`approx.param` on argument `arg_index`, after the knob's leading management
    ops (so a decision tree clones it into each case); the argument's uses in the
    knob body after it see the param. Management ops (decide, try) keep the
    original argument: the state and the recovery see the real input."""
    func = symbols.lookup(ann.func_name.data, ann)
    fname, name = func.sym_name.data, ann.param_name.data
    knob = first_knob(func)
    if knob is None or not _tuned_by_param(ann.parent_op(), knob, fname):
        raise ApproxError(
            f"param '{name}' of '{fname}' has no knob value: add an approx.util.annotation.transform "
            f"or decision_tree with transform_type = \"{TRANSFORM}\" on '{fname}'",
            ann,
        )
    arg = func.body.block.args[ann.arg_index.value.data]
    param = ParamOp(arg, name, ann.values)
    param.location = ann.location
    block = knob.body.block
    anchor = block.first_op
    while anchor is not None and anchor.name.startswith("approx.") and anchor is not block.last_op:
        anchor = anchor.next_op
    block.insert_op_before(param, anchor)

    def redirect(use) -> bool:
        top = _top_level(use.operation, block)
        if top is None or top is param or not param.is_before_in_block(top):
            return False
        return top.name == "approx.yield" or not top.name.startswith("approx.")

    arg.replace_uses_with_if(param.output, redirect)


def apply(transform: TransformOp, symbols: ModuleSymbols) -> None:
    k = transform.knob_val.value.data
    params = [op for op in transform.parent_region().walk() if isinstance(op, ParamOp)]
    if not params:
        fname = parent_func(transform).sym_name.data
        raise ApproxError(
            f"param: no approx.param in the knob of '{fname}'; add "
            f"approx.util.annotation.param {{func_name = \"{fname}\", arg_index, name, values}}",
            transform,
        )
    for p in params:
        n = len(p.values.get_values())
        if k > n:
            raise ApproxError(
                f"param: knob {k} is out of range for '{p.param_name.data}' with values "
                f"{param_values_text(p.values)} (1..{n} select a value, 0 keeps the original)",
                transform,
            )
    for p in params:
        if k == 0:
            new = p.input
        else:
            value = p.values.get_values()[k - 1]
            t = p.output.type
            attr = IntegerAttr(value, t) if isinstance(t, IntegerType | IndexType) else FloatAttr(value, t)
            const = arith.ConstantOp(attr)
            p.parent_block().insert_op_before(const, p)
            new = const.result
        p.output.replace_all_uses_with(new)
        p.detach()
        p.erase()
