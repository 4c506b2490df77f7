"""A stored study, by storage URL and name: the configurations of its front, its
trials by kind, and the first trials of a new one (how the kernels' benchmark
starts a dynamic study from the static front). What the trials mean is
`autotuner._records`'s docstring."""

from __future__ import annotations

import optuna

from autotuner._records import front, records, tally
from autotuner._seeding import queue_new
from autotuner.space import SearchSpace
from autotuner.storage import open_storage


def _load(storage: str, study_name: str) -> optuna.Study | None:
    try:
        return optuna.load_study(study_name=study_name, storage=open_storage(storage))
    except KeyError:
        return None


def front_of(storage: str, study_name: str, budget: float) -> list[dict]:
    """The configurations of a stored study's front within `budget` (fully measured,
    distinct, nondominated), least approximate first: QoS loss and speedup both
    increase along it. A study not created yet has none (e.g. to seed one study from
    another's front)."""
    study = _load(storage, study_name)
    fr = front(records(study), budget) if study is not None else []
    return [r.config for r in sorted(fr, key=lambda r: (r.qos_loss, -r.speedup))]


def trial_counts(storage: str, study_name: str) -> dict[str, int]:
    """A stored study's trials by kind: `evaluated` (measured: complete, pruned or
    failed), `pruned`, `failed`, `running`, `waiting`, `duplicates`, `reused`, `total`;
    all 0 for a study not created yet."""
    study = _load(storage, study_name)
    return tally(study.get_trials(deepcopy=False) if study is not None else [])


def enqueue(storage: str, study_name: str, space: SearchSpace, configs: list[dict], limit: int | None = None) -> int:
    """Queue `configs` (configurations of `space`) as the first trials of a new study,
    each once, in order, at most `limit` of them; the number queued (0 when the study
    has trials already: a resume keeps what it queued). `tune()` with the same
    storage and study name then evaluates them before its own proposals, and adds no
    seeds of its own."""
    study = optuna.create_study(study_name=study_name, storage=open_storage(storage), load_if_exists=True,
                                directions=["minimize", "maximize"])
    if study.get_trials(deepcopy=False):
        return 0
    return queue_new(study, space, configs, len(configs) if limit is None else limit)
