"""A shared study under fire, small: separate `approx-tune run` processes on one
study in a real PostgreSQL server (as on several machines), each of them killed
with SIGKILL mid-trial once and started again: no trial lost, measured twice or
left RUNNING, every killed trial re-run once, and the study's front equal to the
same study run without kills. Then a program keeping its real MiniLM readers'
outputs, its workers killed while they run and keep calls: every kept row matches
its SHA-256 and equals a fresh run of its call, and the resumed study completes.

`python -m bench.reliability_fire` does the same at size (8 runs, a kill a minute
for 10 minutes; kills of the kept-outputs workers at random moments). Each kill here
lands where the run is held: the run's cost call, or the reader program's call,
waits at a gate of its own (tests/gate.py) that the test closes, so the kill hits a
trial on every machine, however fast or busy.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

import pytest

from bench import reliability_fire as fire
from bench import reliability_kept as kept
from bench.reliability_crash import finish, kill_group, running_workers, start
from tests import gate

pytestmark = pytest.mark.slow
RUNS, TRIALS = 2, 16
SLOT = "APPROX_FIRE_SLOT"  # the gate folder of one run (each run has its own)
URL = "APPROX_FIRE_URL"  # the study's storage, where a held cost call sees that its process runs a trial
PATIENCE = 600  # seconds before the test gives up on a run that never reaches its gate (a working one does)
HOLD = "APPROX_KEPT_HOLD"  # the kept-outputs run's --out: its gate, and the study where a held call sees its trial
HELD = "tests.test_study_under_fire:held_reader_program"


def held_units(config, args, output):
    """bench.reliability_fire.work_units behind the run's own gate: while the test has
    it closed (no `gate.open` in the folder), a cost call of a trial waits there (one
    outside a trial, the exact program's or the held-out split's, goes on)."""
    where = os.environ.get(SLOT)
    if where and not (Path(where) / "gate.open").exists() and \
            os.getpid() in fire.running_pids(os.environ[URL], fire.STUDY):
        gate.wait(Path(where))
    return fire.work_units(config, args, output)


def command(out: Path, url: str, study: str) -> list[str]:
    return [{"bench.reliability_fire:work_units": "tests.test_study_under_fire:held_units"}.get(a, a)
            for a in fire.command(out, url, study, TRIALS)]


@pytest.fixture(scope="module")
def postgres_url():
    pytest.importorskip("psycopg2", reason="psycopg2-binary (pyproject's test extra) is not installed")
    if fire.postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with fire.postgres() as url:
        yield url


def start_run(out: Path, url: str, slot: Path, monkeypatch):
    with monkeypatch.context() as m:
        m.setenv(SLOT, str(slot))
        m.setenv(URL, url)
        m.setenv(fire.CALL_SECONDS, "0.1")
        return start(command(out, url, fire.STUDY))


def wait_until(ready, procs, what: str) -> None:
    """Wait for an event of the runs (never a guessed time); fail if they end first, or
    if it never comes within PATIENCE."""
    deadline = time.monotonic() + PATIENCE
    while not ready():
        if any(p.poll() is not None for p in procs):
            pytest.fail(f"a run ended before {what}: {[p.communicate()[1][-1500:] for p in procs if p.poll()]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {PATIENCE} s")
        time.sleep(0.05)


def test_runs_killed_mid_trial_and_started_again_lose_nothing_and_keep_the_front(postgres_url, tmp_path,
                                                                                 monkeypatch):
    slots = [tmp_path / f"gate{i}" for i in range(RUNS)]
    for s in slots:
        s.mkdir()
        gate.open_gate(s)
    outs = [tmp_path / f"w{i}" for i in range(RUNS)]
    procs = [start_run(outs[i], postgres_url, slots[i], monkeypatch) for i in range(RUNS)]
    snaps = []
    try:
        wait_until(lambda: len(fire.snapshot(postgres_url, fire.STUDY)) >= 4, procs, "4 trials")
        for slot in slots:  # every run is held at its next trial, so none can finish the study alone
            (slot / "gate.open").unlink()
        wait_until(lambda: all(gate.waiting(s) for s in slots), procs, "all were held")
        for i in range(RUNS):  # each run killed in its held trial, then started again; the later ones still held
            snaps.append(fire.snapshot(postgres_url, fire.STUDY))
            kill_group(procs[i])
            for p in slots[i].glob("gate.waiting.*"):
                p.unlink()
            gate.open_gate(slots[i])
            procs[i] = start_run(outs[i], postgres_url, slots[i], monkeypatch)
        results = [finish(p, timeout=PATIENCE) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                kill_group(p)
    assert all(code == 0 for code, _ in results), [err[-2000:] for _, err in results]
    figures = fire.audit(postgres_url, fire.STUDY, TRIALS, snaps)
    assert figures["interrupted"] == RUNS and figures["rerun"] == RUNS, str(figures)  # one trial per kill, re-run
    assert figures["finished"] == figures["evaluated"] == TRIALS, str(figures)
    assert figures["lost"] == figures["duplicated"] == figures["missing"] == 0, str(figures)
    assert figures["running"] == figures["waiting"] == 0, str(figures)
    ref = [start(command(tmp_path / f"ref{i}", postgres_url, fire.STUDY + "-ref")) for i in range(RUNS)]
    assert all(code == 0 for code, _ in (finish(p, timeout=PATIENCE) for p in ref))  # the same runs, no kills
    assert fire.study_front(postgres_url, fire.STUDY) == fire.study_front(postgres_url, fire.STUDY + "-ref")


def held_reader_program():
    """bench.reliability_kept.reader_program whose calls after a build's first, in a
    worker's trial, wait at the run's gate while the test keeps it closed: a worker is
    killed with the first call of its trial kept, in the middle of the next one."""
    program = kept.reader_program()
    build = program.build

    def held_build(config):
        fn, calls = build(config), itertools.count()

        def run(*args):
            where = os.environ.get(HOLD)
            if next(calls) and where and not (Path(where) / "gate.open").exists() and \
                    os.getpid() in running_workers(Path(where) / "study.db"):
                gate.wait(Path(where))
            return fn(*args)

        return run

    program.build = held_build
    return program


def interrupted(db: Path) -> int:
    """Trials of the one study in `db` that a kill interrupted (FAIL with no error)."""
    import optuna

    from autotuner import open_storage

    storage = open_storage(f"sqlite:///{db}")
    (name,) = optuna.get_all_study_names(storage)
    return sum(t.state.name == "FAIL" and "error" not in t.user_attrs
               for t in optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False))


def test_kept_outputs_of_killed_workers_are_whole_or_absent_and_the_study_resumes(tmp_path, monkeypatch):
    """A worker of a real-reader program killed -9 while held in a call of its trial, the
    run ending that trial and starting another worker; then the whole run, held in another
    trial. The same command completes the study, and every kept row is whole and equal to
    a fresh run of its call."""
    monkeypatch.setenv("APPROX_FIRE_QUESTIONS", "8")  # 4 to tune on: a trial's second call is where it is held
    out, db = tmp_path / "kept", tmp_path / "kept" / "study.db"
    out.mkdir()
    with monkeypatch.context() as m:
        m.setenv(HOLD, str(out))
        proc = start(kept.kept_command(out, 2, HELD))
    try:
        wait_until(lambda: gate.waiting(out), [proc], "a worker held mid-trial")
        pid = gate.waiting(out)[0]
        os.kill(pid, signal.SIGKILL)
        (out / f"gate.waiting.{pid}").unlink()
        wait_until(lambda: pid not in running_workers(db), [proc], "the run ending the killed worker's trial")
        wait_until(lambda: gate.waiting(out), [proc], "another worker held mid-trial")
        kill_group(proc)  # then the whole run, mid-trial
    finally:
        if proc.poll() is None:
            kill_group(proc)
    k = kept.resumed_and_checked(tmp_path, out, HELD)  # the same command, not held: the gate's folder is not set
    assert k["resumed"], k["error"]
    assert interrupted(db) >= 2  # the worker's trial and the held one of the run (a replacement's too, if started)
    assert k["rows"] > 0 and k["torn"] == k["different"] == k["unknown"] == 0 and k["read_back"] == k["rows"], k
