"""Crash-safe tuning with real `approx-tune run` processes on one
SQLite file: `kill -9` of a worker mid-trial and of the whole run keeps every
finished trial as it was and ends on the front of an uninterrupted run with the
same seed; several worker processes on one file never fail on a locked database.

The cost is deterministic (`--objective money`, elements visited: see
bench/reliability_crash.py), so "the same front" means equal configurations, QoS
losses and speedups, not close ones. `python -m bench.reliability_crash` repeats
the kills at random moments at size; here each kill lands where the run is held
(tests/gate.py: the trials after the first few wait in their cost call until the
test opens the gate), so it hits a trial mid-run on every machine, however fast
or busy.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from bench.reliability_crash import (
    ROOT,
    complete_trials,
    finish,
    front,
    kill_group,
    locked,
    lost,
    running_workers,
    start,
)
from bench.reliability_crash import command as bench_command
from tests import gate

TRIALS = 12
PATIENCE = 600  # seconds before the test gives up on a run that never reaches the gate or never ends (a working
# one does both in seconds: ~5 s for a run of TRIALS here, which a slow, busy machine may make minutes)


def command(*args, **kwargs) -> list[str]:
    """The bench's command with its cost behind the gate (the same cost: the same fronts)."""
    return [{"bench.reliability_crash:work_units": "tests.gate:work_units"}.get(a, a)
            for a in bench_command(*args, **kwargs)]


def start_held(out: Path, monkeypatch, finished: int, *args):
    """`command(out, *args)` started with its trials held once `finished` are COMPLETE."""
    with monkeypatch.context() as m:
        m.setenv(gate.FOLDER, str(out))
        m.setenv(gate.AT, str(finished))
        return start(command(out, *args))


def held(out: Path, proc) -> list[int]:
    """Wait until a process of the run is held mid-trial at the gate; their pids."""
    deadline = time.monotonic() + PATIENCE
    while not gate.waiting(out) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if not gate.waiting(out):
        pytest.fail(f"no trial held at the gate (exit {proc.poll()}): {proc.communicate()[1][-2000:]}")
    return gate.waiting(out)


def trials(db: Path) -> list[dict]:
    """Every trial: number, state, worker pid, user attributes."""
    with sqlite3.connect(db) as con:
        rows = con.execute("select trial_id, number, state from trials").fetchall()
        attrs = con.execute("select trial_id, key, value_json from trial_user_attributes").fetchall()
        workers = dict(con.execute("select trial_id, value_json from trial_system_attributes where key = 'worker'"))
    out = {tid: {"number": n, "state": s, "attrs": {},
                 "pid": int(json.loads(workers[tid]).rsplit(":", 1)[1]) if tid in workers else None}
           for tid, n, s in rows}
    for tid, k, v in attrs:
        out[tid]["attrs"][k] = json.loads(v)
    return sorted(out.values(), key=lambda t: t["number"])


def evaluated(rows: list[dict]) -> int:
    return sum(1 for t in rows if t["state"] == "COMPLETE" and "duplicate_of" not in t["attrs"])


def check_rerun(rows: list[dict], killed: dict) -> None:
    """The killed trial ended as interrupted (FAIL, no error) and its configuration ran again to the end."""
    assert killed["state"] == "FAIL" and "error" not in killed["attrs"]
    reruns = [t for t in rows if t["attrs"].get("rerun_of") == killed["number"]]
    assert len(reruns) == 1 and reruns[0]["state"] == "COMPLETE" and reruns[0]["attrs"]["attempt"] == 2
    if "key" in killed["attrs"]:  # killed after it chose its configuration (else: sampled again, same index)
        assert reruns[0]["attrs"]["key"] == killed["attrs"]["key"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Uninterrupted runs, one worker each, seed 0: sampler -> final front."""
    base = tmp_path_factory.mktemp("ref")
    procs = {s: start(command(base / s, TRIALS, 1, s)) for s in ("nsga2", "random")}
    out = {}
    for s, proc in procs.items():
        code, err = finish(proc, timeout=PATIENCE)
        assert code == 0, err[-2000:]
        out[s] = front(base / s)
    assert len(out["nsga2"]) >= 3  # a front worth comparing
    return out


def test_kill_9_of_a_worker_mid_trial_loses_nothing_and_keeps_the_front(tmp_path, reference, monkeypatch):
    """--jobs 2: a worker dies with a trial running; the run replaces it and finishes."""
    db = tmp_path / "study.db"
    proc = start_held(tmp_path, monkeypatch, 2, TRIALS, 2, "random")
    try:
        pid = held(tmp_path, proc)[0]
        assert pid in running_workers(db)
        before = complete_trials(db)
        os.kill(pid, signal.SIGKILL)
        gate.open_gate(tmp_path)
        code, err = finish(proc, timeout=PATIENCE)
    finally:
        if proc.poll() is None:
            kill_group(proc)
    assert code == 0 and not locked(err), err[-2000:]
    rows = trials(db)
    assert lost(before, db) == 0 and evaluated(rows) == TRIALS
    killed = [t for t in rows if t["pid"] == pid and t["state"] != "COMPLETE"]
    assert len(killed) == 1
    check_rerun(rows, killed[0])
    # random sampler: configuration i depends on (seed, index i) only, so 1 or 2 workers give one front
    assert front(tmp_path) == reference["random"]


def test_kill_9_of_the_whole_run_then_the_same_command_resumes_to_the_same_front(tmp_path, reference, monkeypatch):
    """One worker, NSGA-II (which reads earlier results): kill -9 of the process group mid-trial."""
    db = tmp_path / "study.db"
    proc = start_held(tmp_path, monkeypatch, 5, TRIALS, 1, "nsga2")
    try:
        held(tmp_path, proc)
        before = complete_trials(db)
    finally:
        kill_group(proc)
    running = [t for t in trials(db) if t["state"] == "RUNNING"]
    assert len(running) == 1 and len(before) < TRIALS  # killed in the middle of a trial
    code, err = finish(start(command(tmp_path, TRIALS, 1, "nsga2")), timeout=PATIENCE)
    assert code == 0, err[-2000:]
    rows = trials(db)
    assert lost(before, db) == 0 and evaluated(rows) == TRIALS
    check_rerun(rows, next(t for t in rows if t["number"] == running[0]["number"]))
    assert front(tmp_path) == reference["nsga2"]


def test_several_workers_on_one_sqlite_file_never_fail_on_a_locked_database(tmp_path):
    """Two runs on one file (3 + 1 worker processes, short trials, 4 writers)."""
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    base = [sys.executable, "-m", "autotuner.cli", "run", f"{ROOT / 'examples/mlir/adaptive_sum.mlir'}:mean",
            "--inputs", "bench.reliability_crash:adaptive_inputs", "--mode", "dynamic", "--trials", "10",
            "--repeats", "1", "--clock", "cpu", "--storage", url, "--no-progress"]
    procs = [start(base + ["--jobs", "3", "--study-name", "a", "--out", str(tmp_path / "a")]),
             start(base + ["--jobs", "1", "--study-name", "b", "--out", str(tmp_path / "b")])]
    results = [finish(p, timeout=PATIENCE) for p in procs]
    assert all(code == 0 and not locked(err) and "locked" not in err for code, err in results), results
    rows = trials(tmp_path / "shared.db")
    assert not any("locked" in str(t["attrs"].get("error", "")) for t in rows)
    assert sum(t["state"] == "COMPLETE" for t in rows) >= 2 * 10 and not any(t["state"] == "RUNNING" for t in rows)
    assert [json.loads((tmp_path / d / "result.json").read_text())["trials"] for d in "ab"] == [10, 10]
