"""The SQLite study storage under several worker processes: a queued trial is run by
one worker only, because each transaction holds the write lock from its first read."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import optuna
import pytest

from autotuner.storage import open_storage

WORKERS = 6


def test_a_transaction_holds_the_write_lock_from_its_first_read(tmp_path):
    path = tmp_path / "study.db"
    storage = open_storage(f"sqlite:///{path}")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    with storage.engine.connect() as conn, conn.begin():
        conn.exec_driver_sql("SELECT 1")
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
    other.execute("BEGIN IMMEDIATE")  # free once it ends
    other.execute("COMMIT")


def _ask(url: str, barrier, out) -> None:
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    barrier.wait()
    trial = study.ask()
    out.put((trial.number, dict(trial.params)))


def test_workers_asking_together_run_a_queued_trial_once(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="s", storage=open_storage(url))
    for x in range(2):
        study.enqueue_trial({"x": x})
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [ctx.Process(target=_ask, args=(url, barrier, out)) for _ in range(WORKERS)]
    for p in procs:
        p.start()
    got = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    numbers = [n for n, _ in got]
    assert len(set(numbers)) == WORKERS, f"a trial went to several workers: {sorted(numbers)}"
    assert sorted(n for n in numbers if n < 2) == [0, 1]  # the queued ones, once each
