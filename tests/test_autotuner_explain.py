"""Which knobs matter: the importances the report lists are each knob's main effect
over the measured trials, fitted jointly (a knob that merely happened to be tried with
another's good values gets little of its share)."""

from __future__ import annotations

import math

import optuna
from optuna.distributions import FloatDistribution, IntDistribution

from autotuner.explain import importances

DIST = {"a": IntDistribution(0, 3), "b": IntDistribution(0, 3), "tree.t0": FloatDistribution(0, 1),
        "tree.d1": IntDistribution(0, 2)}


def study_of(rows) -> optuna.Study:
    """A two-objective study (loss, speedup) holding the given (params, loss, speedup) trials."""
    study = optuna.create_study(directions=["minimize", "maximize"])
    for params, loss, speedup in rows:
        study.add_trial(optuna.trial.create_trial(params=params, distributions={k: DIST[k] for k in params},
                                                  values=[loss, speedup]))
    return study


def test_the_knob_that_moves_the_figures_gets_their_share_though_another_was_tried_alongside_it():
    # b follows a in 14 of 16 trials (as a sampler drawn to good values would), but only a moves the figures
    rows = []
    for i in range(16):
        a = i % 4
        b = a if i < 14 else 3 - a
        rows.append(({"a": a, "b": b}, 0.05 * a, math.exp(0.4 * a)))
    imp = importances(study_of(rows), ["a", "b"])
    assert imp["speedup"]["a"] > 0.9 and imp["qos_loss"]["a"] > 0.9, imp
    assert math.isclose(sum(imp["speedup"].values()), 1.0)


def test_a_decision_trees_parameters_add_up_to_their_knob_and_a_study_without_variation_says_nothing():
    rows = [({"a": i % 2, "tree.t0": i / 10, "tree.d1": i % 3}, 0.0, 1.0 + (i % 3)) for i in range(10)]
    imp = importances(study_of(rows), ["a", "tree"])
    assert set(imp["speedup"]) == {"a", "tree"} and imp["speedup"]["tree"] > 0.9, imp
    assert "qos_loss" not in imp  # every loss is 0: nothing to explain
    assert importances(study_of(rows[:3]), ["a", "tree"]) == {}  # fewer trials than the minimum


def test_a_parameter_of_many_named_values_is_grouped_by_name():
    dist = {"exit": IntDistribution(0, 4), "mode": optuna.distributions.CategoricalDistribution(list("abcdefghij"))}
    study = optuna.create_study(directions=["minimize", "maximize"])
    for i in range(50):  # every exit value with every mode
        params = {"exit": i % 5, "mode": "abcdefghij"[i // 5]}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=dist,
                                                  values=[0.0, math.exp(0.3 * (i % 5 == 4))]))
    imp = importances(study, ["exit", "mode"])
    assert imp["speedup"]["exit"] > 0.9, imp  # ten names (no quartiles of text): the knob moving the speedup
