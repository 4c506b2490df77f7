"""Makes the CPU engine builds and the machine probes of the example systems' LLMs once
(the library's policy, `frontends.components.llm.policy`), so that no run, demo or test
waits for them (a missing one is still made on first use). `make install` runs the groups
as separate processes:

    python -m examples.systems.engines exact    # each family's exact path (SmolLM2's RAG model, Gemma 3)
    python -m examples.systems.engines answer   # the RAG answer model's (Gemma's) exact path and values
    python -m examples.systems.engines writer   # the tools writer's builds and values; the agent's

`answer` and `writer` read the decisions `exact` caches (`machine.paying_values`): they
run after it, beside each other (a build running beside the exact path's probe slowed
both more than running them one after the other). `answer` alone is all `make demo`
needs: without the engine extra Gemma's exact path is eager torch (one line says so),
and no engine is built."""

from __future__ import annotations

import argparse
import time


def exact() -> None:
    from examples.systems.common import gemma, smollm

    smollm()  # SmolLM2's decision, on the RAG answer model (the writer and the agent read it)
    gemma()


def answer() -> None:
    from examples.systems.common import gemma
    from examples.systems.rag.program import llm_precisions

    llm_precisions(gemma())


def writer() -> None:
    from examples.systems.agent.llm import agent_model
    from examples.systems.rag.program import llm_precisions
    from examples.systems.tools.agent_llm import load_writer, writer_precisions

    writer_precisions(load_writer())  # each probe builds the values it times
    llm_precisions(agent_model())


GROUPS = {"exact": exact, "answer": answer, "writer": writer}


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
