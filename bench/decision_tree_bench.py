"""Multi-feature decision trees: how long `learn_decision_tree` takes
(CART, 10,000 samples x 4 features), and what the lowered tree costs at run time:
a sum kernel whose `decision_tree_multi` leaves are all 0 (so it computes exactly
what the unannotated kernel does) against the unannotated kernel, timed in the
same run, with the 1-D ladder (`decision_tree`, all 0) alongside."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from approx_opt.driver import run_pipeline  # noqa: E402
from approx_opt.jit import compile_module  # noqa: E402
from autotuner.decision_tree import annotation_text, learn_decision_tree  # noqa: E402

KERNEL = """
  func.func @sum(%m: memref<?xf64>, %n: index, %k: i32) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
      %v = memref.load %m[%i] : memref<?xf64>
      %s = arith.addf %acc, %v : f64
      scf.yield %s : f64
    }
    return %r : f64
  }
  func.func @feat(%n: index, %k: i32) -> (i32, i32) {
    %a = arith.index_cast %n : index to i32
    return %a, %k : i32, i32
  }
  func.func @state(%n: index) -> i32 {
    %a = arith.index_cast %n : index to i32
    return %a : i32
  }
"""
LADDER = (
    '"approx.util.annotation.decision_tree"() <{func_name = "sum", transform_type = "loop_perforate", '
    'state_indices = array<i64: 1>, state_function = "state", num_thresholds = 3 : i32, '
    "thresholds_uppers = array<i32: 1000000>, thresholds_lowers = array<i32: 0>, decision_values = array<i32: 0, 2>, "
    "thresholds = array<i32: 10, 100, 1000>, decisions = array<i32: 0, 0, 0, 0>}> : () -> ()"
)


def median_seconds(fn, repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(fns: dict, rounds: int = 15) -> dict[str, float]:
    """Median seconds of each callable, the variants taking turns (shared machines drift)."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(rounds):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def zero_tree(depth: int = 3):
    """A full tree of the given depth over 2 features, every leaf 0 (learned from
    a grid so it has 2**depth leaves, then its decisions zeroed)."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 1 << 20, (4096, 2))
    y = (x[:, 0] >> 17) ^ (x[:, 1] >> 19)  # needs every split down to the given depth
    tree = learn_decision_tree(x, y % 4, max_depth=depth)
    tree.decisions[:] = 0
    return tree


def learning_times(samples: int = 10_000, features: int = 4) -> list[tuple[int, int, float]]:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 1000, (samples, features))
    y = np.select([x[:, 0] + x[:, 1] < 800, x[:, 2] > 700, x[:, 3] < 100], [1, 2, 3], 0)
    y[rng.random(samples) < 0.05] = 0
    rows = []
    for depth in (3, 6):
        seconds = median_seconds(lambda: learn_decision_tree(x, y, max_depth=depth), repeat=5)
        tree = learn_decision_tree(x, y, max_depth=depth)
        rows.append((depth, len(tree.features), seconds, float((tree.predict(x) == y).mean())))
    return rows


def main(n: int = 10_000_000, small: int = 16) -> dict:
    rows = learning_times()
    print("## Decision trees: learning, 10,000 samples x 4 features (median of 5)")
    print("| max_depth | nodes | time | train accuracy |")
    print("|---|---|---|---|")
    for depth, nodes, seconds, acc in rows:
        print(f"| {depth} | {nodes} | {seconds * 1000:.1f} ms | {acc:.3f} |")

    tree = zero_tree()
    variants = {
        "unannotated": "module {" + KERNEL + "}",
        "ladder, 3 thresholds, all 0": "module {" + KERNEL + LADDER + "\n}",
        f"tree, depth {tree.depth()}, {len(tree.leaf_decisions())} leaves, all 0": "module {" + KERNEL
        + annotation_text(tree, "sum", "feat", [1, 2], "loop_perforate") + "\n}",
    }
    fns = {name: compile_module(run_pipeline(text, "approx-pipeline" if i else "")).fn("sum")
           for i, (name, text) in enumerate(variants.items())}
    data = np.random.default_rng(2).standard_normal(n)
    plain = fns["unannotated"](data, n, 7)
    for name, fn in fns.items():
        assert fn(data, n, 7) == plain, name  # all-0 decisions are exact
    big = interleaved({k: (lambda f=f: f(data, n, 7)) for k, f in fns.items()})
    tiny = interleaved({k: (lambda f=f: [f(data, small, 7) for _ in range(1000)]) for k, f in fns.items()})
    print("\n## Runtime overhead of the lowered decision (sum kernel; median of 15 interleaved runs)")
    print(f"| program | n = {n:,} | ratio | n = {small}, per call | extra per call |")
    print("|---|---|---|---|---|")
    out: dict = {"learning": rows}
    for name in fns:
        ratio = big[name] / big["unannotated"]
        extra = (tiny[name] - tiny["unannotated"]) / 1000
        print(f"| {name} | {big[name] * 1000:.2f} ms | {ratio:.3f} | {tiny[name] / 1000 * 1e6:.2f} us "
              f"| {extra * 1e9:+.0f} ns |")
        out[name] = (ratio, extra)
    return out


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
