"""Kept component outputs under fire: a program keeping its real MiniLM readers'
outputs (`kept_outputs.db`) tuned by `--jobs` workers that are killed -9 while they run
trials and keep calls, then the whole run mid-trial; the same command in one process
resumes the study. Every kept row is then checked: its bytes against its SHA-256, its
result against a fresh run of its call, and read back through `KeptOutputs.get`.

`python -m bench.reliability_fire` runs it after the shared study (`--kept-jobs`,
`--kept-kills`: kills at random moments); tests/test_study_under_fire.py holds the
workers at a gate and kills them there, so every kill lands on any machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sys
import time
from pathlib import Path

from bench.reliability_crash import finish, kill_group, running_workers, start

PROGRAM = "bench.reliability_kept:reader_program"


def reader_program():
    """`ask` of one real MiniLM reader (6 layers) with two knobs (the 3-layer reader, bfloat16):
    deterministic providers, so it keeps its outputs."""
    from examples.systems.common import readers
    from frontends import Knob
    from frontends.components.declare import Generate, Tune

    fast, pro = readers()
    answer = Generate("answer", pro, tune=[Tune.substitute("model", fast), Tune.precision("bfloat16")])

    def ask(question, passages):
        return answer(question, passages).text

    return Knob()(ask)


def qa_inputs(n: int | None = None):
    """SQuAD questions, each with its own paragraph and the next one (so a call reads two),
    and their answers; `n` from APPROX_FIRE_QUESTIONS (24)."""
    from examples import squad

    n = n or int(os.environ.get("APPROX_FIRE_QUESTIONS", "24"))
    paragraphs, questions = squad.paragraphs(), squad.questions()
    picked = questions[::max(1, len(questions) // n)][:n]
    return ([(q.question, (paragraphs[q.paragraph], paragraphs[(q.paragraph + 1) % len(paragraphs)]))
             for q in picked], [q.answers for q in picked])


def kept_command(out: Path, jobs: int, program: str = PROGRAM) -> list[str]:
    """The `approx-tune run` of `program` (a spec: `reader_program` or one built from it)."""
    return [sys.executable, "-m", "autotuner.cli", "run", program,
            "--inputs", "bench.reliability_kept:qa_inputs", "--metric", "containment", "--mode", "static",
            "--trials", "4", "--jobs", str(jobs), "--sampler", "random", "--seed", "0", "--repeats", "1",
            "--eval-ratio", "1", "--stage-fraction", "0", "--out", str(out), "--no-progress"]


def kept_rows(path: Path) -> dict[str, tuple[bytes, str]]:
    import sqlite3

    with sqlite3.connect(path) as db:
        return {k: (bytes(b), d) for k, b, d in db.execute("SELECT key, result, digest FROM kept")}


def fresh_calls(out: Path, into: Path) -> None:
    """Every configuration the study measured, run in this process on every input with its
    calls kept in a new file `into`: what each call gives when nothing is killed."""
    import optuna

    from autotuner import open_storage

    program = reader_program()
    assert program.keep_outputs(into)
    study = optuna.load_study(study_name=optuna.get_all_study_names(open_storage(f"sqlite:///{out / 'study.db'}"))[0],
                              storage=open_storage(f"sqlite:///{out / 'study.db'}"))
    configs = {json.dumps(t.user_attrs["config"], sort_keys=True) for t in study.get_trials(deepcopy=False)
               if "config" in t.user_attrs} | {json.dumps({})}
    inputs = qa_inputs()[0]
    with program.reuse.reading():
        for cfg in sorted(configs):
            fn = program.build(json.loads(cfg))
            for args in inputs:
                fn(*args)


def _untimed(data):
    """A kept result without the seconds its answer took (a measurement, not the result)."""
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k != "seconds"}
    return [_untimed(v) for v in data] if isinstance(data, list) else data


def kill_at_random(out: Path, proc, kills: int, rng: random.Random) -> tuple[int, int]:
    """Up to `kills` workers of the run `proc` (its --out `out`) with a trial running,
    killed -9 at random moments (the run replaces them), then the whole run once, mid-trial;
    (workers killed, 1 if the run was killed). A run that ends first ends the kills."""
    db, done = out / "study.db", 0
    while done < kills and proc.poll() is None:
        time.sleep(rng.uniform(0.2, 1.0))
        pids = running_workers(db)
        if pids:
            try:
                os.kill(rng.choice(pids), signal.SIGKILL)
                done += 1
            except ProcessLookupError:
                pass
    while proc.poll() is None and not running_workers(db):
        time.sleep(0.1)
    if proc.poll() is None:
        kill_group(proc)
        return done, 1
    proc.communicate()
    return done, 0


def resumed_and_checked(base: Path, out: Path, program: str = PROGRAM) -> dict:
    """The killed run's command again in one process (no workers to start), then every
    kept row of `out` checked: its bytes match its SHA-256, and it reads back equal to a
    fresh run of its call (the seconds an answer took aside: a measurement, not the result)."""
    from frontends.components.kept import KeptOutputs

    code, err = finish(start(kept_command(out, 1, program)), timeout=1800)
    path = out / "kept_outputs.db"
    rows = kept_rows(path) if path.exists() else {}
    fresh_calls(out, base / "fresh.db")
    fresh = kept_rows(base / "fresh.db")
    torn = sum(1 for b, d in rows.values() if hashlib.sha256(b).hexdigest() != d)
    store = KeptOutputs(path)
    differ = unknown = 0
    for key, (blob, _) in rows.items():
        if key not in fresh:
            unknown += 1
        elif _untimed(json.loads(blob)) != _untimed(json.loads(fresh[key][0])):
            differ += 1
    read_back = sum(1 for key in rows if store.get(key) is not None)
    return {"resumed": code == 0, "error": err[-1500:] if code else "", "rows": len(rows), "fresh_rows": len(fresh),
            "torn": torn, "different": differ, "unknown": unknown, "read_back": read_back}


def kept_under_fire(base: Path, jobs: int, kills: int, seed: int = 0) -> dict:
    """`approx-tune run` of `reader_program` with `jobs` workers, killed at random
    (`kill_at_random`), resumed and checked (`resumed_and_checked`); the figures."""
    out, t0 = base / "kept", time.monotonic()
    done, whole = kill_at_random(out, start(kept_command(out, jobs)), kills, random.Random(seed))
    return {"worker_kills": done, "run_kills": whole, **resumed_and_checked(base, out), "wall": time.monotonic() - t0}
