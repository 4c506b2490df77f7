"""`make demo`: compile an ApproxMLIR-style program with approx-opt, JIT-run the
result through upstream MLIR, and compare it with the exact program.

Until the compound-AI examples exist this is the main job: it shows the
whole path, annotations -> passes -> plain IR -> native code, with real numbers."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

from approx_dialect import AnnotationDecisionTreeOp, decision_index
from approx_opt.driver import exact_program, run_pipeline
from approx_opt.jit import compile_module
from approx_opt.parsing import parse_module

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mlir" / "adaptive_sum.mlir"
SIZES = (500, 5_000, 50_000, 500_000, 2_000_000)


def median_seconds(fn, *args, repeat: int = 15) -> float:
    fn(*args)  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    text = EXAMPLE.read_text()
    shown = EXAMPLE.relative_to(Path.cwd()) if EXAMPLE.is_relative_to(Path.cwd()) else EXAMPLE
    print(f"$ approx-opt {shown} -p approx-pipeline")
    start = time.perf_counter()
    transformed = run_pipeline(text, "approx-pipeline", str(EXAMPLE))
    compile_s = time.perf_counter() - start
    assert "approx." not in transformed
    print(f"pipeline: {compile_s * 1000:.1f} ms, {len(transformed.splitlines())} lines of plain func/arith/scf IR")

    start = time.perf_counter()
    approx = compile_module(transformed).fn("mean")
    exact = compile_module(exact_program(text, str(EXAMPLE))).fn("mean")
    print(f"JIT (upstream MLIR ExecutionEngine): {(time.perf_counter() - start) * 1000:.0f} ms for both programs\n")

    tree = next(op for op in parse_module(text).ops if isinstance(op, AnnotationDecisionTreeOp))
    ladder = (tree.thresholds.get_values(), tree.decisions.get_values())
    rng = np.random.default_rng(0)
    print(f"{'n':>10} {'decision':>10} {'exact mean':>12} {'approx mean':>12} {'rel. error':>11} {'speedup':>8}")
    for n in SIZES:
        x = rng.gamma(2.0, 1.5, n)
        stride = ladder[1][decision_index(n, ladder[0])]
        e, a = exact(x, n), approx(x, n)
        speedup = median_seconds(exact, x, n) / median_seconds(approx, x, n)
        label = "exact" if stride <= 1 else f"1/{stride}"
        print(f"{n:>10} {label:>10} {e:>12.6f} {a:>12.6f} {abs(a - e) / abs(e):>11.2e} {speedup:>7.2f}x")
    print("\nspeedup = median time of the exact program / approximate program, same process.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
