"""Re-measure front configurations as a user would: rebuild each chosen
configuration and the exact program, time them paired on the held-out inputs (or
inputs given), and set speedup (with its interval) and QoS loss beside what the
study recorded.

The held-out figures of `autotuner.tune`, of the systems' runs and of
bench/results.py come from `Measurer.measure` (or its shards, `autotuner.sharded`),
the same code as `approx-tune verify`: a recorded figure is what re-measuring gives,
up to the reported interval.

A result says how to load everything again: `program_spec` (`file.mlir:entry`, or
`pkg.module:attr` naming a program, a decorated function or a factory of either),
`metric_spec` (a builtin metric name or `pkg.module:attr`) and `held_out`:
{"inputs": "pkg.module:fn", "kwargs": {...}} where fn(**kwargs) returns the
held-out inputs (or (inputs, references)); with "split": true, a split of its own
(`loading.load_split`), whose held-out part it is; or with "eval_ratio" and "seed" the
inputs of the whole run, split again as `tune` split them.
"""

from __future__ import annotations

from dataclasses import dataclass

from approx_dialect.diagnostics import ApproxError
from autotuner.measure import Measurer
from autotuner.results import FrontPoint, TuningResult
from autotuner.settings import Cost
from autotuner.splits import split_inputs

WHERE = "<approx-tune verify>"


@dataclass
class Verified:
    """One front point re-measured, beside what the study recorded."""

    mode: str
    index: int  # position in its mode's front (by increasing tuning QoS loss)
    knobs: dict
    qos_loss: float
    speedup: float
    speedup_ci: list[float] | None
    recorded_qos_loss: float | None  # the held-out figures of the result, if it has them
    recorded_speedup: float | None
    recorded_ci: list[float] | None
    n: int
    seconds: float | None = None
    exact_seconds: float | None = None
    money: float | None = None
    qos_loss_ci: list[float] | None = None  # 95 % bootstrap interval over the inputs

    @property
    def speedup_change(self) -> float | None:
        """Re-measured / recorded speedup - 1."""
        if not self.recorded_speedup:
            return None
        return self.speedup / self.recorded_speedup - 1.0


def load_program(result: TuningResult, program=None):
    from autotuner.loading import as_program

    if program is not None:
        return as_program(program)
    if not result.program_spec:
        raise ApproxError("the result does not say how to load its program again (no program_spec): "
                          "give --program", where=WHERE)
    return as_program(result.program_spec)


def load_metric(result: TuningResult, metric=None):
    if metric is not None:
        return metric
    spec = result.metric_spec
    if not spec:
        raise ApproxError(f"the result does not say how to load its QoS metric ({result.qos_metric!r}): "
                          "give --metric", where=WHERE)
    if ":" in spec:
        from autotuner.loading import load_object

        return load_object(spec, "QoS metric")
    return spec


def held_out_inputs(result: TuningResult) -> tuple[list, list | None]:
    """The held-out inputs (and references) the result was evaluated on."""
    from autotuner.loading import load_inputs, load_split

    spec = result.held_out
    if not spec or "inputs" not in spec:
        raise ApproxError("the result does not say where its held-out inputs come from: give --inputs",
                          where=WHERE)
    if spec.get("split"):
        return load_split(spec["inputs"], spec.get("kwargs") or {})[1]
    inputs, refs = load_inputs(spec["inputs"], spec.get("kwargs") or {})
    if spec.get("eval_ratio") is not None:
        _, (inputs, refs) = split_inputs(inputs, refs, spec["eval_ratio"], spec.get("seed", 0))
    return inputs, refs


def chosen_points(result: TuningResult, mode: str | None = None,
                  points: list[int] | None = None) -> list[tuple[str, int, FrontPoint]]:
    """(mode, index, point) of the front points to re-measure: all, or `points`
    (indices into the front of `mode`, or of each mode when `mode` is None)."""
    out = []
    for m in ("static", "dynamic"):
        if mode not in (None, m):
            continue
        front = result.front_of(m)
        for i in points if points is not None else range(len(front)):
            if not 0 <= i < len(front):
                raise ApproxError(f"point {i} is not in the {m} front (0..{len(front) - 1})", where=WHERE)
            out.append((m, i, front[i]))
    if not out:
        raise ApproxError("the result's front is empty: nothing to verify", where=WHERE)
    return out


def _verified(mode: str, i: int, p: FrontPoint, m) -> Verified:
    f = m.held_out_figures()
    return Verified(mode, i, p.knobs, f["qos_loss"], f["speedup"], f["ci"], p.qos_loss_eval, p.speedup_eval,
                    p.speedup_eval_ci, m.n, f["seconds"], m.exact_seconds, f["money"], f["loss_ci"])


def measure_points(measurer: Measurer, program, points: list[tuple[str, int, FrontPoint]],
                   progress=None) -> list[Verified]:
    """Each point's configuration rebuilt and measured paired against the exact program."""
    from autotuner.workers import build

    out = []
    for k, (mode, i, p) in enumerate(points):
        if progress:
            progress(f"[verify] {k + 1}/{len(points)}: {mode} point {i}")
        out.append(_verified(mode, i, p, measurer.measure(build(program, p.knobs), p.knobs)))
    return out


