"""A shared study under fire: separate `approx-tune run` processes on one study in
PostgreSQL (as on several machines), one of them killed with SIGKILL every
`--kill-every` seconds and started again with the same command; then a program
that keeps its component outputs (`kept_outputs.db`, real MiniLM readers) tuned
by `--jobs` workers that are killed while they run and write its calls
(bench/reliability_kept.py).

Prints, for the study: trials finished, kills, trials interrupted and re-run,
finished trials lost, configurations measured twice, trials left RUNNING, and
whether the study's front equals the front of the same study run without kills;
for the kept outputs: rows checked against a fresh run of each call, torn or
different rows, and whether the resumed study completes.

The front is compared exactly: the cost is deterministic (`--objective money`,
bench.reliability_crash.work_units: elements visited) and so is the QoS, and the
random sampler proposes configuration i from (seed, i) alone, so the kills, the
order in which workers finish and their number leave the front unchanged. The
cost call also sleeps (`--call-seconds`), as a priced API answers slowly: trials
last long enough to be killed in.

    python -m bench.reliability_fire [--workers 8] [--kill-every 60] [--duration 600]
    python -m bench.reliability_fire --workers 3 --kill-every 4 --duration 30   # small

The PostgreSQL server is started here on loopback (Debian's `postgresql`
package) unless `--storage` names one. `--workers 0` skips the study, `--kept-jobs 0`
the kept outputs.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.reliability_crash import PROGRAM, finish, kill_group, start  # noqa: E402
from bench.reliability_crash import work_units as _work_units  # noqa: E402
from bench.reliability_kept import kept_under_fire  # noqa: E402

CALL_SECONDS = "APPROX_FIRE_CALL_SECONDS"  # the cost call's sleep, inherited by every process of the run
STUDY = "fire"


def work_units(config, args, output):
    """The deterministic money cost of bench.reliability_crash, slower by the sleep of
    the run (`--call-seconds`)."""
    time.sleep(float(os.environ.get(CALL_SECONDS, "0")))
    return _work_units(config, args, output)


# --- PostgreSQL on loopback ---------------------------------------------------------------------------------------

def postgres_bin() -> Path | None:
    """Debian's PostgreSQL binaries, where installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


