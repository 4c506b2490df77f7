"""Makes the CPU engine builds and the machine probes of the example systems' SmolLM2
models once, so that no run, demo or test waits for them (a missing one is still made
on first use). `make install` runs the groups as separate processes, two at a time:

    python -m examples.systems.engines exact   # the exact path's decision (the RAG answer model)
    python -m examples.systems.engines rag     # that model's precision values: builds and probes
    python -m examples.systems.engines others  # the tools writer's and the agent's models

`rag` and `others` read the decision `exact` cached (`machine.paying_values`), so they
run after it and beside each other."""

from __future__ import annotations

import argparse
import time


def exact() -> None:
    from examples.systems.common import exact_engine

    exact_engine()


def rag() -> None:
    from examples.systems.common import smollm
    from examples.systems.rag.program import llm_precisions

    llm_precisions(smollm())


def others() -> None:
    from examples.systems.agent.llm import base_llm, triage_llm
    from examples.systems.tools.agent_llm import load_writer, writer_precisions

    writer_precisions(load_writer())
    base_llm(), triage_llm()


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
