"""The two RAG systems (examples/systems), each one decorated program whose
components are IR: fixed exact answers (deterministic, torch on one thread), knob 0
= the providers called directly, the per-question decision routing to the variant
its state selects, `approx-opt --list-knobs` on the IR = the program's knobs, every
knob rewriting its component op, the previous implementation's answers (where the
numbers are float32: a bfloat16 model's depend on the CPU, so those configurations are
checked on this machine against their components called directly), the QoS metric,
and the driver's tiny tuning run of RAG-BM25. RAG-BM25 runs over all 2,067 paragraphs; RAG-dense over 30 of them
(every 69th: embedding the whole corpus takes minutes, the bench does it)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.main import list_knobs
from autotuner.results import TuningResult
from examples import squad
from examples.systems import common
from examples.systems.rag import bm25 as rag_bm25
from examples.systems.rag import dense as rag_dense
from examples.systems.rag.program import CASCADE_THRESHOLDS
from examples.systems.rag.query_encoder import QueryEncoder
from frontends.components.llm import limit_contexts, select_sentences
from frontends.components.llm.escalation import ModelCascade

DATA = Path(__file__).parent / "data"

STEP = 69
BM25_FIXED = {  # the first questions of the evaluation articles -> the exact program's answers
    "What is Southern California often abbreviated as?": "SoCal",
    'Despite being traditionall described as "eight counties", how many counties does this region actually '
    "have?": "5 million",
    "What is a major importance of Southern California in relation to California and the United States?":
        "economic center",
}
DENSE_FIXED = {  # evaluation questions about three of the 30 paragraphs
    "What Revolutionary War midnight rider was a Huguenot descendant?": "Paul Revere",
    "What was the first spacecraft to orbit another celestial body?": "Apollo 8",
    "In which case was it held that the provisions of the treaties are directly effective if they are clear, "
    "unconditional, and don't require further action by EU or national authorities?": "Court of Justice",
}


@pytest.fixture(scope="module")
def bm25():
    return rag_bm25.system()


@pytest.fixture(scope="module")
def dense():
    return rag_dense.system(squad.paragraphs()[::STEP])


@pytest.fixture(scope="module", params=["bm25", "dense"])
def system(request, bm25, dense):
    return {"bm25": (bm25, BM25_FIXED), "dense": (dense, DENSE_FIXED)}[request.param]


def test_exact_answers_are_fixed_and_deterministic(system):
    program, fixed = system
    exact = program.exact()
    assert {q: exact(q) for q in fixed} == fixed
    assert {q: program.exact()(q) for q in fixed} == fixed  # a second build answers the same


def test_knob_zero_is_the_plain_pipeline(system):
    """The exact program answers as the providers called directly (retrieve, cut nothing, pro reader)."""
    program, fixed = system
    _, pro = common.readers()
    run, corpus = program.exact(), program.corpus
    for q in fixed:
        assert run(q) == pro.answer(q, [corpus[i] for i in program.search(q).ids]).text


def test_decision_picks_the_variant_of_each_question(bm25):
    """read's ladder: state >= 500 -> variant 1 (top passage), state >= 1500 -> variant 3 (fast, top)."""
    config = {"read": {"thresholds": [500, 1500], "decisions": [0, 1, 3]}}
    run = bm25.build(config)
    fast, pro = common.readers()
    seen = set()
    for q in [q.question for q in squad.questions_of("eval")[:12]]:
        hits = bm25.search(q)
        state = rag_bm25.bm25_margin(hits)
        k = 0 if state < 500 else 1 if state < 1500 else 3
        seen.add(k)
        passages = [bm25.corpus[i] for i in hits.ids]
        model, read = {0: (pro, passages), 1: (pro, passages[:1]), 3: (fast, passages[:1])}[k]
        assert run(q) == model.answer(q, read).text
    assert len(seen) >= 2  # the questions do take different variants


