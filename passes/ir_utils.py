"""Small IR queries shared by the passes (symbol lookup, knob lookup, walking)."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue

from approx_dialect import KnobOp, symbol_name
from approx_dialect.annotations import function_table
from approx_dialect.diagnostics import ApproxError
from approx_dialect.nesting import walk


class ModuleSymbols:
    """The module's functions by name, built once per pass (a lookup per
    annotation would rescan the module); passes that add a function `add` it."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.table = function_table(module)

    def get(self, name: str) -> FuncOp | None:
        return self.table.get(symbol_name(name))

    def lookup(self, name: str, by: Operation, role: str = "function") -> FuncOp:
        func = self.get(name)
        if func is None:
            raise ApproxError(f"{role} '{symbol_name(name)}' is not a function of this module", by)
        return func

    def add(self, func: FuncOp) -> None:
        self.table[func.sym_name.data] = func


def first_knob(func: FuncOp) -> KnobOp | None:
    for op in func.walk():
        if isinstance(op, KnobOp):
            return op
    return None


def first_in_region(region: Region, kinds: tuple[type, ...], skip: Operation | None = None):
    """First op of one of `kinds` in pre-order (outermost first)."""
    for op in region.walk():
        if op is not skip and isinstance(op, kinds):
            return op
    return None


def parent_func(op: Operation) -> FuncOp | None:
    while op is not None and not isinstance(op, FuncOp):
        op = op.parent_op()
    return op


def ops_of(module: ModuleOp, kind: type) -> list:
    """Snapshot of all ops of a kind, so the caller may rewrite while iterating."""
    return [op for op in walk(module) if isinstance(op, kind)]


def clone_ops_before(
    ops: Iterator[Operation], anchor: Operation, mapping: dict[SSAValue, SSAValue]
) -> None:
    """Clone `ops` in order before `anchor`, extending `mapping` old -> new."""
    block = anchor.parent_block()
    for op in ops:
        new = op.clone(value_mapper=mapping)
        block.insert_op_before(new, anchor)


def body_ops(block: Block) -> list[Operation]:
    """The ops of a block without its terminator."""
    ops = list(block.ops)
    return ops[:-1] if ops and ops[-1] is block.last_op else ops
