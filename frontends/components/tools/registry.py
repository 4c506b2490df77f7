"""A registry of tools: Python functions with BFCL-style schemas (schema.py), or
described functions only (BFCL's, which an agent calls by emitting the call).

`call(name, args)` validates the arguments against the schema first (required
present, no unknown names, types, enums; an int is accepted for a float, as
Python and BFCL do) so a wrong call is one clear ApproxError instead of a
TypeError deep inside the tool. Each tool may carry cheaper substitutes with the
same signature (the `substitute` knob) and the value returned when it is skipped.
A tool that raises, returns what its `check` rejects, or runs past its timeout
is one ApproxError naming it (the tool component then falls back to the exact tool)."""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from approx_dialect.diagnostics import ApproxError
from frontends.components.tools.schema import tool_schema

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "float": (float, int), "boolean": (bool,),
    "array": (list, tuple), "tuple": (list, tuple), "dict": (dict,),
}


@dataclass
class Tool:
    name: str
    description: str
    schema: dict
    fn: Callable | None = None
    default: Any = None
    substitutes: list[Callable] = field(default_factory=list)
    timeout: float | None = None  # seconds a run may take (None: the registry's)
    check: Callable[[Any], bool] | None = None  # False for a result that is garbage

    @property
    def required(self) -> list[str]:
        return list(self.schema.get("parameters", {}).get("required", []))

    @property
    def properties(self) -> dict[str, dict]:
        return dict(self.schema.get("parameters", {}).get("properties", {}))

    def run(self, *args) -> Any:
        """The tool run on `args`, one per parameter in order, checked against the schema
        (a `component.tool_run` op's call); what it raises, a timeout or a result its
        `check` rejects is one ApproxError naming it."""
        where, props = f"tool {self.name}", self.properties
        if self.fn is None:
            raise ApproxError("is described only (no Python implementation to run)", where=where)
        if len(args) != len(props):
            raise ApproxError(f"takes {len(props)} argument(s) ({', '.join(props)}), got {len(args)}", where=where)
        kwargs = {k: check_value(v, props[k], f"{where}, parameter '{k}'") for k, v in zip(props, args)}
        result = run_tool(self.fn, kwargs, self.timeout, where)
        if self.check is not None and not self.check(result):
            raise ApproxError(f"returned garbage: {type(result).__name__} {result!r:.80}", where=where)
        return result


_REGISTERED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tool_of(fn: Callable | Tool) -> Tool:
    """`fn` as a registered tool (its schema from its annotations and docstring; one Tool
    per function, so components sharing it share its symbol); a Tool as it is."""
    if isinstance(fn, Tool):
        return fn
    if not callable(fn):
        raise ApproxError(f"a tool is a Python function or a registered Tool, got {type(fn).__name__}", where="tool")
    tool = _REGISTERED.get(fn)
    if tool is None:
        schema = tool_schema(fn)
        tool = _REGISTERED[fn] = Tool(schema["name"], schema["description"], schema, fn)
    return tool


def check_value(value: Any, prop: dict, where: str) -> Any:
    """`value` checked against one property schema; ints become floats for float."""
    kind = prop.get("type", "any")
    if kind not in _PY_TYPES and kind != "any":
        raise ApproxError(f"schema type {kind!r} is not a BFCL type", where=where)
    if kind != "any":
        ok = isinstance(value, _PY_TYPES[kind]) and not (isinstance(value, bool) and kind in ("integer", "float"))
        if not ok:
            raise ApproxError(f"expected {kind}, got {type(value).__name__} {value!r}", where=where)
    if kind == "float":
        value = float(value)
    if kind in ("array", "tuple") and "items" in prop:
        value = [check_value(v, prop["items"], f"{where}[{i}]") for i, v in enumerate(value)]
    if "enum" in prop and value not in prop["enum"]:
        raise ApproxError(f"{value!r} is not one of {prop['enum']}", where=where)
    return value


