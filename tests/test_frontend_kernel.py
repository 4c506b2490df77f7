"""Decorated numeric kernels (JIT path): exact at knob 0 against the undecorated
function on random inputs, and each transformation changing results as it says."""

from __future__ import annotations

import math

import frontend_programs as P
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from approx_opt.program import exact_config
from frontends import Knob

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
floats = st.floats(-1e6, 1e6, allow_nan=False)
arrays = st.lists(st.integers(-1000, 1000), min_size=1, max_size=40).map(lambda v: np.array(v, np.float64) / 8)


def loop_sum(values) -> float:
    s = 0.0
    for v in values:
        s += v
    return s


EXACT_ADAPTIVE = P.adaptive_sum.build(exact_config(P.adaptive_sum))


@FAST
@given(arrays, st.integers(0, 60))
def test_sums_exact_at_knob_0(x, n):
    n = min(n, len(x))
    assert P.strided_sum(x, n) == P.strided_sum.python(x, n)
    assert EXACT_ADAPTIVE(x, n) == P.adaptive_sum.python(x, n)
    assert P.prefix_sum(x) == P.prefix_sum.python(x)


@FAST
@given(st.integers(-10**6, 10**6), st.integers(-1000, 1000), floats)
def test_mixed_arithmetic_exact(a, b, f):
    assert P.mixed(a, b, f) == P.mixed_ref(a, b, f)


@FAST
@given(st.integers(1, 7), st.integers(1, 7), st.integers(0, 2**32))
def test_stencil_exact(n, m, seed):
    a = np.random.default_rng(seed).random((n, m))
    o1, o2 = np.zeros_like(a), np.zeros_like(a)
    assert P.stencil(a, o1) == P.stencil.python(a, o2)
    assert np.array_equal(o1, o2)


def test_perforation_sums_exactly_the_strided_iterations():
    x = np.arange(1.0, 101.0)
    for k in (2, 3, 4, 8):
        f = P.strided_sum.build({"strided_sum": {"knob_val": k}})
        assert f(x, 100) == loop_sum(x[0:100:k])
        assert f(x, 37) == loop_sum(x[0:37:k])


def test_truncation_sums_the_prefix():
    x = np.arange(1.0, 11.0)
    for k in (2, 3, 4):
        f = P.prefix_sum.build({"prefix_sum": {"knob_val": k}})
        assert f(x) == loop_sum(x[: math.ceil(10 / k)])


def test_decision_tree_picks_by_state():
    x = np.arange(1.0, 501.0)
    assert P.adaptive_sum(x, 5) == loop_sum(x[:5])  # state 5 < 10: exact
    assert P.adaptive_sum(x, 50) == loop_sum(x[0:50:2])  # 10 <= 50 < 100: every 2nd
    assert P.adaptive_sum(x, 500) == loop_sum(x[0:500:4])  # >= 100: every 4th
    ladder = P.adaptive_sum.build({"adaptive_sum": {"thresholds": [20, 30], "decisions": [0, 4, 2]}})
    assert ladder(x, 25) == loop_sum(x[0:25:4])


def test_substitution_and_safety_contract():
    x = np.array([3.0, 1.0, -20.0, 4.0])
    assert P.checked_mean(x, 2) == 2.0
    approx = P.checked_mean.build({"checked_mean": {"knob_val": 1}})
    assert approx(x, 2) == P.first_only(x, 2) == 6.0  # approx_kernels[1]
    assert P.checked_mean(x, 4) == -1.0  # mean -3 fails the checker: recovered
    assert approx(np.array([-2.0, 1.0]), 2) == -1.0


def test_param_memoize_cascade_kernels():
    x = np.array([5.0, 7.0, 11.0])
    assert P.top_sum(x, 3) == 23.0
    assert [P.top_sum.build({"top_sum": {"knob_val": k}})(x, 3) for k in (1, 2)] == [5.0, 12.0]
    memo = P.poly.build({"poly": {"knob_val": 40}})
    assert memo(3.0) == 10.0 and memo(3.0 + 1e-9) == 10.0  # quantised to the same key
    assert P.poly(3.0 + 1e-9) == (3.0 + 1e-9) ** 2 + 1.0
    casc = P.doubled.build({"doubled": {"knob_val": 1}})
    assert (casc(3.0), casc(7.0), P.doubled(7.0)) == (6.0, 0.0, 14.0)  # confidence >= 5 only for v > 5


def test_specialisations_by_dtype_and_rank():
    @Knob()
    def total(x: np.ndarray) -> float:
        s = 0.0
        for v in x:
            s += v
        return s

    x64 = np.linspace(0, 1, 11)
    x32 = x64.astype(np.float32)
    xi = np.arange(10, dtype=np.int32)
    assert total(x64) == total.python(x64)
    r32 = total(x32)
    assert r32 == total.python(x32) and np.float32(r32) == r32  # accumulated in f32, as NumPy does
    assert total(xi) == total.python(xi) == 45.0
    assert len(total._runner.table) == 3
    assert "memref<?xf32>" in total.ir(args=(x32,))


def test_kernel_calls_and_builtins():
    @Knob()
    def norm(x: np.ndarray, p: float) -> float:
        s = 0.0
        for i in range(len(x) - 1, -1, -1):
            s += abs(x[i]) ** p
        return math.pow(s, 1.0 / p) + round(2.5) + int(-2.7) + float(True) + x.size + x.ndim

    for x, p in [(np.array([3.0, -4.0]), 2.0), (np.array([1.0, 2.0, 3.0]), 3.0), (np.zeros(0), 1.0)]:
        assert norm(x, p) == norm.python(x, p)


def test_in_place_update_of_int_array():
    @Knob()
    def clip(x: np.ndarray, lo: int, hi: int) -> None:
        for i in range(len(x)):
            if x[i] < lo:
                x[i] = lo
            elif x[i] > hi:
                x[i] = hi

    a = np.array([-5, 0, 3, 9, 12], dtype=np.int64)
    b = a.copy()
    assert clip(a, 0, 10) is None
    clip.python(b, 0, 10)
    assert a.tolist() == b.tolist() == [0, 0, 3, 9, 10]


@pytest.mark.parametrize("kwargs", [{}, {"n": 3}])
def test_keyword_and_default_arguments(kwargs):
    @Knob()
    def head(x: np.ndarray, n: int = 2) -> float:
        return x[n - 1]

    x = np.array([1.0, 2.0, 3.0])
    assert head(x, **kwargs) == head.python(x, **kwargs)
