"""Every system of the registry (examples/systems/registry.py), checked the same way:
built through its `System` (the spec worker processes and `approx-tune verify`
rebuild it from), every knob at 0 answers as its unannotated program (`plain()`) on
an input of each split, and the tuner runs it end to end at the smallest size (one
tuning input, one static trial, a held-out split of one input). What only one system has (its
fixed answers, decisions, recorded configurations) stays in its own test file."""

from __future__ import annotations

import pytest

from approx_opt.program import exact_config
from examples.systems.program import is_exact
from examples.systems.registry import SYSTEMS
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

CANDIDATES = 12  # inputs of each split looked at for one the exact program answers right
BUILT: dict = {}  # name -> Program: each system is built once for both tests
CHOSEN: dict = {}  # name -> its inputs of `one_of_each_split`


def built(name: str):
    if name not in BUILT:
        BUILT[name] = SYSTEMS[name].build()
    return BUILT[name]


def score_of(name: str):
    metric = SYSTEMS[name].resolve(SYSTEMS[name].metric)
    return getattr(metric, "fn", metric)  # a Metric's function, or the function itself


def one_of_each_split(name: str):
    """[([tuning input], [reference]), ([held-out input], [reference])]: in each split,
    the first of CANDIDATES the exact program answers right (against gold answers a
    split the exact program scores 0 on defines no QoS loss)."""
    if name not in CHOSEN:
        exact, score = built(name).exact(), score_of(name)
        chosen = []
        for inputs, references in SYSTEMS[name].splits(CANDIDATES, 0, CANDIDATES):
            right = next(((x, ref) for x, ref in zip(inputs, references) if score(exact(x), ref) == 1.0), None)
            assert right, f"{name}: the exact program answers none of {CANDIDATES} inputs right"
            chosen.append(([right[0]], [right[1]]))
        CHOSEN[name] = chosen
    return CHOSEN[name]


@pytest.mark.parametrize("name", SYSTEMS)
def test_knob_zero_answers_as_the_unannotated_program(name):
    """The exact configuration is the program as written: a knob whose value 0 changed
    an answer would be lost in every speedup measured against it."""
    program = built(name)
    assert program.spec == SYSTEMS[name].program and program.knobs()
    assert is_exact(exact_config(program))
    exact, plain = program.exact(), program.plain()
    for inputs, _ in one_of_each_split(name):
        assert [exact(x) for x in inputs] == [plain(x) for x in inputs], name


@pytest.mark.slow
@pytest.mark.parametrize("name", SYSTEMS)
def test_the_tuner_runs_it(name, tmp_path):
    """`autotuner.tune` on the system as the driver calls it (its metric, budget, tuning
    QoS, clock), one trial: a front of static points, each measured held out, and the
    held-out exact scores those of the exact program."""
    from autotuner import Cost, HeldOut, Search, Storage, TuningResult, tune

    s, program = SYSTEMS[name], built(name)
    (tune_in, tune_ref), (eval_in, eval_ref) = one_of_each_split(name)
    result = tune(program, tune_in, None if s.tuning_qos == "agreement" else tune_ref, metric=s.resolve(s.metric),
                  budget=s.budget, search=Search(n_trials=1, mode="static", sweep=0),
                  cost=Cost(clock="cpu", repeats=1), held_out=HeldOut(inputs=eval_in, references=eval_ref),
                  storage=Storage(out_dir=tmp_path))
    assert isinstance(result, TuningResult) and result.trials >= 1 and result.front
    assert {p.mode for p in result.front} == {"static"}
    assert all(p.qos_loss_eval is not None for p in result.front)
    exact = program.exact()
    assert result.exact_scores_eval == [score_of(name)(exact(x), ref) for x, ref in zip(eval_in, eval_ref)] == [1.0]
