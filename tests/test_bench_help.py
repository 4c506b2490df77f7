"""Every benchmark script answers `--help` (what it measures, its options) without running.

The scripts run one after another in one Python process, each as `python bench/X.py
--help` would run it (`__main__`, its folder first on the path, the repository not on
it, none of the repository's modules imported yet), so that the libraries they import
(torch, 2 s) load once, not in each of ~30 processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("*.py") if 'if __name__ == "__main__":' in p.read_text())

# runs in a fresh interpreter in an empty folder: argv[1:] the scripts; prints {script: [exit code, stdout, stderr]}
EACH_AS_MAIN = r"""
import contextlib, io, json, os, runpy, sys, traceback
root, path, done = sys.argv[1], list(sys.path), {}
for script in sys.argv[2:]:
    before = set(sys.modules)
    sys.path[:] = [os.path.dirname(script), *path[1:]]
    sys.argv = [script, "--help"]
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    for name in set(sys.modules) - before:  # the repository's modules (not its venv's): imported again next
        where = getattr(sys.modules[name], "__file__", None) or ""
        if where.startswith(root) and not where.startswith(sys.prefix):
            del sys.modules[name]
    done[script] = [code, out.getvalue(), err.getvalue()]
print(json.dumps(done))
"""


@pytest.fixture(scope="module")
def helps(tmp_path_factory) -> tuple[dict, Path]:
    where = tmp_path_factory.mktemp("help")
    proc = subprocess.run([sys.executable, "-c", EACH_AS_MAIN, str(ROOT), *map(str, SCRIPTS)], cwd=where,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1]), where


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help(script, helps):
    done, where = helps
    code, out, err = done[str(script)]
    assert code == 0, err[-2000:]
    assert out.startswith("usage:") and "--help" in out, out[:500]
    assert not list(where.iterdir())  # nothing ran, nothing written
