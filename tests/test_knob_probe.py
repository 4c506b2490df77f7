"""Knob values that pay on this machine: measured once (paired, thread CPU time), cached
per machine, and a value that does not pay is left out with one line saying why."""

from __future__ import annotations

import json

import numpy as np

from frontends.components.machine import PROBE_FILE, machine_key, paying_values

WORK = {None: 160, "half": 100, "slow": 220}  # matrix size per value: a quarter, twice the exact work


def run_at(calls: list):
    def run(value):
        calls.append(value)
        a = np.ones((WORK[value], WORK[value]))
        for _ in range(20):
            a = a @ a / WORK[value]

    return run


def test_a_cheaper_value_pays_and_a_slower_one_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setenv("APPROX_CACHE_DIR", str(tmp_path))
    calls, lines = [], []
    assert paying_values("m.precision", run_at(calls), ("half", "slow"), log=lines.append) == ["half"]
    assert len(lines) == 1 and lines[0].startswith("m.precision = slow left out on this machine")
    assert machine_key() in lines[0]
    cached = json.loads((tmp_path / PROBE_FILE).read_text())[machine_key()]["m.precision"]
    assert cached["half"] > 1.15 > cached["slow"]
    # the second time the cache answers: nothing runs
    calls.clear()
    assert paying_values("m.precision", run_at(calls), ("half", "slow"), log=None) == ["half"]
    assert calls == []


def test_a_new_candidate_is_measured_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("APPROX_CACHE_DIR", str(tmp_path))
    paying_values("m.precision", run_at([]), ("half",), log=None)
    calls = []
    paying_values("m.precision", run_at(calls), ("half", "slow"), log=None)
    assert set(calls) == {None, "slow"}


def test_a_faster_value_changing_most_answers_is_left_out_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("APPROX_CACHE_DIR", str(tmp_path))
    answers = {None: ["a", "b", "c"], "half": ["a", "x", "y"]}

    def run(value):
        run_at([])(value)
        return answers[value]

    lines: list[str] = []
    assert paying_values("m.precision", run, ("half",), log=lines.append) == []
    assert lines == ["m.precision = half left out: the exact answer on 33% of the probe's questions (needs >= 50%)"]
    answers["half"] = ["a", "b", "y"]
    assert paying_values("m.precision", run, ("half",), log=None, refresh=True) == ["half"]
