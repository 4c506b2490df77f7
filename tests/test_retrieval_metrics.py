"""Ranking measures (`rbo` is the autotuner's, re-exported): RBO_ext known values
(worked by hand from Webber et al.'s eq. 32), agreement with the equation written
out directly, recall@k."""

from __future__ import annotations

import numpy as np
import pytest

from frontends.components.retrieval.metrics import rbo, recall_at_k


def rbo_by_definition(a, b, p=0.95) -> float:
    """Eq. 32 term by term, overlaps X_d recomputed from sets at each depth."""
    s_list, l_list = (a, b) if len(a) <= len(b) else (b, a)
    s, l = len(s_list), len(l_list)  # noqa: E741 (the paper's notation)
    x = {d: len(set(s_list[:d]) & set(l_list[:d])) for d in range(1, l + 1)}
    total = sum(x[d] / d * p**d for d in range(1, l + 1))
    total += sum(x[s] * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * total + ((x[l] - x[s]) / l + x[s] / s) * p**l


@pytest.mark.parametrize("a, b, want", [
    ([1, 2], [2, 1], 0.95),                      # p^2 + (1-p)/p * p^2
    ([1, 2, 3], [1, 3, 2], 0.97625),              # p^3 + (1-p)/p * (p + p^2/2 + p^3)
    ([1, 2, 3], [1, 2, 3], 1.0),
    (list(range(10)), list(range(10)), 1.0),
    ([1, 2, 3], [4, 5, 6], 0.0),
    ([1, 2, 3], [1, 2, 3, 4, 5, 6], 1.0),         # a prefix of the other list
    ([], [], 1.0),
    ([], [1], 0.0),
])
def test_known_values(a, b, want):
    assert rbo(a, b) == pytest.approx(want, abs=1e-12)
    assert rbo(b, a) == pytest.approx(want, abs=1e-12)


def test_p_changes_the_weight_of_the_top():
    # [1,2] vs [2,1]: p^2 + (1-p) p = p  for any p
    assert rbo([1, 2], [2, 1], p=0.5) == pytest.approx(0.5)


def test_agrees_with_the_equation_on_random_rankings():
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = list(rng.permutation(30)[: rng.integers(1, 12)])
        b = list(rng.permutation(30)[: rng.integers(1, 12)])
        assert rbo(a, b) == pytest.approx(rbo_by_definition(a, b), abs=1e-12)
        assert 0.0 <= rbo(a, b) <= 1.0 + 1e-12


def test_recall_at_k():
    ranking = np.array([7, 3, 9, 1])
    assert recall_at_k(ranking, 9) == 1.0
    assert recall_at_k(ranking, 9, k=2) == 0.0
    assert recall_at_k(ranking, np.int64(3), k=2) == 1.0
    assert recall_at_k(ranking, {5, 1}) == 1.0
    assert recall_at_k([], 1) == 0.0
