"""Tune a compound system end to end with the tuner's own strategy
(`autotuner.strategy`: where the time goes, a screen, static search, dynamic search
from the static front, one merged front), then the held-out evaluation and the report.
One driver for every system: a system declares its program, its inputs by split, its
metric and what its tuning does differently (budget, clock, timed passes, the "kept"
candidates, the notes, its row's own facts) on its `registry.System`; what is here is
the choice of tuning inputs and how the results are recorded.

- QoS while tuning (the system's `qos_notes` say which it takes): the held-out QoS
  itself on the tuning inputs ("gold"), so that a gain counts as it does held out and
  the tuning ranking is the one reported; only on tuning inputs the exact program gets
  right ("kept"); or, for the reader systems and `make demo`, each answer compared with
  the exact program's (SQuAD token F1, "agreement"; the points the levels choose are then
  scored against the gold answers on the tuning inputs too, `runs.gold_on_tuning`).
- One `autotuner.tune` call in both modes on one SQLite study file beside the report
  (re-running resumes, as `approx-tune run` does); `seconds` gives each mode half.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from examples.systems.runs import (
    REPORTED_LEVELS,
    SAMPLER,
    SystemRun,
    evaluated_trials,
    exact_right,
    explain_levels,
    gold_on_tuning,
    record_how_to_verify,
)

ROOT = Path(__file__).resolve().parents[2]
KEPT_CANDIDATES = 4  # "kept" tuning: at most this many x n_tune tuning inputs are tried (unless the system says)


def clock() -> str:
    """What speedups are ratios of: thread CPU time on the CPU (torch runs on one thread in
    the calling thread); wall time where the LLM runs on a GPU (its kernels' time is not
    this thread's CPU time)."""
    from examples.systems.common import device

    return "wall" if device().startswith("cuda") else "cpu"


def tune_system(name: str, n_tune: int = 20, trials: int = 30, seconds: float | None = None,
                out_dir: str | Path | None = None, seed: int = 0, budget: float | None = None,
                sampler: str = SAMPLER, report: bool = True, fresh: bool = True, evaluate: bool = True,
                progress: bool = False, program=None, eval_repeats: int | None = None,
                ablate_levels: tuple = (), n_eval: int | None = None, jobs: int = 1,
                tuning_qos: str | None = None) -> SystemRun:
    """Tune system `name` (any of `registry.SYSTEMS`; `program`: its Program, when
    built already) on `n_tune` tuning inputs (held out: the system's split, 5x as many
    by default; `n_eval` of them), `trials` evaluations per mode, at most about
    `seconds` of search (half per mode; 0: none, a resumed study is only evaluated),
    `jobs` worker processes (each builds the system `name`; 1: this process runs
    `program`; the held-out inputs are shared among as many workers,
    `autotuner.sharded`); the results go to `out_dir` (default reports/<name>; `fresh`:
    emptied first). `budget` and `eval_repeats` (timed passes per held-out
    measurement) default to the system's; `evaluate=False` skips the held-out
    evaluation. `ablate_levels` (percent QoS-loss levels): ablate the chosen point of
    each on the first `n_tune` held-out inputs. `tuning_qos` (default: the system's):
    agreement with the exact answers suits the extractive readers, whose spans are
    stable; a generated answer changes its wording under almost any approximation, so
    the LLM systems tune against the gold answers ("kept": only on inputs the exact
    program gets right)."""
    from approx_dialect.diagnostics import ApproxError
    from autotuner import Cost, HeldOut, Search, Storage, tune
    from examples.systems.registry import system

    start = time.perf_counter()
    described = system(name)
    notes = described.resolve(described.qos_notes)
    tuning_qos = tuning_qos or described.tuning_qos
    if tuning_qos not in notes:
        raise ApproxError(f"unknown tuning QoS '{tuning_qos}' for {name} (one of: {', '.join(notes)})",
                          where="examples.systems")
    out = Path(out_dir) if out_dir is not None else ROOT / "reports" / name
    if fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    program = program if program is not None else described.build()
    metric = described.resolve(described.metric)
    score = described.score
    (tune_in, tune_ref), (eval_in, eval_ref) = described.splits(n_tune, seed, n_eval)
    tried = None
    if tuning_qos == "kept":  # the held-out split stays that of (n_tune, seed, n_eval): `approx-tune verify` finds it
        chosen = described.resolve(described.kept_candidates)
        cand_in, cand_ref = (chosen(n_tune, seed, n_eval) if chosen
                             else described.splits(KEPT_CANDIDATES * n_tune, seed, 0)[0])
        say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731  progress, beside the output
        tune_in, tune_ref, tried = exact_right(program, cand_in, cand_ref, score, n_tune, seed,
                                               log=say if progress else None, shuffle=chosen is None,
                                               jobs=jobs, keep=out / "kept.json")
        if not tune_in:
            raise ApproxError(f"the exact program gets none of {tried} tuning inputs right: nothing to tune "
                              f"against (try another tuning QoS: {', '.join(q for q in notes if q != 'kept')})",
                              where="examples.systems")
    narrow = described.resolve(described.narrow) or {}
    search = Search(n_trials=trials, mode="both", sampler=sampler, seed=seed,
                    narrow={k: v for k, v in narrow.items() if k in {s.name for s in program.knobs()}},
                    timeout=None if seconds is None else max(seconds / 2, 1e-6),
                    jobs=jobs if getattr(program, "spec", None) else 1)
    held_out = HeldOut(inputs=eval_in, references=eval_ref, evaluate=evaluate,
                       levels=[lv / 100 for lv in REPORTED_LEVELS])  # held out: only the points the levels report
    repeats = described.eval_repeats if eval_repeats is None else eval_repeats
    result = tune(program, tune_in, None if tuning_qos == "agreement" else tune_ref, metric=metric,
                  budget=described.budget if budget is None else budget, search=search,
                  cost=Cost(clock=described.clock or clock(), repeats=repeats), held_out=held_out,
                  storage=Storage(study_name=name, out_dir=out), progress=progress)
    if tuning_qos == "agreement" and tune_ref:  # the report shows the held-out QoS's own proxy beside it
        gold_on_tuning(result, program, tune_in, tune_ref, score)
    scores = result.exact_scores_eval  # the held-out evaluation's exact run (in this process or its workers)
    negligible = result.search.get("fixed", {})
    result.notes += [
        notes[tuning_qos].format(n=len(tune_in), tried=tried),
        "fixed at exact (their stage takes under 2 % of the exact program's time): "
        + (", ".join(f"{k} ({100 * v:.2f} %)" for k, v in negligible.items()) or "none")]
    record_how_to_verify(result, described.program, described.metric,
                         {"inputs": described.held_out, "kwargs": described.held_out_kwargs(n_tune, seed, n_eval)})
    if ablate_levels and evaluate:
        explain_levels(result, program, eval_in[:n_tune], eval_ref[:n_tune], metric, ablate_levels)
    result.save(out / "result.json")
    done = {m: evaluated_trials(f"sqlite:///{(out / 'study.db').resolve()}", f"{name}/{m}")
            for m in ("static", "dynamic")}
    evaluated, facts = evaluate and scores, described.resolve(described.facts)
    run = SystemRun(name, result, sum(scores) / len(scores) if evaluated else None, 0.0, out, trials_per_mode=done,
                    fixed=negligible, extra=facts(eval_ref, scores) if facts and evaluated else {})
    if report:
        from autotuner.report import write_report

        run.report = write_report(result, out)
    run.wall_seconds = time.perf_counter() - start
    return run
