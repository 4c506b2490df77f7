"""Time the whole approx pipeline against parse+print alone on a generated module
of about 10,000 ops, so the cost of the passes shows as a ratio.
Target: whole pipeline under 2 s (ApproxMLIR reports about 5 s for non-ML kernels)."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from approx_dialect.context import print_module  # noqa: E402
from approx_opt.driver import run_pipeline  # noqa: E402
from approx_opt.parsing import parse_module  # noqa: E402
from bench.gen_module import count_ops, generate  # noqa: E402


def median_time(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(functions: int = 800) -> dict:
    text = generate(functions)
    ops = count_ops(text)
    parse_print = median_time(lambda: print_module(parse_module(text)))
    pipeline = median_time(lambda: run_pipeline(text, "approx-pipeline"))
    out_ops = count_ops(run_pipeline(text, "approx-pipeline"))
    print(f"## Pipeline: {functions} annotated functions, {ops} ops in, {out_ops} ops out")
    print(f"parse+verify+print:        {parse_print:7.3f} s (median of 5)")
    print(f"parse+passes+verify+print: {pipeline:7.3f} s (median of 5)   target < 2 s")
    print(f"passes cost: {pipeline / parse_print:.2f}x parse+print")
    return {"ops_in": ops, "ops_out": out_ops, "parse_print_s": parse_print, "pipeline_s": pipeline}


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
