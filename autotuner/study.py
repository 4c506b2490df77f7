"""`tune()`: run (or resume) the studies of a program, re-measure their fronts on
the held-out split, and return a `TuningResult`.

Storage: SQLite under the output folder by default (a busy timeout, so several
worker processes share the file); any SQLAlchemy URL (`postgresql://...`) lets
workers on several machines join the same study (heartbeats turn a dead
worker's trial into an interrupted one). The same study name resumes: finished
trials are kept, `n_trials` is the total, and the settings must match. One study
per mode, named `<name>/static` and `<name>/dynamic`. Ctrl-C stops cleanly: the
running trials end as interrupted, finished ones stay.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import multiprocessing as mp
import pickle
import re
import sqlite3
import sys
import time
import warnings
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import optuna
from optuna.trial import TrialState

from approx_dialect.diagnostics import ApproxError
from autotuner import search
from autotuner.loading import as_program
from autotuner.measure import Measurer, split_inputs
from autotuner.program import MlirProgram
from autotuner.results import RESULT_ATTR, FrontPoint, TrialPoint, TuningResult, _safe_url
from autotuner.space import SearchSpace

WHERE = "<approx-tune>"


def _sqlite_connect(path: str) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=120, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


_STORAGES: dict[str, optuna.storages.RDBStorage] = {}


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage (one per URL and process); SQLite waits on a locked
    file instead of failing."""
    if url not in _STORAGES:
        _STORAGES[url] = _open_storage(url)
    return _STORAGES[url]


def _open_storage(url: str) -> optuna.storages.RDBStorage:
    engine_url, kwargs, extra = url, {}, {}
    if url.startswith("sqlite:///") and url[10:] not in ("", ":memory:"):
        # WAL + synchronous=NORMAL: a commit survives a killed process without an fsync
        # (10 ms each here); the busy timeout makes workers wait for a locked file.
        kwargs["creator"] = functools.partial(_sqlite_connect, url[10:])
    elif not url.startswith("sqlite"):
        kwargs["pool_pre_ping"] = True
        extra = {"heartbeat_interval": 10, "grace_period": 60}  # a dead worker's trial ends as interrupted
        if url.startswith("postgresql"):
            kwargs["connect_args"] = {"connect_timeout": 10}
            if url.startswith("postgresql://") and importlib.util.find_spec("psycopg") is None:
                engine_url = "postgresql+psycopg2://" + url[13:]  # SQLAlchemy 2.1 defaults to psycopg 3
    for attempt in range(3):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(engine_url, engine_kwargs=kwargs, **extra)
        except Exception as err:
            msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            # workers starting together on a new database race to create Optuna's tables
            if attempt < 2 and ("already exists" in msg or "duplicate key" in msg or "UniqueViolation" in msg):
                time.sleep(1.0 + attempt)
                continue
            raise ApproxError(f"cannot open the study storage: {msg}", where=_safe_url(url)) from None
    raise AssertionError("unreachable")


@dataclass
class Job:
    """What one worker process needs (picklable, for --jobs)."""

    program: Any
    inputs: list
    references: list | None
    metric: Any
    repeats: int
    money: Callable | None
    objective: str
    storage: str
    study_name: str
    space: SearchSpace
    budget: float
    slice_n: int | None
    n_trials: int
    sampler: str
    seed: int
    clock: str = "wall"


def _measurer(job: Job) -> Measurer:
    return Measurer(job.program, job.inputs, job.references, job.metric, job.repeats, job.money, job.objective,
                    clock=job.clock)


_BUILT: OrderedDict[tuple, Callable] = OrderedDict()


def build(program, config: dict) -> Callable:
    """`program.build(config)`, remembered (the slice and the full split, a resumed
    study and the held-out evaluation use one build; the pipeline costs ~0.1 s)."""
    key = (getattr(program, "text", None) or id(program), getattr(program, "entry", ""), search.config_key(config))
    if key not in _BUILT:
        _BUILT[key] = program.build(config)
        while len(_BUILT) > 128:
            _BUILT.popitem(last=False)
    _BUILT.move_to_end(key)
    return _BUILT[key]


