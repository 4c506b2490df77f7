"""The compound AI systems as rows of bench/results.json: tune, evaluate on the
held-out questions, report speedup over exact within <= 3 / 6 / 9 % QoS loss.

`run_system(name, n_tune, trials, seconds)` tunes a system of examples/systems/registry.py
with its `approx-tune run` command (`examples.systems.runs.tune_system`; report under
reports/bench/<system>/, the command in the row's details); every row has the same keys
(the tools agents' add their QoS by BFCL category). Speedups are held-out
(evaluation split) figures; the exact program itself meets every level, so a
level without a front point reads 1.0. Torch runs on one thread."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from examples.systems.registry import REPORTED_LEVELS, SYSTEMS, system  # noqa: E402

LEVELS = REPORTED_LEVELS[1:]  # the paper's: 3 / 6 / 9 % QoS loss
GPU_SYSTEMS = tuple(n for n, s in SYSTEMS.items() if s.llm)  # the systems whose LLM can run on CUDA
SHAPE = ("exact_seconds_per_query", "static", "dynamic", "tuning_seconds", "trials", "qos_exact", "points", "program",
         "metric", "held_out", "result", "model", "machine", "load", "most_accurate", "workers", "chosen_on",
         "configurations", "exact_is_most_accurate")


def report_dir(name: str) -> Path:
    """Where a system's report goes: reports/bench/<system>, with -cuda when its LLM runs
    on a GPU (a GPU run keeps the CPU run's report)."""
    from frontends.components import run_settings

    return ROOT / "reports" / "bench" / (name + ("-cuda" if run_settings.current().device.startswith("cuda") else ""))


def row(run, model: str, jobs: int) -> dict:
    """A system's row from its tuning run (`runs.SystemRun`): the keys of results.json
    (SHAPE) plus details for the Markdown."""
    from examples.systems.row_figures import front_gaps, level_points, most_accurate
    from examples.systems.row_figures import held_out_speedup as best
    from examples.systems.runs import qos_note

    r = run.result
    chosen = {m: r.chosen(9 / 100 + 1e-9, mode=m) for m in ("static", "dynamic")}
    return {
        "exact_seconds_per_query": r.exact_seconds_eval / r.n_eval,
        "static": {str(p): best(r, p, "static") for p in LEVELS},
        "dynamic": {str(p): best(r, p, "dynamic") for p in LEVELS},
        "tuning_seconds": r.tuning_seconds, "trials": r.trials, "qos_exact": run.qos_exact,
        # details for bench/results.md (not in results.json)
        "n_tune": r.n_tune, "n_eval": r.n_eval, "trials_per_mode": run.trials_per_mode,
        "wall_seconds": run.wall_seconds, "report": str(run.report), "fixed": run.fixed, "command": run.command,
        "front": front_gaps(r),
        "points": level_points(r, LEVELS), "most_accurate": most_accurate(r, LEVELS),
        "program": r.program_spec, "metric": r.metric_spec,
        "held_out": r.held_out, "qos_note": qos_note(r), "result": str(run.out_dir / "result.json"),
        "model": model,
        "importances": r.importances, "ablations": r.ablations,
        "best_at_9": {m: (p.knobs if p else None) for m, p in chosen.items()},
        "workers": jobs, "chosen_on": "tuning", "configurations": r.search.get("configurations", {}),
        **run.extra,
    }


def run_system(name: str, n_tune: int = 20, trials: int = 30, seconds: float | None = 600, seed: int = 0,
               out_dir: str | Path | None = None, ablate_levels: tuple = (), n_eval: int | None = None,
               jobs: int = 1, tuning_qos: str | None = None, fresh: bool = True, progress: bool = False,
               eval_repeats: int | None = None) -> dict:
    """One system's row (`row`), tuned by its `approx-tune run` command. `n_eval`: held-out
    inputs (questions: the first n_eval of 5x n_tune; items: a multiple of n_tune);
    `fresh=False` goes on with the study in its folder (finished trials and held-out
    figures kept); `eval_repeats`: paired timing rounds of the held-out evaluation
    (default: 1 for the LLM + tools agent, 2 for the others)."""
    from examples.systems.runs import tune_system

    described = system(name)
    program = described.build()
    run = tune_system(name, n_tune, trials, seconds, seed=seed, out_dir=out_dir or report_dir(name),
                      ablate=ablate_levels, n_eval=n_eval, jobs=jobs,
                      repeats=eval_repeats or (1 if described.items and described.llm else 2),
                      tuning_qos=tuning_qos, fresh=fresh, progress=progress)
    return row(run, program.model, jobs)


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("system", choices=SYSTEMS)
    ap.add_argument("--n-tune", type=int, default=20)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(json.dumps(run_system(args.system, args.n_tune, args.trials, args.seconds, args.seed), indent=2,
                     default=str))
