"""`tune()`: run (or resume) the studies of a program, re-measure their fronts on
the held-out split, and return a `TuningResult`.

Storage: SQLite under the output folder by default (a busy timeout, so several
worker processes share the file); any SQLAlchemy URL (`postgresql://...`) lets
workers on several machines join the same study (heartbeats turn a dead
worker's trial into an interrupted one). The same study name resumes: finished
trials are kept, `n_trials` is the total, and the settings must match. Ctrl-C
stops cleanly: the running trials end as interrupted, finished ones stay.

The studies are plain Optuna studies that Optuna's own tools read: one per mode,
named `<name>/static` and `<name>/dynamic` (`<name>`: `study_name`, by default the
program's name, e.g. `adaptive_sum.mlir:mean`), objectives named `qos_loss`
(minimised) and `speedup` (maximised), the constraint `qos_loss <= budget`.
`study.best_trials` is the tuning front: a configuration measured already is not
a new COMPLETE trial (a repeat ends PRUNED with the user attr `duplicate_of`).
The result is `result.json` in the output folder; each study names it in the
user attr `result_file`. E.g. `optuna trials --storage sqlite:///OUT/study.db
--study-name 'adaptive_sum.mlir:mean/static'`.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import math
import re
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import optuna
from optuna.trial import TrialState

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from autotuner import strategy
from autotuner import warm_start as reuse
from autotuner._front_figures import eval_front, time_front, transformed_ir
from autotuner._records import REUSED, TIMED, counts, front, front_of, hypervolume_of_study, records
from autotuner._sampling import DEFAULT_SAMPLER, SAMPLERS, TrialSeeded
from autotuner._seeding import end_abandoned, enqueue_seeds, queue_new, requeue_interrupted
from autotuner.explain import importances
from autotuner.loading import as_program
from autotuner.measure import TIMING, TIMINGS, TUNING_TIMING_SECONDS, Measurer, split_inputs
from autotuner.metrics import get_metric
from autotuner.results import METRIC_NAMES, RESULT_FILE_ATTR, TrialPoint, TuningResult
from autotuner.sharded import ShardedEvaluation
from autotuner.space import SearchSpace
from autotuner.storage import open_storage, safe_url
from autotuner.workers import Job, progress_line, run_workers
from frontends.quiet import verbose

WHERE = "<approx-tune>"
log = logging.getLogger(__name__)


def _settings(job: Job, mode: str, n_eval: int, metric_name: str) -> dict:
    settings = {"mode": mode, "budget": job.budget, "metric": metric_name, "seed": job.seed, "sampler": job.sampler,
                "objective": job.objective, "clock": job.clock, "n_tune": len(job.inputs), "n_eval": n_eval,
                "space": job.space.describe()}
    if job.timing != "paired":  # studies of paired timing keep the settings they were started with
        settings["timing"] = job.timing
    return settings


def _prepare_study(job: Job, settings: dict, sqlite: bool, notes: list[str], first=None) -> optuna.Study:
    """`_prepare`, one run at a time per study on a shared PostgreSQL storage: runs that
    join a new study at once would each queue its seeds (measured twice, the seeding
    indices of what follows shifted), or sample before they are queued."""
    if not str(job.storage).startswith("postgresql"):
        return _prepare(job, settings, sqlite, notes, first)
    key = int.from_bytes(hashlib.sha1(job.study_name.encode()).digest()[:8], "big", signed=True)
    with open_storage(job.storage).engine.connect() as con:  # a killed run's session lock goes with it
        con.exec_driver_sql("SELECT pg_advisory_lock(%s)", (key,))
        try:
            return _prepare(job, settings, sqlite, notes, first)
        finally:
            con.exec_driver_sql("SELECT pg_advisory_unlock(%s)", (key,))


def _prepare(job: Job, settings: dict, sqlite: bool, notes: list[str], first=None) -> optuna.Study:
    """Create or load the study; a new one starts with the measurements it can reuse
    (`autotuner.warm_start`), the seeds not among them and then `first()` (the
    strategy's screen or dynamic seeds: at most half the trials); on a resume check the
    settings, end trials left RUNNING by a killed run as interrupted, and queue a
    re-run of each interrupted trial."""
    storage = open_storage(job.storage)
    study = optuna.create_study(study_name=job.study_name, storage=storage, load_if_exists=True,
                                directions=["minimize", "maximize"],
                                sampler=TrialSeeded(job.sampler, job.seed, job.n_trials, job.budget))
    if study.metric_names is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(list(METRIC_NAMES))
    old = study.user_attrs.get("settings")
    if old is None:
        study.set_user_attr("settings", settings)
    elif old != settings:
        diff = [k for k in settings if old.get(k) != settings[k]]
        raise ApproxError(f"study '{job.study_name}' was started with other settings ({', '.join(diff)}: "
                          f"{', '.join(f'{old.get(k)!r} != {settings[k]!r}' for k in diff)[:300]}); "
                          "give another study name or the same settings", where=safe_url(job.storage))
    stale = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    if sqlite:  # one `approx-tune run` per SQLite file: whatever is RUNNING was killed
        for t in stale:
            storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
    elif stale:  # runs elsewhere may be running them: only those whose worker is gone
        end_abandoned(study)
    notes += reuse.warm_start(study, job.space, settings["mode"], job.budget, settings, job.storage,
                        job.study_name.rsplit("/", 1)[0], job.warm_start)
    new = not any(REUSED not in t.user_attrs for t in study.get_trials(deepcopy=False))
    enqueue_seeds(study, job.space, job.sampler)
    if new and first is not None:
        queue_new(study, job.space, first(), max(2, job.n_trials // 2))
    if not new:
        requeue_interrupted(study)
    return study


def _search_facts(result, studies, timing: str, kept: str | None, plan, program) -> dict:
    """What a person needs to trust the search: configurations measured per mode (and
    stopped after the first stage), how they were timed, the front points timed
    paired, what the kept outputs held, and the strategy's plan."""
    facts = {"timing": timing, "configurations": {}, "stopped_at_first_stage": {}, "front_timed": {}}
    for m, study in studies.items():
        facts["configurations"][m] = sum(1 for t in result.all_trials if t.mode == m)
        facts["stopped_at_first_stage"][m] = sum(1 for t in result.all_trials if t.mode == m and t.pruned)
        facts["front_timed"][m] = sum(1 for k in study.user_attrs if k.startswith(TIMED))
    if kept is not None:
        from frontends.components.kept import KeptOutputs

        counts = program.reuse_counts() if callable(getattr(program, "reuse_counts", None)) else None
        facts["kept_outputs"] = {"file": kept, "calls": len(KeptOutputs(kept)),
                                 **({"read_here": counts["reused"], "run_here": counts["run"]} if counts else {})}
    if plan is not None:
        facts["fixed"] = plan["negligible"]
    return facts


def _keep_outputs(program, out: Path) -> str | None:
    """The file where `program` keeps its components' outputs (None: it keeps none)."""
    keep = getattr(program, "keep_outputs", None)
    path = out / "kept_outputs.db"
    return str(path) if callable(keep) and keep(path) else None


def _make_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ApproxError("the output folder is a file", where=str(out)) from None
    except OSError as err:
        raise ApproxError(f"cannot create the output folder: {err.strerror}", where=str(err.filename or out)) from None


@contextmanager
def one_run_per_sqlite_study(storage: str, study: str):
    """Hold a lock on a study of a SQLite file while a run uses it. A run ends the
    trials of its study it finds RUNNING as interrupted (on SQLite only a killed run
    leaves them), so a second run of the same study at the same time would end the
    first one's trials: it is told the study is in use instead. (Other studies of the
    file are free; `--jobs N` runs several workers on one study; the lock goes with
    the process, kill -9 included.)"""
    path = storage[len("sqlite:///"):] if storage.startswith("sqlite:///") else ""
    if path in ("", ":memory:"):
        yield
        return
    lock_path = f"{path}.{hashlib.sha1(study.encode()).hexdigest()[:12]}.lock"
    try:
        lock = open(lock_path, "a")
    except OSError as err:
        raise ApproxError(f"cannot write next to the study database: {err.strerror}", where=lock_path) from None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ApproxError(f"study '{study}' is in use by another `approx-tune run`; wait for it to end, or "
                              "give another --out (--jobs N runs several workers on one study)", where=path) from None
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def optuna_quiet():
    """Optuna's per-trial INFO lines off while the tuner runs (it shows its own
    progress; kept with `--verbose`), the caller's verbosity back afterwards."""
    if verbose():
        yield
        return
    old = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(old)


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
         mode: str = "both", sampler: str = DEFAULT_SAMPLER, seed: int = 0, storage: str | None = None,
         study_name: str | None = None, out_dir: str | Path | None = None, jobs: int = 1,
         eval_ratio: float = 5.0, eval_inputs=None, eval_references=None, repeats: int = 5,
         stage_fraction: float = 0.2, narrow: dict | None = None, fix: dict | None = None,
         money: Callable | None = None, objective: str = "time", clock: str = "auto", evaluate: bool = True,
         progress: bool = False, warm_start: str | None = None, patience: int | None = None,
         timeout: float | None = None, eval_jobs: int | None = None, timing: str = "auto",
         eval_levels=None) -> TuningResult:
    """Search the accuracy/performance Pareto front of `program` on `inputs`.

    `program`: a Program, a decorated function or a spec (`file.mlir:entry`);
    `inputs`: argument tuples (or single arguments); `references`: ground truth per
    input or None. `n_trials` evaluations per mode (the total, on a resume).
    `clock="auto"` times CPU seconds for JIT kernels running in this thread (an
    MlirProgram, a decorated function lowered as a kernel) and wall seconds for
    anything else. `warm_start`: an earlier study (name, or output folder) whose
    measurements a new study reuses; `patience`: stop a mode's search when the front's
    hypervolume has not grown for this many evaluations; `timeout`: seconds for each
    mode's search (checked between trials; finished trials are kept, and the same call
    again resumes). `eval_jobs` (default `jobs`): worker processes that share the
    held-out inputs (`autotuner.sharded`). Worker processes rebuild the program from
    its spec: `program` given as one, or a program's `spec` attribute. A program that
    keeps its deterministic components' outputs (`keep_outputs(path)`) keeps them in
    `kept_outputs.db` of the output folder, read by every later pass, worker and study;
    `timing="auto"` then measures configurations by their QoS pass alone with their time
    modelled from the kept calls, and times the front paired ("model"); "paired" times
    every configuration beside the exact program. `eval_levels` (QoS-loss fractions):
    re-measure held out only the front points chosen at those levels on the tuning
    split (the points a report gives), not the whole front.
    See the module docstrings of `autotuner.measure` and `autotuner._objective`."""
    _check(budget, n_trials, jobs, mode, stage_fraction)
    if patience is not None and (isinstance(patience, bool) or not isinstance(patience, int) or patience < 1):
        raise ApproxError(f"patience must be a positive number of evaluations, got {patience!r}", where=WHERE)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise ApproxError(f"timeout must be a positive number of seconds, got {timeout!r}", where=WHERE)
    spec = program if isinstance(program, str) else getattr(program, "spec", None)
    program = as_program(program)
    eval_jobs = jobs if eval_jobs is None else eval_jobs
    if sampler not in SAMPLERS:
        raise ApproxError(f"unknown sampler '{sampler}' (samplers: {', '.join(SAMPLERS)})", where=WHERE)
    notes: list[str] = []
    (tune_in, tune_ref), (eval_in, eval_ref) = split_inputs(inputs, references, eval_ratio, seed,
                                                            eval_inputs, eval_references)
    out = Path(out_dir) if out_dir is not None else Path("approx-tune") / _safe_name(program.name)
    _make_folder(out)
    kept = _keep_outputs(program, out)
    if timing == "auto":
        timing = "model" if kept is not None and objective == "time" else "paired"
    elif timing not in TIMINGS:
        raise ApproxError(f"timing must be 'auto' or one of {', '.join(TIMINGS)}, got {timing!r}", where=WHERE)
    plan = strategy.time_shares(program, tune_in, out) if strategy.applies(program) else None
    if plan is not None:  # components under 2 % of the time: fixed at exact, unless the caller says otherwise
        fix = {**{k: 0 for k in plan["negligible"]}, **(fix or {})}
    spaces = {}
    for m in (("static", "dynamic") if mode == "both" else (mode,)):
        space = SearchSpace.from_program(program, m).narrow(narrow or {}).fix(fix or {})
        if m == "dynamic" and mode == "both" and not any(d.dynamic for d in space.dims):
            notes.append("no decision tree to tune: dynamic mode is the static one, not run")
            continue
        notes += [n for n in space.notes if n not in notes]
        spaces[m] = space
    if storage is None:
        storage = f"sqlite:///{(out / 'study.db').resolve()}"
    base = study_name or _safe_name(program.name)
    if clock == "auto":
        in_thread = isinstance(program, MlirProgram) or getattr(program, "kind", None) == "kernel"
        clock = "cpu" if in_thread else "wall"
    # this process measures trials only with one job (worker processes have their own)
    tune_m = Measurer(program, tune_in, tune_ref, metric, repeats, money, objective, clock=clock,
                      timing_seconds=TUNING_TIMING_SECONDS, timing=timing) if jobs == 1 else None
    n_slice = math.ceil(stage_fraction * len(tune_in))
    slice_n = n_slice if stage_fraction > 0 and len(tune_in) >= 5 and n_slice < len(tune_in) else None
    studies, names, total_seconds = {}, {}, 0.0
    with one_run_per_sqlite_study(storage, base), optuna_quiet():
        for m, space in spaces.items():
            job = Job(spec or program, tune_in, tune_ref, metric, repeats, money, objective, storage,
                      f"{base}/{m}", space, float(budget), slice_n, n_trials, sampler, seed, clock, warm_start,
                      patience, timing=timing, kept=kept)
            if timeout is not None:
                job.deadline = time.time() + timeout
            first = None
            if plan is not None:
                first = (lambda sp=space: strategy.screen(sp, plan["shares"])) if m == "static" else \
                    (lambda sp=space: strategy.dynamic_seeds(sp, front_of(storage, f"{base}/static", float(budget)),
                                                             strategy.states_of(program, tune_in)))
            study = _prepare_study(job, _settings(job, m, len(eval_in), get_metric(metric).name),
                                   storage.startswith("sqlite"), notes, first)
            t0 = time.perf_counter()
            try:
                run_workers(job, jobs, study, m, progress, tune_m)
                if timing == "model":
                    tune_m = tune_m or Measurer(program, tune_in, tune_ref, metric, repeats, money, objective,
                                                clock=clock, timing_seconds=TUNING_TIMING_SECONDS, timing=timing)
                    say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
                    time_front(study, tune_m, program, float(budget), say)
            finally:
                study.set_user_attr("tuning_seconds",
                                    study.user_attrs.get("tuning_seconds", 0.0) + time.perf_counter() - t0)
                if progress:
                    sys.stderr.write("\r" + progress_line(study, job, m) + "\033[K\n")
            studies[m], names[m] = study, job.study_name
            total_seconds += study.user_attrs["tuning_seconds"]

    if evaluate and eval_jobs > 1 and len(eval_in) > 1:
        say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
        eval_m = ShardedEvaluation(spec or program, eval_in, eval_ref, metric, jobs=eval_jobs, repeats=repeats,
                                   money=money, objective=objective, clock=clock, progress=say)
    else:
        eval_m = Measurer(program, eval_in, eval_ref, metric, repeats, money, objective, what="evaluation",
                          clock=clock) if evaluate else None
    try:
        return _result(program, spec, studies, names, eval_m, tune_m, spaces, notes, out, budget, seed, sampler,
                       tune_in, eval_in, total_seconds, storage, clock, objective, metric, plan, eval_levels, timing,
                       kept)
    finally:
        if isinstance(eval_m, ShardedEvaluation):
            eval_m.close()


