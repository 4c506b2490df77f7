"""What the autotuner tunes: anything with knobs that can be built for a
configuration. The tuner never reaches into passes; it calls `knobs` and `build`
(`Program`), so a `.mlir` file and a decorated Python function are tuned alike, and
reads the hooks of `PlainProgram` and `CostlyProgram` where a program has them, each
on its own and only through `offered`."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from approx_opt.driver import run_pipeline
from approx_opt.parsing import parse_module
from passes.knobs import KnobSpec, knob_specs


class Program(Protocol):
    """What every program has: the search space and a build per configuration."""

    name: str

    def knobs(self) -> list[KnobSpec]:
        """The search space, read from the program's annotations."""

    def build(self, config: dict[str, dict]) -> Callable[..., Any]:
        """A callable running the program with its knobs set to `config`
        ({} = as annotated; every knob at {"knob_val": 0} = exact)."""


class PlainProgram(Program, Protocol):
    """What any program may offer besides: how it is rebuilt, timed, keyed and shown.
    Each hook is optional; the tuner does without it as each docstring says."""

    @property
    def spec(self) -> str:
        """`file.mlir:entry` or `pkg.module:function`: worker processes build the program from it (else: pickled)."""

    @property
    def kind(self) -> str:
        """'kernel' for JIT code in the calling thread: timed by its CPU clock (else: wall-clock time)."""

    @property
    def text(self) -> str:
        """The program's source: with `entry`, what its builds are remembered by (else: the object's identity)."""

    @property
    def entry(self) -> str:
        """The entry function of `text` (else: '')."""

    def tree_features(self) -> dict[str, list[int]]:
        """Knob -> features of each multi-feature tree, kept while its thresholds are tuned (else: no such trees)."""

    def transformed_ir(self, config: dict[str, dict]) -> str:
        """The approx-free IR of `config`, shown in the report (else: `ir`)."""

    def ir(self, after: bool = False, config: dict | None = None) -> str:
        """The same for a decorated function, with `after=True` (else: no IR shown)."""


class CostlyProgram(Program, Protocol):
    """The hooks of a program of costly component calls (models, retrieval, endpoints),
    whose calls the tuner profiles, keeps and costs. Each hook is optional."""

    def profile(self, inputs: Sequence, config: dict | None = None) -> dict[str, dict[str, float]]:
        """Label -> {'share', ...} of each component's time: with dotted knob names, turns on `autotuner.strategy`."""

    def negligible_knobs(self, inputs: Sequence) -> dict[str, float]:
        """Knob -> share: knobs the strategy fixes at exact, their calls cannot pay (else: those under 2 %)."""

    def states(self, inputs: Sequence) -> list[int]:
        """Each input's decision state, where the dynamic study's first ladders cut (else: cuts spread evenly)."""

    def untimed(self) -> AbstractContextManager[Any]:
        """The context of untimed (QoS) passes; it yields the `Reuse` that costs kept calls, or None."""

    def kept_only(self) -> AbstractContextManager[Any]:
        """`untimed`, where a call not kept raises `NotKept`: the sweep scores configurations from kept calls."""

    def keep_outputs(self, path: Path) -> bool:
        """Keep the deterministic components' outputs in `path`; True turns on modelled timing."""

    def reuse_counts(self) -> dict[str, int]:
        """{'reused', 'run'} calls (and endpoint requests) of this process, reported in the result."""


def _hooks(protocol: type) -> dict[str, bool]:
    """Hook name -> whether it is a method (else a plain attribute) of `protocol`'s own members."""
    return {name: inspect.isfunction(member) for name, member in vars(protocol).items()
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))}


OPTIONAL: dict[str, bool] = {**_hooks(PlainProgram), **_hooks(CostlyProgram)}  # hook -> is a method


class NotKept(BaseException):
    """Raised in a program's `kept_only` context by a call whose output was not kept:
    the configuration cannot be scored without running a model. A BaseException, so
    that no recovery path of the program (a safety contract, a fallback) answers it."""


def offered(program: Any, name: str) -> Any:
    """The hook `name` of `program` (declared in `PlainProgram` or `CostlyProgram`), or
    None where it offers none (a method hook that is not callable counts as none). A
    name declared in neither is a programming error, raised here at once: a misspelt
    hook must not silently read as absent."""
    if name not in OPTIONAL:
        raise KeyError(f"'{name}' is not a hook of PlainProgram or CostlyProgram (approx_opt.program)")
    value = getattr(program, name, None)
    return value if callable(value) or not OPTIONAL[name] else None


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
