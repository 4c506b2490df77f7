"""The settings of `autotuner.tune`, in groups, as Optuna keeps a study's
settings in a few objects (a storage, a sampler, the optimize loop's limits)
rather than in one long argument list:

- `Search`: what is searched (and against what QoS on the tuning inputs) and when
  each mode's search stops;
- `Cost`: how a configuration's cost (time or money) is measured; its QoS side
  is `tune`'s `metric`;
- `HeldOut`: the held-out split and its re-measurement of the front;
- `Storage`: where the studies and the result live.

Each is a frozen dataclass checked when it is made, so a bad value is one line
naming the setting, before anything runs. `dataclasses.replace` derives one from
another."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from approx_dialect.diagnostics import ApproxError

WHERE = "<approx-tune>"
SAMPLERS = ("nsga2", "predictive", "tpe", "gp", "random")
DEFAULT_SAMPLER = "predictive"  # bench/tuning_bench.py: the best measured on every landscape
MODES = ("static", "dynamic", "both")
CLOCKS = ("auto", "wall", "cpu")
TIMINGS = ("auto", "paired", "model")
OBJECTIVES = ("time", "money")
TUNING_QOS = {  # what the search scores on the tuning inputs -> one line (approx-tune run --help)
    "agreement": "against the exact program's outputs (every input counts, not only those it gets right)",
    "gold": "against the references, as the held-out evaluation scores (a gain counts as it does held out)",
    "kept": "on the tuning inputs the exact program gets right, against their references (no gain offsets a loss)",
}


def _count(value, what: str, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ApproxError(f"{what}, got {value!r}", where=WHERE)


def _one_of(value, choices: Sequence[str], what: str) -> None:
    if value not in choices:
        raise ApproxError(f"{what} must be {', '.join(repr(c) for c in choices[:-1])} or {choices[-1]!r}, "
                          f"got {value!r}", where=WHERE)


def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


@dataclass(frozen=True)
class Search:
    """What is searched and when a mode's search stops.

    `n_trials`: evaluations per mode (the total, on a resume); `mode`: "static",
    "dynamic" or "both"; `sampler`: one of `SAMPLERS`; `seed`: seeds each trial's
    sampler and the tuning/held-out split; `patience`: stop a mode when the front's
    hypervolume has not grown for this many evaluations; `timeout`: seconds for
    each mode's search (checked between trials: the same call again resumes);
    `stage_fraction`: share of the tuning inputs a configuration runs on first (0:
    no stages); `narrow` / `fix`: knob -> values / setting (`SearchSpace.narrow`,
    `SearchSpace.fix`); `jobs`: worker processes running trials; `sweep`: dynamic
    configurations the strategy's sweep scores from kept outputs at most (0: none;
    `autotuner.strategy`); `tuning_qos`: what the search scores on the tuning inputs,
    one of `TUNING_QOS` (None: "gold" where the inputs have references, else
    "agreement"; the held-out evaluation scores against the references whatever it is:
    `autotuner.tuning_qos`); `n_kept`: "kept" tunes on at most this many inputs, the
    first the exact program gets right in the order given (None: every one)."""

    n_trials: int = 40
    mode: str = "both"
    sampler: str = DEFAULT_SAMPLER
    seed: int = 0
    patience: int | None = None
    timeout: float | None = None
    stage_fraction: float = 0.2
    narrow: Mapping | None = None
    fix: Mapping | None = None
    jobs: int = 1
    sweep: int = 5000
    tuning_qos: str | None = None
    n_kept: int | None = None

    def __post_init__(self):
        _count(self.n_trials, "n_trials must be a positive integer")
        _one_of(self.mode, MODES, "mode")
        if self.sampler not in SAMPLERS:
            raise ApproxError(f"unknown sampler '{self.sampler}' (samplers: {', '.join(SAMPLERS)})", where=WHERE)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ApproxError(f"seed must be an integer, got {self.seed!r}", where=WHERE)
        _count(self.patience, "patience must be a positive number of evaluations", optional=True)
        if self.timeout is not None and not (_number(self.timeout) and self.timeout > 0):
            raise ApproxError(f"timeout must be a positive number of seconds, got {self.timeout!r}", where=WHERE)
        if not (_number(self.stage_fraction) and 0 <= self.stage_fraction <= 1):
            raise ApproxError(f"stage_fraction must be in [0, 1], got {self.stage_fraction!r}", where=WHERE)
        for name in ("narrow", "fix"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), Mapping):
                raise ApproxError(f"{name} must map knob names to settings, got {getattr(self, name)!r}",
                                  where=WHERE)
        _count(self.jobs, "jobs must be a positive integer")
        if isinstance(self.sweep, bool) or not isinstance(self.sweep, int) or self.sweep < 0:
            raise ApproxError(f"sweep must be a number of configurations >= 0, got {self.sweep!r}", where=WHERE)
        if self.tuning_qos is not None and self.tuning_qos not in TUNING_QOS:
            raise ApproxError(f"unknown tuning QoS {self.tuning_qos!r} (one of: {', '.join(TUNING_QOS)})",
                              where=WHERE)
        _count(self.n_kept, "n_kept must be a positive number of inputs", optional=True)
        if self.n_kept is not None and self.tuning_qos != "kept":
            raise ApproxError(f"n_kept is for the 'kept' tuning QoS, not {self.tuning_qos!r}", where=WHERE)

    @property
    def modes(self) -> tuple[str, ...]:
        return ("static", "dynamic") if self.mode == "both" else (self.mode,)


@dataclass(frozen=True)
class Cost:
    """How the cost side of a configuration is measured (speedup = exact / approximate cost).

    `objective`: "time", or "money" with `money(config, args, output) -> float` (an
    API's price; also reported per trial with "time"); `clock`: "wall", "cpu"
    (the calling thread's CPU time) or "auto" (CPU for JIT kernels in this thread,
    wall for anything else); `timing`: "paired" (every configuration timed beside
    the exact program), "model" (QoS passes only, time modelled from kept component
    calls, the front timed paired) or "auto" ("model" for a program that keeps its
    outputs, else "paired"); `repeats`: timed samples per measurement."""

    objective: str = "time"
    money: Callable | None = None
    clock: str = "auto"
    timing: str = "auto"
    repeats: int = 5

    def __post_init__(self):
        if self.objective not in OBJECTIVES or (self.objective == "money" and self.money is None):
            raise ApproxError(f"objective must be 'time' or 'money' (with a money cost function), got "
                              f"{self.objective!r}", where=WHERE)
        if self.money is not None and not callable(self.money):
            raise ApproxError(f"money must be a function (config, args, output) -> float, got {self.money!r}",
                              where=WHERE)
        _one_of(self.clock, CLOCKS, "clock")
        _one_of(self.timing, TIMINGS, "timing")
        _count(self.repeats, "repeats must be a positive integer")


@dataclass(frozen=True)
class HeldOut:
    """The held-out split, on which every front point is measured again.

    `inputs` / `references`: a held-out split of your own (then all of `tune`'s
    inputs tune); else `ratio` evaluation inputs per tuning input are split off
    `tune`'s inputs (seeded by `Search.seed`); `evaluate`: False sets the split
    aside without measuring it; `levels` (QoS-loss fractions): measure only the
    front points chosen at those levels on the tuning split, not the whole front;
    `jobs`: worker processes sharing the held-out inputs (None: `Search.jobs`)."""

    ratio: float = 5.0
    inputs: Sequence | None = None
    references: Sequence | None = None
    evaluate: bool = True
    levels: Sequence[float] | None = None
    jobs: int | None = None

    def __post_init__(self):
        if not (_number(self.ratio) and self.ratio > 0):
            raise ApproxError(f"eval_ratio must be > 0, got {self.ratio!r}", where=WHERE)
        if self.references is not None and self.inputs is None:
            raise ApproxError("held-out references need held-out inputs", where=WHERE)
        if self.inputs is not None and self.references is not None and len(self.references) != len(self.inputs):
            raise ApproxError(f"{len(self.references)} references for {len(self.inputs)} held-out inputs",
                              where=WHERE)
        if self.levels is not None and not all(_number(v) and 0 <= v <= 1 for v in self.levels):
            raise ApproxError(f"levels must be QoS-loss fractions in [0, 1], got {self.levels!r}", where=WHERE)
        _count(self.jobs, "eval jobs must be a positive integer", optional=True)


@dataclass(frozen=True)
class Storage:
    """Where the studies and the result live.

    `url`: a SQLAlchemy URL (`postgresql://...`: runs on several machines join one
    study; default: SQLite `study.db` in `out_dir`); `study_name`: the studies are
    `<study_name>/static` and `<study_name>/dynamic` (default: the program's name);
    `out_dir`: the folder of `result.json`, the strategy's plan and kept outputs
    (default `approx-tune/<program>`); `warm_start`: an earlier study (a name in
    this storage, or an earlier run's `out_dir`) whose measurements a new study reuses."""

    url: str | None = None
    study_name: str | None = None
    out_dir: str | Path | None = None
    warm_start: str | Path | None = None

    def __post_init__(self):
        for name in ("url", "study_name"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ApproxError(f"{name} must be a non-empty string, got {value!r}", where=WHERE)
        for name in ("out_dir", "warm_start"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), (str, Path)):
                raise ApproxError(f"{name} must be a path, got {getattr(self, name)!r}", where=WHERE)
