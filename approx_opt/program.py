"""What the autotuner tunes: anything with knobs that can be built for a
configuration. The tuner never reaches into passes; it calls `knobs` and `build`,
so a `.mlir` file and a decorated Python function are tuned alike, and reads the
optional members of `OPTIONAL` (only through `offered`) where a program has them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from approx_opt.driver import run_pipeline
from approx_opt.parsing import parse_module
from passes.knobs import KnobSpec, knob_specs


class Program(Protocol):
    """Required: `name`, `knobs()`, `build(config)`. Optional: the members of `OPTIONAL`."""

    name: str

    def knobs(self) -> list[KnobSpec]:
        """The search space, read from the program's annotations."""

    def build(self, config: dict[str, dict]) -> Callable[..., Any]:
        """A callable running the program with its knobs set to `config`
        ({} = as annotated; every knob at {"knob_val": 0} = exact)."""


# What a program may offer besides the Protocol, and what the tuner does without it:
# name -> (a method or a plain attribute, what it is and what its absence means).
OPTIONAL: dict[str, tuple[str, str]] = {
    "spec": ("attribute", "str `file.mlir:entry` or `pkg.module:function`: how worker processes build the "
             "program again; absent: they get the object pickled"),
    "kind": ("attribute", "'kernel' for JIT code running in the calling thread (timed by its CPU clock); "
             "absent: wall-clock time"),
    "text": ("attribute", "the program's source, with `entry` the key its builds are remembered by; "
             "absent: the object's identity"),
    "entry": ("attribute", "the entry function of `text`; absent: ''"),
    "tree_features": ("method", "() -> {knob: [feature, ...]} of each multi-feature tree, kept while its "
                      "thresholds are tuned; absent: no such trees"),
    "transformed_ir": ("method", "(config) -> the approx-free IR of `config`, shown in the report; "
                       "absent: `ir`"),
    "ir": ("method", "(after=True, config=...) -> the same, for a decorated function; absent: no IR shown"),
    "profile": ("method", "(inputs, config=None) -> {label: {'share': ...}}, the time per component call; with "
                "dotted knob names it turns on the search strategy (`autotuner.strategy`); absent: a plain search"),
    "negligible_knobs": ("method", "(inputs) -> {knob: share}: knobs fixed at exact, their calls cannot pay; "
                         "absent: only the components under 2 % of the profiled time"),
    "states": ("method", "(inputs) -> each input's decision state, where the dynamic study's first trials "
               "cut ladders; absent: cuts spread over the ladder's range"),
    "untimed": ("method", "() -> a context the QoS (warm-up) pass runs in, never a timed pass (e.g. reading "
                "kept outputs); absent: none"),
    "kept_only": ("method", "() -> a context like `untimed` in which a call that was not kept raises `NotKept` "
                  "instead of running: a configuration scored from kept outputs alone (the strategy's sweep); "
                  "absent: no sweep"),
    "keep_outputs": ("method", "(path) -> True when the program keeps its deterministic components' outputs "
                     "in `path` (then timing is modelled from them); absent: nothing kept"),
    "reuse_counts": ("method", "() -> {'reused': n, 'run': n}: kept calls read and calls run in this process, "
                     "for the result; absent: not reported"),
}


class NotKept(BaseException):
    """Raised in a program's `kept_only` context by a call whose output was not kept:
    the configuration cannot be scored without running a model. A BaseException, so
    that no recovery path of the program (a safety contract, a fallback) answers it."""


def offered(program: Any, name: str) -> Any:
    """The optional member `name` (a key of OPTIONAL) of `program`, or None where it
    offers none: one place where the tuner's duck typing is declared."""
    if name not in OPTIONAL:
        raise KeyError(f"'{name}' is not an optional member of a Program (approx_opt.program.OPTIONAL)")
    value = getattr(program, name, None)
    if OPTIONAL[name][0] == "method" and not callable(value):
        return None
    return value


class MlirProgram:
    """An ApproxMLIR-style `.mlir` program: one function of it is the entry."""

    def __init__(self, text: str, entry: str, filename: str = "<program>"):
        self.text, self.entry, self.filename = text, entry, filename
        self.name = f"{Path(filename).name}:{entry}"
        self._specs = knob_specs(parse_module(text, filename))

    @classmethod
    def from_file(cls, path: str | Path, entry: str) -> "MlirProgram":
        return cls(Path(path).read_text(), entry, str(path))

    def knobs(self) -> list[KnobSpec]:
        return list(self._specs)

    def build(self, config: dict[str, dict]) -> Callable[..., Any]:
        from approx_opt.jit import compile_module

        return compile_module(run_pipeline(self.text, "approx-pipeline", self.filename, config=config)).fn(self.entry)

    def transformed_ir(self, config: dict[str, dict]) -> str:
        """The approx-free IR for `config` (what `approx-opt --apply-config` prints)."""
        return run_pipeline(self.text, "approx-pipeline", self.filename, config=config)

    def tree_features(self) -> dict[str, list[int]]:
        """Knob name -> `tree_features` of each multi-feature tree (its structure,
        which the tuner keeps while it tunes thresholds and leaf decisions)."""
        from passes.knobs import knob_annotations

        module = parse_module(self.text, self.filename)
        return {s.name: list(a.tree_features.get_values())
                for s, a in zip(knob_specs(module), knob_annotations(module)) if s.kind == "tree"}


def exact_config(program: Program) -> dict[str, dict]:
    return {spec.name: {"knob_val": 0} for spec in program.knobs()}
