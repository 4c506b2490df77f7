"""Crash-safe tuning at size: `kill -9` of worker processes
mid-trial and of whole `approx-tune run`s at random moments, on one SQLite file.

Prints the kills, finished trials lost (a trial COMPLETE before a kill that is
gone or changed after), runs whose final front differs from the uninterrupted
run's with the same seed, "database is locked" errors, and the wall time.

"Same front" is well-defined because the cost is deterministic: the speedup is a
ratio of `work_units` (elements the kernel visits, an `--objective money` cost),
and the QoS (rel_l2 of a JIT kernel) is too; so the front (configurations, QoS
loss, speedup) of two runs with one seed must be equal, not merely close.
Measured times would make fronts of two uninterrupted runs differ already.

    python -m bench.reliability_crash [--runs 10] [--trials 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = f"{ROOT / 'examples/mlir/adaptive_sum.mlir'}:mean"
STUDY = "adaptive_sum.mlir:mean/dynamic"
SLOW_CALL = 0.02  # seconds per cost call: a priced API answers in tens of ms (and trials last long enough to hit)


def adaptive_inputs():
    """12 arrays of 100 .. 100000 samples, no ground truth (2 tune, 10 held out)."""
    rng = np.random.default_rng(1)
    return [(x, len(x)) for x in (rng.random(int(n)) + 1.0 for n in np.geomspace(100, 100_000, 12))], None


def work_units(config, args, output):
    """Elements `@mean` visits under `config` (its decision tree picks the stride by n)."""
    time.sleep(SLOW_CALL)
    _, n = args
    s = config["mean"]
    k = s["decisions"][sum(n >= t for t in s["thresholds"])] if "decisions" in s else s.get("knob_val", 0)
    return n / max(k, 1)


def command(out: Path, trials: int = 20, jobs: int = 1, sampler: str = "nsga2", seed: int = 0,
            extra: tuple = ()) -> list[str]:
    return [sys.executable, "-m", "autotuner.cli", "run", PROGRAM,
            "--inputs", "bench.reliability_crash:adaptive_inputs",
            "--mode", "dynamic", "--trials", str(trials), "--jobs", str(jobs), "--sampler", sampler,
            "--seed", str(seed), "--repeats", "1", "--objective", "money", "--money",
            "bench.reliability_crash:work_units", "--out", str(out), "--no-progress", *extra]


def start(cmd: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group: kill -9 of the whole run


def finish(proc: subprocess.Popen, timeout: float = 180) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        return -1, err + "\n(timed out)"
    return proc.returncode, err


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate(timeout=30)


def _query(db: Path, sql: str) -> list:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10) as con:
            return con.execute(sql).fetchall()
    except sqlite3.OperationalError:  # tables not made yet
        return []


def complete_trials(db: Path) -> dict[int, tuple]:
    """Trial number -> (configuration, QoS loss, speedup) of every COMPLETE trial."""
    rows = _query(db, "select t.number, a.value_json, v.objective, v.value from trials t "
                      "join trial_user_attributes a on a.trial_id = t.trial_id and a.key = 'key' "
                      "join trial_values v on v.trial_id = t.trial_id where t.state = 'COMPLETE'")
    out: dict[int, dict] = {}
    for number, key, objective, value in rows:
        out.setdefault(number, {"key": json.loads(key)})[objective] = value
    return {n: (d["key"], d.get(0), d.get(1)) for n, d in out.items()}


def running_workers(db: Path) -> list[int]:
    """Process ids of workers with a RUNNING trial (the `worker` mark, host:pid)."""
    rows = _query(db, "select s.value_json from trials t join trial_system_attributes s on s.trial_id = t.trial_id "
                      "and s.key = 'worker' where t.state = 'RUNNING'")
    return [int(json.loads(v).rsplit(":", 1)[1]) for (v,) in rows]


def front(out: Path) -> list[tuple]:
    """The run's final front: (configuration, QoS loss, speedup) on the tuning split."""
    data = json.loads((out / "result.json").read_text())
    return sorted((json.dumps(p["knobs"], sort_keys=True), p["qos_loss_tune"], p["speedup_tune"])
                  for p in data["front"])


def lost(before: dict[int, tuple], db: Path) -> int:
    """Trials COMPLETE before a kill that are gone, or hold other values, after it."""
    after = complete_trials(db)
    return sum(1 for n, row in before.items() if after.get(n) != row)


def locked(text: str) -> int:
    return text.count("database is locked")