def test_every_component_has_knobs(bm25, dense):
    assert [s.name for s in bm25.knobs()] == [
        "bm25.top_k", "bm25.preprocess", "bm25.terms", "bm25.docs", "answer.model", "answer.max_new_tokens",
        "answer.passages", "answer.context_chars", "answer.sentences", "answer.precision", "read"]
    assert [s.name for s in dense.knobs()] == [
        "query.encoder", "query.precision", "dense.top_k", "dense.dims", "dense.docs", "dense.precision",
        "answer.model", "answer.max_new_tokens", "answer.passages", "answer.context_chars", "answer.sentences",
        "answer.precision", "read"]
    assert next(s for s in bm25.knobs() if s.name == "read").kind == "ladder"


def test_list_knobs_of_the_system_ir_is_program_knobs(system):
    program, _ = system
    listed = [k["name"] for k in json.loads(list_knobs(program.ir(), program.name))]
    assert listed == [k.name for k in program.knobs()]


def test_approx_opt_from_python_lists_the_system_knobs(bm25, capsys):
    from approx_opt.main import main

    assert main(["--from-python", "examples.systems.rag.bm25:program", "--list-knobs"]) == 0
    assert [k["name"] for k in json.loads(capsys.readouterr().out)] == [k.name for k in bm25.knobs()]


def test_every_knob_changes_its_component_op(system):
    """For every knob and every non-zero value, the IR after the pipeline differs from the
    exact one in an op of that component (`read`: the call of the answer step's variant)."""
    program, _ = system
    exact = Counter(program.ir(after=True).splitlines())
    for spec in program.knobs():
        for k in spec.values[1:]:
            changed = Counter(program.ir(after=True, config={spec.name: {"knob_val": k}}).splitlines()) - exact
            if spec.name == "read":
                assert any(f"func.call @approx_read_{k}" in line for line in changed), (spec.name, k)
            else:
                label = spec.name.split(".")[0]
                assert any(f'component = "{label}"' in line for line in changed), (spec.name, k)


def test_approximate_configuration_and_errors(dense):
    run = dense.build({"query.precision": {"knob_val": 1}, "answer.precision": {"knob_val": 1},
                       "read": {"knob_val": 3}})
    q = next(iter(DENSE_FIXED))
    assert isinstance(run(q), str) and run(q) == run(q)
    with pytest.raises(ApproxError, match="unknown knob 'nope'"):
        dense.build({"nope": {"knob_val": 1}})
    with pytest.raises(ApproxError, match="answer.passages"):
        dense.build({"answer.passages": {"knob_val": 9}})


def previous_config(config: dict) -> dict:
    """A configuration of the previous implementation in today's knob names (the
    retrievers' kernel knobs were knob values, now indices into KERNEL_VALUES)."""
    names = {"bm25": "bm25.top_k", "preprocess": "bm25.preprocess", "dense": "dense.top_k",
             "query.layers": "query.encoder", "dense_dot#2": "dense.precision"}
    out = {}
    for name, setting in config.items():
        if name in ("bm25_terms", "bm25_docs", "dense_dot", "dense_docs"):
            values = rag_bm25.KERNEL_VALUES if name.startswith("bm25") else rag_dense.KERNEL_VALUES
            k = values.index(setting["knob_val"]) + 1
            out[name.split("_")[0] + "." + {"dot": "dims"}.get(name.split("_")[1], name.split("_")[1])] = \
                {"knob_val": k}
        else:
            out[names.get(name, name)] = setting
    return out


# Knobs that run a torch model in a lower precision: its numbers depend on the CPU's instructions (AMX,
# AVX-512 bf16, or none), so a configuration setting one is checked on this machine (the second test
# below), never against answers recorded on another. `dense.precision` is not one: the similarity
# kernel is JIT-compiled IEEE arithmetic, rounded op by op alike on every CPU.
MODEL_PRECISIONS = ("answer.precision", "query.precision")
MAX_CHANGED = 3  # of the 20 answers, by bfloat16 against float32 on one machine (measured: 0 or 1 on two CPUs)


def machine_dependent(config: dict) -> bool:
    return any(config.get(k, {}).get("knob_val", 0) for k in MODEL_PRECISIONS)


def recorded(name: str) -> tuple[dict, dict[str, dict]]:
    """The recording of `name` and its configurations in today's knob names."""
    previous = json.loads((DATA / f"rag_{name}_previous.json").read_text())
    return previous, {label: previous_config(c) for label, c in previous["configs"].items()}