@contextmanager
def postgres():
    """A throwaway PostgreSQL server on a free loopback port; its URL."""
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    data = Path(tempfile.mkdtemp(prefix="approx-fire-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(data, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def sh(*cmd):
        done = subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=120, cwd=data)
        if done.returncode != 0:
            log = data / "log"
            raise RuntimeError(f"{cmd[0]}: {done.stderr}{log.read_text() if log.exists() else ''}")

    sh(str(bindir / "initdb"), "-D", str(data / "db"), "-U", "postgres", "--auth=trust", "-E", "UTF8")
    sh(str(bindir / "pg_ctl"), "-D", str(data / "db"), "-l", str(data / "log"), "-w", "-t", "60",
       "-o", f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c max_connections=200", "start")
    try:
        sh(str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "approx")
        yield f"postgresql://postgres@127.0.0.1:{port}/approx"
    finally:
        try:
            sh(str(bindir / "pg_ctl"), "-D", str(data / "db"), "-m", "fast", "-w", "-t", "60", "stop")
        finally:
            shutil.rmtree(data, ignore_errors=True)


# --- the study ----------------------------------------------------------------------------------------------------

def command(out: Path, storage: str, study: str, trials: int, jobs: int = 1) -> list[str]:
    return [sys.executable, "-m", "autotuner.cli", "run", PROGRAM,
            "--inputs", "bench.reliability_crash:adaptive_inputs", "--mode", "dynamic", "--trials", str(trials),
            "--jobs", str(jobs), "--sampler", "random", "--seed", "0",
            "--repeats", "1", "--objective", "money", "--money", "bench.reliability_fire:work_units",
            "--storage", storage, "--study-name", study, "--out", str(out), "--no-progress"]


def load(storage: str, study: str):
    import optuna

    from autotuner import open_storage

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna.load_study(study_name=f"{study}/dynamic", storage=open_storage(storage))


def snapshot(storage: str, study: str) -> dict[int, tuple]:
    """Trial number -> (configuration, values) of every COMPLETE trial (none before the study exists)."""
    try:
        trials = load(storage, study).get_trials(deepcopy=False)
    except KeyError:
        return {}
    return {t.number: (t.user_attrs.get("key"), tuple(t.values)) for t in trials if t.state.name == "COMPLETE"}


def running_pids(storage: str, study: str) -> set[int]:
    """Processes of this machine with a RUNNING trial of the study (the trial's `worker`, host:pid)."""
    try:
        trials = load(storage, study).get_trials(deepcopy=False)
    except KeyError:
        return set()
    me = socket.gethostname()
    return {int(w.rsplit(":", 1)[1]) for t in trials if t.state.name == "RUNNING"
            for w in [t.system_attrs.get("worker", "")] if w.startswith(me + ":")}


def study_front(storage: str, study: str, budget: float = 0.05) -> list[tuple]:
    """The study's front: (configuration, QoS loss, cost ratio), sorted."""
    from autotuner import config_key, front_of

    values = {t.user_attrs.get("key"): tuple(t.values) for t in load(storage, study).get_trials(deepcopy=False)
              if t.state.name == "COMPLETE" and "duplicate_of" not in t.user_attrs}
    return sorted((json.dumps(c, sort_keys=True), *values[config_key(c)])
                  for c in front_of(storage, f"{study}/dynamic", budget))


def seeding_index(trials, number: int) -> int:
    """A trial's seeding index as the tuner gives it: a re-run has its original's; the
    others count the trials before them that are not re-runs."""
    by_number = {t.number: t for t in trials}
    while number in by_number and "rerun_of" in by_number[number].user_attrs:
        number = by_number[number].user_attrs["rerun_of"]
    return sum(1 for t in trials if t.number < number and "rerun_of" not in t.user_attrs)


def audit(storage: str, study: str, n_trials: int, before: list[dict]) -> dict:
    """What the kills did to the study: finished trials lost (COMPLETE at a kill, gone or
    changed now), interrupted trials and their re-runs, configurations measured twice,
    seeding indices missing or repeated, trials left RUNNING or WAITING."""
    from autotuner import trial_counts

    s = load(storage, study)
    trials = s.get_trials(deepcopy=False)
    now = {t.number: (t.user_attrs.get("key"), tuple(t.values or ())) for t in trials if t.state.name == "COMPLETE"}
    lost = sum(1 for snap in before for n, row in snap.items() if now.get(n) != row)
    measured = [t for t in trials if t.state.name == "COMPLETE" and "duplicate_of" not in t.user_attrs]
    keys = [t.user_attrs.get("key") for t in measured]
    indices = [seeding_index(trials, t.number) for t in measured]
    stopped = [t for t in trials if t.state.name == "FAIL" and "error" not in t.user_attrs]  # interrupted
    reruns: dict[int, int] = {}
    for t in trials:
        if "rerun_of" in t.user_attrs and "duplicate_of" not in t.user_attrs:  # a re-run queued twice runs once
            reruns[t.user_attrs["rerun_of"]] = reruns.get(t.user_attrs["rerun_of"], 0) + 1
    return {"finished": len(measured), "evaluated": trial_counts(storage, f"{study}/dynamic")["evaluated"],
            "interrupted": len(stopped),
            "rerun": sum(1 for t in stopped if reruns.get(t.number)), "lost": lost,
            "duplicated": (len(keys) - len(set(keys))) + (len(indices) - len(set(indices)))
            + sum(n - 1 for n in reruns.values() if n > 1),
            "missing": len(set(range(n_trials)) - set(indices)),
            "running": sum(t.state.name == "RUNNING" for t in trials),
            "waiting": sum(t.state.name == "WAITING" for t in trials)}


def under_fire(base: Path, storage: str, workers: int, trials: int, kill_every: float, duration: float,
               rng: random.Random, say=print) -> dict:
    """`workers` runs of one study; every `kill_every` seconds (for `duration`) one of them,
    one with a trial running where there is one, is killed -9 and started again."""
    cmds = [command(base / f"w{i}", storage, STUDY, trials) for i in range(workers)]
    procs = [start(c) for c in cmds]
    snaps, kills, t0, failed, errors = [], 0, time.monotonic(), 0, []
    try:
        while time.monotonic() - t0 < duration and any(p.poll() is None for p in procs):
            time.sleep(kill_every * rng.uniform(0.75, 1.25))
            busy = running_pids(storage, STUDY)
            alive = [i for i, p in enumerate(procs) if p.poll() is None]
            mid = [i for i in alive if procs[i].pid in busy]
            if not alive:
                break
            i = rng.choice(mid or alive)
            snaps.append(snapshot(storage, STUDY))
            kill_group(procs[i])
            kills += 1
            procs[i] = start(cmds[i])
            say(f"  {time.monotonic() - t0:5.0f} s: killed run {i} ({'mid-trial' if mid else 'between trials'}), "
                f"started again; {len(snaps[-1])} trials complete")
        for p in procs:
            code, err = finish(p, timeout=max(600, 4 * duration))
            if code != 0:
                failed += 1
                errors.append(err[-1500:])
    finally:
        for p in procs:
            if p.poll() is None:
                kill_group(p)
    return {"kills": kills, "failed_runs": failed, "errors": errors, "snapshots": snaps,
            "wall": time.monotonic() - t0}


def reference(base: Path, storage: str, workers: int, trials: int) -> list[tuple]:
    """The same study (another name) run by the same number of runs, never killed: its front."""
    cmds = [command(base / f"ref{i}", storage, STUDY + "-ref", trials) for i in range(workers)]
    results = [finish(p, timeout=3600) for p in [start(c) for c in cmds]]
    bad = [err[-1500:] for code, err in results if code != 0]
    if bad:
        raise RuntimeError("the run without kills failed: " + bad[0])
    return study_front(storage, STUDY + "-ref")


def study_under_fire(base: Path, storage: str, workers: int, trials: int, kill_every: float, duration: float,
                     seed: int = 0, say=print) -> dict:
    """The study killed and restarted, then the same study without kills; the figures."""
    import concurrent.futures

    rng = random.Random(seed)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # the run without kills at the same time (mostly sleep)
        ref_run = pool.submit(reference, base, storage, workers, trials)
        fired = under_fire(base, storage, workers, trials, kill_every, duration, rng, say)
        ref = ref_run.result()
    figures = audit(storage, STUDY, trials, fired.pop("snapshots"))
    figures.update(fired)
    figures["front"] = study_front(storage, STUDY)
    figures["front_equal"] = figures["front"] == ref
    figures["front_points"] = len(ref)
    return figures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=8, help="approx-tune runs on the study")
    ap.add_argument("--kill-every", type=float, default=60, help="seconds between kills")
    ap.add_argument("--duration", type=float, default=600, help="seconds of kills")
    ap.add_argument("--call-seconds", type=float, default=1.0, help="sleep of each cost call")
    ap.add_argument("--trials", type=int, help="evaluations (default: enough to outlast --duration)")
    ap.add_argument("--storage", help="a PostgreSQL URL (default: a server started here)")
    ap.add_argument("--kept-jobs", type=int, default=3, help="workers of the kept-outputs run (0: skip it)")
    ap.add_argument("--kept-kills", type=int, default=6, help="worker kills in the kept-outputs run")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    ap.add_argument("--dir", default="/tmp/approx-reliability-fire")
    a = ap.parse_args(argv)
    base = Path(a.dir)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    os.environ[CALL_SECONDS] = str(a.call_seconds)
    # a trial makes about 3 cost calls; the runs together finish `workers` trials per trial time
    trials = a.trials or max(12, int(a.duration * a.workers / (3 * a.call_seconds + 1.0)))
    bad = _study(a, base, trials) if a.workers else 0
    if a.kept_jobs:
        bad += _kept(a, base)
    return 1 if bad else 0


def _study(a, base: Path, trials: int) -> int:
    with (postgres() if a.storage is None else _given(a.storage)) as url:
        print(f"study: {a.workers} runs, {trials} trials, a kill every {a.kill_every:g} s for {a.duration:g} s",
              flush=True)
        f = study_under_fire(base, url, a.workers, trials, a.kill_every, a.duration, a.seed,
                             say=lambda m: print(m, flush=True))
    print(f"study: finished {f['finished']} of {trials} (evaluated {f['evaluated']}); kills {f['kills']}; "
          f"interrupted {f['interrupted']}, re-run {f['rerun']}; lost {f['lost']}; duplicated {f['duplicated']}; "
          f"missing {f['missing']}; left RUNNING {f['running']} (WAITING {f['waiting']}); failed runs "
          f"{f['failed_runs']}; front ({f['front_points']} points) equal to the run without kills: "
          f"{'yes' if f['front_equal'] else 'NO'}; wall {f['wall']:.0f} s", flush=True)
    for e in f["errors"]:
        print("  failed run:", e, flush=True)
    return (f["lost"] + f["duplicated"] + f["missing"] + f["running"] + f["failed_runs"]
            + (f["interrupted"] - f["rerun"]) + (not f["front_equal"]))


def _kept(a, base: Path) -> int:
    print(f"kept outputs: {a.kept_jobs} workers, {a.kept_kills} kills", flush=True)
    k = kept_under_fire(base, a.kept_jobs, a.kept_kills, a.seed)
    print(f"kept outputs: {k['worker_kills']} workers and {k['run_kills']} whole run killed; resumed study "
          f"completed: {'yes' if k['resumed'] else 'NO'}; rows checked {k['rows']} (fresh run: "
          f"{k['fresh_rows']}); torn {k['torn']}, different from a fresh run {k['different']}, of no fresh "
          f"call {k['unknown']}; read back {k['read_back']}; wall {k['wall']:.0f} s", flush=True)
    if k["error"]:
        print("  resume failed:", k["error"], flush=True)
    return (not k["resumed"]) + k["torn"] + k["different"] + k["unknown"] + (k["read_back"] != k["rows"])


@contextmanager
def _given(url: str):
    yield url


if __name__ == "__main__":
    sys.exit(main())
