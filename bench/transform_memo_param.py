"""Benchmark of `memoize` and `param` on JIT-compiled kernels.

memoize: an expensive scalar kernel (a 2000-step quadrature per call) applied by a
driver loop to a stream of 2000 inputs drawn around 256 centres with relative noise
log-uniform in [1e-10, 1e-3], so inputs repeat after quantisation to a degree that
depends on k. Every timed run uses a fresh stream (new centres), so the table starts
without matching entries: speedups are for a cold table on one stream.
param: the series sum cos(i x) / i (error ~ 1/n) whose trip count is the parameter
(1,000,000 terms exact).

Speedup = exact time / approximate time, medians of repeated runs after a warm-up,
exact measured in the same run. QoS = 1 - ||y - y_exact||2 / ||y_exact||2; QoS loss
= 1 - QoS (for kernels QoS_exact = 1).
"""

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

QUAD = """
module {
  func.func @quad(%x: f64) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %steps = arith.constant 2000 : index
    %h = arith.constant 5.0e-4 : f64
    %one = arith.constant 1.0 : f64
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %steps step %c1 iter_args(%acc = %z) -> (f64) {
      %ii = arith.index_cast %i : index to i64
      %fi = arith.sitofp %ii : i64 to f64
      %t = arith.mulf %fi, %h : f64
      %xt = arith.mulf %x, %t : f64
      %s = math.sin %xt : f64
      %t2 = arith.mulf %t, %t : f64
      %d = arith.addf %one, %t2 : f64
      %q = arith.divf %s, %d : f64
      %a = arith.addf %acc, %q : f64
      scf.yield %a : f64
    }
    %y = arith.mulf %r, %h : f64
    return %y : f64
  }
  func.func @run(%xs: memref<?xf64>, %ys: memref<?xf64>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      %x = memref.load %xs[%i] : memref<?xf64>
      %y = func.call @quad(%x) : (f64) -> f64
      memref.store %y, %ys[%i] : memref<?xf64>
    }
    return
  }
  ANNOTATION
}
"""

SERIES = """
module {
  func.func @series(%x: f64, %n: index) -> f64 {
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c1 to %n step %c1 iter_args(%acc = %z) -> (f64) {
      %ii = arith.index_cast %i : index to i64
      %fi = arith.sitofp %ii : i64 to f64
      %ix = arith.mulf %fi, %x : f64
      %c = math.cos %ix : f64
      %q = arith.divf %c, %fi : f64
      %a = arith.addf %acc, %q : f64
      scf.yield %a : f64
    }
    return %r : f64
  }
  ANNOTATION
}
"""

MEMO_KNOBS = (0, 16, 28, 34, 40, 46)
PARAM_VALUES = (500_000, 100_000, 20_000, 2_000, 200)
EXACT_TERMS = 1_000_000


def transform(func: str, ttype: str, k: int) -> str:
    return (f'"approx.util.annotation.transform"() <{{func_name = "{func}", '
            f'transform_type = "{ttype}", knob_val = {k} : i32}}> : () -> ()')


def qos(y: np.ndarray, exact: np.ndarray) -> float:
    return 1.0 - float(np.linalg.norm(y - exact) / np.linalg.norm(exact))


def stream(rng: np.random.Generator, n: int = 2000, centres: int = 256) -> np.ndarray:
    c = rng.uniform(0.5, 4.0, centres)
    noise = rng.choice([-1, 1], n) * 10 ** rng.uniform(-10, -3, n)
    return c[rng.integers(0, centres, n)] * (1 + noise)


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def bench_memoize(repeat: int = 5) -> list[tuple]:
    runs = {k: compile_module(run_pipeline(QUAD.replace("ANNOTATION", transform("quad", "memoize", k) if k else ""),
                                           "approx-pipeline")).fn("run") for k in MEMO_KNOBS}
    rng = np.random.default_rng(0)
    times = {k: [] for k in MEMO_KNOBS}
    quality = {k: [] for k in MEMO_KNOBS}
    reused = {k: [] for k in MEMO_KNOBS}
    for rep in range(repeat + 1):  # rep 0 warms up
        xs = stream(rng)
        exact = np.empty_like(xs)
        for k in MEMO_KNOBS:  # k = 0 (exact) first
            ys = np.empty_like(xs)
            t = timed(runs[k], xs, ys, len(xs))
            if k == 0:
                exact = ys
            if rep:
                times[k].append(t)
                quality[k].append(qos(ys, exact))
                reused[k].append(float(np.mean(ys != exact)))
    base = statistics.median(times[0])
    return [(k, statistics.median(times[k]) * 1e3, base / statistics.median(times[k]),
             statistics.mean(quality[k]), statistics.mean(reused[k])) for k in MEMO_KNOBS]


def bench_param(repeat: int = 5) -> list[tuple]:
    values = ", ".join(map(str, PARAM_VALUES))
    ann = (f'"approx.util.annotation.param"() <{{func_name = "series", arg_index = 1 : i64, '
           f'name = "terms", values = array<i64: {values}>}}> : () -> ()')
    knobs = range(len(PARAM_VALUES) + 1)
    fns = {k: compile_module(run_pipeline(SERIES.replace("ANNOTATION", ann + "\n" + transform("series", "param", k)),
                                          "approx-pipeline")).fn("series") for k in knobs}
    xs = np.linspace(0.3, 2.9, 4)

    def run(f):
        return np.array([f(x, EXACT_TERMS) for x in xs])

    exact = run(fns[0])
    times = {k: [] for k in knobs}
    for rep in range(repeat + 1):
        for k in knobs:
            t = timed(run, fns[k])
            if rep:
                times[k].append(t)
    base = statistics.median(times[0])
    return [(k, EXACT_TERMS if k == 0 else PARAM_VALUES[k - 1], statistics.median(times[k]) * 1e3,
             base / statistics.median(times[k]), qos(run(fns[k]), exact)) for k in knobs]


def main() -> dict:
    memo = bench_memoize()
    print("## memoize: 2000-step quadrature per call, stream of 2000 inputs around 256 centres")
    print("QoS = 1 - rel. L2 error; QoS loss = 1 - QoS; reused = share of calls answered from the table")
    print("with another input's result; median of 5 cold-table runs, exact in the same run.\n")
    print("| knob k (mantissa bits dropped) | time (ms) | speedup | QoS | reused |")
    print("|---|---|---|---|---|")
    for k, ms, sp, q, r in memo:
        print(f"| {k}{' (exact)' if k == 0 else ''} | {ms:.2f} | {sp:.2f}x | {q:.7f} | {r:.1%} |")
    param = bench_param()
    print("\n## param: sum of cos(i x) / i, trip count = the parameter, 4 inputs x")
    print("| knob k | terms | time (ms) | speedup | QoS |")
    print("|---|---|---|---|---|")
    for k, v, ms, sp, q in param:
        print(f"| {k}{' (exact)' if k == 0 else ''} | {v} | {ms:.2f} | {sp:.2f}x | {q:.7f} |")
    return {"memoize": memo, "param": param}


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
