"""Ctrl-C on `approx-tune run --jobs 2` (a real SIGINT to the process group): exit
code 130, one line, finished trials kept, no trial left running. The run is held at a
gate (tests/gate.py) where the signal must land, mid-trial or while a worker starts,
and the signal is sent once a process waits there: the same moment on every machine."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import gate

ROOT = Path(__file__).resolve().parents[1]
TRIALS, JOBS, KEPT = 40, 2, 3  # trials asked for, worker processes, trials finished before the gate closes
PATIENCE = 600  # seconds a step may take before the test gives up on a hung run (never reached by a working one)


def ctrl_c_run(out: Path, at: str) -> subprocess.Popen:
    """`approx-tune run` of the gated adaptive_sum in its own process group, as a
    terminal would make it, with SIGINT as in a terminal: a shell starts background jobs
    (CI, `make test &`) with SIGINT ignored, and Python keeps an inherited SIG_IGN, so
    Ctrl-C would be lost."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
           gate.FOLDER: str(out), gate.AT: at}
    cmd = [sys.executable, "-m", "autotuner.cli", "run", "tests.gate:adaptive_sum",
           "--inputs", "test_autotuner_cli:adaptive_inputs", "--mode", "dynamic", "--trials", str(TRIALS),
           "--repeats", "3", "--jobs", str(JOBS), "--out", str(out), "--no-progress", "--metric", "tests.gate:rel_l2"]
    return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def ctrl_c_at_the_gate(proc: subprocess.Popen, out: Path) -> str:
    """Wait until a worker process waits at the gate, send Ctrl-C to the whole group,
    then open the gate (a worker the signal did not stop would run on, and the run would
    finish its trials); the run's stderr."""
    try:
        deadline = time.monotonic() + PATIENCE
        while not gate.waiting(out, other_than=proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert gate.waiting(out, other_than=proc.pid), "no worker reached the gate"
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: every process of the group gets it
        gate.open_gate(out)
        return proc.communicate(timeout=PATIENCE)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
def test_ctrl_c_stops_all_workers_and_keeps_finished_trials(tmp_path):
    """The gate holds every trial after the KEPT-th mid-run: each worker finishes at most
    the trial it was in, so KEPT to KEPT + JOBS trials are kept, far from TRIALS."""
    proc = ctrl_c_run(tmp_path, str(KEPT))
    err = ctrl_c_at_the_gate(proc, tmp_path)
    assert proc.returncode == 130 and "interrupted: finished trials are kept" in err, err[-2000:]
    assert KEPT <= gate.finished(tmp_path / "study.db") <= KEPT + JOBS  # kept (resuming: test_autotuner_tune)
    with sqlite3.connect(tmp_path / "study.db") as con:  # no trial left RUNNING: each ended as interrupted
        assert con.execute("select count(*) from trials where state = 'RUNNING'").fetchone()[0] == 0


@pytest.mark.slow
def test_ctrl_c_while_workers_start_prints_no_traceback(tmp_path):
    """Ctrl-C while a worker process is reading its job (SIGINT held back there, then
    the worker is stopped before it runs a trial)."""
    proc = ctrl_c_run(tmp_path, "start")
    err = ctrl_c_at_the_gate(proc, tmp_path)
    assert proc.returncode == 130 and "Traceback" not in err, err[-2000:]
    assert err.strip().splitlines()[-1].startswith("interrupted: finished trials are kept"), err[-2000:]
    assert gate.finished(tmp_path / "study.db") == 0  # no trial had run
