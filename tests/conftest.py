"""Shared helpers for the tests: parse/print round trips and running approx-opt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One compute thread per process (torch, OpenMP, BLAS), here and in the processes the tests start: `make test`
# runs two workers on two cores, and a second thread in each only waits for the other worker's
# (8 % more CPU time over the torch-heavy files). A test that wants more threads sets them itself.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The test files that took longest on 2 cores (`pytest --durations=0`), longest first. `make test`
# hands whole files to its two workers in collection order (`--no-loadscope-reorder`): started
# first, no long file is left to run alone at the end while the other worker idles.
LONGEST_FIRST = (
    "test_systems_conformance.py", "test_study_under_fire.py", "test_systems_rag.py", "test_autotuner_model_timing.py",
    "test_crash_safe_tuning.py", "test_llm_engine_exact.py", "test_systems_agent_llm.py", "test_component_faults.py",
    "test_own_pipeline.py", "test_autotuner_tune.py", "test_llm_token_exit.py", "test_autotuner_sharded.py",
    "test_llm_engine.py", "test_systems_tools_llm.py", "test_declared_settings.py", "test_llm_smollm.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the other files keep their order


def run_cli(*args: str, stdin: str | None = None, timeout: float = 60):
    return subprocess.run(
        [sys.executable, "-m", "approx_opt.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture(scope="module", autouse=True)
def _release_models_after_each_file():
    """A test file's example models go when it ends (`tests.model_caches`): one worker runs many files."""
    yield
    from tests.model_caches import release_models

    release_models()


@pytest.fixture
def cli():
    return run_cli
