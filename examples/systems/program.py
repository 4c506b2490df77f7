"""The autotuner's Program for every compound system: one decorated program of
parts (retrieval, answer models, tools: component ops of one IR) with what a
search of a costly program needs besides `knobs()` and `build(config)`: the exact
configuration, the IR, where the time goes (`profile`), and the untimed passes'
reuse of answer-model results, kept on disk beside the study (`keep_outputs`).

`SystemProgram` is that Program (the tools agents'); the RAG systems
(`rag_program.RagSystem`) and the agent (`agent_llm.AgentSystem`) extend it with their
hints to the tuner."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence

from approx_opt.program import exact_config


def is_exact(config: dict | None) -> bool:
    """Every knob at 0 (static), or every decision 0 (a ladder)."""
    for setting in (config or {}).values():
        if setting.get("knob_val", 0) != 0 or any(setting.get("decisions", ())) or \
                any(setting.get("tree_decisions", ())):
            return False
    return True


class SystemProgram:
    """`program` (a decorated function: `knobs()`, `build(config)`, `ir()`) as the
    autotuner's Program under `name`. `model` says what answers (results.json:
    `model`); `reuse`: the answer models whose results the untimed passes reuse (and
    the tuner keeps on disk). Its inputs, metric and name in the bench are its
    `registry.System`'s. A subclass may add the tuner's optional hints
    (`approx_opt.program.CostlyProgram`: `negligible_knobs`, `states`)."""

    def __init__(self, name: str, program, model: str = "", reuse: Sequence = ()):
        self.name, self.program, self.model = name, program, model
        self.reuse = tuple(reuse)
        if self.reuse:
            program.reuse.keep(self.reuse)
        self._lock = threading.Lock()  # the tuner may build from several threads
        self._exact_profile: tuple[list, dict] | None = None  # (questions, profile) of the last exact one

    def knobs(self):
        return self.program.knobs()

    def build(self, config: dict | None = None) -> Callable:
        with self._lock:
            return self.program.build(dict(config or {}))

    def exact(self) -> Callable:
        return self.build(exact_config(self))

    def plain(self) -> Callable:
        """The unannotated program: the decorated function's own Python, its components
        called as written (what every knob at 0 must answer as)."""
        return self.program.python

    def ir(self, after: bool = False, config: dict | None = None) -> str:
        """The program's IR: annotated, or after the pipeline with `config`."""
        return self.program.ir(after=after, config=config)

    def profile(self, questions: Sequence, config: dict | None = None) -> dict[str, dict[str, float]]:
        """Where the time of the exact program (or `config`) goes on `questions`: per
        component label, its share, seconds and calls (`KnobFunction.profile`). The exact
        program's last profile is kept (`exact_profile`)."""
        result = self.program.profile(list(questions), config)
        if config is None:
            self._exact_profile = (list(questions), result)
        return result

    def exact_profile(self, questions: Sequence) -> dict[str, dict[str, float]]:
        """The exact program's profile of `questions`: the last one when it was of the same
        questions (the tuner asks for the negligible knobs right after profiling them, and
        a second profile would time every call again), else a new one."""
        last = self._exact_profile
        return last[1] if last and last[0] == list(questions) else self.profile(questions)

    def reuse_counts(self) -> dict[str, int]:
        """{'reused': untimed calls answered from kept results, 'run': calls run and kept}."""
        return self.program.reuse.counts()

    def keep_outputs(self, path) -> bool:
        """Keep the answer models' call outputs on disk in `path` too (`KnobFunction.keep_outputs`)."""
        return bool(self.reuse) and self.program.keep_outputs(path)

    def untimed(self):
        """The context of the tuner's untimed (QoS) passes: with `reuse`, an answer op
        called as before (same model, attributes, question and passages) returns the
        earlier answer (greedy decoding on one thread: the same text) instead of
        generating it again; timed passes still run every call."""
        return self.program.reuse.reading() if self.reuse else contextlib.nullcontext()

    def kept_only(self):
        """`untimed`, where an answer not kept before raises `NotKept` instead of
        being generated (`KnobFunction.kept_only`)."""
        return self.program.kept_only() if self.reuse else contextlib.nullcontext()


def program_attribute(module: str, build: Callable[[], SystemProgram]) -> Callable[[str], SystemProgram]:
    """The `__getattr__` of `module` whose `program` is `build()` (built on first use,
    not at import), for `approx-tune run <module>:program ...`."""

    def __getattr__(name: str) -> SystemProgram:
        if name == "program":
            return build()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