@pytest.mark.parametrize("name", ["bm25", "dense"])
def test_answers_equal_the_previous_implementation(name, bm25, dense):
    """The first 10 of 20 fixed evaluation questions at the recorded configurations
    computed in float32 answer as the previous implementation (knobs held by Python
    objects beside the IR, commit 73d2e32) did; recorded by
    tests/data/record_rag_previous.py. Those running a model in bfloat16 are the next test's."""
    previous, configs = recorded(name)
    program = bm25 if name == "bm25" else dense
    float32 = {label: c for label, c in configs.items() if not machine_dependent(c)}
    assert "exact" in float32 and len(float32) >= 3
    for label, config in float32.items():
        run = program.build(config)
        assert [run(q) for q in previous["questions"][:10]] == previous["answers"][label][:10], label


def cascade_bf16_sentences(program, question: str) -> str:
    """`answer.model` 2, `answer.precision` 1, `answer.sentences` 1 called directly: the
    cascade fast -> pro accepting fast's answer at confidence >= 0.1, both readers in
    bfloat16, on the 3 sentences of each retrieved passage sharing most words with the question."""
    fast, pro = (m.with_precision("bfloat16") for m in common.readers())
    passages = select_sentences(question, [program.corpus[i] for i in program.search(question).ids], 3)
    return ModelCascade([fast], pro, CASCADE_THRESHOLDS, knob=2).answer(question, passages).text


def encoder_top1_cuts(program, question: str) -> str:
    """`query.encoder` 1, `query.precision` 1, `dense.top_k` 2, `answer.passages` 1,
    `answer.context_chars` 2 called directly: the encoder's first 5 layers in bfloat16
    embed the question, the top passage, cut to 500 characters, is read by the pro reader."""
    retriever = program.program.components["dense"]
    encoder = QueryEncoder(retriever.encoder, 5).with_precision("bfloat16")
    hits = retriever.search(np.asarray(encoder.embed([question])[0]), 1)
    passages = limit_contexts([program.corpus[i] for i in hits.ids], 2, 500)
    return common.readers()[1].answer(question, passages).text


DIRECTLY = {"cascade_bf16_sentences": cascade_bf16_sentences, "encoder_top1_cuts": encoder_top1_cuts}


@pytest.mark.parametrize("name", ["bm25", "dense"])
def test_bfloat16_configurations_answer_as_their_components_on_this_machine(name, bm25, dense):
    """The recorded configurations that run a model in bfloat16, checked on this machine
    (their answers depend on the CPU): each answers as its components called directly
    (another path: no IR, no component runtime), and changes at most MAX_CHANGED of the
    20 answers of the same configuration in float32."""
    previous, configs = recorded(name)
    program, questions = (bm25 if name == "bm25" else dense), previous["questions"]
    lower = {label: c for label, c in configs.items() if machine_dependent(c)}
    assert lower and set(lower) <= set(DIRECTLY)
    for label, config in lower.items():
        run = program.build(config)
        float32 = program.build({**config, **{k: {"knob_val": 0} for k in MODEL_PRECISIONS if k in config}})
        got = [run(q) for q in questions]
        assert got == [DIRECTLY[label](program, q) for q in questions], label
        changed = [(q, a, b) for q, a, b in zip(questions, got, map(float32, questions)) if a != b]
        assert len(changed) <= MAX_CHANGED, (label, changed)


def test_qos_metric():
    m = common.answer_qos
    assert m("the SoCal region", ("SoCal", "Southern California")) == 1.0  # gold answers: containment
    assert m("Los Angeles", ("SoCal",)) == 0.0
    assert m("Paul Revere", "Paul Revere") == 1.0  # the exact program's answer: token F1
    assert m("Paul Revere, a silversmith", "Paul Revere") == pytest.approx(0.8)  # precision 2/3, recall 1
    assert m("", "") == 1.0 and m("x", "") == 0.0


