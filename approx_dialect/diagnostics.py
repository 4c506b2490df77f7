"""One error type for the whole toolchain: a message a person can act on and,
where the IR came from a file, the `FILE:LINE:COL` of the op it is about."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation


class ApproxError(Exception):
    """A user-facing error; `str()` is the one line the CLI prints."""

    def __init__(self, message: str, op: Operation | None = None, where: str | None = None):
        self.message = message.strip().splitlines()[0] if message.strip() else "error"
        self.where = where if where is not None else location_of(op)
        super().__init__(self.line())

    def line(self) -> str:
        prefix = f"{self.where}: " if self.where else ""
        return f"{prefix}error: {self.message}"


def location_of(op: Operation | None) -> str | None:
    """`file:line:col` of the nearest op (itself or an ancestor) that has one."""
    while op is not None:
        loc = getattr(op, "location", None)
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return None
