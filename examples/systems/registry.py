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
    """One compound system, and all that its tuning run (`tuning.tune_system`) does
    differently from another's. `program`: what builds its Program (a cached factory);
    `inputs`: `(n_tune, seed, n_eval) -> ((tuning inputs, references), (held-out
    inputs, references))`; `held_out`: the held-out split alone (what `approx-tune
    verify` re-measures on, `held_out_kwargs`); `metric`: its QoS. `items`: BFCL items
    (the held-out split is named by its multiple of n_tune; else questions); `llm`:
    SmolLM2 runs in it (seconds per input; it can run on CUDA); `tuning_qos`: the
    search's QoS by default, one of `qos_notes`' keys (those it takes -> what the
    result's notes say of each). Tuning: `budget` (share of QoS that may be lost),
    `clock` ("cpu": thread CPU time always; "": `tuning.clock()`, wall time where the
    LLM runs on CUDA), `eval_repeats` (timed passes per held-out measurement), `narrow`
    ({knob: values} the search keeps to), `kept_candidates` (`(n_tune, seed, n_eval) ->
    (inputs, references)`, tried in that order for "kept" tuning; "": the tuning inputs
    of 4x n_tune, in a seeded order), `facts` (`(held-out references, the exact
    program's scores) -> dict` its bench row adds). `paper`: ApproxMLIR's dynamic
    speedups at the bench levels (3 / 6 / 9 % loss), `target`: (loss %, speedup) the
    bench row should reach; `sizes`: the group of bench/results.py's size flags it
    takes (rag, rag_llm, tools, tools_llm, agent: --rag-n-tune, --llm-n-tune, ...);
    `demo`: `make demo`'s (n_tune, n_eval, trials, seconds), None when it has no demo.
    Function-valued facts are "module:name" specs, like `program`."""

    name: str
    program: str
    inputs: str
    held_out: str
    metric: str
    items: bool = False
    llm: bool = False
    tuning_qos: str = "agreement"
    qos_notes: str = "examples.systems.common:TUNING_QOS"
    budget: float = 0.2  # questions: the share of answers that may differ from the exact program's
    clock: str = ""
    eval_repeats: int = 1  # one pass over the questions takes seconds (CPU clock: steady)
    narrow: str = ""
    kept_candidates: str = ""
    facts: str = ""
    paper: tuple[float, float, float] = ()
    target: tuple[int, float] = ()
    sizes: str = "rag"
    demo: tuple | None = None

    def build(self, **sizes):
        """The Program, knowing its spec (worker processes build it again from there).
        `sizes`: keywords of the spec's factory that make it smaller (a RAG system's
        `corpus`, for tests); a program so built has no spec (a worker process could not
        build the same one from it)."""
        from autotuner import load_program

        if sizes:
            return _resolve(self.program)(**sizes)
        program = load_program(self.program)
        program.spec = self.program
        return program

    def splits(self, n_tune: int, seed: int = 0, n_eval: int | None = None):
        """((tuning inputs, references), (held-out inputs, references)), disjoint, seeded."""
        return _resolve(self.inputs)(n_tune, seed, n_eval)

    def held_out_kwargs(self, n_tune: int, seed: int, n_eval: int | None) -> dict:
        """What `held_out` is called with for the held-out split of `splits(n_tune, seed,
        n_eval)`: the run records it for `approx-tune verify`."""
        if self.items:
            return {"n_tune": n_tune, "seed": seed, "eval_ratio": (n_eval or 5 * n_tune) // n_tune}
        return {"n_tune": n_tune, "seed": seed, "n_eval": n_eval}

    def score(self, output, reference) -> float:
        """One input's QoS under the system's metric (a `Metric`'s function, or the function itself)."""
        metric = _resolve(self.metric)
        return getattr(metric, "fn", metric)(output, reference)

    def resolve(self, spec: str):
        """What one of its "module:name" facts names (None for "")."""
        return _resolve(spec) if spec else None


_QUESTIONS = "examples.systems.common:question_sets"  # SQuAD questions, by split
_HELD_OUT = "examples.systems.common:held_out_questions"
_CONTAINED = "examples.systems.common:METRIC"  # gold answer contained
_ITEMS, _ITEMS_HELD_OUT = "examples.systems.tools.data:query_sets", "examples.systems.tools.agent:held_out"
_AST = "examples.systems.tools.data:ast_match"  # BFCL's AST check
_NARROW = "examples.systems.common:NARROW"  # the MiniLM readers' float16 never pays
_BM25, _DENSE, _TOOLS = (1.00, 1.23, 1.57), (2.64, 2.64, 3.04), (1.09, 1.20, 1.20)  # the paper's, for each LLM twin too
_TOOLS_TUNING = dict(  # BFCL items: budget the highest reported level, CPU time, 2 timed passes (~20 % noise)
    items=True, tuning_qos="gold", qos_notes="examples.systems.tools.data:TUNING_QOS", budget=0.09, clock="cpu",
    eval_repeats=2, kept_candidates="examples.systems.tools.data:kept_candidates",
    facts="examples.systems.tools.data:row_facts", paper=_TOOLS, target=(6, 1.5))

SYSTEMS = {s.name: s for s in (  # in the order of the bench's rows
    System("rag_bm25", "examples.systems.rag.bm25:system", _QUESTIONS, _HELD_OUT, _CONTAINED,
           narrow=_NARROW, paper=_BM25, target=(6, 2.0), demo=(16, None, 18, 240)),
    System("rag_dense", "examples.systems.rag.dense:system", _QUESTIONS, _HELD_OUT, _CONTAINED,
           narrow=_NARROW, paper=_DENSE, target=(3, 3.0), demo=(16, None, 18, 240)),
    System("tools", "examples.systems.tools.agent:system", _ITEMS, _ITEMS_HELD_OUT, _AST, sizes="tools",
           **_TOOLS_TUNING),
    System("rag_bm25_llm", "examples.systems.rag.bm25:llm_system", _QUESTIONS, _HELD_OUT, _CONTAINED, llm=True,
           tuning_qos="gold", paper=_BM25, target=(6, 2.0), sizes="rag_llm", demo=(8, 20, 10, 180)),
    System("rag_dense_llm", "examples.systems.rag.dense:llm_system", _QUESTIONS, _HELD_OUT, _CONTAINED, llm=True,
           tuning_qos="gold", paper=_DENSE, target=(3, 3.0), sizes="rag_llm", demo=(8, 20, 10, 180)),
    System("tools_llm", "examples.systems.tools.agent_llm:system", _ITEMS, _ITEMS_HELD_OUT, _AST, llm=True,
           sizes="tools_llm", **_TOOLS_TUNING),
    System("agent_llm", "examples.systems.agent.llm:system", "examples.systems.agent.data:question_sets",
           "examples.systems.agent.data:held_out_questions", _CONTAINED, llm=True, tuning_qos="gold",
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
