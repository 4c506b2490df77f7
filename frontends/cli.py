"""`approx-opt --from-python pkg.module:function`: the IR of a decorated Python
function as approx-opt's input, so `-p approx-pipeline`, `--list-knobs` and
`--apply-config` work on Python programs as on `.mlir` files."""

from __future__ import annotations

import importlib
import os
import sys
import traceback

from approx_dialect.diagnostics import ApproxError


def load_function(spec: str):
    """`pkg.module:qualname` -> the object (the current directory is importable, as with `python -m`)."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise ApproxError(f"--from-python wants MODULE:FUNCTION (e.g. examples.rag:answer), got '{spec}'",
                          where="<command line>")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj = importlib.import_module(module_name)
    except Exception as err:  # the module's own import error, in one line, at its line when it has one
        msg = err.message if isinstance(err, ApproxError) else (str(err).strip().splitlines() or [""])[0]
        raise ApproxError(f"cannot import '{module_name}': {type(err).__name__}: {msg}",
                          where=_raised_at(err, module_name) or "<command line>") from None
    for part in qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ApproxError(f"'{module_name}' has no '{qualname}'", where="<command line>") from None
    return obj


def _raised_at(err: Exception, module_name: str) -> str | None:
    """`FILE:LINE` of the statement of module `module_name` that raised `err` while it
    was imported (a declaration it makes, a syntax error in it); None if none did."""
    if isinstance(err, SyntaxError) and err.filename and err.lineno:
        return f"{err.filename}:{err.lineno}" + (f":{err.offset}" if err.offset else "")
    where = None
    for frame, line in traceback.walk_tb(err.__traceback__):
        if frame.f_globals.get("__name__") == module_name and frame.f_code.co_name == "<module>":
            where = f"{frame.f_code.co_filename}:{line}"
    return where


def python_input(spec: str) -> tuple[str, str]:
    """(IR text, name for messages) of the function named by `spec`; an undecorated
    function is shown as `@Knob()` would lower it, a Program with `ir()` (the
    compound systems of examples/systems) by its own IR."""
    from frontends.decorated import KnobFunction
    from frontends.knob import Knob

    fn = load_function(spec)
    if not isinstance(fn, KnobFunction) and callable(getattr(fn, "ir", None)) and callable(getattr(fn, "knobs", None)):
        return fn.ir(), spec  # a composed Program (a compound system): its one annotated module
    if not isinstance(fn, KnobFunction):
        if not callable(fn):
            raise ApproxError(f"'{spec}' is a {type(fn).__name__}, not a function", where="<command line>")
        fn = Knob()(fn)
    return fn.ir(), spec