def verify(result: TuningResult, *, mode: str | None = None, points: list[int] | None = None,
           inputs=None, references=None, program=None, metric=None, repeats: int | None = None,
           clock: str | None = None, reverse: bool = False, progress=None, jobs: int = 1) -> list[Verified]:
    """Re-measure front points of `result` on its held-out inputs (or `inputs`); `jobs`
    worker processes share the inputs (`autotuner.sharded`: the same figures, sooner)."""
    if inputs is None:
        inputs, references = held_out_inputs(result)
    chosen = chosen_points(result, mode, points)
    if reverse:
        chosen = chosen[::-1]
    metric = load_metric(result, metric)
    cost = Cost(clock=clock or result.clock or "wall", timing="paired", repeats=repeats or 1)
    if jobs > 1:
        from autotuner.sharded import ShardedEvaluation

        spec = program if isinstance(program, str) else result.program_spec
        if not spec:
            raise ApproxError(f"--jobs {jobs} needs a program the workers can load: give --program "
                              "(file.mlir:entry or pkg.module:attr)", where=WHERE)
        with ShardedEvaluation(spec, inputs, references, metric, jobs=jobs, cost=cost, progress=progress) as workers:
            got = workers.measure([p.knobs for _, _, p in chosen])
        failed = next((g for g in got if isinstance(g, str)), None)
        if failed is not None:
            raise ApproxError(failed, where=WHERE)
        return [_verified(mode, i, p, m) for (mode, i, p), m in zip(chosen, got)]
    program = load_program(result, program)
    measurer = Measurer(program, inputs, references, metric, cost, what="evaluation")
    return measure_points(measurer, program, chosen, progress)


def result_of_row(path: str, name: str) -> TuningResult:
    """A recorded results row (bench/results.json: any section's row `name`) as a
    TuningResult whose front is the row's chosen points, each with its recorded
    held-out figures: all that re-measuring them needs is in the row (its program,
    metric and held-out inputs, how they were chosen), none of it in reports/ of the
    machine that ran it. A section whose rows ran on a GPU (`gpu_*`) times wall
    seconds, the others the thread's CPU seconds; `NAME@cuda` is the GPU section's row
    (as bench/results.md names it), NAME the first section's that has one."""
    import json

    try:
        data = json.loads(open(path).read())
    except (OSError, ValueError) as err:
        raise ApproxError(f"cannot read the recorded rows: {err}", where=path) from None
    row_name, gpu = name.removesuffix("@cuda"), name.endswith("@cuda")
    found = [(section, rows[row_name]) for section, rows in data.items()
             if isinstance(rows, dict) and isinstance(rows.get(row_name), dict) and "points" in rows[row_name]
             and (not gpu or section.startswith("gpu"))]
    if not found:
        names = sorted({k + ("@cuda" if section.startswith("gpu") else "") for section, rows in data.items()
                        if isinstance(rows, dict) for k, v in rows.items() if isinstance(v, dict) and "points" in v})
        raise ApproxError(f"no recorded row '{name}' with chosen points (rows: {', '.join(names)})", where=path)
    section, row = found[0]
    front, seen = [], set()
    for mode, levels in sorted(row["points"].items()):
        for p in (p for p in levels.values() if p):
            key = (mode, json.dumps(p["knobs"], sort_keys=True))
            if key in seen:  # one point chosen at several levels
                continue
            seen.add(key)
            front.append(FrontPoint(mode, p["knobs"], p.get("qos_loss_tune") or 0.0, p.get("speedup_tune") or 0.0,
                                    qos_loss_eval=p.get("qos_loss"), speedup_eval=p.get("speedup"),
                                    speedup_eval_ci=p.get("speedup_ci"), qos_loss_eval_ci=p.get("qos_loss_ci")))
    if not front:
        raise ApproxError(f"row '{name}' chose no approximation at any level: nothing to verify", where=path)
    return TuningResult(name, "", 0.0, 0, 0, 0.0, front=front, program_spec=row.get("program"),
                        metric_spec=row.get("metric"), held_out=row.get("held_out"),
                        clock="wall" if section.startswith("gpu") else "cpu")


def _ci(ci) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "-"


def table(rows: list[Verified]) -> str:
    lines = [f"{'mode':8} {'#':>2} {'loss':>7} {'speedup':>8} {'interval':>14} | {'recorded loss':>13} "
             f"{'speedup':>8} {'interval':>14} {'change':>7}"]
    for v in sorted(rows, key=lambda v: (v.mode, v.index)):
        rec_loss = "-" if v.recorded_qos_loss is None else f"{100 * v.recorded_qos_loss:.2f} %"
        rec = "-" if v.recorded_speedup is None else f"{v.recorded_speedup:.2f}x"
        change = "-" if v.speedup_change is None else f"{100 * v.speedup_change:+.1f} %"
        lines.append(f"{v.mode:8} {v.index:>2} {100 * v.qos_loss:6.2f}% {v.speedup:7.2f}x {_ci(v.speedup_ci):>14} | "
                     f"{rec_loss:>13} {rec:>8} {_ci(v.recorded_ci):>14} {change:>7}")
    return "\n".join(lines)
