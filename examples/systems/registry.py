"""Every example compound system, one `System` each, under one name (`SYSTEMS`):
bench/systems_bench.py, bench/results.py and the demo read names and facts here, and
tune a system with the `approx-tune run` command its entry gives (`System.command`),
so a new system is one entry and each of their runs is a command a person can type.

Specs are "module:name" strings, resolved on use: worker processes and `approx-tune
verify` rebuild a program, its inputs and its metric from them, and reading the
registry loads no model."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from approx_dialect.diagnostics import ApproxError


@dataclass(frozen=True)
class System:
    """One compound system, and all that its tuning run (`command`) does differently
    from another's. `program`: what builds its Program (a cached factory); `inputs`:
    its split generator, `(n_tune, seed, n_eval) -> ((tuning inputs, references),
    (held-out inputs, references))` (`approx-tune run --n-tune`; `approx-tune verify`
    re-reads the held-out part); `metric`: its QoS. `items`: BFCL items (the held-out
    split a multiple of n_tune; else questions); `llm`: an LLM runs in it (seconds per
    input; it can run on CUDA); `tuning_qos`: the search's QoS by default, one of
    `tuning_qos_modes` (those its metric scores: `autotuner.TUNING_QOS`). Tuning:
    `budget` (share of QoS that may be lost), `clock` ("cpu": thread CPU time always;
    "": `clock()`, wall time where the LLM runs on CUDA), `eval_repeats` (timed passes
    per measurement), `narrow` ({knob: values} the search keeps to), `kept_candidates`
    (`(n_tune, seed, n_eval) -> (inputs, references)`, tried in that order for "kept"
    tuning, `--kept-from`), `facts` (`(held-out references, the exact program's
    scores) -> dict` its bench row adds). `paper`: ApproxMLIR's dynamic
    speedups at the bench levels (3 / 6 / 9 % loss), `target`: (loss %, speedup) the
    bench row should reach; `sizes`: the group of bench/results.py's size flags it
    takes (rag, rag_llm, tools, tools_llm, agent: --rag-n-tune, --llm-n-tune, ...);
    `demo`: `make demo`'s (n_tune, n_eval, trials, seconds), None when it has no demo.
    Function-valued facts are "module:name" specs, like `program`."""

    name: str
    program: str
    inputs: str
    metric: str
    items: bool = False
    llm: bool = False
    tuning_qos: str = "agreement"
    tuning_qos_modes: tuple[str, ...] = ("agreement", "gold", "kept")  # a BFCL item scores calls, not agreement
    budget: float = 0.2  # questions: the share of answers that may differ from the exact program's
    clock: str = ""
    eval_repeats: int = 1  # one pass over the questions takes seconds (CPU clock: steady)
    narrow: str = ""
    kept_candidates: str = "examples.systems.common:kept_candidates"
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

    def command(self, n_tune: int, trials: int, seconds: float | None = None, *, out_dir, seed: int = 0,
                n_eval: int | None = None, tuning_qos: str | None = None, jobs: int = 1, repeats: int | None = None,
                ablate: tuple = (), progress: bool = False) -> list[str]:
        """The arguments of `approx-tune run` that tune this system on `n_tune` inputs
        (held out: `n_eval`, default the split's), `trials` evaluations per mode, at most
        about `seconds` of search (half to each mode; 0: none, a resumed study is only
        evaluated), `jobs` worker processes, `repeats` timed passes per measurement
        (default `eval_repeats`), the points chosen at `ablate` (percent QoS-loss levels)
        ablated; held out, only the points the reported levels choose are measured.
        What the bench and the demo run (`autotuner.tune_command`), and a person can type."""
        qos, modes = tuning_qos or self.tuning_qos, self.tuning_qos_modes
        if qos not in modes:
            raise ApproxError(f"unknown tuning QoS '{qos}' for {self.name} (one of: {', '.join(modes)})",
                              where="examples.systems")
        fractions = lambda levels: ",".join(str(lv / 100) for lv in levels)  # noqa: E731
        narrow = self.resolve(self.narrow) or {}
        return [self.program, "--inputs", self.inputs, "--n-tune", str(n_tune),
                *(["--n-eval", str(n_eval)] if n_eval is not None else []), "--metric", self.metric,
                "--tuning-qos", qos, *(["--kept-from", self.kept_candidates] if qos == "kept" else []),
                "--budget", str(self.budget), "--trials", str(trials), "--seed", str(seed),
                *(["--timeout", str(max(seconds / 2, 1e-6))] if seconds is not None else []),
                "--jobs", str(jobs), "--clock", self.clock or clock(),
                "--repeats", str(self.eval_repeats if repeats is None else repeats),
                *[a for k, v in narrow.items() for a in ("--narrow", f"{k}={','.join(map(str, v))}")],
                "--eval-levels", fractions(REPORTED_LEVELS), *(["--ablate", fractions(ablate)] if ablate else []),
                "--study-name", self.name, "--out", str(out_dir), "--progress" if progress else "--no-progress"]

    def score(self, output, reference) -> float:
        """One input's QoS under the system's metric (a `Metric`'s function, or the function itself)."""
        metric = _resolve(self.metric)
        return getattr(metric, "fn", metric)(output, reference)

    def resolve(self, spec: str):
        """What one of its "module:name" facts names (None for "")."""
        return _resolve(spec) if spec else None


REPORTED_LEVELS = (1, 3, 6, 9)  # percent QoS loss: the levels a row and the report give
_QUESTIONS = "examples.systems.common:question_sets"  # SQuAD questions, by split
_CONTAINED = "examples.systems.common:METRIC"  # gold answer contained
_ITEMS = "examples.systems.tools.data:query_sets"
_AST = "examples.systems.tools.data:ast_match"  # BFCL's AST check
_NARROW = "examples.systems.common:NARROW"  # the MiniLM readers' float16 never pays
_BM25, _DENSE, _TOOLS = (1.00, 1.23, 1.57), (2.64, 2.64, 3.04), (1.09, 1.20, 1.20)  # the paper's, for each LLM twin too
_TOOLS_TUNING = dict(  # BFCL items: budget the highest reported level, CPU time, 2 timed passes (~20 % noise)
    items=True, tuning_qos="gold", tuning_qos_modes=("gold", "kept"), budget=0.09, clock="cpu",
    eval_repeats=2, kept_candidates="examples.systems.tools.data:kept_candidates",
    facts="examples.systems.tools.data:row_facts", paper=_TOOLS, target=(6, 1.5))

SYSTEMS = {s.name: s for s in (  # in the order of the bench's rows
    System("rag_bm25", "examples.systems.rag.bm25:system", _QUESTIONS, _CONTAINED,
           narrow=_NARROW, paper=_BM25, target=(6, 2.0), demo=(16, None, 18, 240)),
    System("rag_dense", "examples.systems.rag.dense:system", _QUESTIONS, _CONTAINED,
           narrow=_NARROW, paper=_DENSE, target=(3, 3.0), demo=(16, None, 18, 240)),
    System("tools", "examples.systems.tools.agent:system", _ITEMS, _AST, sizes="tools",
           **_TOOLS_TUNING),
    System("rag_bm25_llm", "examples.systems.rag.bm25:llm_system", _QUESTIONS, _CONTAINED, llm=True,
           tuning_qos="gold", paper=_BM25, target=(6, 2.0), sizes="rag_llm", demo=(8, 40, 10, 120)),
    System("rag_dense_llm", "examples.systems.rag.dense:llm_system", _QUESTIONS, _CONTAINED, llm=True,
           tuning_qos="gold", paper=_DENSE, target=(3, 3.0), sizes="rag_llm", demo=(8, 40, 10, 120)),
    System("tools_llm", "examples.systems.tools.agent_llm:system", _ITEMS, _AST, llm=True,
           sizes="tools_llm", **_TOOLS_TUNING),
    System("agent_llm", "examples.systems.agent.llm:system", "examples.systems.agent.data:question_sets", _CONTAINED,
           llm=True, tuning_qos="gold", kept_candidates="examples.systems.agent.data:kept_candidates", paper=_TOOLS,
           target=(6, 1.5), sizes="agent"),
)}


def clock() -> str:
    """What speedups are ratios of: thread CPU time on the CPU (torch runs on one thread in
    the calling thread); wall time where the LLM runs on a GPU (its kernels' time is not
    this thread's CPU time)."""
    from frontends.components import run_settings

    return "wall" if run_settings.current().device.startswith("cuda") else "cpu"


def _resolve(spec: str):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def system(name: str) -> System:
    """The system called `name`; an unknown name says the known ones."""
    if name not in SYSTEMS:
        raise ApproxError(f"unknown system '{name}' (systems: {', '.join(SYSTEMS)})", where="examples.systems")
    return SYSTEMS[name]
