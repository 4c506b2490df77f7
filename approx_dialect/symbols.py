"""Symbol lookup during verification in one table per module.

Verifying a module looks symbols up once per annotation and once per `func.call`
(xDSL's `SymbolTable.lookup_symbol` scans the module each time): quadratic in the
module size. While `frozen_symbols(module)` is active, nothing changes the module,
so every such lookup is one dict access; outside it, xDSL's own lookup runs
(installed on xDSL's SymbolTable by `approx_dialect.xdsl_compat`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation

_FROZEN: dict[int, dict[str, Operation]] = {}


def symbol_table(module: ModuleOp) -> dict[str, Operation]:
    table: dict[str, Operation] = {}
    for op in module.ops:
        name = op.get_attr_or_prop("sym_name")
        if isinstance(name, StringAttr):
            table.setdefault(name.data, op)
    return table


def frozen_table(module: ModuleOp) -> dict[str, Operation] | None:
    return _FROZEN.get(id(module))


@contextmanager
def frozen_symbols(module: ModuleOp) -> Iterator[None]:
    _FROZEN[id(module)] = symbol_table(module)
    try:
        yield
    finally:
        del _FROZEN[id(module)]


def lookup_symbol(op: Operation, name: str | StringAttr | SymbolRefAttr, stock) -> Operation | None:
    """`SymbolTable.lookup_symbol` (installed by `approx_dialect.xdsl_compat`): one dict
    access inside `frozen_symbols`, else xDSL's own lookup `stock`."""
    if _FROZEN and not (isinstance(name, SymbolRefAttr) and name.nested_references.data):
        anchor = op
        while anchor is not None and not isinstance(anchor, ModuleOp):
            anchor = anchor.parent_op()
        table = _FROZEN.get(id(anchor)) if anchor is not None else None
        if table is not None:
            key = name.root_reference.data if isinstance(name, SymbolRefAttr) else (
                name.data if isinstance(name, StringAttr) else name
            )
            return table.get(key)
    return stock(op, name)
