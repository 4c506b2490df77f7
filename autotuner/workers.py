"""Where trials run: worker processes on one study.

The storage itself is `autotuner.storage`. `run_job` runs
trials in this process until the study is done; `run_workers` starts `--jobs`
spawned processes on one study, shows the progress line, and replaces a worker
that dies (kill -9): its trial ends as interrupted and is queued again.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import pickle
import signal
import socket
import sys
import time
import weakref
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Callable

import optuna

from approx_dialect.diagnostics import ApproxError
from autotuner._objective import Objective
from autotuner._optimize import optimize, stopper_for
from autotuner._records import counts, front, hypervolume_of_study, records
from autotuner._sampling import TrialSeeded
from autotuner._seeding import requeue_interrupted
from autotuner.loading import as_program
from autotuner.measure import TUNING_TIMING_SECONDS, Measurer
from autotuner.settings import Cost, Search
from autotuner.space import SearchSpace, config_key
from autotuner.storage import open_storage
from frontends.quiet import verbose

WHERE = "<approx-tune>"
log = logging.getLogger(__name__)


@dataclass
class Job:
    """What one worker process needs (picklable, for --jobs): one mode's study and
    the settings of the run, with `cost`'s clock and timing resolved (no "auto")."""

    program: Any  # a Program, or its spec (worker processes build it again)
    inputs: list
    references: list | None
    metric: Any
    budget: float
    storage: str  # the study's URL
    study_name: str
    space: SearchSpace
    slice_n: int | None  # inputs of the first stage (None: no stages)
    search: Search
    cost: Cost
    warm_start: str | None = None  # an earlier study whose measurements a new study reuses
    deadline: float | None = None  # stop starting trials at this `time.time()` (the mode's timeout)
    kept: str | None = None  # the file of the program's kept component outputs (`keep_outputs`)


def tuning_measurer(program, inputs, references, metric, cost: Cost) -> Measurer:
    """The Measurer of a study's trials: tuning times a slice of a costly split."""
    return Measurer(program, inputs, references, metric, cost, timing_seconds=TUNING_TIMING_SECONDS)


BUILDS_KEPT = 128  # builds remembered per program
_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # program -> OrderedDict(key -> build)


def build(program, config: dict) -> Callable:
    """`program.build(config)`, remembered for as long as `program` lives (the slice and the
    full split, a resumed study and the held-out evaluation use one build; the pipeline costs
    ~0.1 s): a build holds the program's models, so a program let go takes its builds with it.
    A program that takes no weak reference is built each time."""
    try:
        builds = _BUILT.setdefault(program, OrderedDict())
    except TypeError:
        return program.build(config)
    key = config_key(config)
    if key not in builds:
        builds[key] = program.build(config)
        while len(builds) > BUILDS_KEPT:
            builds.popitem(last=False)
    builds.move_to_end(key)
    return builds[key]


def run_job(job: Job, measurer: Measurer | None = None, callbacks=()) -> None:
    """One worker: trials in this process until the study is done."""
    job = replace(job, program=as_program(job.program))
    if job.kept is not None and measurer is None:
        job.program.keep_outputs(job.kept)
    search = job.search
    study = optuna.load_study(study_name=job.study_name, storage=open_storage(job.storage),
                              sampler=TrialSeeded(search.sampler, search.seed, search.n_trials, job.budget))
    if measurer is None and stopper_for(search.n_trials, job.space.size(), search.patience, job.budget,
                                        job.deadline).done(study):
        return  # nothing left: no exact pass over the inputs (for a costly program, minutes)
    m = measurer or tuning_measurer(job.program, job.inputs, job.references, job.metric, job.cost)

    def evaluate(config, n=None):
        return m.measure(build(job.program, config), config, n, repeats=min(3, job.cost.repeats) if n else None)

    objective = Objective(job.space, evaluate, job.budget, job.slice_n, n_trials=search.n_trials)
    optimize(study, objective, search.n_trials, job.space.size(), [*callbacks, _stop_if_interrupted], search.patience,
             job.deadline)


_interrupted = False  # this worker process got a Ctrl-C (`_on_ctrl_c`)


def _on_ctrl_c(signum, frame) -> None:
    """A worker's SIGINT handler: KeyboardInterrupt where the worker is, and a flag the
    trial loop reads after each trial (`_stop_if_interrupted`). Python drops a
    KeyboardInterrupt raised inside a finalizer or a weakref callback ("Exception
    ignored in ..."); without the flag such a Ctrl-C would leave the worker starting
    trials until the parent stops it."""
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def _stop_if_interrupted(study, trial) -> None:
    if _interrupted:
        raise KeyboardInterrupt


def _worker_main(job: Job, errors, ready=None, interruptible: bool = True) -> None:
    # Started with SIGINT blocked (see _sigint_held): a Ctrl-C that came while it
    # imported is delivered here, inside the try, and ends it quietly; from here on a
    # Ctrl-C ends the running trial as interrupted (or, if Python dropped it, the worker
    # at the end of that trial), unless the parent ignores SIGINT itself (a background job).
    if interruptible:
        signal.signal(signal.SIGINT, _on_ctrl_c)
    if not verbose():  # the parent's --verbose, through the environment
        optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        if ready is not None:
            ready.set()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        run_job(job)
    except KeyboardInterrupt:
        pass
    except ApproxError as err:
        errors.put(err.line())
    except Exception as err:  # a bug: one line for the parent to report
        errors.put(f"error: internal error in a worker: {type(err).__name__}: {err}")


