"""Where the components read the benchmark data and keep what they build: one place
for each folder, an environment setting over a default beside the repository."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    """The benchmark data (SQuAD, BFCL, NQ-open): APPROX_DATA_DIR, default
    `<repo>/../shared/data`."""
    return Path(os.environ.get("APPROX_DATA_DIR", REPO.parent / "shared" / "data"))


def cache_dir() -> Path:
    """What is slow to build and kept between runs (corpus embeddings, the dequantised
    SmolLM2, the machine probe): APPROX_CACHE_DIR, default `<repo>/.cache/approx`."""
    return Path(os.environ.get("APPROX_CACHE_DIR", REPO / ".cache" / "approx"))


@contextlib.contextmanager
def exclusive_lock(path: Path):
    """Held by one process at a time: an exclusive lock on the file `path` (made if missing),
    given back when the block ends or its holder dies (a kept build, the probe file)."""
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
