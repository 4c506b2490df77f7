"""The study storage: `open_storage` gives one Optuna RDB storage per URL and
process: SQLite in WAL mode with a busy timeout (several worker processes share
the file; a commit survives a killed process), or any SQLAlchemy URL
(`postgresql://...`, with heartbeats, so a dead worker's trial ends as
interrupted). Below the search and the workers, which all open studies here."""

from __future__ import annotations

import functools
import importlib.util
import random
import sqlite3
import time
import warnings

import optuna

from approx_dialect.diagnostics import ApproxError


def safe_url(url: str) -> str:
    """A storage URL without its password, for messages and the result."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL: a path
        return url


def _sqlite_connect(path: str) -> sqlite3.Connection:
    # isolation_level=None: the driver emits no BEGIN of its own; `_begin_immediate` does
    con = sqlite3.connect(path, timeout=120, check_same_thread=False, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


def _begin_immediate(conn) -> None:
    """Each transaction takes SQLite's write lock when it starts. Python's driver would
    begin one only at its first write, after the reads: two workers then both read the
    same queued trial as WAITING, both mark it RUNNING and both run it, and the second
    to finish cannot record it ("Cannot tell a PRUNED trial")."""
    conn.exec_driver_sql("BEGIN IMMEDIATE")


_STORAGES: dict[str, optuna.storages.RDBStorage] = {}


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage (one per URL and process); SQLite waits on a locked
    file instead of failing."""
    if url not in _STORAGES:
        _STORAGES[url] = _open_storage(url)
    return _STORAGES[url]


def _open_storage(url: str) -> optuna.storages.RDBStorage:
    engine_url, kwargs, extra = url, {}, {}
    if url.startswith("sqlite:///") and url[10:] not in ("", ":memory:"):
        # WAL + synchronous=NORMAL: a commit survives a killed process without an fsync
        # (10 ms each here); the busy timeout makes workers wait for a locked file.
        kwargs["creator"] = functools.partial(_sqlite_connect, url[10:])
    elif not url.startswith("sqlite"):
        kwargs["pool_pre_ping"] = True
        # a dead worker's trial ends as interrupted and is queued again (`_seeding.end_abandoned`)
        extra = {"heartbeat_interval": 10, "grace_period": 60, "heartbeat_stale_trial_callback": requeue}
        if url.startswith("postgresql"):
            kwargs["connect_args"] = {"connect_timeout": 10}
            if url.startswith("postgresql://") and importlib.util.find_spec("psycopg") is None:
                engine_url = "postgresql+psycopg2://" + url[13:]  # SQLAlchemy 2.1 defaults to psycopg 3
    for attempt in range(5):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                storage = optuna.storages.RDBStorage(engine_url, engine_kwargs=kwargs, **extra)
            if "creator" in kwargs:
                from sqlalchemy import event

                event.listen(storage.engine, "begin", _begin_immediate)
            return storage
        except Exception as err:
            msg = root_cause(err)
            # runs and workers starting together on a new database race to create Optuna's tables; on a
            # new SQLite file (not yet in WAL mode) SQLite answers a lock deadlock with "locked" at once
            if attempt < 4 and any(m in msg for m in ("already exists", "duplicate key", "UniqueViolation",
                                                      "UNIQUE constraint failed", "database is locked")):
                time.sleep((1.0 + attempt) * (0.5 + random.random()))
                continue
            raise ApproxError(f"cannot open the study storage: {msg}", where=safe_url(url)) from None
    raise AssertionError("unreachable")


def requeue(study, t) -> None:
    """Queue the re-run of the interrupted trial `t`: its parameters, its seeding index
    (else a new configuration would take its place). Here, where the storage's
    heartbeat callback needs it, as `autotuner._seeding` does."""
    params = dict(t.system_attrs.get("fixed_params") or {})
    if "key" in t.user_attrs:  # it had its configuration (part of it: sampled again, same RNG draws)
        params.update(t.params)
    attempt = t.user_attrs.get("attempt", 1) + 1
    study.enqueue_trial(params, user_attrs={"rerun_of": t.number, "attempt": attempt})



def root_cause(err: BaseException) -> str:
    """The first line of the innermost error (the database's own words, e.g. "database
    disk image is malformed", not Optuna's wrapper)."""
    while err.__cause__ is not None or err.__context__ is not None:
        err = err.__cause__ or err.__context__
    text = str(getattr(err, "orig", None) or err).strip()
    return text.splitlines()[0] if text else type(err).__name__
