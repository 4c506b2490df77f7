"""Every example compound system, one `System` each, under one name (`SYSTEMS`): the
driver (`tuning.tune_system`), bench/systems_bench.py, bench/results.py and the demo
read names and facts here, so a new system is one entry.

Specs are "module:name" strings, resolved on use: worker processes and `approx-tune
verify` rebuild a program, its inputs and its metric from them, and reading the
registry loads no model."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from approx_dialect.diagnostics import ApproxError


@dataclass(frozen=True)
class System:
    """One compound system. `program`: what builds its Program (a cached factory);
    `inputs`: `(n_tune, seed, n_eval) -> ((tuning inputs, references), (held-out
    inputs, references))`; `held_out`: the held-out split alone (what `approx-tune
    verify` re-measures on); `metric`: its QoS. `items`: BFCL items (tools_tuning.py
    tunes them for `tuning.tune_system`; else questions); `llm`: SmolLM2 runs in it (seconds
    per input; it can run on CUDA); `tuning_qos`: the search's QoS by default
    (tuning.TUNING_QOS). `paper`: ApproxMLIR's dynamic speedups at the bench levels
    (3 / 6 / 9 % loss), `target`: (loss %, speedup) the bench row should reach;
    `sizes`: the group of bench/results.py's size flags it takes (rag, rag_llm, tools,
    tools_llm, agent: --rag-n-tune, --llm-n-tune, ...); `demo`: `make demo`'s (n_tune,
    n_eval, trials, seconds), None when it has no demo."""

    name: str
    program: str
    inputs: str
    held_out: str
    metric: str
    items: bool = False
    llm: bool = False
    tuning_qos: str = "agreement"
    paper: tuple[float, float, float] = ()
    target: tuple[int, float] = ()
    sizes: str = "rag"
    demo: tuple | None = None

    def build(self):
        """The Program, knowing its spec (worker processes build it again from there)."""
        from autotuner import load_program

        program = load_program(self.program)
        program.spec = self.program
        return program

    def splits(self, n_tune: int, seed: int = 0, n_eval: int | None = None):
        """((tuning inputs, references), (held-out inputs, references)), disjoint, seeded."""
        return _resolve(self.inputs)(n_tune, seed, n_eval)


_QUESTIONS = "examples.systems.common:question_sets"  # SQuAD questions, by split
_HELD_OUT = "examples.systems.common:held_out_questions"
_CONTAINED = "examples.systems.common:METRIC"  # gold answer contained
_ITEMS, _ITEMS_HELD_OUT = "examples.systems.tools_data:query_sets", "examples.systems.tools_agent:held_out"
_AST = "examples.systems.tools_data:ast_match"  # BFCL's AST check
_BM25, _DENSE, _TOOLS = (1.00, 1.23, 1.57), (2.64, 2.64, 3.04), (1.09, 1.20, 1.20)  # the paper's, for each LLM twin too

SYSTEMS = {s.name: s for s in (  # in the order of the bench's rows
    System("rag_bm25", "examples.systems.rag_bm25:system", _QUESTIONS, _HELD_OUT, _CONTAINED,
           paper=_BM25, target=(6, 2.0), demo=(16, None, 18, 240)),
    System("rag_dense", "examples.systems.rag_dense:system", _QUESTIONS, _HELD_OUT, _CONTAINED,
           paper=_DENSE, target=(3, 3.0), demo=(16, None, 18, 240)),
    System("tools", "examples.systems.tools_agent:system", _ITEMS, _ITEMS_HELD_OUT, _AST, items=True,
           tuning_qos="gold", paper=_TOOLS, target=(6, 1.5), sizes="tools"),
    System("rag_bm25_llm", "examples.systems.rag_bm25:llm_system", _QUESTIONS, _HELD_OUT, _CONTAINED, llm=True,
           tuning_qos="gold", paper=_BM25, target=(6, 2.0), sizes="rag_llm", demo=(8, 20, 10, 180)),
    System("rag_dense_llm", "examples.systems.rag_dense:llm_system", _QUESTIONS, _HELD_OUT, _CONTAINED, llm=True,
           tuning_qos="gold", paper=_DENSE, target=(3, 3.0), sizes="rag_llm", demo=(8, 20, 10, 180)),
    System("tools_llm", "examples.systems.tools_agent_llm:system", _ITEMS, _ITEMS_HELD_OUT, _AST, items=True,
           llm=True, tuning_qos="gold", paper=_TOOLS, target=(6, 1.5), sizes="tools_llm"),
    System("agent_llm", "examples.systems.agent_llm:system", "examples.systems.agent_data:question_sets",
           "examples.systems.agent_data:held_out_questions", _CONTAINED, llm=True, tuning_qos="gold",
           paper=_TOOLS, target=(6, 1.5), sizes="agent"),
)}


def _resolve(spec: str):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def system(name: str) -> System:
    """The system called `name`; an unknown name says the known ones."""
    if name not in SYSTEMS:
        raise ApproxError(f"unknown system '{name}' (systems: {', '.join(SYSTEMS)})", where="examples.systems")
    return SYSTEMS[name]
