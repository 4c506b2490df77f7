"""One error type for the whole toolchain: a message a person can act on and,
where the IR came from a file, the `FILE:LINE:COL` of the op it is about."""

from __future__ import annotations

import warnings

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation


class ApproxError(Exception):
    """A user-facing error; `str()` is the one line the CLI prints."""

    def __init__(self, message: str, op: Operation | None = None, where: str | None = None):
        self.message = printable(message.strip().split("\n")[0].rstrip("\r")) if message.strip() else "error"
        where = where if where is not None else location_of(op)
        self.where = printable(where) if where is not None else None
        super().__init__(self.line())

    def line(self) -> str:
        prefix = f"{self.where}: " if self.where else ""
        return f"{prefix}error: {self.message}"


def internal_error_line(err: Exception) -> str:
    """The one line a CLI prints for an exception it did not expect (a bug of ours):
    its type and first line, and how to see the whole trace."""
    msg = (str(err).strip().splitlines() or [""])[0]
    return f"error: internal error: {type(err).__name__}: {msg} (rerun with --debug)"


def printable(text: str) -> str:
    """`text` with control, format and line-separator characters as escapes (`\\x1b`,
    `\\u2028`): a name from a file cannot split the error line or drive the terminal."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def location_of(op: Operation | None) -> str | None:
    """`file:line:col` of the nearest op (itself or an ancestor) that has one."""
    while op is not None:
        loc = getattr(op, "location", None)
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        op = op.parent_op()
    return None


class ApproxWarning(UserWarning):
    """Something in the IR that is accepted but probably not meant; `str()` is the
    one line the CLI prints (`FILE:LINE:COL: warning: ...`)."""


def warn(message: str, op: Operation | None = None) -> None:
    where = location_of(op)
    prefix = f"{printable(where)}: " if where else ""
    warnings.warn(ApproxWarning(f"{prefix}warning: {printable(message)}"), stacklevel=2)
