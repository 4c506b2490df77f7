"""Measurements reused across studies, so a configuration measured once is never
measured again: a new study starts with the trials of another study of the same
program (same knobs and settings) copied in as finished trials. They feed the
sampler's models and the front, are marked `reused_from` (study and trial), and
are not evaluations of the new study (`_records.counts`).

- The dynamic study starts with the static study's trials: a static
  configuration is a dynamic one whose decisions are all equal (`SearchSpace.lift`).
- `tune(..., storage=Storage(warm_start=STUDY))` (`approx-tune run --warm-start STUDY`) starts each
  mode's study with the trials of an earlier study: STUDY names a study of the same
  storage (`NAME` or `NAME/static`), or is the output folder of an earlier run.

A copied trial keeps its figures (its paired timing included): the front timing
does not time it again, and the held-out evaluation reuses its source's replay where
the source is this run's static study (`_front_figures.eval_front`).

Only fully measured trials are copied (not pruned, failed or repeated ones); the
QoS-loss constraint is recomputed for the new budget. The settings that decide
what a measurement means (metric, objective, clock, tuning inputs and seed) must
be the same; the budget, sampler and trial count may differ.
"""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState

from approx_dialect.diagnostics import ApproxError
from autotuner._records import CONSTRAINT, REUSED, records
from autotuner.space import SearchSpace, config_key
from autotuner.storage import open_storage

SAME = ("metric", "objective", "clock", "n_tune", "seed")  # settings a measurement depends on
# a measurement's figures; a modelled one's paired timing too (`_records.records`), so a copy is not timed again
COPIED_ATTRS = ("n", "qos", "seconds", "money", "speedup_low", "speedup_high", "modelled", "timed", "speedup_modelled",
                "exact_seconds", "loss_low", "loss_high")


def resolve(spec: str, storage: str) -> tuple[str, str]:
    """(storage URL, study base name) of a `--warm-start` argument: an earlier run's
    output folder (its result.json names them), or a study name in `storage`."""
    folder = Path(spec)
    if folder.is_dir():
        from autotuner.results import read_result

        result = read_result(folder)
        names = sorted(result.study_names.values())
        if not names:
            raise ApproxError("the earlier run's result names no study", where=str(folder))
        url = f"sqlite:///{(folder / 'study.db').resolve()}" if (folder / "study.db").exists() else result.storage
        return url, names[0].rsplit("/", 1)[0]
    base = spec.rsplit("/", 1)[0] if spec.endswith(("/static", "/dynamic")) else spec
    return storage, base


def load_source(storage: str, base: str, mode: str) -> optuna.Study | None:
    try:
        return optuna.load_study(study_name=f"{base}/{mode}", storage=open_storage(storage))
    except KeyError:
        return None


def check_settings(source: optuna.Study, settings: dict) -> None:
    old = source.user_attrs.get("settings", {})
    diff = [k for k in SAME if old.get(k) != settings.get(k)]
    if diff:
        raise ApproxError(f"cannot reuse the trials of study '{source.study_name}': its measurements were taken "
                          "with other settings ("
                          f"{', '.join(f'{k}: {old.get(k)!r} != {settings.get(k)!r}' for k in diff)})",
                          where="--warm-start")


def copy_trials(study: optuna.Study, space: SearchSpace, source: optuna.Study, budget: float) -> int:
    """Add the fully measured trials of `source` (lifted to `space`'s mode) that are
    configurations of `space` and not in `study` yet; the number added."""
    have = {t.user_attrs.get("key") for t in study.get_trials(deepcopy=False)}
    added = 0
    for r in records(source):
        if r.pruned or r.duplicate:
            continue
        config = space.lift(r.config)
        key = config_key(config) if config is not None else None
        if key is None or key in have:
            continue
        trial = optuna.trial.FixedTrial(space.params_of(config))
        try:
            space.suggest(trial)
        except ValueError:  # a value outside this (narrowed) space
            continue
        attrs = {k: r.attrs[k] for k in COPIED_ATTRS if k in r.attrs}
        attrs.update(config=config, key=key, **{REUSED: f"{source.study_name}#{r.number}"})
        study.add_trial(optuna.trial.create_trial(
            params=trial.params, distributions=trial.distributions, values=[r.qos_loss, r.speedup],
            user_attrs=attrs, constraints={CONSTRAINT: r.qos_loss - budget}))
        have.add(key)
        added += 1
    return added


def warm_start(study: optuna.Study, space: SearchSpace, mode: str, budget: float, settings: dict,
               storage: str, base: str, earlier: str | None) -> list[str]:
    """On a new study of `mode` (no trials but queued ones): copy the trials of this
    run's static study (for the dynamic mode) and of the earlier study `earlier`;
    notes saying what was reused."""
    if any(t.state != TrialState.WAITING or REUSED in t.user_attrs for t in study.get_trials(deepcopy=False)):
        return []  # not new (queued first trials are fine: `examples/systems/tuning.py` queues them)
    sources = []
    if mode == "dynamic":
        sources.append(load_source(storage, base, "static"))
    if earlier:
        url, other = resolve(earlier, storage)
        found = [load_source(url, other, m) for m in ("static", "dynamic") if m in (mode, "static")]
        if not any(found):
            raise ApproxError(f"no study '{other}/{mode}' (or '{other}/static') to reuse", where="--warm-start")
        sources += found
    notes = []
    for source in sources:
        if source is None or source.study_name == study.study_name:
            continue
        check_settings(source, settings)
        n = copy_trials(study, space, source, budget)
        notes.append(f"{mode}: {n} measured configurations reused from study '{source.study_name}'")
    return notes
