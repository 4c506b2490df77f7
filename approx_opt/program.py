"""What the autotuner tunes: anything with knobs that can be built for a
configuration. The tuner never reaches into passes; it only calls these two
methods, so a `.mlir` file and a decorated Python function are tuned alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from approx_opt.driver import run_pipeline
from approx_opt.parsing import parse_module
from passes.knobs import KnobSpec, knob_specs


class Program(Protocol):
    name: str

    def knobs(self) -> list[KnobSpec]:
        """The search space, read from the program's annotations."""

    def build(self, config: dict[str, dict]) -> Callable[..., Any]:
        """A callable running the program with its knobs set to `config`
        ({} = as annotated; every knob at {"knob_val": 0} = exact)."""


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
