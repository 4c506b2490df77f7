"""Loop approximations and the cascade: speedup over the exact program and QoS per
knob, all measured in the same run.

1. `sum exp(x[i])` over 2M f64 elements (one JIT kernel, one scf.for) under
   loop_perforate (stride k), loop_perforate_modulo (skip every k-th),
   loop_truncate (first ceil(n/k) iterations) and the two rescaling modes
   (the sum extrapolated to the full trip count), k = 1, 2, 4, 8 (1 is exact).
2. cascade: the mean of exp over each of 48 rows of 100k elements; variant 1
   samples every 64th element, variant 2 every 8th, the exact function all of
   them; confidence = agreement of the variant's estimate with a second sample at
   an offset (score 10^6 * (1 - relative difference)). Rows range from smooth
   (variants agree) to heavy-tailed (they disagree and the cascade escalates).

QoS = 1 - |y_exact - y| / |y_exact| (for the rows: the relative L2 error of the
vector of row results). Speedup = median exact time / median time, exact and
approximate runs alternating after a warm-up call of each (the machines are
shared: alternating keeps load changes out of the ratio).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module

SUM_EXP = """
  func.func @sumexp(%x: memref<?xf64>, %n: index) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
      %v = memref.load %x[%i] : memref<?xf64>
      %e = math.exp %v : f64
      %s = arith.addf %acc, %e : f64
      scf.yield %s : f64
    }
    return %r : f64
  }"""

LOOP_MODES = ("loop_perforate", "loop_perforate_modulo", "loop_truncate",
              "loop_perforate_rescale", "loop_perforate_modulo_rescale")
LOOP_KNOBS = (1, 2, 4, 8)


def _mean_exp(name: str, stride: int, offset: int = 0) -> str:
    """mean of exp(x[i]) over i = offset, offset + stride, ... < n."""
    return f"""
  func.func @{name}(%x: memref<?xf64>, %n: index) -> f64 {{
    %lb = arith.constant {offset} : index
    %s = arith.constant {stride} : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %lb to %n step %s iter_args(%acc = %z) -> (f64) {{
      %v = memref.load %x[%i] : memref<?xf64>
      %e = math.exp %v : f64
      %t = arith.addf %acc, %e : f64
      scf.yield %t : f64
    }}
    %span = arith.subi %n, %lb : index
    %cnt = arith.ceildivsi %span, %s : index
    %ci = arith.index_cast %cnt : index to i64
    %cf = arith.sitofp %ci : i64 to f64
    %m = arith.divf %r, %cf : f64
    return %m : f64
  }}"""


CASCADE = "\n".join([
    _mean_exp("f", 1),
    _mean_exp("approx_f_1", 64),
    _mean_exp("approx_f_2", 8),
    _mean_exp("check_1", 64, 32),
    _mean_exp("check_2", 8, 4),
    """
  func.func @conf(%r: f64, %x: memref<?xf64>, %n: index) -> i32 {
    %a = func.call @approx_f_1(%x, %n) : (memref<?xf64>, index) -> f64
    %is1 = arith.cmpf oeq, %r, %a : f64
    %b = scf.if %is1 -> (f64) {
      %c = func.call @check_1(%x, %n) : (memref<?xf64>, index) -> f64
      scf.yield %c : f64
    } else {
      %c = func.call @check_2(%x, %n) : (memref<?xf64>, index) -> f64
      scf.yield %c : f64
    }
    %d = arith.subf %r, %b : f64
    %ad = math.absf %d : f64
    %ar = math.absf %r : f64
    %rel = arith.divf %ad, %ar : f64
    %cap = arith.constant 1.0 : f64
    %relc = arith.minimumf %rel, %cap : f64
    %m = arith.constant 1.0e6 : f64
    %one = arith.constant 1.0 : f64
    %agree = arith.subf %one, %relc : f64
    %s = arith.mulf %agree, %m : f64
    %i = arith.fptosi %s : f64 to i32
    return %i : i32
  }"""])
# Confidence of variant 1 costs a second stride-64 sample (recomputing variant 1 to
# tell which variant answered is another 1/64); of variant 2, a stride-8 sample.
THRESHOLDS = (990000, 999000, 999900)  # relative disagreement <= 1 %, 0.1 %, 0.01 %
VARIANTS = 2


def paired_times(exact_call, call, repeat: int) -> tuple[float, float]:
    """Median times of the exact and the approximate call, run alternately."""
    exact_call(), call()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((exact_call, times[0]), (call, times[1])):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def annotated(text: str, func: str, transform: str, knob: int, *extra: str) -> str:
    ann = (f'  "approx.util.annotation.transform"() <{{func_name = "{func}", '
           f'transform_type = "{transform}", knob_val = {knob} : i32}}> : () -> ()')
    return "module {\n" + text + "\n" + "\n".join([*extra, ann]) + "\n}\n"


def loops(n: int, repeat: int) -> list[dict]:
    x = np.random.default_rng(0).uniform(0.0, 1.0, n)
    exact_fn = compile_module(run_pipeline(annotated(SUM_EXP, "sumexp", "loop_perforate", 0),
                                           "approx-pipeline")).fn("sumexp")
    exact_y = exact_fn(x, n)
    exact_ts = []
    print(f"### sum of exp over {n} f64 elements (one scf.for)\n")
    print("| transform | k=" + " | k=".join(map(str, LOOP_KNOBS)) + " |")
    print("|---|" + "---|" * len(LOOP_KNOBS))
    rows = []
    for mode in LOOP_MODES:
        cells = []
        for k in LOOP_KNOBS:
            fn = compile_module(run_pipeline(annotated(SUM_EXP, "sumexp", mode, k), "approx-pipeline")).fn("sumexp")
            exact_t, t = paired_times(lambda: exact_fn(x, n), lambda: fn(x, n), repeat)
            exact_ts.append(exact_t)
            qos = 1 - abs(exact_y - fn(x, n)) / abs(exact_y)
            rows.append({"transform": mode, "knob": k, "speedup": exact_t / t, "qos": qos})
            cells.append(f"{exact_t / t:.2f}x / {qos:.4f}")
        print(f"| `{mode}` | " + " | ".join(cells) + " |")
    print(f"\n(each cell: speedup / QoS; exact: median {statistics.median(exact_ts) * 1e3:.2f} ms)\n")
    return rows


def cascade_rows(n_rows: int, row_len: int, seed: int = 1) -> list[np.ndarray]:
    """Rows from smooth to heavy-tailed: x = mu + sigma * N(0, 1), sigma log-spaced."""
    rng = np.random.default_rng(seed)
    sigmas = np.geomspace(0.002, 2.0, n_rows)
    return [rng.uniform(-1, 1) + s * rng.standard_normal(row_len) for s in rng.permutation(sigmas)]


def cascade(n_rows: int, row_len: int, repeat: int) -> list[dict]:
    rows = cascade_rows(n_rows, row_len)
    ann = (f'  "approx.util.annotation.cascade"() <{{func_name = "f", confidence = "conf", '
           f"variants = {VARIANTS} : i32, thresholds = array<i32: {', '.join(map(str, THRESHOLDS))}>}}> : () -> ()")

    def run_all(fn):
        return np.array([fn(r, row_len) for r in rows])

    exact = compile_module(run_pipeline(annotated(CASCADE, "f", "cascade", 0, ann), "approx-pipeline"))
    exact_y = run_all(exact.f)
    v1, v2 = run_all(exact.approx_f_1), run_all(exact.approx_f_2)
    print(f"### cascade: mean of exp over {n_rows} rows x {row_len} elements, V = {VARIANTS}, "
          f"T = {len(THRESHOLDS)}\n")
    print("| knob | starts at | threshold (score >= ) | answered by v1 / v2 / exact | speedup | QoS |")
    print("|---|---|---|---|---|---|")
    out = []
    for k in range(1, VARIANTS * len(THRESHOLDS) + 1):
        cm = compile_module(run_pipeline(annotated(CASCADE, "f", "cascade", k, ann), "approx-pipeline"))
        exact_t, t = paired_times(lambda: run_all(exact.f), lambda: run_all(cm.f), repeat)
        y = run_all(cm.f)
        by1, by2 = int(np.sum(y == v1)), int(np.sum((y == v2) & (y != v1)))
        qos = 1 - np.linalg.norm(exact_y - y) / np.linalg.norm(exact_y)
        start, t_index = (k - 1) // len(THRESHOLDS) + 1, (k - 1) % len(THRESHOLDS)
        out.append({"knob": k, "speedup": exact_t / t, "qos": qos, "by": (by1, by2, n_rows - by1 - by2)})
        print(f"| {k} | variant {start} | {THRESHOLDS[t_index]} | {by1} / {by2} / {n_rows - by1 - by2} "
              f"| {exact_t / t:.2f}x | {qos:.6f} |")
    print("\n(speedup over calling the exact f on every row)\n")
    return out


def main(n: int = 2_000_000, n_rows: int = 48, row_len: int = 100_000, repeat: int = 15) -> dict:
    print("## Loop approximations and cascade: speedup over exact and QoS per knob")
    print("QoS = 1 - |y_exact - y| / |y_exact| (rows: relative L2 error); speedup = exact time / time "
          f"(medians of {repeat} runs after a warm-up, exact measured in the same run)\n")
    return {"loops": loops(n, repeat), "cascade": cascade(n_rows, row_len, repeat)}


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
