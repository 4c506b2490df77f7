"""The strategy's sweep (`autotuner.strategy.sweep_configs`): dynamic configurations
around the front, scored from kept component outputs alone and added to the dynamic
study as trials.

Why: a dynamic configuration sends each input to one of a ladder's values, and a
program that keeps its components' outputs has run most of those calls already (the
static study measured each value). Such a configuration is scored with no model run:
its QoS is what running it gives, its time the cost model's (`Measurer.score`). A
configuration that would run a call not kept is left for the sampler. The scored
trials carry the user attrs `scored` and `modelled`; the front's points are timed
paired afterwards, as every modelled point is."""

from __future__ import annotations

import time

import optuna

from autotuner import strategy
from autotuner._records import CONSTRAINT, front, measured_within, records
from autotuner.space import SearchSpace, config_key

SWEEP_LIMIT = 5000  # configurations scored at most by one sweep
SWEEP_BASES = 16  # configurations the sweep varies: the front's, then the fastest other ones within the budget
PROGRESS_SECONDS = 15.0  # a progress line this often


def bases_of(recs: list, budget: float, n: int = SWEEP_BASES) -> list:
    """What the sweep varies: the front (least approximate first), then the other
    configurations measured on every tuning input within the budget, fastest first (a
    point off the front may reach it with a ladder cut), `n` in all."""
    fr = sorted(front(recs, budget), key=lambda r: r.speedup)
    on = {r.number for r in fr}
    rest = sorted((r for r in measured_within(recs, budget) if r.number not in on), key=lambda r: -r.speedup)
    return (fr + rest)[:n]


def sweep(study: optuna.Study, space: SearchSpace, measurer, program, budget: float,
          states: list[int] | None, deadline: float | None = None, limit: int = SWEEP_LIMIT,
          seed: int = 0, say=None) -> dict[str, int]:
    """Score the sweep's configurations around the configurations of `study` that
    `bases_of` picks (round robin over them and their ladders) until `limit` are
    scored, the configurations run out or the clock passes `deadline` (time.time());
    {"scored": n, "not_kept": n} (configurations that would run a model)."""
    from autotuner.workers import build

    have = {t.user_attrs.get("key") for t in study.get_trials(deepcopy=False)}
    tally = {"scored": 0, "not_kept": 0}
    last = time.perf_counter()

    def score(config: dict, probe: bool = False) -> bool:
        """Score `config` and add it as a trial unless it is one already; False where it
        is not one of the space, was measured already (unless `probe`: whether its calls
        are all kept, for a configuration perhaps measured on the first stage alone), or a
        call it makes was not kept."""
        nonlocal last
        key = config_key(config)
        if key in have and not probe:
            return False
        trial = optuna.trial.FixedTrial(space.params_of(config))
        try:
            space.suggest(trial)
        except (ValueError, KeyError):  # outside this (narrowed) space
            return False
        m = measurer.score(build(program, config), config)
        if m is None:
            tally["not_kept"] += key not in have
            have.add(key)
            return False
        if key in have:
            return True
        have.add(key)
        attrs = {"config": config, "key": key, "n": m.n, "qos": m.qos, "seconds": m.seconds, "modelled": True,
                 "scored": True, "worker": "sweep", "loss_low": m.loss_low, "loss_high": m.loss_high}
        study.add_trial(optuna.trial.create_trial(
            params=trial.params, distributions=trial.distributions, values=[m.qos_loss, min(m.speedup, 1e9)],
            user_attrs=attrs, constraints={CONSTRAINT: m.qos_loss - budget}))
        tally["scored"] += 1
        if say and time.perf_counter() - last > PROGRESS_SECONDS:
            last = time.perf_counter()
            say(f"sweep: {tally['scored']} dynamic configurations scored from kept outputs, "
                f"{tally['not_kept']} would run a model")
        return True

    def more() -> bool:
        return tally["scored"] < limit and (deadline is None or time.time() < deadline)

    bases = bases_of(records(study), budget)
    groups = []
    for i, r in enumerate(bases):
        base = space.lift(r.config)
        for d in strategy.ladders_of(space) if base is not None else ():
            if not more():
                break
            values = [v for v in d.values if score(space.lift({**base, d.name: {"knob_val": v}}), probe=True)]
            if len(values) > 1:
                groups.append(iter(strategy.sweep_configs(base, d, values, states, seed + i)))
    while groups and more():
        for g in list(groups):
            config = next(g, None)
            if config is None:
                groups.remove(g)
            elif more():
                score(config)
    return tally
