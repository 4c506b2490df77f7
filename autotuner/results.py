"""The result of a tuning run: the one interface between the tuner and the report.

`autotuner.tune` returns a `TuningResult`, `approx-tune run` saves it as
`<out>/result.json` (each study names that file in its user attr `result_file`),
and the report writer
(`autotuner.report.write_report(result, out_dir)`) reads only this. Keep it
stable: fields may be added with defaults, never renamed or removed.

Definitions (every table states them): QoS loss = (QoS_exact - QoS_approx) /
QoS_exact, so 0.03 keeps 97 % of the exact program's quality (without ground
truth QoS_exact = 1 and QoS is measured against the exact outputs); speedup =
exact time / approximate time, the two timed side by side on the same inputs
(paired: `autotuner.measure`), with a 95 % bootstrap interval. `*_tune` figures
are from the tuning split, `*_eval` from the disjoint held-out evaluation split.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from approx_dialect.diagnostics import ApproxError

MODES = ("static", "dynamic")
RESULT_FILE_ATTR = "result_file"  # study user attr: the path of the run's result.json
METRIC_NAMES = ("qos_loss", "speedup")  # the studies' objectives, as Optuna names them


@dataclass
class FrontPoint:
    """One configuration on the Pareto front of its mode (nondominated among the
    fully measured trials within the QoS-loss budget)."""

    mode: str  # "static" | "dynamic"
    knobs: dict[str, dict]  # a configuration: what `approx-opt --apply-config` takes
    qos_loss_tune: float
    speedup_tune: float
    qos_loss_eval: float | None = None  # None when the held-out split was not measured
    speedup_eval: float | None = None
    seconds_tune: float | None = None  # median wall time of one pass over the split
    seconds_eval: float | None = None
    ir: str | None = None  # the transformed program (approx-free IR), where the program has IR
    trial: int | None = None  # Optuna trial number in the mode's study
    money_tune: float | None = None  # optional money cost of one pass over the split
    money_eval: float | None = None
    speedup_tune_ci: list[float] | None = None  # 95 % interval [low, high] of the paired speedup
    speedup_eval_ci: list[float] | None = None
    qos_loss_eval_ci: list[float] | None = None  # 95 % bootstrap interval over the held-out inputs
    speedup_tune_modelled: bool = False  # the tuning speedup is the cost model's: not timed (no level reports it)
    # tuned against the exact program's answers: the same tuning inputs against their gold references (the
    # held-out QoS's own proxy), for the points a level chooses; the report shows both
    qos_loss_tune_gold: float | None = None
    qos_loss_tune_ci: list[float] | None = None  # 95 % bootstrap interval over the tuning inputs


@dataclass
class TrialPoint:
    """Any finished trial (for the grey cloud of the plot)."""

    mode: str
    knobs: dict[str, dict]
    qos_loss: float
    speedup: float
    dominated: bool  # not on the front (also true for infeasible and pruned trials)
    trial: int | None = None
    feasible: bool = True  # qos_loss <= budget
    pruned: bool = False  # stopped after the first slice: figures are from that slice
    qos_loss_ci: list[float] | None = None  # 95 % bootstrap interval of qos_loss over its inputs


@dataclass
class TuningResult:
    program: str  # the program's name (`file.mlir:entry`, `module:function`)
    qos_metric: str
    budget: float
    trials: int  # evaluated trials, all modes (duplicates of earlier ones not counted)
    failed_trials: int
    tuning_seconds: float
    front: list[FrontPoint] = field(default_factory=list)
    all_trials: list[TrialPoint] = field(default_factory=list)
    pruned_trials: int = 0
    seed: int | None = None
    sampler: str | None = None
    n_tune: int | None = None  # inputs in the tuning split
    n_eval: int | None = None  # inputs in the evaluation split
    exact_seconds_tune: float | None = None
    exact_seconds_eval: float | None = None
    exact_scores_eval: list[float] | None = None  # the exact program's QoS per held-out input (with references)
    study_names: dict[str, str] = field(default_factory=dict)  # mode -> Optuna study name
    storage: str | None = None  # where the studies live (a SQLite URL or a PostgreSQL URL without password)
    # mode -> hypervolume of the tuning front after 0, 1, 2, ... evaluations (reference point: QoS loss = budget,
    # speedup 1; reused measurements count from the start)
    hypervolume: dict[str, list[float]] = field(default_factory=dict)
    knob_space: dict[str, Any] = field(default_factory=dict)  # knob name -> what was searched
    notes: list[str] = field(default_factory=list)
    program_spec: str | None = None  # how `approx-tune` loads it again (`path/file.mlir:entry`), if known
    clock: str | None = None  # "wall" or "cpu" (thread CPU time): what the speedups are ratios of
    failures: list[dict] = field(default_factory=list)  # failed trials: {mode, trial, knobs, error}
    timing: str | None = None  # how the speedups were timed (`autotuner.measure.TIMING`)
    importances: dict[str, Any] = field(default_factory=dict)  # mode -> {"speedup"|"qos_loss": {knob: share}}
    ablations: list[dict] = field(default_factory=list)  # per chosen point: each knob set back to exact
    metric_spec: str | None = None  # how to load the QoS metric again (a builtin name or `pkg.module:attr`)
    held_out: dict | None = None  # how to load the held-out inputs again (`autotuner.verify.held_out_inputs`)
    search: dict = field(default_factory=dict)  # how it searched: configurations, timing, stages, kept outputs

    def front_of(self, mode: str) -> list[FrontPoint]:
        """The front of one mode, by increasing QoS loss."""
        return sorted((p for p in self.front if p.mode == mode), key=lambda p: p.qos_loss_tune)

    def best_within(self, loss: float, mode: str | None = None, split: str = "tune") -> FrontPoint | None:
        """The fastest front point whose QoS loss on `split` is <= loss. A point reported
        for a level is chosen on the tuning split and replayed held out (`chosen`);
        `split="eval"` only describes what the held-out figures alone would pick."""
        pts = [p for p in self.front if mode in (None, p.mode)]
        key = "eval" if split == "eval" else "tune"
        ok = [p for p in pts if getattr(p, f"qos_loss_{key}") is not None
              and getattr(p, f"qos_loss_{key}") <= loss]
        return max(ok, key=lambda p: getattr(p, f"speedup_{key}"), default=None)

    def chosen(self, loss: float, mode: str | None = None) -> FrontPoint | None:
        """The point a level reports: the fastest front point within `loss` on the
        tuning split (its held-out figures are the replay, never what chose it)."""
        return self.best_within(loss, mode, split="tune")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TuningResult":
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["front"] = [_make(FrontPoint, p) for p in data.get("front", [])]
        kwargs["all_trials"] = [_make(TrialPoint, p) for p in data.get("all_trials", [])]
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> "TuningResult":
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(path)  # atomic: a crash never leaves half a file
        return path


def _make(cls, data: dict[str, Any]):
    known = {f.name for f in fields(cls)}
    if isinstance(data, (list, tuple)):  # (mode, knobs, qos_loss, speedup, dominated, ...)
        return cls(*data)
    return cls(**{k: v for k, v in data.items() if k in known})


def read_result(path: str | Path) -> TuningResult:
    """A `result.json` written by `approx-tune run` (or a folder holding one)."""
    path = Path(path)
    if path.is_dir():
        path = path / "result.json"
    try:
        return TuningResult.from_json(path.read_text())
    except OSError as err:
        raise ApproxError(f"cannot read the tuning result: {err.strerror}", where=str(path)) from None
    except (json.JSONDecodeError, TypeError) as err:
        raise ApproxError(f"not a tuning result: {err}", where=str(path)) from None


def load_result(storage: str, study_name: str) -> TuningResult:
    """The result of a finished study: the `result.json` its user attr `result_file`
    names (`approx-tune run` sets it in every study it ran; `study_name` may be the
    base name or `<base>/static|dynamic`)."""
    import optuna

    from autotuner.storage import open_storage, safe_url

    store = open_storage(storage)
    names = [s.study_name for s in optuna.get_all_study_summaries(store, include_best_trial=False)]
    for name in (study_name, *(f"{study_name}/{m}" for m in MODES)):
        if name in names:
            attrs = optuna.load_study(study_name=name, storage=store).user_attrs
            if RESULT_FILE_ATTR in attrs:
                return read_result(attrs[RESULT_FILE_ATTR])
    raise ApproxError(f"no finished tuning result for study '{study_name}' "
                      f"(studies there: {', '.join(sorted(names)) or 'none'})", where=safe_url(storage))
