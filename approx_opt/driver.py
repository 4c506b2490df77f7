"""The compile driver behind approx-opt: text in, passes applied, text out.

Kept apart from the command line so frontends and the autotuner call the same
code the CLI runs (`run_pipeline`)."""

from __future__ import annotations

import gc
from contextlib import contextmanager

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from approx_dialect.context import make_context, print_module, verify_module
from approx_dialect.diagnostics import ApproxError
from approx_dialect.nesting import deep_retry
from approx_opt.parsing import parse_module
from approx_opt.pipeline import build_pipeline
from passes.knobs import apply_config


def apply_passes(module: ModuleOp, spec: str, verify_each: bool = False, ctx: Context | None = None) -> ModuleOp:
    """Apply a pipeline string to a verified module in place; verify the result."""
    ctx = ctx or make_context()
    for pass_ in build_pipeline(spec):
        try:
            pass_.apply(ctx, module)
        except (ApproxError, RecursionError):  # deep input: run_pipeline retries with room for it
            raise
        except Exception as err:  # a bug in a pass: still one line for the user
            raise ApproxError(
                f"internal error in pass '{pass_.name}': {type(err).__name__}: {err}".splitlines()[0],
                where="<pipeline>",
            ) from err
        if verify_each:
            _verify_after(module, f"pass '{pass_.name}'")
    if not verify_each:
        _verify_after(module, spec or "parsing")
    return module


def _verify_after(module: ModuleOp, what: str) -> None:
    try:
        verify_module(module)
    except ApproxError as err:
        raise ApproxError(f"after {what}: {err.message}", where=err.where) from None


@deep_retry
def run_pipeline(
    text: str,
    spec: str,
    filename: str = "<stdin>",
    generic: bool = False,
    props_as_attrs: bool = False,
    line_offset: int = 0,
    config: dict | None = None,
    verify_each: bool = False,
    allow_unregistered: bool = False,
) -> str:
    """Parse, set the knobs to `config` (see passes.knobs), apply the passes, print.
    The result is verified; `verify_each` verifies after every pass too (approx-opt's
    default, as mlir-opt's), so a pass that breaks the IR is named."""
    with gc_paused():
        ctx = make_context(allow_unregistered) if allow_unregistered else None
        module = parse_module(text, filename, ctx=ctx, line_offset=line_offset)
        lower_module(module, spec, config, verify_each, ctx)
        return print_module(module, generic=generic, props_as_attrs=props_as_attrs)


def lower_module(module: ModuleOp, spec: str, config: dict | None = None, verify_each: bool = False,
                 ctx: Context | None = None) -> ModuleOp:
    """`run_pipeline` on a parsed module, in place: its knobs set to `config`, the passes
    applied, the result verified (a caller that has the module saves a print and a parse).
    A RecursionError (deeply nested input) leaves it half lowered: the caller then runs
    `run_pipeline` from text, which retries with room for it."""
    with gc_paused():
        if config:
            apply_config(module, config)
        return apply_passes(module, spec, verify_each, ctx)


@contextmanager
def gc_paused():
    """xDSL allocates many small objects and no cycles worth collecting while a
    module is compiled; the cyclic GC's passes cost ~15% of the pipeline."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def exact_program(text: str, filename: str = "<stdin>") -> str:
    """The program with every `approx.util.annotation.*` removed: the exact
    baseline that approximations are measured against."""
    module = parse_module(text, filename)
    for op in [op for op in module.ops if op.name.startswith("approx.util.annotation.")]:
        op.detach()
        op.erase()
    return print_module(module)
