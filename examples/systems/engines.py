"""Makes the CPU engine builds and the machine probes of the example systems' SmolLM2
models once, so that no run, demo or test waits for them (a missing one is still made
on first use). `make install` runs the groups as separate processes, two at a time:

    python -m examples.systems.engines exact   # the exact path's decision (the RAG answer model)
    python -m examples.systems.engines rag     # that model's precision values: builds and probes
    python -m examples.systems.engines others  # the tools writer's and the agent's models

`rag` reads the decision `exact` caches (`machine.paying_values`), so it runs after it;
`others` makes its builds beside `exact`, then waits for the decision."""

from __future__ import annotations

import argparse
import os
import time


def exact() -> None:
    from examples.systems.common import exact_engine

    exact_engine()


def rag() -> None:
    from examples.systems.common import smollm
    from examples.systems.rag.program import llm_precisions

    llm_precisions(smollm())


def others() -> None:
    """The tools writer's and the agent's models: their engine builds first, through the
    engine the exact path would take (builds need no decision: they run while `exact`
    probes), then the writer's precision probe, which waits for that decision."""
    from examples.systems.agent.llm import base_llm, triage_llm
    from examples.systems.common import device
    from examples.systems.tools.agent_llm import load_writer, writer_precisions
    from frontends.components.llm.engine import ENV, EXACT, default_engine, engine_from_env

    if default_engine(device()) == EXACT and engine_from_env() is None:
        os.environ[ENV] = EXACT
        try:
            writer = load_writer()
            for precision in writer.engines:
                writer.with_precision(precision)
            base_llm(), triage_llm()
        finally:
            del os.environ[ENV]
    writer_precisions(load_writer())
    base_llm(), triage_llm()  # (built above where the engine takes the exact path)


GROUPS = {"exact": exact, "rag": rag, "others": others}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("groups", nargs="+", choices=list(GROUPS))
    for name in ap.parse_args(argv).groups:
        t0 = time.monotonic()
        GROUPS[name]()
        print(f"engines: {name} ready in {time.monotonic() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