@contextmanager
def _sigint_held():
    """Start a worker with SIGINT held back. A spawned process inherits the signal mask
    (not a Python handler), so it starts with SIGINT blocked and sees a Ctrl-C only once
    it can end cleanly; here a Ctrl-C while the worker starts (seconds: the parent waits
    until the child has imported enough to read its job) is recorded and raised as
    KeyboardInterrupt afterwards, never lost and never in the middle of the start."""
    caught: list[int] = []
    handler = signal.getsignal(signal.SIGINT)
    if handler is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a Ctrl-C held back is recorded now
        signal.signal(signal.SIGINT, handler)
    if caught:
        raise KeyboardInterrupt


def progress_line(study, job: Job, mode: str) -> str:
    c = counts(study)
    fr = front(records(study), job.budget)
    best = max((r.speedup for r in fr), default=float("nan"))
    curve = hypervolume_of_study(study, job.budget)
    grew = max((i for i in range(1, len(curve)) if curve[i] > curve[i - 1]), default=0)
    reused = f", reused {c['reused']}" if c["reused"] else ""
    return (f"[approx-tune {mode}] trials {c['evaluated']}/{job.search.n_trials} (pruned {c['pruned']}, "
            f"failed {c['failed']}, running {c['running']}{reused}) | front {len(fr)} | "
            f"best speedup within budget {best:.2f}x | hypervolume {curve[-1]:.4g} "
            f"(last grew at evaluation {grew})")


def _end_running_trials_as_interrupted(study, job: Job) -> None:
    """A worker stopped between creating a trial and ending it leaves it RUNNING;
    on SQLite (one run per file) nothing else can be running it, so end it as
    interrupted (FAIL without an `error`), as a resume would."""
    if not str(job.storage).startswith("sqlite"):
        return  # workers on other machines may still be running trials of this study
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)


def _recover_dead_worker(study, pid: int | None) -> int:
    """End the trials a dead worker process left RUNNING as interrupted (all RUNNING
    ones when `pid` is None: every worker has ended) and queue their re-runs, with
    their seeding index: the study evaluates what it would have. How many ended."""
    me = f"{socket.gethostname()}:{pid}"
    n = 0
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if pid is None or t.system_attrs.get("worker") == me:
            try:
                study._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)
            except optuna.exceptions.UpdateFinishedTrialError:  # another run on the storage ended it first
                continue
            n += 1
    requeue_interrupted(study)
    return n


def check_picklable(obj, need: str, where: str) -> None:
    """Spawned workers receive `obj` pickled: what cannot be is one line (`need`, then
    the cause) before any worker starts."""
    try:
        pickle.dumps(obj)
    except Exception as err:
        raise ApproxError(f"{need} (module-level functions, not lambdas): {type(err).__name__}: {err}",
                          where=where) from None


def run_workers(job: Job, jobs: int, study, mode: str, progress: bool, measurer: Measurer) -> None:
    def show(study_, *_):
        sys.stderr.write("\r" + progress_line(study_, job, mode) + "\033[K")
        sys.stderr.flush()

    if jobs == 1:
        run_job(replace(job, program=measurer.program), measurer, callbacks=[show] if progress else ())
        return
    check_picklable(job, f"--jobs {jobs} runs worker processes, which need a picklable program, inputs and metric",
                    WHERE)
    ctx = mp.get_context("spawn")  # not fork: the JIT and SQLAlchemy state must not be shared
    errors = ctx.Queue()

    ready: dict[int, Any] = {}

    procs: list = []

    def start(i: int) -> None:
        ready[i] = ctx.Event()
        interruptible = signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
        p = ctx.Process(target=_worker_main, args=(job, errors, ready[i], interruptible),
                        name=f"approx-tune-worker-{i}")
        with _sigint_held():
            p.start()
            procs[i:i + 1] = [p]  # joined on Ctrl-C, even one raised as the start ends

    deaths, max_deaths = 0, max(4, job.search.n_trials)
    try:
        for i in range(jobs):
            start(i)
        while True:
            for i, p in enumerate(procs):
                if p.exitcode not in (None, 0):  # killed (kill -9, out of memory) or crashed in native code
                    deaths += 1
                    n = _recover_dead_worker(study, p.pid)
                    log.warning("worker %s (pid %s) ended with exit code %s; %d trial(s) queued again, a new "
                                "worker starts", i, p.pid, p.exitcode, n)
                    if deaths > max_deaths:
                        raise ApproxError(f"worker processes keep dying ({deaths} times; the last with exit "
                                          f"code {p.exitcode}); finished trials are kept", where=WHERE)
                    start(i)  # goes on with the re-run of its trial
            if not any(p.is_alive() for p in procs):
                # a worker killed before it marked its new trial leaves it RUNNING unowned: on SQLite
                # (one run per file) nothing runs it now, so run it again
                if not (str(job.storage).startswith("sqlite") and errors.empty() and
                        _recover_dead_worker(study, None)):
                    break
                start(0)
            time.sleep(0.2)
            if progress:
                show(study)
    except KeyboardInterrupt:
        for i, p in enumerate(procs):  # they got the SIGINT too: let them end their trials as interrupted
            if not ready[i].is_set():
                p.terminate()  # still starting (SIGINT ignored): nothing to keep
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
        _end_running_trials_as_interrupted(study, job)
        raise
    except ApproxError:
        for p in procs:
            p.kill()
            p.join(timeout=10)
        raise
    for p in procs:
        p.join()
    if not errors.empty():
        raise ApproxError(errors.get().removeprefix("error: "), where=None)