@pytest.mark.slow
def test_tiny_tuning_run_of_the_driver(bm25, tmp_path):
    """`tune_system` in both modes, tuned against the exact program's answers (the
    system's "agreement"; the tuner alone, on every system: tests/test_systems_conformance.py;
    "kept": tests/test_systems_tools.py), through the system's `approx-tune run` command.
    Each point a level chooses is also scored against the gold answers on the same tuning
    questions (what running it there gives), shown beside the search's own figure; the
    other points have none."""
    from autotuner.report_summary import front_section
    from examples.systems.registry import REPORTED_LEVELS, SYSTEMS
    from examples.systems.runs import tune_system

    n = 4
    run = tune_system("rag_bm25", n_tune=n, trials=2, seconds=None, out_dir=tmp_path, n_eval=8, report=False)
    r = run.result
    assert isinstance(r, TuningResult) and r.n_tune == n and r.n_eval == 8
    assert run.command.startswith("approx-tune run examples.systems.rag.bm25:system --inputs "
                                  "examples.systems.common:question_sets --n-tune 4 --n-eval 8 ")
    assert r.trials >= 3 and run.trials_per_mode["static"] == 2
    assert any(p.mode == "static" for p in r.front) and any(p.mode == "dynamic" for p in r.front)
    assert all(p.qos_loss_tune <= r.budget for p in r.front)
    assert (tmp_path / "result.json").is_file()
    assert any(n.startswith("QoS: tuning against the exact program's outputs") for n in r.notes)

    (questions, golds), _ = SYSTEMS["rag_bm25"].splits(n, 0, None)
    score = SYSTEMS["rag_bm25"].score

    def qos(config):
        answer = bm25.build(config)
        return sum(score(answer(q), g) for q, g in zip(questions, golds)) / n

    exact = qos({})
    assert exact > 0  # some tuning answer is right: the gold loss is defined
    chosen = {id(r.chosen(lv / 100, m)) for lv in REPORTED_LEVELS for m in ("static", "dynamic")} - {id(None)}
    assert chosen
    for p in r.front:
        if id(p) in chosen:
            assert p.qos_loss_tune_gold == pytest.approx((exact - qos(p.knobs)) / exact)
        else:
            assert p.qos_loss_tune_gold is None
    assert "QoS loss (tuning, gold)" in front_section(r)[0].head


def test_retrieval_stages_are_timed_against_the_tuners_profile(bm25):
    """The tuner profiles its sample, then asks for the negligible knobs of the same
    questions: the retrieval stages are timed against that profile (kept, not measured
    again); BM25's stages take a fraction of a percent beside the reader, so their
    knobs are fixed (top-k is not: it changes what is read)."""
    from examples.systems.common import question_sets

    (questions, _), _ = question_sets(4, 0, 0)
    profile = bm25.profile(questions)
    assert bm25.exact_profile(questions) is profile
    fixed = bm25.negligible_knobs(questions)
    assert set(fixed) == {k for knobs in bm25.stage_knobs.values() for k in knobs}
    assert "bm25.top_k" not in fixed and all(0 < share < 0.02 for share in fixed.values())
    assert bm25.exact_profile(questions[:1]) is not profile  # other questions: a new profile


def test_kept_tuning_questions_are_those_the_exact_program_gets_right(bm25):
    from autotuner.tuning_qos import exact_right
    from examples.systems.common import METRIC, question_sets

    (qs, golds), _ = question_sets(12, 0, 0)
    kept_q, kept_a, tried = exact_right(bm25, qs, golds, METRIC.fn, 3)
    exact = bm25.exact()
    right = [q for q, a in zip(qs, golds) if METRIC.fn(exact(q), a) == 1.0]
    assert len(kept_q) == 3 and 3 <= tried <= len(qs) and set(kept_q) <= set(right)
    assert all(METRIC.fn(exact(q), a) == 1.0 for q, a in zip(kept_q, kept_a))
    assert len(right) < len(qs)  # the check could fail: some question is answered wrong


def test_kept_tuning_questions_are_kept_for_a_resume(bm25, tmp_path):
    """A resumed search reads the choice back (no exact run); other sizes choose again."""
    from autotuner.tuning_qos import exact_right
    from examples.systems.common import METRIC, question_sets

    (qs, golds), _ = question_sets(12, 0, 0)
    keep = tmp_path / "kept.json"
    first = exact_right(bm25, qs, golds, METRIC.fn, 3, keep=keep)
    runs = []

    class Counted:  # the same program, counting its runs
        def knobs(self):
            return bm25.knobs()

        def build(self, config):
            run = bm25.build(config)
            return lambda q: runs.append(q) or run(q)

    assert exact_right(Counted(), qs, golds, METRIC.fn, 3, keep=keep) == first and not runs
    assert exact_right(Counted(), qs[::-1], golds[::-1], METRIC.fn, 3, keep=keep) != first and runs  # other inputs
    runs.clear()
    assert exact_right(Counted(), qs, golds, METRIC.fn, 2, keep=keep)[0] == first[0][:2] and runs


