"""`make demo` keeps to its time on any CPU: the LLM demo's search gets what the rest of the
run leaves of its budget, decided on the exact program's measured seconds a question (here
injected, never timed)."""

from __future__ import annotations

import pytest

from examples.demo import MIN_SEARCH, REPLAY_RUNS, TUNE_RUNS, search_seconds


def test_a_slower_machine_searches_less_and_the_rest_keeps_its_share():
    fast = search_seconds(360, 20, 0.5, 8, 40, 120)
    slow = search_seconds(360, 20, 1.5, 8, 40, 120)
    assert fast == 120  # the system's own search time is the most it gets
    rest = (TUNE_RUNS * 8 + REPLAY_RUNS * 40) * 1.5
    assert slow == pytest.approx(360 - 20 - rest) and slow < fast
    assert 20 + slow + rest == pytest.approx(360)  # the whole budget, no more


def test_two_workers_share_the_questions():
    one, two = search_seconds(360, 20, 1.0, 8, 40, 300), search_seconds(360, 20, 1.0, 8, 40, 300, jobs=2)
    assert two - one == pytest.approx((TUNE_RUNS * 8 + REPLAY_RUNS * 40) / 2)


def test_the_search_never_falls_below_its_floor():
    assert search_seconds(360, 20, 30.0, 8, 40, 120) == MIN_SEARCH
    assert search_seconds(10, 20, 1.0, 8, 40, 120) == MIN_SEARCH
