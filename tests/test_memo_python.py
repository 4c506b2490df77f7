"""frontends.memo.QuantizedMemo: the Python side of `memoize`, with the knob meaning
of approx_dialect/quantize.py (the JIT agreement is in test_memoize.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approx_dialect.quantize import float_word, slot_of
from frontends.memo import QuantizedMemo


def counting(memo: QuantizedMemo):
    calls = []

    @memo
    def f(x, n=0):
        calls.append((x, n))
        return 3 * x + n

    return f, calls


def test_one_bucket_reuses_the_first_result_other_buckets_recompute():
    f, calls = counting(QuantizedMemo(40))  # [1, 2): agree to 2^-12
    assert f(1.0) == 3.0
    assert f(1.0001) == 3.0
    assert f(1.001) == pytest.approx(3.003)
    assert f(-1.0001) == pytest.approx(-3.0003)
    assert len(calls) == 3 and f.memo.hits == 1 and f.memo.misses == 3


def test_knob_zero_never_reuses():
    f, calls = counting(QuantizedMemo(0))
    for _ in range(3):
        assert f(2.0) == 6.0
    assert len(calls) == 3 and len(f.memo) == 0


def test_integers_and_strings_are_compared_exactly():
    memo = QuantizedMemo(52)
    f, calls = counting(memo)
    assert f(1.0, 1) == 4.0 and f(1.9, 1) == 4.0  # one key per binade of floats
    assert f(1.9, 2) == pytest.approx(7.7)  # but n is exact
    g = memo(lambda prompt, temp: f"{prompt}@{temp}")
    assert g("a", 0.7) == "a@0.7" and g("a", 0.71) == "a@0.7" and g("b", 0.7) == "b@0.7"


def test_float32_uses_its_own_mantissa():
    memo = QuantizedMemo(23)
    f = memo(lambda x: float(x) * 2)
    assert f(np.float32(1.0)) == 2.0 and f(np.float32(1.75)) == 2.0
    assert f(1.75) == 3.5  # a Python float is f64: 23 bits is fine-grained there


def test_table_is_bounded_and_direct_mapped():
    memo = QuantizedMemo(10, capacity=64)
    f, calls = counting(memo)
    for x in np.linspace(0, 100, 5000):
        f(float(x))
    assert len(memo) <= 64
    a = 1.25
    b = next(float(x) for x in np.linspace(2, 3, 10000)
             if slot_of([float_word(float(x), 10), 0], 64) == slot_of([float_word(a, 10), 0], 64))
    memo.clear()
    f(a, 0), f(b, 0)  # b evicts a
    assert memo.lookup(a, 0) == (False, None)
    assert memo.lookup(b, 0) == (True, 3 * b)


@pytest.mark.parametrize("kwargs, message", [
    (dict(quantize_bits=53), "quantize_bits must be in 0..52"),
    (dict(quantize_bits=-1), "quantize_bits must be in 0..52"),
    (dict(quantize_bits=4, capacity=1000), "power of two"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        QuantizedMemo(**kwargs)


def test_unkeyable_argument():
    f = QuantizedMemo(4)(lambda d: d)
    with pytest.raises(TypeError, match="cannot key an argument of type dict"):
        f({})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=False), st.integers(-5, 5)), max_size=30))
def test_memoized_results_are_results_of_an_input_of_the_same_key(calls):
    """Soundness at any k: a reused result was computed from an input that
    quantises like the current one (exact at k = 0)."""
    for k in (0, 7, 30):
        memo = QuantizedMemo(k, capacity=8)
        f = memo(lambda x, n: (x, n))
        for x, n in calls:
            x0, n0 = f(x, n)
            assert n0 == n and float_word(x0, k) == float_word(x, k)
            if k == 0:
                assert (x0, n0) == (x, n)