class ToolRegistry:
    """`timeout`: seconds any tool run may take (None: no limit, the call runs
    in the caller's thread; with a limit it runs in a daemon thread that is
    abandoned, still running, when the limit passes)."""

    def __init__(self, tools: Sequence[Tool] = (), timeout: float | None = None):
        self.timeout = timeout
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools:
            raise ApproxError(f"a tool named '{tool.name}' is already registered", where="ToolRegistry")
        self._tools[tool.name] = tool
        return tool

    def register(self, fn: Callable | None = None, *, name: str | None = None, description: str | None = None,
                 default: Any = None, substitutes: Sequence[Callable] = (), timeout: float | None = None,
                 check: Callable[[Any], bool] | None = None):
        """Register `fn` (also as `@registry.register` or `@registry.register(...)`)."""
        def wrap(f: Callable) -> Callable:
            schema = tool_schema(f, name, description)
            self.add(Tool(schema["name"], schema["description"], schema, f, default, list(substitutes), timeout,
                          check))
            return f

        return wrap(fn) if fn is not None else wrap

    def add_schema(self, schema: dict) -> Tool:
        """A described function (no implementation), e.g. one of BFCL's."""
        if not isinstance(schema, dict) or "name" not in schema:
            raise ApproxError("a tool schema is an object with a 'name'", where="ToolRegistry")
        return self.add(Tool(schema["name"], schema.get("description", ""), schema))

    def add_substitute(self, name: str, fn: Callable) -> int:
        """Add a cheaper variant of tool `name`; returns its substitute index (1-based)."""
        self[name].substitutes.append(fn)
        return len(self[name].substitutes)

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise ApproxError(f"no tool named '{name}' (tools: {', '.join(list(self._tools)[:8])}"
                              f"{', ...' if len(self._tools) > 8 else ''})", where="ToolRegistry") from None

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict]:
        return [t.schema for t in self]

    def validate(self, name: str, args: dict) -> dict:
        """The arguments checked against tool `name`'s schema (ints -> floats where float)."""
        tool, where = self[name], f"tool {name}"
        if not isinstance(args, dict):
            raise ApproxError(f"arguments must be an object, got {type(args).__name__}", where=where)
        props = tool.properties
        unknown = [a for a in args if a not in props]
        if unknown:
            raise ApproxError(f"unknown parameter '{unknown[0]}' (parameters: {', '.join(props)})", where=where)
        missing = [p for p in tool.required if p not in args]
        if missing:
            raise ApproxError(f"missing required parameter '{missing[0]}'", where=where)
        return {k: check_value(v, props[k], f"{where}, parameter '{k}'") for k, v in args.items()}

    def call(self, name: str, args: dict, substitute: int = 0) -> Any:
        """Run tool `name` (or its cheaper substitute k >= 1) on validated `args`."""
        tool = self[name]
        args = self.validate(name, args)
        if substitute:
            if not 1 <= substitute <= len(tool.substitutes):
                raise ApproxError(f"substitute {substitute} does not exist ({len(tool.substitutes)} registered)",
                                  where=f"tool {name}")
            fn, what = tool.substitutes[substitute - 1], f"tool {name} (substitute {substitute})"
        elif tool.fn is None:
            raise ApproxError("is described only (no Python implementation to run)", where=f"tool {name}")
        else:
            fn, what = tool.fn, f"tool {name}"
        result = run_tool(fn, args, tool.timeout if tool.timeout is not None else self.timeout, what)
        if tool.check is not None and not tool.check(result):
            raise ApproxError(f"returned garbage: {type(result).__name__} {result!r:.80}", where=what)
        return result


def run_tool(fn: Callable, args: dict, timeout: float | None, where: str) -> Any:
    """`fn(**args)`; whatever it raises, or running past `timeout` s, is one ApproxError."""
    if timeout is None:
        try:
            return fn(**args)
        except ApproxError:
            raise
        except Exception as err:
            raise ApproxError(f"failed: {type(err).__name__}: {err}", where=where) from None
    box: queue.Queue = queue.Queue(1)

    def run():
        try:
            box.put((True, fn(**args)))
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            box.put((False, err))

    threading.Thread(target=run, daemon=True, name=where).start()
    try:
        ok, value = box.get(timeout=timeout)
    except queue.Empty:
        raise ApproxError(f"no result within {timeout:g} s (timeout)", where=where) from None
    if ok:
        return value
    if isinstance(value, ApproxError):
        raise value
    raise ApproxError(f"failed: {type(value).__name__}: {value}", where=where) from None
