"""The kernel of the `dots` landscape (`bench/tuning_landscapes.py`; also used by
the tests): three sums of exp(a[i]) * b[i] (compute-bound: a memory-bound loop
gains nothing from striding, as every cache line is still read) of lengths n, n/2,
n/4 over noisy data, each under its own loop perforation knob (values 0, 2, 3, 4,
8): 5^3 = 125 configurations."""

from __future__ import annotations

import numpy as np

KNOBS = (("d1", "loop_perforate_rescale"), ("d2", "loop_perforate_modulo_rescale"), ("d3", "loop_perforate_rescale"))


DOT_BODY = """
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
      %x = memref.load %a[%i] : memref<?xf64>
      %y = memref.load %b[%i] : memref<?xf64>
      %e = math.exp %x : f64
      %p = arith.mulf %e, %y : f64
      %s = arith.addf %acc, %p : f64
      scf.yield %s : f64
    }
    return %r : f64
  }"""  # sum of exp(a[i]) * b[i] over %n, after a function head over %a, %b, %n


def _dot(name: str) -> str:
    return f"""
  func.func @{name}(%a: memref<?xf64>, %b: memref<?xf64>, %n: index) -> f64 {{{DOT_BODY}"""


def kernel_text(knobs: int = 3) -> str:
    """`@main(a1, b1, n1, a2, b2, n2, ...)` -> one dot product per knob."""
    names = [k for k, _ in KNOBS[:knobs]]
    anns = [f'"approx.util.annotation.transform"() <{{func_name = "{k}", transform_type = "{t}", '
            f'knob_val = 0 : i32}}> : () -> ()' for k, t in KNOBS[:knobs]]
    params = ", ".join(f"%a{i}: memref<?xf64>, %b{i}: memref<?xf64>, %n{i}: index" for i in range(knobs))
    calls = "\n".join(f"    %r{i} = func.call @{k}(%a{i}, %b{i}, %n{i}) : "
                      f"(memref<?xf64>, memref<?xf64>, index) -> f64" for i, k in enumerate(names))
    rets = ", ".join(f"%r{i}" for i in range(knobs))
    main = (f"  func.func @main({params}) -> ({', '.join(['f64'] * knobs)}) {{\n{calls}\n"
            f"    return {rets} : {', '.join(['f64'] * knobs)}\n  }}")
    return "module {\n" + "\n".join(anns + [_dot(k) for k in names] + [main]) + "\n}\n"


def kernel_inputs(count: int = 36, n: int = 40_000, knobs: int = 3, seed: int = 0,
                  noise: tuple[float, ...] = (8.0, 12.0, 16.0)) -> list[tuple]:
    """Argument tuples: for knob i, a ~ N(0, 0.5) and b of mean 1 and standard
    deviation noise[i], n / 2^i elements (perforating later loops costs more QoS)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        args: list = []
        for i in range(knobs):
            m = n >> i
            args += [0.5 * rng.standard_normal(m), 1.0 + noise[i] * rng.standard_normal(m), m]
        out.append(tuple(args))
    return out
