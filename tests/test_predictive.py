"""The default (predictive) sampler on small synthetic spaces whose loss and cost are
plain functions of the knob values (no compile, deterministic): the exact
configuration first, each knob alone among the first proposals, no configuration
measured twice, patience, an additive front found in a sixth of the space, and
wide threshold ranges / large spaces searched by the sampler itself (no NSGA-II)."""

from __future__ import annotations

import itertools

import optuna
import pytest
from optuna.distributions import IntDistribution

from autotuner import config_key
from autotuner._objective import Objective
from autotuner._optimize import optimize
from autotuner._records import counts, hypervolume_of_study
from autotuner._sampling import TrialSeeded
from autotuner._seeding import enqueue_seeds
from autotuner.measure import Measurement
from autotuner.pareto import hypervolume
from autotuner.predictive import PredictiveSampler
from autotuner.predictive_model import GRID_LEVELS, level_index, levels_of
from autotuner.space import SearchSpace
from passes.knobs import KnobSpec

optuna.logging.set_verbosity(optuna.logging.ERROR)
LOSS, COST = (0.004, 0.007, 0.012), (5.0, 3.0, 1.0)  # per knob: loss per unit of value, share of the cost


def static_space(knobs: int = 3, values=(0, 1, 2, 3, 4)) -> SearchSpace:
    return SearchSpace.from_specs([KnobSpec(f"k{i}", f"f{i}", "param", "static", tuple(values))
                                   for i in range(knobs)])


def additive(config) -> tuple[float, float]:
    """(QoS loss, speedup): losses add up, each knob value k divides its share of the cost by 1 + k."""
    ks = [config[f"k{i}"]["knob_val"] for i in range(3)]
    cost = sum(w / (1 + k) for w, k in zip(COST, ks))
    return sum(c * k for c, k in zip(LOSS, ks)), sum(COST) / cost


def run(space: SearchSpace, figures, n: int, patience: int | None = None, sampler=None):
    """The tuner's search on `space`, evaluating with `figures(config) -> (loss, speedup)`:
    (the configurations measured in order, the study)."""
    measured = []

    def evaluate(config, n=None):
        measured.append(config)
        loss, speedup = figures(config)
        return Measurement(loss, speedup, float("nan"), 1 - loss, 1)

    study = optuna.create_study(directions=["minimize", "maximize"],
                                sampler=sampler or TrialSeeded("predictive", 0, n, 0.05))
    enqueue_seeds(study, space, "predictive")
    optimize(study, Objective(space, evaluate, 0.05), n, space.size(), patience=patience)
    return measured, study


def test_exact_configuration_first_then_each_knob_alone_among_the_first_proposals():
    measured, _ = run(static_space(), additive, 10)
    assert measured[0] == {f"k{i}": {"knob_val": 0} for i in range(3)}
    alone = [{**measured[0], f"k{i}": {"knob_val": 2}} for i in range(3)]  # the middle of 0..4
    assert all(a in measured[:10] for a in alone)


def test_no_configuration_is_measured_twice_and_the_search_stops_when_the_space_is_spent():
    space = static_space(2, (0, 1, 2))
    measured, study = run(space, lambda c: (0.01 * sum(v["knob_val"] for v in c.values()), 1.0), 20)
    keys = [config_key(c) for c in measured]
    assert len(keys) == len(set(keys)) == 9 == counts(study)["evaluated"]  # all of 3 x 3, once each


def test_an_additive_front_is_found_within_a_sixth_of_the_space():
    measured, _ = run(static_space(), additive, 20)
    every = [additive({f"k{i}": {"knob_val": k} for i, k in enumerate(ks)})
             for ks in itertools.product(range(5), repeat=3)]
    assert len(measured) == 20
    assert hypervolume([additive(c) for c in measured], 0.05) >= 0.95 * hypervolume(every, 0.05)


def test_patience_stops_once_the_front_stops_growing():
    measured, study = run(static_space(), additive, 60, patience=3)
    curve = hypervolume_of_study(study, 0.05)
    assert len(measured) == len(curve) - 1 < 60
    assert curve[-1] == curve[-4] > 0 and all(curve[i] < curve[i + 3] for i in range(len(curve) - 4))


