"""Two `approx-tune run` processes (as on two machines) join one study in a real
PostgreSQL server, which this test starts on loopback (Debian's `postgresql`
package; skipped where it is not installed) and stops afterwards."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def _ensure_postgres() -> Path:
    """Debian's PostgreSQL binaries where installed; the test installs nothing itself."""
    if _bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    return _bin_dir()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    pytest.importorskip("psycopg2", reason="psycopg2-binary (pyproject's test extra) is not installed")
    bindir = _ensure_postgres()
    as_user: list[str] = []
    data = Path(tempfile.mkdtemp(prefix="approx-pg-"))
    if os.geteuid() == 0:  # initdb refuses root: run the server as the package's `postgres` user
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(data, "postgres", "postgres")
    port = _free_port()

    def sh(*cmd, timeout=120):
        return subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=timeout, cwd=data)

    init = sh(str(bindir / "initdb"), "-D", str(data / "db"), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    assert init.returncode == 0, init.stderr
    start = sh(str(bindir / "pg_ctl"), "-D", str(data / "db"), "-l", str(data / "log"), "-w", "-t", "60",
               "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1", "start")
    assert start.returncode == 0, start.stderr + (data / "log").read_text()
    try:
        made = sh(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "approx")
        assert made.returncode == 0, made.stderr
        yield f"postgresql://postgres@127.0.0.1:{port}/approx"
    finally:
        sh(str(bindir / "pg_ctl"), "-D", str(data / "db"), "-m", "fast", "-w", "-t", "60", "stop")
        shutil.rmtree(data, ignore_errors=True)


def test_two_workers_join_one_study_in_postgresql(postgres_url, tmp_path):
    import optuna

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    cmd = [sys.executable, "-m", "autotuner.cli", "run", f"{ROOT / 'examples/mlir/adaptive_sum.mlir'}:mean",
           "--inputs", "test_autotuner_cli:adaptive_inputs", "--mode", "dynamic", "--trials", "10",
           "--repeats", "1", "--storage", postgres_url, "--study-name", "pg", "--no-progress"]
    procs = [subprocess.Popen([*cmd, "--out", str(tmp_path / f"w{i}")], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            p.kill()
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    from autotuner import open_storage

    study = optuna.load_study(study_name="pg/dynamic", storage=open_storage(postgres_url))
    workers = {t.user_attrs.get("worker") for t in study.get_trials() if t.state.name == "COMPLETE"}
    assert len(workers) == 2, workers  # both processes ran trials of the one study
    from autotuner._records import counts

    assert 10 <= counts(study)["evaluated"] <= 11
    assert "postgres@127.0.0.1" in (tmp_path / "w0" / "result.json").read_text()  # the URL, no password
