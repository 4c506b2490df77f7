"""Shared helpers for the tests: parse/print round trips and running approx-opt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, stdin: str | None = None, timeout: float = 60):
    return subprocess.run(
        [sys.executable, "-m", "approx_opt.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture
def cli():
    return run_cli
