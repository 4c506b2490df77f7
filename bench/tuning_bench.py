"""Tuning efficiency on landscapes whose whole configuration space is enumerable
(`bench/tuning_landscapes.py`: every configuration measured once, stored under
`bench/landscapes/`, replayed here through the tuner's own search code: space,
seeding, sampler, duplicate handling). For each landscape and search: hypervolume
of the found front / exhaustive hypervolume per number of evaluations, mean (min)
over 10 seeds, and the evaluations needed to reach 95 %. Target: 95 % within 10 %
of the evaluations, never below random search at any budget.

The kernel of the `dots` landscape is `bench/dots_kernel.py`.

`python bench/tuning_bench.py [SAMPLER ...] [--seeds N] [--landscape NAME]`.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

def replay(land, method: str, seed: int, evals: int) -> list[tuple[float, float]]:
    """Run the tuner's search against a recorded landscape; the (loss, speedup) of
    each evaluation in order (a configuration proposed again is not an evaluation)."""
    from autotuner import Measurement, config_key, run_search

    order: list[tuple[float, float]] = []

    def evaluate(config, n=None):
        loss, speedup = land.table[config_key(config)]
        order.append((loss, speedup))
        return Measurement(loss, speedup, float("nan"), 1 - loss, 1)

    run_search(land.space(), evaluate, land.budget, evals, sampler=method, seed=seed, seeds=method != "random")
    return order


def marks_for(total: int) -> list[int]:
    """Evaluation counts reported: a few fixed ones and 10 % of the space."""
    return sorted({k for k in (5, 8, math.ceil(0.1 * total), 20, 30, 45) if k <= total})


def bench_landscape(land, methods, seeds: int = 10) -> dict:
    """method -> (mean curve, min curve, median evaluations to 95 % (inf: never), seconds)."""
    from autotuner import hypervolume

    full_hv = hypervolume(list(land.table.values()), land.budget)
    marks = marks_for(len(land.table))
    rows = {}
    for method in methods:
        t1 = time.perf_counter()
        curves, reach = [], []
        for seed in range(seeds):
            order = replay(land, method, seed, max(marks))
            hv = [hypervolume(order[:k], land.budget) / full_hv for k in range(1, len(order) + 1)]
            curves.append([hv[min(k, len(hv)) - 1] for k in marks])
            reach.append(next((k + 1 for k, h in enumerate(hv) if h >= 0.95), math.inf))
        rows[method] = (np.mean(curves, axis=0), np.min(curves, axis=0), statistics.median(reach),
                        time.perf_counter() - t1)
    return rows


LABELS = {"nsga2": "NSGA-II + seeds", "predictive": "predictive (Bayesian additive models)",
          "tpe": "TPE + seeds", "gp": "GP (Optuna GPSampler) + seeds", "random": "random search"}


def print_table(land, rows: dict, default: str) -> None:
    from autotuner import hypervolume

    full = list(land.table.values())
    total, marks = len(full), marks_for(len(full))
    in_budget = [s for loss, s in full if loss <= land.budget]
    print(f"\n### {land.name}: {total} configurations\n")
    print(f"{land.description}. QoS loss = (QoS_exact - QoS) / QoS_exact; budget {land.budget}; "
          f"{len(in_budget)} configurations within it, best speedup {max(in_budget):.2f}x; exhaustive "
          f"hypervolume {hypervolume(full, land.budget):.4f} (area of loss <= budget, speedup >= 1 dominated "
          f"by the front). Fraction of it found, mean (min) over seeds; 10 % = {math.ceil(0.1 * total)} evals.\n")
    print("| search | " + " | ".join(f"{k} evals" for k in marks) + " | evals to 95 % (median) | search s |")
    print("|---|" + "---|" * (len(marks) + 2))
    for method, (mean, lo, reach, secs) in rows.items():
        cells = " | ".join(f"{m:.3f} ({mn:.3f})" for m, mn in zip(mean, lo))
        label = LABELS.get(method, method) + (" (default)" if method == default else "")
        print(f"| {label} | {cells} | {reach if reach != math.inf else 'never'} | {secs:.1f} |")


def main(argv: list[str] | None = None) -> dict:
    import argparse

    import optuna

    from autotuner import DEFAULT_SAMPLER, SAMPLERS
    from bench.tuning_landscapes import DIR, NAMES, Landscape

    p = argparse.ArgumentParser(description="tuning efficiency on recorded landscapes")
    p.add_argument("methods", nargs="*", help=f"of {', '.join(SAMPLERS)}; default: {DEFAULT_SAMPLER}, nsga2, tpe, "
                   "random (gp takes minutes per seed)")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--landscape", action="append", choices=NAMES)
    a = p.parse_args([] if argv is None else argv)
    if set(a.methods) - set(SAMPLERS):
        p.error(f"unknown sampler {sorted(set(a.methods) - set(SAMPLERS))[0]!r} (samplers: {', '.join(SAMPLERS)})")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    print("\n## Tuning efficiency: searches replayed on recorded landscapes")
    out = {}
    for name in a.landscape or NAMES:
        if not (DIR / f"{name}.json").exists():
            print(f"\n### {name}: not recorded (python bench/tuning_landscapes.py record {name})")
            continue
        land = Landscape.load(name)
        out[name] = bench_landscape(land, a.methods or [DEFAULT_SAMPLER, "nsga2", "tpe", "random"], a.seeds)
        print_table(land, out[name], DEFAULT_SAMPLER)
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
