"""`make demo` keeps to its time on any CPU: the LLM demo's search gets what the rest of the
command (its set-up included) leaves of its budget, decided on the exact program's measured
seconds a question (here injected, never timed)."""

from __future__ import annotations

import pytest

from examples.demo import FIXED_SECONDS, MIN_SEARCH, REPLAY_RUNS, TUNE_RUNS, rest_seconds, search_seconds


def test_a_slower_machine_searches_less_and_the_rest_keeps_its_share():
    fast = search_seconds(600, 20, 0.5, 8, 40, 300)
    slow = search_seconds(600, 20, 2.5, 8, 40, 300)
    assert fast == 300  # the system's own search time is the most it gets
    rest = FIXED_SECONDS + (TUNE_RUNS * 8 + REPLAY_RUNS * 40) * 2.5
    assert slow == pytest.approx(600 - 20 - rest) and slow < fast
    assert 20 + slow + rest_seconds(2.5, 8, 40) == pytest.approx(600)  # the whole budget, no more


def test_the_set_up_counts_against_the_budget():
    assert search_seconds(600, 150, 1.5, 8, 40, 400) == pytest.approx(search_seconds(600, 20, 1.5, 8, 40, 400) - 130)


def test_two_workers_share_the_held_out_questions_not_the_tuning_ones():
    one, two = search_seconds(400, 20, 1.0, 8, 40, 300), search_seconds(400, 20, 1.0, 8, 40, 300, jobs=2)
    assert two - one == pytest.approx(REPLAY_RUNS * 40 / 2)


def test_the_search_never_falls_below_its_floor():
    assert search_seconds(480, 20, 30.0, 8, 40, 120) == MIN_SEARCH
    assert search_seconds(10, 20, 1.0, 8, 40, 120) == MIN_SEARCH
