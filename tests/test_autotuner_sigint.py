"""Ctrl-C on `approx-tune run --jobs 2` (a real SIGINT to the process group): exit
code 130, one line, finished trials kept, no trial left running."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def complete_trials(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return con.execute("select count(*) from trials where state = 'COMPLETE'").fetchone()[0]
    except sqlite3.OperationalError:  # tables not made yet
        return 0


@pytest.mark.slow
def test_ctrl_c_stops_all_workers_and_keeps_finished_trials(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    cmd = [sys.executable, "-m", "autotuner.cli", "run", f"{ROOT / 'examples/mlir/adaptive_sum.mlir'}:mean",
           "--inputs", "test_autotuner_cli:adaptive_inputs", "--mode", "dynamic", "--trials", "40",
           "--repeats", "3", "--jobs", "2", "--out", str(tmp_path), "--no-progress"]
    # its own process group, as a terminal would make it; SIGINT as in a terminal: a shell starts background
    # jobs (CI, `make test &`) with SIGINT ignored, and Python keeps an inherited SIG_IGN, so Ctrl-C would be lost
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while complete_trials(tmp_path / "study.db") < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()[1]
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: every process of the group gets it
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "interrupted: finished trials are kept" in err, err[-2000:]
    assert 3 <= complete_trials(tmp_path / "study.db") < 40  # kept (resuming is tested in test_autotuner_tune)
    with sqlite3.connect(tmp_path / "study.db") as con:  # no trial left RUNNING: each ended as interrupted
        assert con.execute("select count(*) from trials where state = 'RUNNING'").fetchone()[0] == 0


@pytest.mark.slow
def test_ctrl_c_while_workers_start_prints_no_traceback(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    cmd = [sys.executable, "-m", "autotuner.cli", "run", f"{ROOT / 'examples/mlir/adaptive_sum.mlir'}:mean",
           "--inputs", "test_autotuner_cli:adaptive_inputs", "--mode", "dynamic", "--trials", "40",
           "--repeats", "3", "--jobs", "2", "--out", str(tmp_path), "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "study.db").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.5)  # the worker processes are being spawned (importing the toolchain)
        assert proc.poll() is None, proc.communicate()[1]
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("interrupted: finished trials are kept"), err[-2000:]
