"""BFCL-style JSON schemas of Python functions, from their annotations and docstrings.

The shape is the one BFCL's function definitions use, so registered Python tools
and BFCL's described functions are routed, validated and checked alike:
`{"name", "description", "parameters": {"type": "dict", "properties": {p: {"type",
"description", ["items"], ["enum"], ["default"]}}, "required": [...]}}` with types
string, integer, float, boolean, array (items), tuple (items), dict, any.
Parameter descriptions come from a Google-style `Args:` section or `:param p:`
lines; the description is the docstring's first paragraph."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from approx_dialect.diagnostics import ApproxError

_SCALARS = {str: "string", int: "integer", float: "float", bool: "boolean", dict: "dict", Any: "any"}


def type_schema(annotation: Any, where: str) -> dict:
    """The BFCL schema of one annotation (Optional[T] is T: optionality is the default)."""
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return type_schema(rest[0], where)
        raise ApproxError(f"union type {annotation} has no BFCL schema (use one type)", where=where)
    if origin is typing.Literal:
        kinds = {type(a) for a in args}
        if len(kinds) != 1 or next(iter(kinds)) not in _SCALARS:
            raise ApproxError(f"Literal{list(args)} must hold values of one scalar type", where=where)
        return {"type": _SCALARS[next(iter(kinds))], "enum": list(args)}
    if origin in (list, tuple, set, frozenset):
        item = args[0] if args else Any
        return {"type": "tuple" if origin is tuple else "array", "items": type_schema(item, where)}
    if origin is dict:
        return {"type": "dict"}
    raise ApproxError(f"type {annotation!r} has no BFCL schema (str, int, float, bool, list[T], tuple[T, ...], "
                      "dict, Literal[...], Optional[T], Any)", where=where)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) of a docstring."""
    doc = inspect.cleandoc(doc or "")
    summary = " ".join(doc.split("\n\n", 1)[0].split()) if doc else ""
    params: dict[str, str] = {}
    for m in re.finditer(r"^:param\s+(?:[\w\[\], .|]+\s+)?(\w+):\s*(.+(?:\n(?!:)\s+.+)*)", doc, re.M):
        params[m.group(1)] = " ".join(m.group(2).split())
    section = re.search(r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.*\n?|\n)+)", doc, re.M)
    if section:
        current, indent = None, 0
        for line in section.group(1).splitlines():
            m = re.match(r"^\s{1,8}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if m and (current is None or len(line) - len(line.lstrip()) <= indent):
                current, indent = m.group(1), len(line) - len(line.lstrip())
                params[current] = m.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    return summary, params


def tool_schema(fn: Callable, name: str | None = None, description: str | None = None) -> dict:
    """The BFCL-style schema of `fn`; every parameter needs a type annotation."""
    name = name or fn.__name__
    where = f"tool {name}"
    try:
        hints = typing.get_type_hints(fn, include_extras=False)
    except Exception as err:
        raise ApproxError(f"cannot resolve the type annotations: {err}", where=where) from None
    summary, docs = parse_docstring(fn.__doc__)
    properties, required = {}, []
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ApproxError(f"parameter *{p.name} has no BFCL schema (name every parameter)", where=where)
        if p.name not in hints:
            raise ApproxError(f"parameter '{p.name}' has no type annotation", where=where)
        prop = type_schema(hints[p.name], f"{where}, parameter '{p.name}'")
        prop["description"] = docs.get(p.name, "")
        if p.default is p.empty:
            required.append(p.name)
        elif p.default is not None:
            prop["default"] = p.default
        properties[p.name] = prop
    return {"name": name, "description": description if description is not None else summary,
            "parameters": {"type": "dict", "properties": properties, "required": required}}
