"""Ship what was tuned: a compound program's transformed IR (what `approx-tune apply`
writes, or `approx-opt -p approx-pipeline --apply-config` on the program's IR) is
the deployable artefact; `load_tuned` runs it.

    from frontends.deploy import load_tuned
    from examples.systems.rag import bm25 as rag_bm25

    answer = load_tuned("tuned.mlir", rag_bm25.system().program)
    answer("Where did Super Bowl 50 take place?")

The file holds every setting (the components' attributes, the decisions lowered to
`scf.index_switch`); nothing is configured beside it. What it needs from Python is
what the IR names but cannot hold: the program's environment table (the callables
and globals its `pyobj` ops index, rebuilt by lowering the same decorated function)
and the component registry (symbol -> provider: models, retrievers, encoders).
"""

from __future__ import annotations

from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from approx_opt.parsing import parse_module
from frontends.components.runtime import ComponentRuntime
from frontends.pygen import generate


def load_tuned(path: str | Path, program, components: dict | None = None):
    """A callable running the transformed IR in `path` with the environment of
    `program` (the decorated function it was tuned from) and `components` (default:
    the program's own registry). Its entry is `program`'s function."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ApproxError(f"cannot read tuned program: {err.strerror}", where=str(path)) from None
    module = parse_module(text, str(path))
    leftover = next((op for op in module.walk() if op.name.startswith("approx.")), None)
    if leftover is not None:
        raise ApproxError(f"'{leftover.name}' is still in the file: give the IR after approx-pipeline "
                          "(approx-tune apply writes it)", leftover)
    environment, entry = program.environment()
    registry = program.components if components is None else components
    return generate(module, environment, str(path), ComponentRuntime(registry)).fn(entry)
