"""Inputs other than MLIR text, provided by the packages above approx-opt: the
entry-point group `approx_opt.sources` maps a name to a function `spec -> (IR
text, name for messages)` (pyproject.toml: `python = "frontends.cli:python_input"`
gives `approx-opt --from-python MODULE:FUNCTION`). Looked up by name when used,
so approx-opt imports no frontend."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from approx_dialect.diagnostics import ApproxError

GROUP = "approx_opt.sources"


def source(name: str) -> Callable[[str], tuple[str, str]]:
    """The registered input source `name`."""
    found = metadata.entry_points(group=GROUP, name=name)
    if not found:
        raise ApproxError(f"no input source '{name}' is installed (entry point group '{GROUP}'; "
                          "pip install -e . registers the frontends' one)", where="<command line>")
    return next(iter(found)).load()


def read_source(name: str, spec: str) -> tuple[str, str]:
    """(IR text, name for messages) of `spec`, read by the source `name`."""
    return source(name)(spec)
