"""Third-party output is off at the command line unless --verbose: `approx-tune run`
as a user starts it prints no line of Optuna's, and with --verbose Optuna's own lines
come back; the quiet blocks around model loading follow the same switch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from frontends.quiet import QUIET_ENV, VERBOSE_ENV, quiet_third_party

ROOT = Path(__file__).resolve().parents[1]
OPTUNA_LINES = ("A new study created", "Trial 0 finished")


def approx_tune(tmp_path: Path, *flags: str) -> str:
    """stdout and stderr of a small `approx-tune run` in its own process (Optuna's handler
    writes to the process's stderr, which only a separate process shows as a user sees it); 4 trials,
    each of which Optuna would announce."""
    env = {k: v for k, v in os.environ.items() if k not in (VERBOSE_ENV, *QUIET_ENV)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    cmd = [sys.executable, "-m", "autotuner.cli", *flags, "run", f"{ROOT / 'examples/mlir/adaptive_sum.mlir'}:mean",
           "--inputs", "test_autotuner_cli:adaptive_inputs", "--mode", "static", "--trials", "4", "--repeats", "1",
           "--out", str(tmp_path / "out"), "--no-progress"]
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr


@pytest.mark.slow
def test_approx_tune_prints_no_optuna_line(tmp_path):
    text = approx_tune(tmp_path)
    assert "adaptive_sum.mlir:mean: 4 trials" in text  # its own summary is there
    assert not [line for line in text.splitlines() if any(s in line for s in OPTUNA_LINES)], text


@pytest.mark.slow
def test_verbose_shows_optuna_lines(tmp_path):
    text = approx_tune(tmp_path, "--verbose")
    assert all(s in text for s in OPTUNA_LINES), text


def test_the_switch_is_restored(monkeypatch):
    import optuna

    for k in (VERBOSE_ENV, *QUIET_ENV):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "info")  # the user's own setting wins
    before = optuna.logging.get_verbosity()
    with quiet_third_party(False):
        assert os.environ[VERBOSE_ENV] == "0" and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
        assert os.environ["TRANSFORMERS_VERBOSITY"] == "info"
        assert optuna.logging.get_verbosity() == optuna.logging.WARNING
    assert VERBOSE_ENV not in os.environ and "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    assert optuna.logging.get_verbosity() == before
    with quiet_third_party(True):
        assert os.environ[VERBOSE_ENV] == "1" and "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
        assert optuna.logging.get_verbosity() == before


@pytest.mark.parametrize("verbose", [False, True])
def test_model_loading_hides_bars_unless_verbose(monkeypatch, capsys, verbose):
    """A tqdm bar written straight to stderr (as transformers' GGUF conversion does)."""
    from tqdm.auto import tqdm

    from frontends.components.hf_loading import quiet_loading

    monkeypatch.setenv(VERBOSE_ENV, "1" if verbose else "0")
    with quiet_loading():
        for _ in tqdm(range(3), desc="converting tensors"):
            pass
    assert ("converting tensors" in capsys.readouterr().err) == verbose
