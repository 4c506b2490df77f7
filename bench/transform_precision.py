"""precision_reduce: speedup over the exact f64 program and QoS per knob (0 exact,
1 f32, 2 f16) on three JIT kernels, all measured in the same run:

- `ew`: y[i] = exp(x[i]) / sqrt(x[i]^2 + 1) over 4M f64 memref elements;
- `mm_tensor`: a 256x256 linalg.matmul on tensors (torch-mlir's linalg-on-tensors
  form), bufferized by approx_opt/jit;
- `mm_memref`: a 384x384 i-k-j matmul on f64 memrefs (the accumulator lives in
  the f64 buffer, so each inner iteration converts in and out).

QoS = 1 - ||y_exact - y||2 / ||y_exact||2. Speedup = median exact time / median
time (after one warm-up call). This CPU has F16C (conversions) but no f16
arithmetic: f16 ops run as f32 ops with a rounding after each.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module

EW = """
  func.func @ew(%x: memref<?xf64>, %y: memref<?xf64>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f64
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %x[%i] : memref<?xf64>
      %s = arith.mulf %v, %v : f64
      %t = arith.addf %s, %one : f64
      %q = math.sqrt %t : f64
      %e = math.exp %v : f64
      %r = arith.divf %e, %q : f64
      memref.store %r, %y[%i] : memref<?xf64>
    }
    return
  }"""

MM_TENSOR = """
  func.func @mm(%a: tensor<{n}x{n}xf64>, %b: tensor<{n}x{n}xf64>) -> tensor<{n}x{n}xf64> {{
    %z = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<{n}x{n}xf64>
    %c = linalg.fill ins(%z : f64) outs(%e : tensor<{n}x{n}xf64>) -> tensor<{n}x{n}xf64>
    %r = linalg.matmul ins(%a, %b : tensor<{n}x{n}xf64>, tensor<{n}x{n}xf64>)
                       outs(%c : tensor<{n}x{n}xf64>) -> tensor<{n}x{n}xf64>
    return %r : tensor<{n}x{n}xf64>
  }}"""

MM_MEMREF = """
  func.func @mm(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %c: memref<?x?xf64>, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %n step %c1 {
      scf.for %k = %c0 to %n step %c1 {
        %aik = memref.load %a[%i, %k] : memref<?x?xf64>
        scf.for %j = %c0 to %n step %c1 {
          %bkj = memref.load %b[%k, %j] : memref<?x?xf64>
          %cij = memref.load %c[%i, %j] : memref<?x?xf64>
          %p = arith.mulf %aik, %bkj : f64
          %s = arith.addf %cij, %p : f64
          memref.store %s, %c[%i, %j] : memref<?x?xf64>
        }
      }
    }
    return
  }"""

KNOBS = (0, 1, 2)
TYPES = {0: "f64 (exact)", 1: "f32", 2: "f16"}


def annotated(func_text: str, name: str, knob: int) -> str:
    return (
        "module {\n" + func_text + "\n"
        f'  "approx.util.annotation.transform"() <{{func_name = "{name}", '
        f'transform_type = "precision_reduce", knob_val = {knob} : i32}}> : () -> ()\n}}\n'
    )


def median_time(call, repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def kernels(n_ew: int, n_mt: int, n_mm: int):
    """(label, function text, name, make a call for a compiled fn -> (run, result))"""
    rng = np.random.default_rng(0)
    x = rng.uniform(-3.0, 3.0, n_ew)
    a, b = rng.standard_normal((n_mt, n_mt)), rng.standard_normal((n_mt, n_mt))
    p, q = rng.standard_normal((n_mm, n_mm)), rng.standard_normal((n_mm, n_mm))

    def ew(fn):
        y = np.zeros(n_ew)
        return (lambda: fn(x, y, n_ew)), (lambda: y.copy())

    def mm_tensor(fn):
        out = {}
        return (lambda: out.__setitem__("r", fn(a, b))), (lambda: out["r"])

    def mm_memref(fn):
        c = np.zeros((n_mm, n_mm))
        return (lambda: (c.fill(0.0), fn(p, q, c, n_mm))), (lambda: c.copy())

    return [
        (f"ew exp/sqrt, {n_ew} elements (memref)", EW, "ew", ew),
        (f"matmul {n_mt}x{n_mt} (linalg on tensors)", MM_TENSOR.format(n=n_mt), "mm", mm_tensor),
        (f"matmul {n_mm}x{n_mm} i-k-j (memref loops)", MM_MEMREF, "mm", mm_memref),
    ]


def main(n_ew: int = 1 << 22, n_mt: int = 256, n_mm: int = 384, repeat: int = 7) -> list[dict]:
    print("## precision_reduce: speedup over exact f64 and QoS per knob")
    print("QoS = 1 - ||y_exact - y||2 / ||y_exact||2; speedup = exact time / time "
          f"(medians of {repeat} runs after a warm-up, exact measured in the same run)\n")
    print("| kernel | knob | computes in | time (ms) | speedup | QoS | rel. L2 error |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for label, text, name, make in kernels(n_ew, n_mt, n_mm):
        exact_time, exact_y = None, None
        for k in KNOBS:
            fn = compile_module(run_pipeline(annotated(text, name, k), "approx-pipeline")).fn(name)
            run, result = make(fn)
            t = median_time(run, repeat)
            y = result()
            if k == 0:
                exact_time, exact_y = t, y
            err = np.linalg.norm(exact_y - y) / np.linalg.norm(exact_y)
            rows.append({"kernel": label, "knob": k, "time_s": t, "speedup": exact_time / t, "qos": 1 - err})
            print(f"| {label} | {k} | {TYPES[k]} | {t * 1e3:.2f} | {exact_time / t:.2f}x "
                  f"| {1 - err:.7f} | {err:.1e} |")
    return rows


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
