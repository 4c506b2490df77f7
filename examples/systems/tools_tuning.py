"""Tuning the tools agents (the reader agent of tools_agent.py and the LLM agent of
tools_agent_llm.py) for `tuning.tune_system`: `tune_items` tunes one on BFCL items
(static, then dynamic seeded with the static front) and evaluates both fronts on the
held-out split, into the `SystemRun` that bench/systems_bench.py makes a row of:

    python bench/systems_bench.py tools --n-tune 80 --trials 40 --seconds 840 [--seed S]
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from examples.systems.runs import REPORTED_LEVELS, SAMPLER, SystemRun
from examples.systems.tools_data import accuracy_by_category, ast_match, query_of, spare_items

EVAL_REPEATS = 2  # timed passes per held-out measurement (median): timings here vary by ~20 % under load


def tune_items(name: str, n_tune: int, trials: int, seconds: float | None, *, seed: int = 0, out_dir=None,
               ablate_levels: tuple = (), n_eval: int | None = None, jobs: int = 1,
               eval_repeats: int = EVAL_REPEATS, tuning_qos: str | None = None, fresh: bool = True,
               progress: bool = False, program=None) -> SystemRun:
    """Tune the agent `name` ("tools", or "tools_llm": the LLM + tools agent of
    tools_agent_llm.py) on `n_tune` BFCL items (static, then dynamic seeded with the
    static front; `trials` evaluations each, or what `seconds` allows, half per mode;
    `jobs` worker processes) and evaluate both fronts on `n_eval` held-out items (a
    multiple of n_tune, default 5x), as `tuning.tune_system` does questions (`program`:
    the system's, built here when not given).
    `tuning_qos` (default "gold": the held-out QoS, so the tuning ranking is the one
    reported): "gold", the AST check on the tuning items; "kept", the AST check on
    tuning items the exact agent gets right (the tuning items, then pool items in
    neither split; a loss is a call lost, never offset by one gained by luck: on 16
    items, cue words alone beat SmolLM2 and a -100 % tuning loss hid a 73 % held-out one).
    Torch runs on one thread (a shared 2-core machine; a second thread makes small ops wait)."""
    from autotuner import Cost, HeldOut, Search, Storage, tune
    from autotuner.report import write_report
    from examples.systems.common import one_thread
    from examples.systems.registry import system
    from examples.systems.runs import evaluated_trials, exact_right, explain_levels, record_how_to_verify

    one_thread()
    start = time.perf_counter()
    described = system(name)
    tuning_qos = tuning_qos or described.tuning_qos  # "gold": the held-out QoS, the ranking that is reported
    if tuning_qos not in ("gold", "kept"):
        raise ApproxError(f"unknown tuning QoS '{tuning_qos}' for the tools agent (one of: gold, kept)",
                          where="examples.systems.tools_tuning")
    eval_ratio = (n_eval or 5 * n_tune) // n_tune
    (tune_in, tune_items), (eval_in, eval_items) = described.splits(n_tune, seed, eval_ratio * n_tune)
    program = program if program is not None else described.build()
    tried = None
    out = Path(out_dir or os.environ.get("APPROX_TOOLS_OUT") or tempfile.mkdtemp(prefix="tools_agent_"))
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("study.db*"), out / "result.json", out / "kept.json"] if fresh else []:  # ours only
        old.unlink(missing_ok=True)
    if tuning_qos == "kept":
        candidates = tune_items + spare_items(n_tune, seed, eval_ratio)
        tune_in, tune_items, tried = exact_right(program, [query_of(i) for i in candidates], candidates, ast_match,
                                                 n_tune, seed, shuffle=False, jobs=jobs, keep=out / "kept.json")
        if not tune_in:
            raise ApproxError(f"the exact agent gets none of {tried} tuning items right: nothing to tune against",
                              where="examples.systems.tools_tuning")
    storage, budget = f"sqlite:///{(out / 'study.db').resolve()}", max(REPORTED_LEVELS) / 100
    search = Search(n_trials=trials, mode="both", sampler=SAMPLER, seed=seed, jobs=jobs,
                    timeout=None if seconds is None else max(seconds / 2, 1e-6))
    held_out = HeldOut(inputs=eval_in, references=eval_items,
                       levels=[lv / 100 for lv in REPORTED_LEVELS])  # held out: only the points the levels report
    result = tune(program, tune_in, tune_items, metric=ast_match, budget=budget, search=search,
                  cost=Cost(clock="cpu", repeats=eval_repeats), held_out=held_out,
                  storage=Storage(url=storage, study_name=name, out_dir=out), progress=progress)
    done = {m: evaluated_trials(storage, f"{name}/{m}") for m in ("static", "dynamic")}
    result.notes.append(
        f"QoS: BFCL's AST check; tuning on {len(tune_items)} items the exact agent gets right (found among {tried} "
        "tried: a loss is a call lost, never offset by one gained)" if tried else
        "QoS: BFCL's AST check, on the tuning items and on the held-out items")
    record_how_to_verify(result, described.program, described.metric,
                         {"inputs": described.held_out,
                          "kwargs": {"n_tune": n_tune, "seed": seed, "eval_ratio": eval_ratio}})
    if ablate_levels:
        explain_levels(result, program, eval_in[:n_tune], eval_items[:n_tune], ast_match, ablate_levels)
    result.save(out / "result.json")
    scores = result.exact_scores_eval  # the evaluation's exact run, not a second one
    report = write_report(result, out)
    by_category = accuracy_by_category(eval_items, scores)
    return SystemRun(name, result, sum(scores) / len(scores), time.perf_counter() - start, out, report, done,
                     result.search.get("fixed", {}), {"qos_exact_by_category": by_category})

