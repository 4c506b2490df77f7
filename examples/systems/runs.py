"""A system's tuning run, as the bench and the demo make it: the system's `approx-tune
run` command (`registry.System.command`) run in this process (`autotuner.tune_command`),
its report, and what a bench row reads besides the result (`SystemRun`)."""

from __future__ import annotations

import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from autotuner import TuningResult

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SystemRun:
    """One system's tuning run: its result and what its bench row reads besides."""

    name: str
    result: TuningResult
    qos_exact: float | None  # the exact program's QoS (answer containment) on the evaluation questions
    wall_seconds: float  # everything: loading, both searches, evaluation, report
    out_dir: Path
    command: str = ""  # the `approx-tune run` command line it ran
    report: Path | None = None
    trials_per_mode: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)  # knobs fixed at exact -> time share of their stage
    extra: dict = field(default_factory=dict)  # the system's own row details (tools: QoS by BFCL category)


def tune_system(name: str, n_tune: int = 20, trials: int = 30, seconds: float | None = None, *,
                out_dir: str | Path | None = None, fresh: bool = True, report: bool = True, **options) -> SystemRun:
    """Tune system `name` (any of `registry.SYSTEMS`) with its `approx-tune run` command
    (`System.command(n_tune, trials, seconds, **options)`: seed, n_eval, tuning_qos,
    jobs, repeats, ablate, progress); the results go to `out_dir` (default
    reports/<name>; `fresh`: emptied first; else the same command resumes its study),
    with the report (`report`)."""
    from autotuner import trial_counts, tune_command
    from examples.systems.registry import system

    start = time.perf_counter()
    described = system(name)
    out = Path(out_dir) if out_dir is not None else ROOT / "reports" / name
    argv = described.command(n_tune, trials, seconds, out_dir=out, **options)
    if fresh and out.exists():
        shutil.rmtree(out)
    result = tune_command(argv)
    storage = f"sqlite:///{(out / 'study.db').resolve()}"
    done = {m: trial_counts(storage, f"{name}/{m}")["evaluated"] for m in ("static", "dynamic")}
    scores, facts = result.exact_scores_eval, described.resolve(described.facts)
    extra = {}
    if facts and scores:  # the held-out references, as the command split them
        extra = facts(described.splits(n_tune, options.get("seed", 0), options.get("n_eval"))[1][1], scores)
    run = SystemRun(name, result, sum(scores) / len(scores) if scores else None, 0.0, out,
                    shlex.join(["approx-tune", "run", *argv]), trials_per_mode=done,
                    fixed=result.search.get("fixed", {}), extra=extra)
    if report:
        from autotuner.report import write_report

        run.report = write_report(result, out)
    run.wall_seconds = time.perf_counter() - start
    return run


def qos_note(result) -> str | None:
    """What the search's QoS was (the result's note that says it), for a results row."""
    return next((n for n in result.notes if n.startswith("QoS:")), None)
