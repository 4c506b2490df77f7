"""Every system of the registry (examples/systems/registry.py), checked the same way:
built through its `System` (the spec worker processes and `approx-tune verify`
rebuild it from), every knob at 0 answers as its unannotated program (`plain()`) on
its first tuning input (each system's own file checks knob 0 on more, where it has
more paths), and the tuner runs it end to end at the smallest size (one
tuning input, one static trial, a held-out split of one input). What only one system has (its
fixed answers, decisions, recorded configurations) stays in its own test file.

A RAG system is built over every 69th SQuAD paragraph (`System.build(corpus=...)`, as
its own tests build it): the dense ones would embed all 2,067 paragraphs first, two
minutes of a fresh machine. The question systems are tuned against the exact program's
answers (their "agreement" QoS: any input defines a loss); the BFCL agents, which tune
against the gold calls only, on an item of each split the exact agent gets right."""

from __future__ import annotations

import inspect

import pytest

from approx_opt.program import exact_config
from examples import squad
from examples.systems.program import is_exact
from examples.systems.registry import SYSTEMS
from tests.model_caches import release_models
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

CANDIDATES = 12  # items of each split looked at for one the exact BFCL agent gets right
STEP = 69  # a RAG system's corpus: every STEP-th SQuAD paragraph
# per BFCL system, the (tuning, held-out) item its exact program got right here (the scan's first hit):
# tried first, the other candidates after it where another machine answers it otherwise
LOOK_FIRST = {"agent_llm": (1, 1), "tools_llm": (6, 1)}
BUILT: dict = {}  # name -> Program: the system the last test built (`built`)


def sizes(name: str) -> dict:
    """The factory keywords that make `name` smaller: a corpus where it takes one."""
    factory = SYSTEMS[name].resolve(SYSTEMS[name].program)
    takes_corpus = "corpus" in inspect.signature(inspect.unwrap(factory)).parameters
    return {"corpus": tuple(squad.paragraphs()[::STEP])} if takes_corpus else {}


def built(name: str):
    """`name`'s Program, the one system held: building another lets the last one's models go
    (three Gemma systems held at once, each with its engine builds, took 15 GB in one worker)."""
    if name not in BUILT:
        BUILT.clear()
        release_models()
        BUILT[name] = SYSTEMS[name].build(**sizes(name))
    return BUILT[name]


def first_of_each_split(name: str):
    """[([tuning input], [reference]), ([held-out input], [reference])]: the first of each."""
    return [([inputs[0]], [references[0]]) for inputs, references in SYSTEMS[name].splits(1, 0, 5)]


def right_of_each_split(name: str):
    """As `first_of_each_split`, the first of CANDIDATES the exact program gets right
    (against the gold calls a split the exact agent scores 0 on defines no QoS loss);
    the item LOOK_FIRST names is tried first (each exact call costs seconds)."""
    exact, score = built(name).exact(), SYSTEMS[name].score
    chosen = []
    for k, (inputs, references) in enumerate(SYSTEMS[name].splits(CANDIDATES, 0, CANDIDATES)):
        first = LOOK_FIRST.get(name, (0, 0))[k]
        order = [first] + [i for i in range(len(inputs)) if i != first]
        right = next(((inputs[i], references[i]) for i in order if score(exact(inputs[i]), references[i]) == 1.0),
                     None)
        assert right, f"{name}: the exact program answers none of {CANDIDATES} inputs right"
        chosen.append(([right[0]], [right[1]]))
    return chosen


@pytest.mark.parametrize("name", SYSTEMS)
def test_knob_zero_answers_as_the_unannotated_program(name):
    """The exact configuration is the program as written: a knob whose value 0 changed
    an answer would be lost in every speedup measured against it."""
    program = built(name)
    assert program.knobs() and is_exact(exact_config(program))
    assert getattr(program, "spec", None) == (None if sizes(name) else SYSTEMS[name].program)
    exact, plain = program.exact(), program.plain()
    (inputs, _), _ = first_of_each_split(name)
    assert [exact(x) for x in inputs] == [plain(x) for x in inputs], name


@pytest.mark.slow
@pytest.mark.parametrize("name", SYSTEMS)
def test_the_tuner_runs_it(name, tmp_path):
    """`autotuner.tune` on the system as the driver calls it (its metric, budget, tuning
    QoS, clock), one trial: a front of static points, each measured held out."""
    from autotuner import Cost, HeldOut, Search, Storage, TuningResult, tune

    s, program = SYSTEMS[name], built(name)
    agreement = not s.items  # tuned against the exact program's answers
    (tune_in, tune_ref), (eval_in, eval_ref) = first_of_each_split(name) if agreement else right_of_each_split(name)
    result = tune(program, tune_in, None if agreement else tune_ref, metric=s.resolve(s.metric),
                  budget=s.budget, search=Search(n_trials=1, mode="static", sweep=0),
                  cost=Cost(clock="cpu", repeats=1),
                  held_out=HeldOut(inputs=eval_in, references=None if agreement else eval_ref),
                  storage=Storage(out_dir=tmp_path))
    assert isinstance(result, TuningResult) and result.trials >= 1 and result.front
    assert {p.mode for p in result.front} == {"static"}
    assert all(p.qos_loss_eval is not None for p in result.front)
    # against the gold calls, the held-out exact score is the item the exact agent gets right; against the
    # exact program's answers there are no references to score it by
    assert result.exact_scores_eval == (None if agreement else [1.0])