def run_job(job: Job, measurer: Measurer | None = None, callbacks=()) -> None:
    """One worker: trials in this process until the study is done."""
    job = replace(job, program=as_program(job.program))
    m = measurer or _measurer(job)
    study = optuna.load_study(study_name=job.study_name, storage=open_storage(job.storage),
                              sampler=search.TrialSeeded(job.sampler, job.seed, job.n_trials, job.budget))

    def evaluate(config, n=None):
        return m.measure(build(job.program, config), config, n, repeats=min(3, job.repeats) if n else None)

    objective = search.Objective(job.space, evaluate, job.budget, job.slice_n)
    search.optimize(study, objective, job.n_trials, job.space.size(), callbacks)


def _worker_main(job: Job, errors) -> None:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        run_job(job)
    except KeyboardInterrupt:
        pass
    except ApproxError as err:
        errors.put(err.line())
    except Exception as err:  # a bug: one line for the parent to report
        errors.put(f"error: internal error in a worker: {type(err).__name__}: {err}")


def _progress_line(study, job: Job, mode: str) -> str:
    c = search.counts(study)
    fr = search.front(search.records(study), job.budget)
    best = max((r.speedup for r in fr), default=float("nan"))
    return (f"[approx-tune {mode}] trials {c['evaluated']}/{job.n_trials} (pruned {c['pruned']}, "
            f"failed {c['failed']}, running {c['running']}) | front {len(fr)} | "
            f"best speedup within budget {best:.2f}x")


def _run_workers(job: Job, jobs: int, study, mode: str, progress: bool, measurer: Measurer) -> None:
    def show(study_, *_):
        sys.stderr.write("\r" + _progress_line(study_, job, mode) + "\033[K")
        sys.stderr.flush()

    if jobs == 1:
        run_job(replace(job, program=measurer.program), measurer, callbacks=[show] if progress else ())
        return
    try:
        pickle.dumps(job)
    except Exception as err:
        raise ApproxError(f"--jobs {jobs} runs worker processes, which need a picklable program, inputs and "
                          f"metric (module-level functions, not lambdas): {type(err).__name__}: {err}",
                          where=WHERE) from None
    ctx = mp.get_context("spawn")  # not fork: the JIT and SQLAlchemy state must not be shared
    errors = ctx.Queue()
    procs = [ctx.Process(target=_worker_main, args=(job, errors), name=f"approx-tune-worker-{i}")
             for i in range(jobs)]
    try:
        for p in procs:
            p.start()
        while any(p.is_alive() for p in procs):
            time.sleep(0.5)
            if progress:
                show(study)
    except KeyboardInterrupt:
        for p in procs:  # they got the SIGINT too: let them end their trials as interrupted
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
        raise
    for p in procs:
        p.join()
    if not errors.empty():
        raise ApproxError(errors.get().removeprefix("error: "), where=None)


def _settings(job: Job, mode: str, n_eval: int, metric_name: str) -> dict:
    return {"mode": mode, "budget": job.budget, "metric": metric_name, "seed": job.seed, "sampler": job.sampler,
            "objective": job.objective, "clock": job.clock, "n_tune": len(job.inputs), "n_eval": n_eval,
            "space": job.space.describe()}


def _prepare_study(job: Job, settings: dict, sqlite: bool) -> optuna.Study:
    """Create or load the study; on a resume check the settings, end trials left
    RUNNING by a killed run as interrupted, and queue again interrupted seeds."""
    storage = open_storage(job.storage)
    study = optuna.create_study(study_name=job.study_name, storage=storage, load_if_exists=True,
                                directions=["minimize", "maximize"],
                                sampler=search.TrialSeeded(job.sampler, job.seed, job.n_trials, job.budget))
    old = study.user_attrs.get("settings")
    if old is None:
        study.set_user_attr("settings", settings)
    elif old != settings:
        diff = [k for k in settings if old.get(k) != settings[k]]
        raise ApproxError(f"study '{job.study_name}' was started with other settings ({', '.join(diff)}: "
                          f"{', '.join(f'{old.get(k)!r} != {settings[k]!r}' for k in diff)[:300]}); "
                          "give another study name or the same settings", where=_safe_url(job.storage))
    stale = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    if sqlite:  # one `approx-tune run` per SQLite file: whatever is RUNNING was killed
        for t in stale:
            storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    elif stale:
        optuna.storages.fail_stale_trials(study)
    if search.enqueue_seeds(study, job.space) == 0:
        waiting = {search.config_key(t.params) for t in study.get_trials(deepcopy=False)
                   if t.state in (TrialState.WAITING, TrialState.COMPLETE)}
        for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
            fixed = t.system_attrs.get("fixed_params")
            if search.interrupted(t) and fixed and search.config_key(fixed) not in waiting:
                study.enqueue_trial(fixed)
                waiting.add(search.config_key(fixed))
    return study


