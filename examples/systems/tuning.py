"""Tune a compound system end to end with the tuner's own strategy
(`autotuner.strategy`: where the time goes, a screen, static search, dynamic search
from the static front, one merged front), then the held-out evaluation and the report.
A system declares its program, its inputs by split and its metric (`registry.System`);
what is here is the choice of tuning questions and how the results are recorded.

- QoS while tuning (`TUNING_QOS`): for the LLM systems the held-out QoS itself (gold
  answer containment) on a random sample of tuning questions ("gold"), so that a gain
  counts as it does held out and the tuning ranking is the one reported; the reader
  systems compare each answer with the exact program's (SQuAD token F1, "agreement").
- One `autotuner.tune` call in both modes on one SQLite study file beside the report
  (re-running resumes, as `approx-tune run` does); `seconds` gives each mode half.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from examples.systems.runs import (
    REPORTED_LEVELS,
    SAMPLER,
    SystemRun,
    evaluated_trials,
    exact_right,
    explain_levels,
    record_how_to_verify,
)

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 0.2  # tuning: share of answers that may differ from the exact program's
REPEATS = 1  # timed passes per measurement: one pass over the questions takes seconds (CPU clock: steady)


def clock() -> str:
    """What speedups are ratios of: thread CPU time on the CPU (torch runs on one thread in
    the calling thread); wall time where the LLM runs on a GPU (its kernels' time is not
    this thread's CPU time)."""
    from examples.systems.common import device

    return "wall" if device().startswith("cuda") else "cpu"


TUNING_QOS = {  # the search's QoS -> what the result's notes say of it
    "agreement": "QoS: tuning compares each answer with the exact program's answer (SQuAD token F1, every "
                 "question counts); the held-out evaluation with the gold answers (answer containment, the "
                 "paper's QoS)",
    "gold": "QoS: tuning and held-out evaluation both against the gold answers (answer containment, the "
            "paper's QoS)",
    "kept": "QoS: tuning on questions the exact program answers right (gold answer contained), against "
            "the gold answers: a loss is an answer lost, never offset by one gained; the held-out "
            "evaluation with the gold answers on all its questions (answer containment, the paper's QoS)"}
KEPT_CANDIDATES = 4  # "kept" tuning: at most this many x n_tune tuning questions are tried


def tune_system(name: str, n_tune: int = 20, trials: int = 30, seconds: float | None = None,
                out_dir: str | Path | None = None, seed: int = 0, budget: float = BUDGET,
                sampler: str = SAMPLER, report: bool = True, fresh: bool = True, evaluate: bool = True,
                progress: bool = False, program=None, eval_repeats: int = REPEATS,
                ablate_levels: tuple = (), n_eval: int | None = None, jobs: int = 1,
                tuning_qos: str | None = None) -> SystemRun:
    """Tune system `name` (any of `registry.SYSTEMS`; `program`: its Program, when
    built already) on `n_tune` tuning questions
    (evaluation: 5x as many, other articles; or the first `n_eval` of them), `trials`
    evaluations per mode, at most about `seconds` of search (half per mode; 0: none, a
    resumed study is only evaluated), `jobs` worker processes (each builds the system
    `name`; 1: this process runs `program`; the held-out questions are shared among as
    many workers, `autotuner.sharded`); `evaluate=False` skips the held-out evaluation
    (paired timing, `eval_repeats` rounds at most). `ablate_levels` (percent QoS-loss
    levels): ablate the chosen point of each on the first `n_tune` held-out questions.
    `tuning_qos` (TUNING_QOS; default: the system's, "gold" for the LLM systems,
    "agreement" for the others): agreement with the exact answers suits the extractive
    readers, whose spans are stable; a generated answer changes its wording under
    almost any approximation, so the LLM systems tune against the gold answers
    ("kept": only on questions the exact program gets right). The tools agents (BFCL
    items) are tuned by `tools_tuning.tune_items`, with its budget, always evaluated
    and reported."""
    import sys

    from autotuner import Cost, HeldOut, Search, Storage, tune
    from examples.systems.common import METRIC, NARROW
    from examples.systems.registry import system

    described = system(name)
    if described.items:
        from examples.systems.tools_tuning import tune_items

        if (budget, sampler, report, evaluate) != (BUDGET, SAMPLER, True, True):
            from approx_dialect.diagnostics import ApproxError

            raise ApproxError(f"{name} takes no budget, sampler, report or evaluate setting", where="examples.systems")
        return tune_items(name, n_tune, trials, seconds, seed=seed, out_dir=out_dir, ablate_levels=ablate_levels,
                          n_eval=n_eval, jobs=jobs, eval_repeats=eval_repeats, tuning_qos=tuning_qos, fresh=fresh,
                          progress=progress, program=program)
    start = time.perf_counter()
    out = Path(out_dir) if out_dir is not None else ROOT / "reports" / name
    if fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    program = program if program is not None else described.build()
    question_sets = described.splits
    tuning_qos = tuning_qos or described.tuning_qos
    if tuning_qos not in TUNING_QOS:
        from approx_dialect.diagnostics import ApproxError

        raise ApproxError(f"unknown tuning QoS '{tuning_qos}' (one of: {', '.join(TUNING_QOS)})",
                          where="examples.systems")
    (tune_q, tune_a), (eval_q, eval_a) = question_sets(n_tune, seed, n_eval)
    tried = None
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731  progress, beside the output
    if tuning_qos == "kept":  # the held-out split stays that of (n_tune, seed, n_eval): `approx-tune verify` finds it
        (cand_q, cand_a), _ = question_sets(KEPT_CANDIDATES * n_tune, seed, 0)
        tune_q, tune_a, tried = exact_right(program, cand_q, cand_a, METRIC.fn, n_tune, seed,
                                            log=say if progress else None, jobs=jobs, keep=out / "kept.json")
        if not tune_q:
            from approx_dialect.diagnostics import ApproxError

            raise ApproxError(f"the exact program answers none of {tried} tuning questions right: nothing to "
                              "tune against (try --llm-tuning-qos agreement)", where="examples.systems")
    tune_ref = None if tuning_qos == "agreement" else tune_a
    # the readers' float16 never pays here; the LLM's precision values are those its probe found to pay
    narrow = {} if described.llm else {k: v for k, v in NARROW.items() if k in {s.name for s in program.knobs()}}
    search = Search(n_trials=trials, mode="both", sampler=sampler, seed=seed, narrow=narrow,
                    timeout=None if seconds is None else max(seconds / 2, 1e-6),
                    jobs=jobs if getattr(program, "spec", None) else 1)
    held_out = HeldOut(inputs=eval_q, references=eval_a, evaluate=evaluate,
                       levels=[lv / 100 for lv in REPORTED_LEVELS])  # held out: only the points the levels report
    result = tune(program, tune_q, tune_ref, metric=METRIC, budget=budget, search=search,
                  cost=Cost(clock=clock(), repeats=eval_repeats), held_out=held_out,
                  storage=Storage(study_name=name, out_dir=out), progress=progress)
    scores = result.exact_scores_eval  # the held-out evaluation's exact run (in this process or its workers)
    qos_exact = sum(scores) / len(scores) if evaluate and scores else None
    negligible = result.search.get("fixed", {})
    result.notes += [
        TUNING_QOS[tuning_qos] + (f" ({len(tune_q)} tuning questions, found among {tried} tried)" if tried else ""),
        "fixed at exact (their stage takes under 2 % of the exact program's time): "
        + (", ".join(f"{k} ({100 * v:.2f} %)" for k, v in negligible.items()) or "none")]
    record_how_to_verify(result, described.program, described.metric,
                         {"inputs": described.held_out,
                          "kwargs": {"n_tune": n_tune, "seed": seed, "n_eval": n_eval}})
    if ablate_levels and evaluate:
        explain_levels(result, program, eval_q[:n_tune], eval_a[:n_tune], METRIC, ablate_levels)
    result.save(out / "result.json")
    done = {m: evaluated_trials(f"sqlite:///{(out / 'study.db').resolve()}", f"{name}/{m}")
            for m in ("static", "dynamic")}
    run = SystemRun(name, result, qos_exact, 0.0, out, trials_per_mode=done, fixed=negligible)
    if report:
        from autotuner.report import write_report

        run.report = write_report(result, out)
    run.wall_seconds = time.perf_counter() - start
    return run
