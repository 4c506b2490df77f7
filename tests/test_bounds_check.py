"""Semantics under approximation, on generated kernels (tests/fuzz/generated_kernels.py) run
through upstream MLIR with its runtime bounds checks (`compile_module(...,
check_bounds=True)`, in a child process: a failed check aborts):

- no transformation, at any knob setting, makes a kernel read or write out of bounds;
- knob 0 (static, or a decision tree whose decisions are all 0) gives results
  bit-identical to the unannotated program.
`bench/fuzz.py --kernels N` checks the same on more kernels.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.bounds import arrays, exactness_problem, in_bounds_problem, run_kernel
from tests.fuzz.checked_jit import CheckedJit, Died, Ran
from tests.fuzz.generated_kernels import Kernel, Shape, annotated_kernels, annotations_for, exact_cases

OOB_LOAD = """
func.func @f(%m: memref<?xf64>, %i: index) -> f64 {
  %v = memref.load %m[%i] : memref<?xf64>
  return %v : f64
}
"""


@pytest.fixture(scope="module")
def jit():
    runner = CheckedJit()
    yield runner
    runner.close()


def prop_settings(n: int):
    return settings(max_examples=n, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_the_bounds_check_fires_and_is_needed(jit):
    """An out-of-bounds load aborts with MLIR's message when checked; unchecked it
    silently reads past the array (so a passing property below means something)."""
    a = np.arange(4.0)
    assert isinstance(jit.run(OOB_LOAD, "f", [a, 3]), Ran)
    died = jit.run(OOB_LOAD, "f", [a, 4])
    assert isinstance(died, Died) and died.out_of_bounds, died
    assert "memref.load" in died.message
    assert isinstance(jit.run(OOB_LOAD, "f", [a, 4], check_bounds=False), Ran)


@prop_settings(30)
@given(annotated_kernels(), st.integers(0, 40), st.integers(0, 3))
def test_no_transformation_reads_or_writes_out_of_bounds(jit, case, n, extra):
    kernel, transform, setting, _ = case
    problem = in_bounds_problem(jit, kernel, transform, setting, n, extra)
    assert problem is None, problem


@prop_settings(20)
@given(exact_cases(), st.integers(0, 40), st.integers(0, 2))
def test_knob_zero_is_identical_to_the_unannotated_program(jit, case, n, extra):
    kernel, transform, setting = case
    problem = exactness_problem(jit, kernel, transform, setting, n, extra)
    assert problem is None, problem


@pytest.mark.parametrize("transform", ["loop_perforate", "loop_perforate_rescale", "loop_truncate",
                                       "loop_perforate_modulo"])
@pytest.mark.parametrize("iv", ["i32", "i64", "index"])
@pytest.mark.parametrize("step", [1, 3])
def test_huge_knobs_on_narrow_loops_stay_in_bounds(jit, transform, iv, step):
    """Regressions: in an i32 loop, step * k wrapped around (step 3, k = 2^30: a
    negative step), or lb + step * k did (step 1, k = 2^31 - 1), and the perforated
    loop ran iterations below lb, reading before the array."""
    kernel = Kernel(Shape(iv, 1, None, step, None, True, 0, False), ())
    a, _ = arrays(10, 0)
    n = len(range(1, 10, step))
    for k in (2**30, 2**31 - 1):
        out = run_kernel(jit, kernel.text(*annotations_for(transform, k)), 10, 0)
        assert isinstance(out, Ran), f"{transform} k={k}: {out}"
        if transform == "loop_perforate_modulo":  # k > n: nothing skipped
            assert out.result == pytest.approx(a[1:10:step].sum())
        else:  # k >= n: only the first iteration (lb = 1); rescaled by n / kept = n
            assert out.result == pytest.approx(a[1] * (n if transform == "loop_perforate_rescale" else 1))
