"""Resolve what `approx-tune` is pointed at: a program (`file.mlir:entry`, or a
decorated function / Program object `pkg.module:name`) and an inputs generator
(`pkg.module:function` or `path/to/file.py:function`), or a split generator of sized
tuning and held-out parts (`load_split`)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from approx_dialect.diagnostics import ApproxError

WHERE = "<approx-tune>"


def _split(spec: str, what: str) -> tuple[str, str]:
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise ApproxError(f"{what} must be given as TARGET:NAME (e.g. file.mlir:main or pkg.module:fn), got {spec!r}",
                          where=WHERE)
    return target, name


def load_object(spec: str, what: str = "object") -> Any:
    """`pkg.module:attr` or `path/file.py:attr`."""
    target, name = _split(spec, what)
    try:
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise ApproxError(f"cannot find {what} file {target}", where=WHERE)
            mod_name = f"_approx_tune_{path.stem}"
            module = sys.modules.get(mod_name)
            if module is None:
                module_spec = importlib.util.spec_from_file_location(mod_name, path)
                module = importlib.util.module_from_spec(module_spec)
                sys.modules[mod_name] = module
                module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except ApproxError:
        raise
    except Exception as err:  # an import error in the user's module: say which and why
        raise ApproxError(f"cannot import {what} module '{target}': {type(err).__name__}: {err}", where=WHERE) from None
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            raise ApproxError(f"module '{target}' has no {what} '{name}'", where=WHERE)
        obj = getattr(obj, part)
    return obj


def as_program(obj: Any):
    """A Program (`.knobs()`, `.build(config)`): given, a decorated function that
    offers `as_program()` / `program`, or a spec string."""
    if isinstance(obj, str):
        return load_program(obj)
    if callable(getattr(obj, "knobs", None)) and callable(getattr(obj, "build", None)):
        return obj
    for attr in ("as_program", "program"):
        p = getattr(obj, attr, None)
        p = p() if callable(p) and attr == "as_program" else p
        if p is not None and callable(getattr(p, "knobs", None)) and callable(getattr(p, "build", None)):
            return p
    if _is_factory(obj):  # a function that makes the program (e.g. a system with its components loaded)
        return as_program(obj())
    raise ApproxError(f"cannot tune {type(obj).__name__} {getattr(obj, '__name__', '')!s}: a program needs "
                      ".knobs() and .build(config) (an MlirProgram or a decorated function)", where=WHERE)


def _is_factory(obj: Any) -> bool:
    import inspect

    fn = inspect.unwrap(obj) if callable(obj) else obj  # a cached factory (functools.lru_cache) counts
    if not inspect.isfunction(fn):
        return False
    params = inspect.signature(fn).parameters.values()
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def load_program(spec: str):
    """`file.mlir:entry` -> MlirProgram; `pkg.module:name` -> that object as a Program."""
    target, entry = _split(spec, "the program")
    if target.endswith(".mlir"):
        from approx_opt.main import read_input
        from approx_opt.program import MlirProgram

        text, name = read_input(target)
        program = MlirProgram(text, entry, name)
        return program
    return as_program(load_object(spec, "program"))


def load_inputs(spec: str, kwargs: dict | None = None) -> tuple[list, list | None]:
    """Call an inputs generator (with `kwargs`): it returns a list of inputs, or a
    tuple (inputs, references) with references None or one per input."""
    fn = load_object(spec, "inputs generator")
    if not callable(fn):
        raise ApproxError(f"inputs generator {spec} is not callable", where=WHERE)
    try:
        got = fn(**(kwargs or {}))
    except ApproxError:
        raise
    except Exception as err:
        raise ApproxError(f"inputs generator {spec} failed: {type(err).__name__}: {err}", where=WHERE) from None
    return split_generated(got, spec)


def load_split(spec: str, kwargs: dict) -> tuple[tuple[list, list | None], tuple[list, list | None]]:
    """Call a split generator with `kwargs` (its sizes, e.g. n_tune, seed, n_eval): it
    returns ((tuning inputs, references), (held-out inputs, references)), a split of its
    own (disjoint parts: e.g. questions of other articles held out)."""
    fn = load_object(spec, "inputs generator")
    if not callable(fn):
        raise ApproxError(f"inputs generator {spec} is not callable", where=WHERE)
    try:
        got = fn(**kwargs)
    except ApproxError:
        raise
    except Exception as err:
        raise ApproxError(f"inputs generator {spec} failed: {type(err).__name__}: {err}", where=WHERE) from None
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(g, tuple) and len(g) == 2 for g in got)):
        raise ApproxError(f"{spec} called with {', '.join(f'{k}={v!r}' for k, v in kwargs.items())} must give "
                          "((tuning inputs, references), (held-out inputs, references))", where=WHERE)
    return split_generated(got[0], f"{spec} (tuning part)"), split_generated(got[1], f"{spec} (held-out part)")


def split_generated(got: Any, spec: str = "inputs") -> tuple[list, list | None]:
    if isinstance(got, dict):
        got = (got.get("inputs"), got.get("references"))
    if isinstance(got, tuple) and len(got) == 2:
        inputs, refs = got
    else:
        inputs, refs = got, None
    try:
        inputs = list(inputs)
        refs = list(refs) if refs is not None else None
    except TypeError:
        raise ApproxError(f"{spec} must give a list of inputs or (inputs, references)", where=WHERE) from None
    if refs is not None and len(refs) != len(inputs):
        raise ApproxError(f"{spec} gave {len(refs)} references for {len(inputs)} inputs", where=WHERE)
    return inputs, refs