def kill_workers(out: Path, jobs: int, sampler: str, seed: int, trials: int, kills: int, rng) -> dict:
    """One `--jobs` run; `kills` times a worker with a RUNNING trial is killed -9."""
    db, stats = out / "study.db", {"kills": 0, "lost": 0, "locked": 0, "failed_runs": 0}
    proc, snaps = start(command(out, trials, jobs, sampler, seed)), []
    deadline = time.monotonic() + 120
    while stats["kills"] < kills and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.2, 1.5))
        pids = running_workers(db)
        if not pids or len(complete_trials(db)) < 2:
            continue
        snaps.append(complete_trials(db))
        try:
            os.kill(rng.choice(pids), signal.SIGKILL)
            stats["kills"] += 1
        except ProcessLookupError:  # it ended its trial meanwhile
            snaps.pop()
    code, err = finish(proc)
    stats["locked"] += locked(err)
    stats["failed_runs"] += code != 0
    stats["lost"] += sum(lost(s, db) for s in snaps)
    return stats


def kill_runs(out: Path, jobs: int, sampler: str, seed: int, trials: int, kills: int, rng,
              ref_seconds: float) -> dict:
    """The same command killed -9 (process group) `kills` times at random moments, then let finish."""
    db, stats = out / "study.db", {"kills": 0, "lost": 0, "locked": 0, "failed_runs": 0}
    for _ in range(kills):
        proc = start(command(out, trials, jobs, sampler, seed))
        time.sleep(rng.uniform(0.3, ref_seconds))
        before = complete_trials(db)
        if proc.poll() is not None:  # it finished first: nothing to kill
            stats["locked"] += locked(proc.communicate()[1])
            break
        kill_group(proc)
        stats["kills"] += 1
        stats["lost"] += lost(before, db)
    code, err = finish(start(command(out, trials, jobs, sampler, seed)))
    stats["locked"] += locked(err)
    stats["failed_runs"] += code != 0
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="killed runs (each 2-4 kills)")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill moments (the studies use seed 0..)")
    ap.add_argument("--dir", default="/tmp/approx-reliability-crash")
    a = ap.parse_args(argv)
    import shutil

    base = Path(a.dir)
    shutil.rmtree(base, ignore_errors=True)
    rng = random.Random(a.seed)
    t0 = time.monotonic()
    refs, ref_seconds = {}, {}
    for sampler in ("nsga2", "random"):  # uninterrupted references (one worker)
        t = time.monotonic()
        code, err = finish(start(command(base / f"ref-{sampler}", a.trials, 1, sampler, 0)))
        assert code == 0, err[-2000:]
        refs[sampler], ref_seconds[sampler] = front(base / f"ref-{sampler}"), time.monotonic() - t
    total = {"kills": 0, "lost": 0, "locked": 0, "failed_runs": 0, "front_differs": 0, "worker_kills": 0,
             "run_kills": 0}
    for i in range(a.runs):
        out = base / f"run{i}"
        kills = rng.randint(2, 4)
        if i % 2 == 0:  # workers: 2-4 on one SQLite file; random sampler (index-seeded, order-free)
            jobs, sampler = rng.randint(2, 4), "random"
            s = kill_workers(out, jobs, sampler, 0, a.trials, kills, rng)
            total["worker_kills"] += s["kills"]
        else:  # whole runs: one worker with NSGA-II (reads earlier results), or 2 workers with random
            jobs = rng.randint(1, 2)
            sampler = "nsga2" if jobs == 1 else "random"
            s = kill_runs(out, jobs, sampler, 0, a.trials, kills, rng, ref_seconds[sampler])
            total["run_kills"] += s["kills"]
        differs = s["failed_runs"] == 0 and front(out) != refs[sampler]
        for k in ("kills", "lost", "locked", "failed_runs"):
            total[k] += s[k]
        total["front_differs"] += differs
        print(f"run {i:2d}: {'workers' if i % 2 == 0 else 'whole run'} jobs={jobs} {sampler:6s} kills={s['kills']} "
              f"lost={s['lost']} locked={s['locked']} failed={s['failed_runs']} "
              f"front {'DIFFERS' if differs else 'same'}",
              flush=True)
    wall = time.monotonic() - t0
    print(f"kills: {total['kills']} ({total['worker_kills']} workers mid-trial, {total['run_kills']} whole runs) in "
          f"{a.runs} runs of {a.trials} trials; finished trials lost: {total['lost']}; runs whose front differs "
          f"from the uninterrupted run's: {total['front_differs']}; runs that failed: {total['failed_runs']}; "
          f"'database is locked' errors: {total['locked']}; wall {wall:.0f} s")
    bad = total["lost"] + total["front_differs"] + total["locked"] + total["failed_runs"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
