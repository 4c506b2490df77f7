"""A decorated function's source: its AST with the file's own line numbers, the
names it can see (closure, globals, builtins), and one-line errors that point at
`file.py:LINE:COL`."""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from approx_dialect.diagnostics import ApproxError

_MISSING = object()


@dataclass
class FunctionSource:
    fn: Any
    tree: ast.FunctionDef
    filename: str

    @classmethod
    def of(cls, fn) -> "FunctionSource":
        """Parse `fn`'s source (inspect.getsource); lines and columns are those of its file."""
        fn = inspect.unwrap(fn)
        code = getattr(fn, "__code__", None)
        filename = code.co_filename if code is not None else "<unknown>"
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            raise ApproxError(f"cannot read the source of {getattr(fn, '__qualname__', fn)!r}: "
                              "only functions defined in a .py file can be lowered",
                              where=filename) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = len(lines[0]) - len(lines[0].lstrip()) if text != dedented else 0
        try:
            module = ast.parse(dedented)
        except SyntaxError as err:
            raise ApproxError(f"cannot parse the source: {err.msg}",
                              where=f"{filename}:{(err.lineno or 1) + first - 1}") from None
        ast.increment_lineno(module, first - 1)
        if indent:
            for node in ast.walk(module):
                if hasattr(node, "col_offset"):
                    node.col_offset += indent
        defs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
        node = module.body[0] if module.body else None
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Lambda):
            raise ApproxError("unsupported Python syntax: a lambda (define the function with def)",
                              where=f"{filename}:{first}:{indent + 1}")
        if not defs or not isinstance(defs[0], ast.FunctionDef):
            raise ApproxError("unsupported Python syntax: only plain `def` functions can be lowered "
                              "(not async functions or lambdas)", where=f"{filename}:{first}:{indent + 1}")
        return cls(fn, defs[0], filename)

    @property
    def name(self) -> str:
        return self.fn.__name__

    def where(self, node: ast.AST | None) -> str:
        if node is None or not hasattr(node, "lineno"):
            return f"{self.filename}:{self.tree.lineno}:{self.tree.col_offset + 1}"
        return f"{self.filename}:{node.lineno}:{node.col_offset + 1}"

    def loc(self, node: ast.AST | None) -> FileLineColLoc:
        node = node if node is not None and hasattr(node, "lineno") else self.tree
        return FileLineColLoc(StringAttr(self.filename), IntAttr(node.lineno), IntAttr(node.col_offset + 1))

    def error(self, node: ast.AST | None, message: str) -> ApproxError:
        return ApproxError(message, where=self.where(node))

    def unsupported(self, node: ast.AST | None, what: str) -> ApproxError:
        return self.error(node, f"unsupported Python syntax: {what}")

    def resolve(self, name: str) -> Any:
        """What a free name means where the function was defined (closure cell,
        module global, builtin); `_MISSING` if nothing."""
        fn = self.fn
        code = fn.__code__
        if fn.__closure__ and name in code.co_freevars:
            try:
                return fn.__closure__[code.co_freevars.index(name)].cell_contents
            except ValueError:  # an empty cell
                return _MISSING
        if name in fn.__globals__:
            return fn.__globals__[name]
        return getattr(builtins, name, _MISSING)


MISSING = _MISSING


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names bound by statements (not inside nested comprehensions), in order of first binding."""
    seen: dict[str, None] = {}

    def targets(t: ast.AST) -> None:
        if isinstance(t, ast.Name):
            seen.setdefault(t.id, None)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)
        elif isinstance(t, ast.Starred):
            targets(t.value)

    def visit(s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            for t in s.targets:
                targets(t)
        elif isinstance(s, (ast.AugAssign, ast.AnnAssign)):
            targets(s.target)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            targets(s.target)
        for field in ("body", "orelse"):
            for child in getattr(s, field, []) or []:
                if isinstance(child, ast.stmt):
                    visit(child)

    for s in stmts:
        visit(s)
    return list(seen)


TERMINATORS = (ast.Return, ast.Continue, ast.Raise)


def _may_terminate(stmts: list[ast.stmt]) -> bool:
    """Some path through `stmts` (not counting nested loops) returns, continues or raises."""
    for s in stmts:
        if isinstance(s, TERMINATORS):
            return True
        if isinstance(s, ast.If) and (_may_terminate(s.body) or _may_terminate(s.orelse)):
            return True
        if isinstance(s, (ast.For, ast.While)) and any(isinstance(n, ast.Return) for n in ast.walk(s)):
            return True  # an error when lowered; keep the statement where it is
    return False


def normalize(stmts: list[ast.stmt], rest: list[ast.stmt] | None = None) -> list[ast.stmt]:
    """Structured form of early exits: an `if` that may return / continue / raise
    absorbs the statements after it into its branches, so every return or continue
    ends the statement list it is in (what scf regions need). Code after a
    terminator is dead and dropped."""
    rest = rest or []
    for i, s in enumerate(stmts):
        if isinstance(s, TERMINATORS):
            return list(stmts[: i + 1])
        if isinstance(s, ast.If) and _may_terminate([s]):
            follow = list(stmts[i + 1:]) + rest
            new = ast.If(test=s.test, body=normalize(s.body, follow) or [ast.Pass()],
                         orelse=normalize(s.orelse, follow))
            ast.copy_location(new, s)
            return list(stmts[:i]) + [new]
    return list(stmts) + rest
