"""A decorated function's source: its AST with the file's own line numbers, the
names it can see (closure, globals, builtins), and one-line errors that point at
`file.py:LINE:COL`."""

from __future__ import annotations
import __future__

import ast
import builtins
import inspect
import linecache
import textwrap
import types
import warnings
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

from approx_dialect.diagnostics import ApproxError

_MISSING = object()
UNPLACED = ("<decorator>", "<component>", "<components>")
"""Where errors about settings say they are when raised away from the source."""


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
        first_def = module.body[0] if module.body else None
        if code is not None and isinstance(first_def, ast.FunctionDef) and not compiles_to(first_def, code, filename):
            raise ApproxError(f"the source of {fn.__qualname__!r} in {filename} (line {first}) is not the code "
                              "that runs: the file changed after it was loaded, or the function was not "
                              "defined from this file (exec, generated code)", where=f"{filename}:{first}")
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

    def relocate(self, err: ApproxError, node: ast.AST | None) -> ApproxError:
        """`err` pointed at `node` when it names no place in a file (a decorator setting
        or a component found wrong while lowering): the same error, its line saying where."""
        if err.where in UNPLACED:
            err.where = self.where(node)
            err.args = (err.line(),)
        return err

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


_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def compiles_to(node: ast.FunctionDef, code, filename: str) -> bool:
    """Whether `node` (with the file's line numbers) compiles to `code`: same
    bytecode, names, constants and line table, so it is the function's own source.
    Free variables (closures, `super()`) are given an enclosing scope as in the original."""
    fn_def = ast.FunctionDef(**{f: getattr(node, f) for f in node._fields})
    ast.copy_location(fn_def, node)
    body: list[ast.stmt] = [fn_def]
    if "__class__" in code.co_freevars:
        body = [ast.ClassDef(name="_enclosing", bases=[], keywords=[], body=body, decorator_list=[])]
    names = [n for n in code.co_freevars if n != "__class__"]
    if names:
        assign = ast.Assign(targets=[ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())],
                            value=ast.Tuple([ast.Constant(None) for _ in names], ast.Load()))
        body = [ast.FunctionDef(name="_enclosing", args=ast.arguments([], [], None, [], [], None, []),
                                body=[assign, *body], decorator_list=[], returns=None, type_comment=None)]
    # A module-level import changes how calls on the imported name compile (LOAD_ATTR
    # for `math.log(...)`): the file's imports come first, as in the file.
    imports = [ast.Import(names=[ast.alias(name)]) for name in sorted(_imported_names(filename))]
    tree = ast.fix_missing_locations(ast.Module(body=[*imports, *body], type_ignores=[]))
    try:
        with warnings.catch_warnings():  # Python warned about this source when it was imported
            warnings.simplefilter("ignore")
            compiled = compile(tree, filename, "exec", flags=code.co_flags & _FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return False
    found = _find_code(compiled, code.co_name, code.co_firstlineno)
    return found is not None and _same_code(found, code)


def _imported_names(filename: str) -> set[str]:
    """Names the file binds by `import` outside functions and classes."""
    text = "".join(linecache.getlines(filename))
    cached = _IMPORTS.get(filename)
    if cached is not None and cached[0] == text:
        return cached[1]
    names: set[str] = set()
    try:
        stack = list(ast.parse(text).body)
    except (SyntaxError, ValueError):
        stack = []
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))
    _IMPORTS[filename] = (text, names)
    return names


_IMPORTS: dict[str, tuple[str, set[str]]] = {}


def _find_code(code, name: str, firstlineno: int):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name and const.co_firstlineno == firstlineno:
                return const
            inner = _find_code(const, name, firstlineno)
            if inner is not None:
                return inner
    return None


def _same_code(a, b) -> bool:
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_argcount,
            a.co_kwonlyargcount, a.co_firstlineno) != (b.co_code, b.co_names, b.co_varnames, b.co_freevars,
                                                        b.co_cellvars, b.co_argcount, b.co_kwonlyargcount,
                                                        b.co_firstlineno):
        return False
    if list(a.co_lines()) != list(b.co_lines()) or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or x != y and not (x != x and y != y):  # NaN constants
            return False
    return True
