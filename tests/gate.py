"""A gate that holds a real `approx-tune run` at a known point until the test opens it,
so that a test signals or kills the run there on an event, never after a guessed time
(on one machine a run's trials are all done before a timed signal arrives, on a busy
one it has not started).

The test sets APPROX_TEST_GATE to the run's --out folder and APPROX_TEST_GATE_AT to
where the run waits: `start` (a worker process unpickling its job, which holds the
`rel_l2` metric below: SIGINT is still held back there) or N (every run of
`adaptive_sum` and every `work_units` call once the study in that folder has N
COMPLETE trials: the trials after the N-th are held mid-trial). A waiting process
marks itself `gate.waiting.<pid>` in the folder and waits until the test writes
`gate.open`."""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from approx_opt.program import MlirProgram
from autotuner import metrics
from bench import reliability_crash

ROOT = Path(__file__).resolve().parents[1]
FOLDER, AT = "APPROX_TEST_GATE", "APPROX_TEST_GATE_AT"
_held = False  # this process has seen the study reach N: it waits from now on, without asking again


def folder() -> Path | None:
    where = os.environ.get(FOLDER)
    return Path(where) if where else None


def finished(db: Path) -> int:
    """COMPLETE trials of the study in `db`; 0 before its tables exist (a locked file is waited on)."""
    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)) as con:
            return con.execute("select count(*) from trials where state = 'COMPLETE'").fetchone()[0]
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return 0
        raise


def wait(where: Path) -> None:
    """Mark this process as waiting, and wait until the gate is open."""
    (where / f"gate.waiting.{os.getpid()}").touch()
    while not (where / "gate.open").exists():
        time.sleep(0.01)


def waiting(where: Path, other_than: int | None = None) -> list[int]:
    """The processes waiting at the gate (but `other_than`)."""
    pids = [int(p.name.rsplit(".", 1)[1]) for p in where.glob("gate.waiting.*")]
    return [p for p in pids if p != other_than]


def open_gate(where: Path) -> None:
    (where / "gate.open").touch()


def in_trial() -> None:
    """Where a trial passes the gate: once the study has N COMPLETE trials, it waits."""
    global _held
    where, at = folder(), os.environ.get(AT, "")
    if where is None or not at.isdigit() or (where / "gate.open").exists():
        return
    if not _held and finished(where / "study.db") < int(at):
        return
    _held = True
    wait(where)


class GatedProgram(MlirProgram):
    """An MlirProgram whose every run passes the gate first."""

    def build(self, config):
        fn = super().build(config)

        def run(*args):
            in_trial()
            return fn(*args)

        return run


class StartGate:
    """The rel_l2 metric, whose copy in a worker process (unpickled from its job, before
    the worker can take a Ctrl-C) waits at the gate with `start`."""

    __name__ = "rel_l2"

    def __call__(self, output, reference) -> float:
        return metrics.rel_l2(output, reference)

    def __reduce__(self):
        return _unpickled, ()


def _unpickled() -> StartGate:
    where = folder()
    if where is not None and os.environ.get(AT) == "start" and not (where / "gate.open").exists():
        wait(where)
    return StartGate()


rel_l2 = StartGate()  # `approx-tune run ... --metric tests.gate:rel_l2`


def adaptive_sum() -> GatedProgram:
    """examples/mlir/adaptive_sum.mlir's @mean behind the gate (`approx-tune run tests.gate:adaptive_sum`)."""
    return GatedProgram.from_file(ROOT / "examples/mlir/adaptive_sum.mlir", "mean")


def work_units(config, args, output):
    """bench.reliability_crash.work_units (the deterministic money cost) behind the gate."""
    in_trial()
    return reliability_crash.work_units(config, args, output)
