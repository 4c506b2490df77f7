"""Component outputs kept on disk: the results of deterministic component calls
(greedy decoding on one thread, a greedy request to an OpenAI-compatible endpoint, a
retriever, a pure tool), keyed by the op, its settings, its providers and its
operands, with the seconds the call took when it ran.

Why: a costly program spends its time in a few calls (the LLM), and the autotuner
measures hundreds of configurations that share most of them. A configuration's QoS
pass then runs only the calls that changed; a resumed or later study of the same
program reads what earlier ones ran; and the kept seconds make a cost model (what a
configuration's calls took when they ran) that ranks configurations before any of
them is timed. Timed passes never read it: they run every call.

One SQLite file, shared by the worker processes of a study (WAL, a busy timeout).
Each row holds the result as JSON (`encode`: answers, numbers, text, arrays and their
containers; nothing is unpickled or evaluated, a result of another type is not kept)
and its SHA-256: a row whose bytes do not match (a torn or corrupted write) is
deleted and the call runs again, never read as a result. A call that raises is
never kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from dataclasses import fields
from pathlib import Path
from typing import Any

from approx_dialect.diagnostics import ApproxError

SCHEMA = ("CREATE TABLE IF NOT EXISTS kept (key TEXT PRIMARY KEY, op TEXT NOT NULL, result BLOB NOT NULL, "
          "digest TEXT NOT NULL, wall REAL NOT NULL, cpu REAL NOT NULL)")


def settings_text(settings) -> str:
    """The settings an op's result depends on, as text (its label, where time is
    counted, is not one of them)."""
    return repr(tuple((f.name, getattr(settings, f.name)) for f in fields(settings) if f.compare))


def provider_identity(provider) -> str:
    """What names a provider across processes: its `identity` (e.g. a model with its
    weights' digest) where it has one, else its class and name."""
    ident = getattr(provider, "identity", None)
    if callable(ident):
        ident = ident()
    if ident:
        return str(ident)
    return f"{type(provider).__module__}.{type(provider).__qualname__}:{getattr(provider, 'name', '')}"


def call_key(op: str, settings, providers: tuple[str, ...], operands) -> str:
    """The key of one call: equal only when op, settings, providers and operands are."""
    text = repr((op, settings_text(settings), providers, operands))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _answer_type():
    from frontends.components.llm.base import Answer

    return Answer


def encode(value):
    """`value` as JSON data: None, bools, numbers, text, lists, tuples, dicts of text
    keys, numpy arrays and answers (`llm.base.Answer`); a TypeError for anything else."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"array": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return encode(value.item())
    if type(value) is _answer_type():
        return {"answer": {f.name: encode(getattr(value, f.name)) for f in fields(value)}}
    raise TypeError(f"a {type(value).__name__} is not kept")


def decode(data):
    """The value `encode` gave `data` for."""
    import numpy as np

    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "tuple" in data:
        return tuple(decode(v) for v in data["tuple"])
    if "dict" in data:
        return {k: decode(v) for k, v in data["dict"].items()}
    if "array" in data:
        return np.asarray(data["array"], dtype=np.dtype(data["dtype"]))
    if "answer" in data:
        return _answer_type()(**{k: decode(v) for k, v in data["answer"].items()})
    raise ValueError("not a kept value")


class KeptOutputs:
    """The kept results of one program's calls in `path` (created on first use)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._local = threading.local()
        self.corrupt = 0  # rows found torn or corrupted (deleted, their calls run again)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None or getattr(self._local, "pid", None) != os.getpid():
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(SCHEMA)
            except (OSError, sqlite3.Error) as err:
                raise ApproxError(f"cannot open the kept component outputs: {err}", where=str(self.path)) from None
            self._local.db, self._local.pid = db, os.getpid()
        return db

    def get(self, key: str) -> tuple[Any, float, float] | None:
        """(result, wall seconds, CPU seconds) of a kept call, or None."""
        row = self._db().execute("SELECT result, digest, wall, cpu FROM kept WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        blob, digest, wall, cpu = row
        try:
            if hashlib.sha256(blob).hexdigest() != digest:
                raise ValueError("digest mismatch")
            result = decode(json.loads(blob))
        except (ValueError, TypeError, KeyError):  # a torn or corrupted row: never a result
            self.corrupt += 1
            self._db().execute("DELETE FROM kept WHERE key = ?", (key,))
            return None
        return result, float(wall), float(cpu)

    def put(self, key: str, op: str, result, wall: float, cpu: float) -> bool:
        """Keep a call's result; False (nothing kept) when it is of a type `encode` does not know."""
        try:
            blob = json.dumps(encode(result), separators=(",", ":")).encode()
        except (TypeError, ValueError):
            return False
        self._db().execute("INSERT OR REPLACE INTO kept VALUES (?, ?, ?, ?, ?, ?)",
                           (key, op, blob, hashlib.sha256(blob).hexdigest(), float(wall), float(cpu)))
        return True

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM kept").fetchone()[0])

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None and getattr(self._local, "pid", None) == os.getpid():
            db.close()
        self._local.db = None
