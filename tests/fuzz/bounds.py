"""The two semantic properties of approximations, checked on one generated kernel
(shared by tests/test_bounds_check.py and `bench/fuzz.py --kernels N`):

- in bounds: the approximated kernel, JIT-run with MLIR's runtime bounds checks,
  neither reads nor writes outside its arrays;
- exact at knob 0: a knob-0 setting gives bit-identical results (returned value
  and every array after the call) to the unannotated program."""

from __future__ import annotations

import numpy as np

from approx_opt.driver import run_pipeline
from tests.fuzz.checked_jit import CheckedJit, Ran
from tests.fuzz.generated_kernels import Kernel, annotations_for


def arrays(n: int, extra: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n * 7 + extra)
    return rng.standard_normal(n + extra), np.zeros(n + extra)


def run_kernel(jit: CheckedJit, text: str, n: int, extra: int, pipeline: str = "approx-pipeline"):
    """@k of `text` after `pipeline` on arrays of length n + extra, bounds-checked."""
    a, b = arrays(n, extra)
    return jit.run(run_pipeline(text, pipeline), "k", [a, b, n, 3])


def bits(outcome: Ran) -> tuple:
    return (np.float64(outcome.result).tobytes(), *(np.asarray(a).tobytes() for a in outcome.args))


def in_bounds_problem(jit: CheckedJit, kernel: Kernel, transform: str, setting, n: int, extra: int) -> str | None:
    """None when the approximated kernel runs within bounds; else what happened."""
    text = kernel.text(*annotations_for(transform, setting))
    out = run_kernel(jit, text, n, extra)
    return None if isinstance(out, Ran) else f"{transform} {setting} n={n}: {out}\n{text}"


def exactness_problem(jit: CheckedJit, kernel: Kernel, transform: str, setting, n: int, extra: int) -> str | None:
    """None when knob-0 `setting` reproduces the unannotated kernel bit for bit."""
    exact = run_kernel(jit, kernel.text(), n, extra, pipeline="")
    approx = run_kernel(jit, kernel.text(*annotations_for(transform, setting)), n, extra)
    if not (isinstance(exact, Ran) and isinstance(approx, Ran)):
        return f"{transform} {setting} n={n}: exact {exact}, knob 0 {approx}"
    if bits(approx) != bits(exact):
        return f"{transform} {setting} n={n}: knob 0 gives {approx.result!r}, exact {exact.result!r}"
    return None