def test_wide_threshold_ranges_are_searched_on_a_grid():
    lin, log = levels_of(IntDistribution(0, 2000)), levels_of(IntDistribution(1, 1_000_000, log=True))
    assert len(lin) == GRID_LEVELS and (lin[0], lin[-1]) == (0, 2000) and lin[1] - lin[0] == pytest.approx(133, abs=1)
    assert (log[0], log[-1]) == (1, 1_000_000) and log[-2] / log[-3] == pytest.approx(log[-1] / log[-2], rel=0.01)
    assert levels_of(IntDistribution(1, 4)) == [1, 2, 3, 4]
    assert level_index(lin, 130, nearest=True) == 1 and level_index(lin, 2000) == len(lin) - 1
    assert level_index([0, 2, 4], 3) is None  # a categorical value outside the searched ones


def test_a_dynamic_space_with_wide_thresholds_and_too_many_configurations_is_not_left_to_nsga2():
    specs = [KnobSpec("read", "read", "func_substitute", "ladder", (0, 1, 2, 3), (0,), (2000,), 2),
             *[KnobSpec(f"k{i}", f"f{i}", "param", "static", (0, 1, 2, 3, 4)) for i in range(7)]]
    space = SearchSpace.from_specs(specs, "dynamic")  # 16^2 x 4^3 ladder settings x 5^7: a pool, not every one

    def figures(config):
        read = config["read"]
        share = sum(d * (hi - lo) for d, lo, hi in zip(read["decisions"], [0, *read["thresholds"]],
                                                        [*read["thresholds"], 2000])) / 2000
        ks = [config[f"k{i}"]["knob_val"] for i in range(7)]
        return 0.01 * share + 0.003 * sum(ks), 1.0 + 0.3 * share + 0.05 * sum(ks)

    sampler = PredictiveSampler(0.05, seed=0, n_trials=12)
    measured, _ = run(space, figures, 12, sampler=sampler)
    assert not sampler._use_fallback and len({config_key(c) for c in measured}) == 12
    assert any(c["read"]["decisions"] != [0, 0, 0] for c in measured)


def test_a_repeated_proposal_is_replaced_by_what_earlier_trials_leave_free_whatever_later_ones_took():
    """Later trials (running in other processes by now, or not yet in a resumed study) do
    not change an earlier trial's configuration: killed and resumed, a study proposes
    what it proposes run straight through."""
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState, create_trial

    from autotuner._sampling import avoid_repeats

    space = {"a": CategoricalDistribution([0, 1, 2]), "b": CategoricalDistribution([0, 1])}

    def replaced(later: list[dict]) -> dict:
        study = optuna.create_study(directions=["minimize", "minimize"])
        study.add_trial(create_trial(params={"a": 0, "b": 0}, distributions=space, values=[0.0, 1.0]))
        study.add_trial(create_trial(state=TrialState.RUNNING, params={"a": 1, "b": 1}, distributions=space))
        for params in later:  # numbered from 2 on: the proposing trial (2) and those after it
            study.add_trial(create_trial(state=TrialState.RUNNING, params=params, distributions=space))
        return avoid_repeats(study, space, {"a": 0, "b": 0}, 2, [0, 2])

    alone = replaced([])
    assert alone not in ({"a": 0, "b": 0}, {"a": 1, "b": 1})  # no earlier trial's configuration
    free = [{"a": a, "b": b} for a, b in itertools.product(range(3), range(2))]
    assert all(replaced([p for p in free if p != keep]) == alone for keep in free)


def test_a_proposal_waits_for_an_earlier_trial_still_being_sampled_elsewhere(monkeypatch):
    """An earlier trial another process has created but not sampled yet has no configuration:
    the proposal waits for it and then avoids it, instead of repeating it unseen (a lost
    evaluation in one run, not in another: the flake of the shared-study fire test)."""
    import threading

    from optuna.distributions import CategoricalDistribution

    from autotuner import _sampling

    space = {"a": CategoricalDistribution([0, 1, 2]), "b": CategoricalDistribution([0, 1])}
    study = optuna.create_study(directions=["minimize", "minimize"])
    earlier = study.ask()  # RUNNING, no configuration yet
    waiting, given = threading.Event(), threading.Event()

    def pause():
        waiting.set()
        given.wait(timeout=60)

    monkeypatch.setattr(_sampling, "_pause", pause, raising=False)
    proposed = []
    worker = threading.Thread(target=lambda: proposed.append(
        _sampling.avoid_repeats(study, space, {"a": 0, "b": 0}, earlier.number + 1, [0, 1])))
    worker.start()
    while not (waiting.is_set() or proposed):
        worker.join(timeout=0.05)
    for name in space:  # the other process's sampler gives it the configuration proposed here
        study._storage.set_trial_param(earlier._trial_id, name, space[name].to_internal_repr(0), space[name])
    given.set()
    worker.join(timeout=60)
    assert proposed and proposed[0] != {"a": 0, "b": 0}
