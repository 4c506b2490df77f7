"""Parsing IR for the toolchain: large inputs through upstream MLIR's parser.

Upstream MLIR's C++ parser, with the xDSL module built from its result
(`upstream_import`), reads a 10,000-op module several times faster than xDSL's
parser. It is tried on inputs where that pays for loading upstream MLIR
(`upstream_import.worth_trying`); whatever it declines, and every input that
turns out invalid, goes through xDSL's parser (`approx_dialect.context.parse_module`),
so results, messages and locations are xDSL's at any size. Passes, which parse
only small snippets, use xDSL's parser directly."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from approx_dialect import context
from approx_dialect.diagnostics import ApproxError
from approx_opt import upstream_import

IMPORTER = upstream_import.UpstreamImporter()
"""The process's fast parser: its upstream Context and caches serve every input."""


def parse_module(
    text: str, filename: str = "<stdin>", ctx: Context | None = None, line_offset: int = 0
) -> ModuleOp:
    """Parse and verify; raises ApproxError with `file:line:col` on any problem, as
    `approx_dialect.context.parse_module` does, with the same result."""
    ctx = ctx or context.make_context()
    if upstream_import.worth_trying(text):
        module, _ = IMPORTER.import_module(text, filename, line_offset, ctx)
        if module is not None:
            context.move_inherent_attributes_to_properties(module)
            try:
                context.verify_module(module)
                return module
            except ApproxError:
                pass  # reported as xDSL's parser reports it, below
    return context.parse_module(text, filename, ctx, line_offset)