def _eval_front(study, fr: list, program, eval_m: Measurer | None, mode: str, notes: list) -> list[FrontPoint]:
    points = []
    for r in fr:
        p = FrontPoint(mode, r.config, r.qos_loss, r.speedup, seconds_tune=r.attrs.get("seconds"),
                       trial=r.number, money_tune=r.attrs.get("money"))
        if eval_m is not None:
            key = f"eval:{r.number}"
            cached = study.user_attrs.get(key)
            if cached is None:
                try:
                    m = eval_m.measure(build(program, r.config), r.config)
                    cached = {"qos_loss": m.qos_loss, "speedup": m.speedup,
                              "seconds": None if m.seconds != m.seconds else m.seconds, "money": m.money}
                except ApproxError as err:
                    cached = {"error": err.line()}
                study.set_user_attr(key, cached)
            if "error" in cached:
                notes.append(f"{mode} trial {r.number}: held-out evaluation failed: {cached['error']}")
            else:
                p.qos_loss_eval, p.speedup_eval = cached["qos_loss"], cached["speedup"]
                p.seconds_eval, p.money_eval = cached["seconds"], cached["money"]
        p.ir = transformed_ir(program, r.config)
        points.append(p)
    return points


def transformed_ir(program, config: dict) -> str | None:
    """The approx-free IR of `config`, where the program has IR (an MlirProgram's
    `transformed_ir`, a decorated function's `ir(after=True, config=...)`)."""
    try:
        if callable(getattr(program, "transformed_ir", None)):
            return program.transformed_ir(config)
        if callable(getattr(program, "ir", None)):
            return program.ir(after=True, config=config)
    except (ApproxError, TypeError):
        pass
    return None


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:-]+", "_", name).strip("_") or "program"


def _check(budget, n_trials, jobs, mode, stage_fraction) -> None:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget <= 1:
        raise ApproxError(f"budget must be a QoS-loss fraction in [0, 1] (0.05 = 5 % loss), got {budget!r}",
                          where=WHERE)
    if not isinstance(n_trials, int) or n_trials < 1:
        raise ApproxError(f"n_trials must be a positive integer, got {n_trials!r}", where=WHERE)
    if not isinstance(jobs, int) or jobs < 1:
        raise ApproxError(f"jobs must be a positive integer, got {jobs!r}", where=WHERE)
    if mode not in ("static", "dynamic", "both"):
        raise ApproxError(f"mode must be 'static', 'dynamic' or 'both', got {mode!r}", where=WHERE)
    if not 0 <= stage_fraction <= 1:
        raise ApproxError(f"stage_fraction must be in [0, 1], got {stage_fraction!r}", where=WHERE)