def _result(program, spec, studies, names, eval_m, tune_m, spaces, notes, out, budget, seed, sampler, tune_in,
            eval_in, total_seconds, storage, clock, objective, metric, plan=None,
            eval_levels=None, timing: str = "paired", kept: str | None = None) -> TuningResult:
    """The TuningResult of the searches: fronts (held-out figures from `eval_m`),
    every trial, importances; saved beside the study."""
    result = TuningResult(program.name, get_metric(metric).name, float(budget), 0, 0, total_seconds, seed=seed,
                          sampler=sampler, n_tune=len(tune_in), n_eval=len(eval_in), study_names=names,
                          storage=safe_url(storage), notes=notes, program_spec=spec, clock=clock,
                          knob_space={m: s.describe() for m, s in spaces.items()},
                          timing=TIMING if objective == "time" else None,
                          metric_spec=metric if isinstance(metric, str) else None)
    if eval_m is not None and eval_m.with_references:
        result.exact_scores_eval = [float(v) for v in eval_m.exact_scores]
    for m, study in studies.items():
        c = counts(study)
        result.trials += c["evaluated"]
        result.failed_trials += c["failed"]
        result.pruned_trials += c["pruned"]
        result.failures += [{"mode": m, "trial": t.number, "knobs": t.user_attrs.get("config", {}),
                             "error": t.user_attrs["error"]}
                            for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
                            if "error" in t.user_attrs and "duplicate_of" not in t.user_attrs]
        result.hypervolume[m] = hypervolume_of_study(study, budget)
        recs = records(study)
        fr = front(recs, budget)
        on_front = {r.number for r in fr}
        result.all_trials += [TrialPoint(m, r.config, r.qos_loss, r.speedup, r.number not in on_front, r.number,
                                         r.feasible(budget), r.pruned) for r in recs if not r.duplicate]
        result.front += eval_front(study, fr, program, eval_m, m, notes, eval_levels)
        result.importances[m] = importances(study, [k.name for k in program.knobs()])
    if plan is not None and {"static", "dynamic"} <= set(studies):
        strategy.merge_static_front(result, program, ir=lambda c: transformed_ir(program, c))
    if objective == "time":  # after the evaluation: the exact passes timed beside its points
        result.exact_seconds_tune = tune_m.exact_seconds() if tune_m else None
        result.exact_seconds_eval = eval_m.exact_seconds() if eval_m else None
    result.search = _search_facts(result, studies, timing, kept, plan, program)
    for note in notes:
        log.info("%s: %s", program.name, note)
    path = result.save(out / "result.json").resolve()
    for study in studies.values():
        study.set_user_attr(RESULT_FILE_ATTR, str(path))
    return result
