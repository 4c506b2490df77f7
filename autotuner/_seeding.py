"""The trials a study starts with or runs again: the seeds of a new study (the
exact configuration, each knob alone), configurations a caller queues (e.g. a
dynamic study's first trials from the static front), and re-runs of interrupted
trials with their seeding index, so a resumed study evaluates what an
uninterrupted one would have."""

from __future__ import annotations

import os
import socket
import warnings

import optuna

from autotuner._records import REUSED, interrupted
from autotuner.settings import DEFAULT_SAMPLER
from autotuner.space import SearchSpace, config_key
from autotuner.storage import requeue


def enqueue_seeds(study: optuna.Study, space: SearchSpace, sampler: str = DEFAULT_SAMPLER) -> int:
    """On a new study (no trials but reused measurements): queue the exact configuration
    and each knob alone at its middle value (`SearchSpace.seeds`), those not measured yet.
    The predictive sampler gets the exact one only: it measures each knob alone itself,
    between its own proposals (`autotuner.predictive`)."""
    trials = study.get_trials(deepcopy=False)
    if any(REUSED not in t.user_attrs for t in trials):
        return 0
    measured = {t.user_attrs.get("key") for t in trials}
    seeds = space.seeds()[:1] if sampler == "predictive" else space.seeds()
    seeds = [cfg for cfg in seeds if config_key(cfg) not in measured]
    for cfg in seeds:
        study.enqueue_trial(space.params_of(cfg), skip_if_exists=True)
    return len(seeds)


def queue_new(study: optuna.Study, space: SearchSpace, configs: list[dict], limit: int) -> int:
    """Queue `configs` not measured or queued yet, each once, in order, at most `limit`."""
    seen = {t.user_attrs.get("key") for t in study.get_trials(deepcopy=False)}  # queued ones: skip_if_exists
    n = 0
    for cfg in configs:
        key = config_key(cfg)
        if n >= limit or key in seen:
            continue
        seen.add(key)
        study.enqueue_trial(space.params_of(cfg), skip_if_exists=True)
        n += 1
    return n


def requeue_interrupted(study: optuna.Study) -> int:
    """Queue a re-run of every interrupted trial not re-run yet (its parameters and
    seeding index); the number queued."""
    trials = study.get_trials(deepcopy=False)
    done = {t.user_attrs["rerun_of"] for t in trials if "rerun_of" in t.user_attrs}
    n = 0
    for t in trials:
        if interrupted(t) and t.number not in done:
            requeue(study, t)
            n += 1
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def end_abandoned(study: optuna.Study) -> int:
    """On a storage shared by several runs (PostgreSQL): end as interrupted, and queue
    again, each RUNNING trial whose worker is gone: a process of this machine that no
    longer exists at once, one elsewhere once its heartbeat has stopped for the grace
    period (the storage's callback queues those). Only the process whose update ends a
    trial queues its re-run, so runs reaping at once never queue one twice. How many ended here."""
    me = socket.gethostname()
    n = 0
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        host, _, pid = str(t.system_attrs.get("worker", "")).rpartition(":")
        if host == me and pid.isdigit() and not _alive(int(pid)):
            try:
                ended = study._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)
            except optuna.exceptions.UpdateFinishedTrialError:  # it finished, or another run ended it
                continue
            if ended:
                requeue(study, study._storage.get_trial(t._trial_id))
                n += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    return n