def tune(program, inputs, references=None, *, metric="rel_l2", budget: float = 0.05, n_trials: int = 40,
         mode: str = "both", sampler: str = "nsga2", seed: int = 0, storage: str | None = None,
         study_name: str | None = None, out_dir: str | Path | None = None, jobs: int = 1,
         eval_ratio: float = 5.0, eval_inputs=None, eval_references=None, repeats: int = 5,
         stage_fraction: float = 0.2, narrow: dict | None = None, fix: dict | None = None,
         money: Callable | None = None, objective: str = "time", clock: str = "auto", evaluate: bool = True,
         progress: bool = False) -> TuningResult:
    """Search the accuracy/performance Pareto front of `program` on `inputs`.

    `program`: a Program, a decorated function or a spec (`file.mlir:entry`);
    `inputs`: argument tuples (or single arguments); `references`: ground truth per
    input or None. `n_trials` evaluations per mode (the total, on a resume).
    `clock="auto"` times CPU seconds for an MlirProgram (a JIT kernel running in
    this thread) and wall seconds for anything else.
    See the module docstrings of `autotuner.measure` and `autotuner.search`."""
    _check(budget, n_trials, jobs, mode, stage_fraction)
    spec = program if isinstance(program, str) else None
    program = as_program(program)
    if sampler not in search.SAMPLERS:
        raise ApproxError(f"unknown sampler '{sampler}' (samplers: {', '.join(search.SAMPLERS)})", where=WHERE)
    notes: list[str] = []
    spaces = {}
    for m in (("static", "dynamic") if mode == "both" else (mode,)):
        space = SearchSpace.from_program(program, m).narrow(narrow or {}).fix(fix or {})
        if m == "dynamic" and mode == "both" and not any(d.dynamic for d in space.dims):
            notes.append("no decision tree to tune: dynamic mode is the static one, not run")
            continue
        notes += [n for n in space.notes if n not in notes]
        spaces[m] = space
    (tune_in, tune_ref), (eval_in, eval_ref) = split_inputs(inputs, references, eval_ratio, seed,
                                                            eval_inputs, eval_references)
    out = Path(out_dir) if out_dir is not None else Path("approx-tune") / _safe_name(program.name)
    if storage is None:
        out.mkdir(parents=True, exist_ok=True)
        storage = f"sqlite:///{(out / 'study.db').resolve()}"
    base = study_name or _safe_name(program.name)
    if clock == "auto":
        clock = "cpu" if isinstance(program, MlirProgram) else "wall"
    tune_m = Measurer(program, tune_in, tune_ref, metric, repeats, money, objective, clock=clock)  # exact must run
    n_slice = math.ceil(stage_fraction * len(tune_in))
    slice_n = n_slice if stage_fraction > 0 and len(tune_in) >= 5 and n_slice < len(tune_in) else None
    optuna.logging.set_verbosity(optuna.logging.ERROR)

    studies, names, total_seconds = {}, {}, 0.0
    for m, space in spaces.items():
        job = Job(spec or program, tune_in, tune_ref, metric, repeats, money, objective, storage, f"{base}/{m}",
                  space, float(budget), slice_n, n_trials, sampler, seed, clock)
        study = _prepare_study(job, _settings(job, m, len(eval_in), tune_m.metric.name), storage.startswith("sqlite"))
        t0 = time.perf_counter()
        try:
            _run_workers(job, jobs, study, m, progress, tune_m)
        finally:
            study.set_user_attr("tuning_seconds",
                                study.user_attrs.get("tuning_seconds", 0.0) + time.perf_counter() - t0)
            if progress:
                sys.stderr.write("\r" + _progress_line(study, job, m) + "\033[K\n")
        studies[m], names[m] = study, job.study_name
        total_seconds += study.user_attrs["tuning_seconds"]

    eval_m = Measurer(program, eval_in, eval_ref, metric, repeats, money, objective, what="evaluation",
                      clock=clock) if evaluate else None
    result = TuningResult(program.name, tune_m.metric.name, float(budget), 0, 0, total_seconds, seed=seed,
                          sampler=sampler, n_tune=len(tune_in), n_eval=len(eval_in), study_names=names,
                          storage=_safe_url(storage), notes=notes, program_spec=spec, clock=clock,
                          knob_space={m: s.describe() for m, s in spaces.items()})
    if objective == "time":
        result.exact_seconds_tune = tune_m.exact_seconds()
        result.exact_seconds_eval = eval_m.exact_seconds() if eval_m else None
    for m, study in studies.items():
        c = search.counts(study)
        result.trials += c["evaluated"]
        result.failed_trials += c["failed"]
        result.pruned_trials += c["pruned"]
        recs = search.records(study)
        fr = search.front(recs, budget)
        on_front = {r.number for r in fr}
        result.all_trials += [TrialPoint(m, r.config, r.qos_loss, r.speedup, r.number not in on_front, r.number,
                                         r.feasible(budget), r.pruned) for r in recs if not r.duplicate]
        result.front += _eval_front(study, fr, program, eval_m, m, notes)
    for study in studies.values():
        study.set_user_attr(RESULT_ATTR, result.to_dict())
    result.save(out / "result.json")
    return result