def test_tuning_qos_must_be_known(tmp_path):
    """Before anything runs or the folder is emptied: the system's modes, and the tuner's."""
    from autotuner import Search
    from examples.systems.runs import tune_system

    (tmp_path / "keep").write_text("")
    with pytest.raises(ApproxError, match="unknown tuning QoS 'exact' for rag_bm25 \\(one of: agreement, gold, kept"):
        tune_system("rag_bm25", n_tune=3, trials=1, out_dir=tmp_path, tuning_qos="exact")
    assert (tmp_path / "keep").is_file()
    with pytest.raises(ApproxError, match="unknown tuning QoS 'exact' \\(one of: agreement, gold, kept\\)"):
        Search(tuning_qos="exact")


def test_dynamic_seeds_switch_at_tertiles_and_median_on_either_side(bm25):
    from autotuner.space import SearchSpace
    from autotuner.strategy import dynamic_seeds

    space = SearchSpace.from_program(bm25, "dynamic")
    states = list(range(100))  # quantiles are easy to read
    plain = {s.name: {"knob_val": 0} for s in bm25.knobs() if s.kind != "ladder"}
    static = {**plain, "read": {"knob_val": 2}}
    seeds = [c["read"] for c in dynamic_seeds(space, [static], states)]
    assert seeds == [{"thresholds": [33, 66], "decisions": [0, 2, 2]},
                     {"thresholds": [33, 66], "decisions": [0, 0, 2]},
                     {"thresholds": [25, 50], "decisions": [0, 0, 2]},
                     {"thresholds": [50, 75], "decisions": [2, 0, 0]}]
    # an exact static configuration is seeded with the top-passage variant (1)
    exact = {**plain, "read": {"knob_val": 0}}
    assert {tuple(c["read"]["decisions"]) for c in dynamic_seeds(space, [exact], states)} == \
        {(0, 1, 1), (0, 0, 1), (1, 0, 0)}


def test_dynamic_seeds_switch_between_groups_of_states(bm25):
    """States in groups (the agent's one-sentence kernel results and retrieved
    paragraphs) add seeds that switch between the groups, on either side; evenly
    spread states add none."""
    from autotuner.space import SearchSpace
    from autotuner.strategy import dynamic_seeds, widest_gaps

    assert widest_gaps(list(range(100)), 1) == [] and widest_gaps([5, 5], 1) == []
    grouped = [11] * 5 + [12] * 5 + [14] * 5 + [80, 90, 100, 150]
    assert widest_gaps(grouped, 1) == [47]
    assert widest_gaps(grouped, 2) == [47, 125]
    space = SearchSpace.from_program(bm25, "dynamic")
    plain = {s.name: {"knob_val": 0} for s in bm25.knobs() if s.kind != "ladder"}
    seeds = [c["read"] for c in dynamic_seeds(space, [{**plain, "read": {"knob_val": 2}}], grouped)]
    assert {"thresholds": [47, 125], "decisions": [2, 0, 0]} in seeds
    assert {"thresholds": [47, 125], "decisions": [0, 0, 2]} in seeds
    assert len(dynamic_seeds(space, [{**plain, "read": {"knob_val": 2}}], list(range(100)))) == 4


@pytest.mark.slow  # two spawned workers build the system
def test_kept_tuning_questions_found_on_workers_are_the_same():
    from autotuner.tuning_qos import exact_right
    from examples.systems.common import METRIC, question_sets
    from examples.systems.registry import system

    program = system("rag_bm25").build()  # knows its spec: the workers build it from there
    (qs, golds), _ = question_sets(4, 0, 0)
    assert exact_right(program, qs, golds, METRIC.fn, 3, jobs=2) == exact_right(program, qs, golds, METRIC.fn, 3)
