"""pre-emit-transform: split each `convert_to_call` function into its body and a
wrapper that calls it, so func_substitute later has one call to redirect."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from approx_dialect import AnnotationConvertToCallOp
from approx_dialect.diagnostics import ApproxError
from passes.ir_utils import ModuleSymbols, ops_of


def internal_name(func_name: str) -> str:
    return f"__internal_{func_name}"


def split_into_call(func: FuncOp, symbols: ModuleSymbols) -> None:
    """f(args) { body }  ->  __internal_f(args) { body };  f(args) { return __internal_f(args) }"""
    name = func.sym_name.data
    new_name = internal_name(name)
    if symbols.get(new_name) is not None:
        raise ApproxError(f"cannot split '{name}': '{new_name}' already exists", func)
    if func.is_declaration:
        raise ApproxError(f"cannot split '{name}': it is a declaration without a body", func)
    inputs = func.function_type.inputs.data
    outputs = func.function_type.outputs.data
    internal = FuncOp(new_name, (inputs, outputs), func.detach_region(func.body))
    internal.location = func.location
    func.parent_block().insert_op_before(internal, func)
    block = Block(arg_types=inputs)
    call = CallOp(new_name, block.args, outputs)
    block.add_ops([call, ReturnOp(*call.results)])
    func.add_region(Region(block))
    symbols.add(internal)


@dataclass(frozen=True)
class PreEmitTransformPass(ModulePass):
    """Split functions marked `approx.util.annotation.convert_to_call` into
    `__internal_f` (the original body) and a wrapper `f` that calls it.

    The wrapper keeps the name and signature of `f`, so callers are unchanged;
    func_substitute later redirects its single call to `approx_f_<k>`.
    """

    name = "pre-emit-transform"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        symbols = ModuleSymbols(op)
        for annotation in ops_of(op, AnnotationConvertToCallOp):
            func = symbols.lookup(annotation.func_name.data, annotation)
            split_into_call(func, symbols)
            annotation.detach()
            annotation.erase()
