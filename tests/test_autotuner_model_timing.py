"""Configurations measured by their QoS pass alone (`timing="model"`): on a RAG
program whose answer models keep their outputs (the real MiniLM readers, BM25), a
dynamic configuration whose decisions send each question to calls made already is
scored with no model run and gives the QoS that running it gives; its modelled
time is what its calls cost when they ran; `tune()` times the front paired and
ranks it by those timings; a later study reads the kept outputs instead of running
the exact program again."""

from __future__ import annotations

import json

import pytest

from autotuner import Cost, HeldOut, Measurer, Search, Storage, tune
from examples import squad
from examples.systems.common import METRIC, question_sets, readers
from examples.systems.program import SystemProgram
from examples.systems.rag import bm25 as rag_bm25
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

N = 6
MODEL, PAIRED = Cost(clock="wall", timing="model"), Cost(clock="wall", timing="paired", repeats=1)


def kept_program(tmp_path, name="kept_rag"):
    """A RAG-BM25 system (its own build, 300 paragraphs) keeping its readers' outputs in tmp_path."""
    base = rag_bm25.system.__wrapped__(tuple(squad.paragraphs()[:300]))
    program = SystemProgram(name, base.program, reuse=readers())
    assert program.keep_outputs(tmp_path / "kept_outputs.db")
    program.states = base.states  # the answer step's decision state of each question
    return program


@pytest.fixture(scope="module")
def questions():
    return question_sets(N, seed=3)[0][0]


def ladder(thresholds, decisions) -> dict:
    return {"read": {"thresholds": list(thresholds), "decisions": list(decisions)}}


def test_a_dynamic_configuration_is_scored_from_kept_calls_as_running_it_scores(tmp_path, questions):
    program = kept_program(tmp_path)
    m = Measurer(program, questions, None, METRIC, MODEL)
    for k in (1, 2, 3):  # each variant of the answer step for every question
        m.measure(program.build({"read": {"knob_val": k}}), {"read": {"knob_val": k}})
    states = sorted(program.states(questions))
    config = ladder([states[N // 3], states[2 * N // 3]], [0, 2, 3])  # exact, fast reader, fast on the top passage
    before = program.reuse_counts()["run"]
    scored = m.measure(program.build(config), config)
    assert program.reuse_counts()["run"] == before  # no reader ran: every answer was kept
    assert scored.modelled and scored.speedup_low is None  # not timed

    fresh = SystemProgram("fresh", rag_bm25.system.__wrapped__(tuple(squad.paragraphs()[:300])).program)
    run = Measurer(fresh, questions, None, METRIC, PAIRED)
    measured = run.measure(fresh.build(config), config)
    assert scored.qos_loss == pytest.approx(measured.qos_loss) and scored.qos == pytest.approx(measured.qos)
    # the modelled time is what the calls took when they ran: exact questions at the exact time
    assert 0 < scored.seconds and 0 < scored.exact_seconds


def test_tune_times_the_front_sweeps_dynamic_configurations_and_a_later_study_reads_the_kept_outputs(
        tmp_path, questions):
    """One `tune()` (static, then dynamic): the static front timed paired, dynamic
    configurations scored from the kept outputs as running them scores, and a new
    process's build reads what was kept instead of running the exact program again."""
    import optuna

    program = kept_program(tmp_path)
    space = {"bm25.top_k": [0], "bm25.preprocess": [0], "bm25.terms": [0], "bm25.docs": [0]}
    r = tune(program, questions, None, metric=METRIC, budget=0.5,
             search=Search(n_trials=6, mode="both", seed=1, narrow=space, sweep=12), cost=Cost(repeats=1),
             held_out=HeldOut(inputs=questions[:4], levels=[0.5]), storage=Storage(out_dir=tmp_path))
    assert (tmp_path / "kept_outputs.db").is_file()
    plan = json.loads((tmp_path / "strategy.json").read_text())  # where the time goes orders the screen
    assert max(plan["shares"], key=plan["shares"].get) == "answer"
    assert plan["negligible"] == {}  # nothing fixed for its own share: bm25's top-k changes what is read

    study = optuna.load_study(study_name=r.study_names["static"], storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert [t for t in study.trials if t.user_attrs.get("modelled")]  # measured by their QoS pass
    timed = {k for k in study.user_attrs if k.startswith("timed:")}
    static = [p for p in r.front if p.mode == "static"]
    assert static and {f"timed:{p.trial}" for p in static} <= timed  # every front point timed paired
    assert all(p.speedup_tune_ci is not None for p in static)
    # held out: only the point the level reports (the fastest within 50 % on the tuning split)
    assert [p.trial for p in static if p.speedup_eval is not None] == [max(static, key=lambda p: p.speedup_tune).trial]

    study = optuna.load_study(study_name=r.study_names["dynamic"], storage=f"sqlite:///{tmp_path / 'study.db'}")
    # the dynamic study starts with the static trials, their paired timings kept: none is timed again
    copied = {t.number: t.user_attrs["reused_from"] for t in study.trials if "reused_from" in t.user_attrs}
    assert {f"{r.study_names['static']}#{p.trial}" for p in static} <= set(copied.values())
    assert not {f"timed:{n}" for n in copied} & set(study.user_attrs)
    dynamic, source = [p for p in r.front if p.mode == "dynamic"], {p.trial: p for p in static}
    assert len({json.dumps(p.knobs, sort_keys=True) for p in dynamic}) == len(dynamic)  # none twice
    for p in dynamic:
        s = source.get(int(copied[p.trial].split("#")[1])) if p.trial in copied else None
        assert s is None or p.speedup_tune_ci == s.speedup_tune_ci
    scored = [t for t in study.trials if t.user_attrs.get("scored")]
    assert 0 < len(scored) <= 12 and r.search["scored_from_kept"]["dynamic"] == len(scored)
    config = scored[-1].user_attrs["config"]
    assert len(set(config["read"]["decisions"])) > 1  # a dynamic configuration, mixing measured values
    fresh = SystemProgram("fresh", rag_bm25.system.__wrapped__(tuple(squad.paragraphs()[:300])).program)
    ran = Measurer(fresh, questions, None, METRIC, PAIRED).measure(fresh.build(config), config)
    assert scored[-1].values[0] == pytest.approx(ran.qos_loss)  # scored as running it scores

    again = kept_program(tmp_path, "again")  # a new process's build: the exact pass reads what was kept
    Measurer(again, questions, None, METRIC, MODEL)
    assert again.reuse_counts()["run"] == 0 and again.reuse_counts()["reused"] >= N


def test_a_configuration_is_scored_from_kept_outputs_alone_or_not_at_all(tmp_path, questions):
    program = kept_program(tmp_path)
    m = Measurer(program, questions, None, METRIC, MODEL)
    config = {"read": {"knob_val": 2}}
    before = program.reuse_counts()["run"]
    assert m.score(program.build(config), config) is None  # the fast reader never answered: not scored
    assert program.reuse_counts()["run"] == before  # and no answer was generated to find out
    measured = m.measure(program.build(config), config)  # runs it, keeping its answers
    scored = m.score(program.build(config), config)
    assert scored is not None and scored.modelled
    assert (scored.qos, scored.qos_loss) == (measured.qos, measured.qos_loss)
