"""`tune()`: run (or resume) the studies of a program, re-measure their fronts on
the held-out split, and return a `TuningResult`.

Storage: SQLite under the output folder by default (a busy timeout, so several
worker processes share the file); any SQLAlchemy URL (`postgresql://...`) lets
workers on several machines join the same study (heartbeats turn a dead
worker's trial into an interrupted one). The same study name resumes: finished
trials are kept, `Search.n_trials` is the total, and the settings must match. Ctrl-C
stops cleanly: the running trials end as interrupted, finished ones stay.

The studies are plain Optuna studies that Optuna's own tools read: one per mode,
named `<name>/static` and `<name>/dynamic` (`<name>`: `Storage.study_name`, by default the
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
from dataclasses import replace
from pathlib import Path

import optuna
from optuna.trial import TrialState

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram, offered
from autotuner import strategy
from autotuner import warm_start as reuse
from autotuner._assemble import assemble_result
from autotuner._front_figures import HeldOutMeasurer, time_front
from autotuner._records import REUSED
from autotuner._sampling import TrialSeeded
from autotuner._seeding import end_abandoned, enqueue_seeds, queue_new, requeue_interrupted
from autotuner._sweep import sweep
from autotuner.loading import as_program
from autotuner.metrics import get_metric
from autotuner.report_summary import LEVELS
from autotuner.results import METRIC_NAMES, TuningResult
from autotuner.settings import Cost, HeldOut, Search, Storage
from autotuner.space import SearchSpace
from autotuner.splits import split_inputs
from autotuner.storage import open_storage, safe_url
from autotuner.stored import front_of
from autotuner.tuning_qos import tuning_inputs
from autotuner.workers import Job, progress_line, run_workers, tuning_measurer
from frontends.quiet import verbose

WHERE = "<approx-tune>"
SWEEP_SHARE = 0.5  # of the dynamic mode's time left, at most, for the sweep (with a timeout)
log = logging.getLogger(__name__)


def _settings(job: Job, mode: str, n_eval: int, metric_name: str) -> dict:
    settings = {"mode": mode, "budget": job.budget, "metric": metric_name, "seed": job.search.seed,
                "sampler": job.search.sampler, "objective": job.cost.objective, "clock": job.cost.clock,
                "n_tune": len(job.inputs), "n_eval": n_eval, "space": job.space.describe()}
    if job.cost.timing != "paired":  # studies of paired timing keep the settings they were started with
        settings["timing"] = job.cost.timing
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


def screen_slots(n_trials: int) -> int:
    """The trials a study's first configurations (the screen, the dynamic seeds) may take:
    half its trials (at least two), the other half the sampler's."""
    return max(2, n_trials // 2)


def _prepare(job: Job, settings: dict, sqlite: bool, notes: list[str], first=None) -> optuna.Study:
    """Create or load the study; a new one starts with the measurements it can reuse
    (`autotuner.warm_start`), the seeds not among them and then `first()` (the
    strategy's screen or dynamic seeds: at most half the trials); on a resume check the
    settings, end trials left RUNNING by a killed run as interrupted, and queue a
    re-run of each interrupted trial."""
    storage = open_storage(job.storage)
    study = optuna.create_study(study_name=job.study_name, storage=storage, load_if_exists=True,
                                directions=["minimize", "maximize"],
                                sampler=TrialSeeded(job.search.sampler, job.search.seed, job.search.n_trials,
                                                    job.budget))
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
    enqueue_seeds(study, job.space, job.search.sampler)
    if new and first is not None:
        queue_new(study, job.space, first(), screen_slots(job.search.n_trials))
    if not new:
        requeue_interrupted(study)
    return study


def _keep_outputs(program, out: Path) -> str | None:
    """The file where `program` keeps its components' outputs (None: it keeps none)."""
    keep = offered(program, "keep_outputs")
    path = out / "kept_outputs.db"
    return str(path) if keep and keep(path) else None


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


def _checked(budget, settings: dict) -> None:
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget <= 1:
        raise ApproxError(f"budget must be a QoS-loss fraction in [0, 1] (0.05 = 5 % loss), got {budget!r}",
                          where=WHERE)
    for name, (value, kind) in settings.items():
        if not isinstance(value, kind):
            raise ApproxError(f"{name} must be an autotuner.{kind.__name__}, got {type(value).__name__}",
                              where=WHERE)


def tune(program, inputs, references=None, *, metric="rel_l2", budget: float = 0.05, search: Search = Search(),
         cost: Cost = Cost(), held_out: HeldOut = HeldOut(), storage: Storage = Storage(),
         progress: bool = False) -> TuningResult:
    """Search the accuracy/performance Pareto front of `program` on `inputs`.

    `program`: a Program (`approx_opt.program`), a decorated function or a spec
    (`file.mlir:entry`); `inputs`: argument tuples (or single arguments);
    `references`: ground truth per input, or None (QoS against the exact outputs);
    `metric`: a name of `autotuner.metrics` or a callable (output, reference) -> [0, 1];
    `budget`: the largest QoS loss, a fraction. The rest is grouped
    (`autotuner.settings`): `search` (trials, mode, sampler, seed, when to stop,
    narrowed knobs, worker processes, the tuning QoS: `autotuner.tuning_qos`, which
    the result's notes name), `cost` (time or money, clock, timing,
    repeats), `held_out` (the held-out split and its re-measurement), `storage`
    (study URL and name, output folder, warm start). `progress`: a progress line on
    stderr. Worker processes rebuild the program from its spec: `program` given as
    one, or a program's `spec` member. See the module docstrings of
    `autotuner.measure` and `autotuner._objective`."""
    _checked(budget, {"search": (search, Search), "cost": (cost, Cost), "held_out": (held_out, HeldOut),
                      "storage": (storage, Storage)})
    spec = program if isinstance(program, str) else offered(program, "spec")
    program = as_program(program)
    jobs, seed = search.jobs, search.seed
    eval_jobs = jobs if held_out.jobs is None else held_out.jobs
    (tune_in, tune_ref), (eval_in, eval_ref) = split_inputs(inputs, references, held_out.ratio, seed,
                                                            held_out.inputs, held_out.references)
    out = Path(storage.out_dir) if storage.out_dir is not None else Path("approx-tune") / _safe_name(program.name)
    _make_folder(out)
    tuning = tuning_inputs(search, program, spec, tune_in, tune_ref, metric, jobs, out, eval_ref is not None,
                           (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None)
    tune_in, tune_ref, notes = tuning.inputs, tuning.references, [tuning.note]
    kept = _keep_outputs(program, out)
    timing = cost.timing
    if timing == "auto":
        timing = "model" if kept is not None and cost.objective == "time" else "paired"
    plan = strategy.time_shares(program, tune_in, out) if strategy.applies(program) else None
    fix = dict(search.fix or {})
    if plan is not None:  # components under 2 % of the time: fixed at exact, unless the caller says otherwise
        fix = {**{k: 0 for k in plan["negligible"]}, **fix}
    spaces = {}
    for m in search.modes:
        space = SearchSpace.from_program(program, m).narrow(dict(search.narrow or {})).fix(fix)
        if m == "dynamic" and search.mode == "both" and not any(d.dynamic for d in space.dims):
            notes.append("no decision tree to tune: dynamic mode is the static one, not run")
            continue
        notes += [n for n in space.notes if n not in notes]
        spaces[m] = space
    url = storage.url or f"sqlite:///{(out / 'study.db').resolve()}"
    base = storage.study_name or _safe_name(program.name)
    clock = cost.clock
    if clock == "auto":
        in_thread = isinstance(program, MlirProgram) or offered(program, "kind") == "kernel"
        clock = "cpu" if in_thread else "wall"
    cost = replace(cost, clock=clock, timing=timing)
    # this process measures trials only with one job (worker processes have their own)
    tune_m = tuning_measurer(program, tune_in, tune_ref, metric, cost) if jobs == 1 else None
    n_slice = math.ceil(search.stage_fraction * len(tune_in))
    slice_n = n_slice if search.stage_fraction > 0 and len(tune_in) >= 5 and n_slice < len(tune_in) else None
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else None
    studies, names, total_seconds = {}, {}, 0.0
    with one_run_per_sqlite_study(url, base), optuna_quiet():
        for m, space in spaces.items():
            job = Job(program=spec or program, inputs=tune_in, references=tune_ref, metric=metric, budget=float(budget),
                      storage=url, study_name=f"{base}/{m}", space=space, slice_n=slice_n, search=search, cost=cost,
                      warm_start=None if storage.warm_start is None else str(storage.warm_start), kept=kept,
                      deadline=None if search.timeout is None else time.time() + search.timeout)
            first = None
            if plan is not None:
                first = (lambda sp=space: strategy.screen(sp, plan["shares"], screen_slots(search.n_trials))) \
                    if m == "static" else \
                    (lambda sp=space: strategy.dynamic_seeds(sp, front_of(url, f"{base}/static", float(budget)),
                                                             strategy.states_of(program, tune_in)))
            study = _prepare_study(job, _settings(job, m, len(eval_in), get_metric(metric).name),
                                   url.startswith("sqlite"), notes, first)
            t0 = time.perf_counter()
            try:
                if m == "dynamic" and plan is not None and timing == "model" and search.sweep:
                    tune_m = tune_m or tuning_measurer(program, tune_in, tune_ref, metric, cost)
                    _sweep_front(study, space, tune_m, program, float(budget), tune_in, job.deadline, search, say)
                run_workers(job, jobs, study, m, progress, tune_m)
                if timing == "model":
                    tune_m = tune_m or tuning_measurer(program, tune_in, tune_ref, metric, cost)
                    # the levels the held-out figures (or else the report) choose at: none on a modelled speedup
                    time_front(study, tune_m, program, float(budget), say,
                               LEVELS if held_out.levels is None else held_out.levels, job.deadline)
            finally:
                study.set_user_attr("tuning_seconds",
                                    study.user_attrs.get("tuning_seconds", 0.0) + time.perf_counter() - t0)
                if progress:
                    sys.stderr.write("\r" + progress_line(study, job, m) + "\033[K\n")
            studies[m], names[m] = study, job.study_name
            total_seconds += study.user_attrs["tuning_seconds"]

    # made only where a held-out figure is not kept in the studies (`autotuner._front_figures`)
    eval_m = HeldOutMeasurer(program, spec or program, eval_in, eval_ref, metric, cost, eval_jobs, say) \
        if held_out.evaluate else None
    try:
        result = assemble_result(program, spec, studies, names, eval_m, tune_m, spaces, notes, out, budget, search,
                                 tune_in, eval_in, total_seconds, url, cost, metric, plan, held_out.levels, kept)
    finally:
        if eval_m is not None:
            eval_m.close()
    tuning.finish(result, program, metric, LEVELS if held_out.levels is None else held_out.levels, out / "result.json")
    return result


def _sweep_front(study, space, measurer, program, budget: float, tune_in, deadline, search: Search, say) -> None:
    """The strategy's sweep before the dynamic sampler (`autotuner._sweep`): with a
    timeout, in at most half the mode's time."""
    if deadline is not None:
        deadline = time.time() + SWEEP_SHARE * max(0.0, deadline - time.time())
    tally = sweep(study, space, measurer, program, budget, strategy.states_of(program, tune_in), deadline,
                  limit=search.sweep, seed=search.seed, say=say)
    if say:
        say(f"sweep: {tally['scored']} dynamic configurations scored from kept outputs, {tally['not_kept']} "
            "would run a model")
