"""The RAG systems with Gemma 3 270M answering (RAG-BM25-LLM, RAG-dense-LLM) for real:
their knobs are those `approx-opt --list-knobs` reads from their IR, knob 0 answers
as the fine-tuned model called directly on the retrieved passages, every knob
rewrites the answer or retrieval op, and the tuner's untimed passes reuse earlier
answers while timed passes run every call. RAG-dense-LLM runs over 30 paragraphs
(every 69th), as in test_systems_rag; one question each keeps it within about a minute."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from approx_opt.main import list_knobs
from examples import squad
from examples.systems import common
from examples.systems.rag import bm25 as rag_bm25
from examples.systems.rag import dense as rag_dense
from examples.systems.rag.program import llm_precisions
from frontends.components.llm.verifier import Verified

STEP = 69
BM25_QUESTIONS = ["What is Southern California often abbreviated as?"]
DENSE_QUESTIONS = ["What Revolutionary War midnight rider was a Huguenot descendant?"]
ANSWER_KNOBS = ["answer.model", "answer.max_new_tokens", "answer.passages", "answer.context_chars",
                "answer.sentences"]


@pytest.fixture(scope="module")
def bm25():
    return rag_bm25.llm_system()


@pytest.fixture(scope="module")
def dense():
    return rag_dense.llm_system(squad.paragraphs()[::STEP])


@pytest.fixture(scope="module", params=["bm25", "dense"])
def system(request, bm25, dense):
    return {"bm25": (bm25, BM25_QUESTIONS), "dense": (dense, DENSE_QUESTIONS)}[request.param]


def test_knobs_are_those_of_the_ir(system):
    program, _ = system
    names = [k.name for k in program.knobs()]
    # a precision knob only where a value was measured to pay on this machine
    offered = llm_precisions(common.gemma())
    expected = [*(["answer.precision"] if offered else []), *ANSWER_KNOBS, "prompt", "read"]
    assert names[-len(expected):] == expected
    assert [k["name"] for k in json.loads(list_knobs(program.ir(), program.name))] == names
    assert program.name.endswith("_llm") and program.model.startswith("Gemma 3 270M")


def test_knob_zero_answers_as_the_models_called_directly(system):
    """Knob 0: Gemma verifying the reader's span; the variant skipping the verifier (read = 4):
    Gemma alone."""
    program, questions = system
    llm, reader, run = common.gemma(), common.readers()[1], program.exact()
    alone = program.build({"read": {"knob_val": 4}})
    for q in questions:
        passages = [program.corpus[i] for i in program.search(q).ids]
        assert len(passages) == 3
        assert run(q) == Verified(llm, reader).answer(q, passages, 16).text
        assert alone(q) == llm.answer(q, passages, 16).text


def test_every_answer_knob_changes_the_answer_op(bm25):
    exact = Counter(bm25.ir(after=True).splitlines())
    for spec in bm25.knobs():
        if not spec.name.startswith("answer."):
            continue
        for k in spec.values[1:]:
            changed = Counter(bm25.ir(after=True, config={spec.name: {"knob_val": k}}).splitlines()) - exact
            generate = [line for line in changed if '"component.generate"' in line]
            assert generate and all('component = "answer"' in line for line in generate), (spec.name, k)
            if spec.name == "answer.model":  # the cascade: the reader first, then Gemma 3 verifying it
                assert any("@pro" in line for line in generate)
                assert any("@gemma3_verifying_pro" in line for line in generate)
            else:
                parameter = spec.name.split(".")[1]
                assert any(f"{parameter} = " in line for line in generate if "@gemma3" in line), (spec.name, k)


def test_untimed_passes_reuse_answers_timed_passes_run(bm25):
    """The reader-only variant (read = 3) on one question: a second run outside
    `untimed()` runs the reader again, one within reuses its answer, text unchanged."""
    run = bm25.build({"read": {"knob_val": 3}})
    q = BM25_QUESTIONS[0]
    first = run(q)
    before = bm25.reuse_counts()
    assert run(q) == first
    after_timed = bm25.reuse_counts()
    assert after_timed["run"] == before["run"] + 1 and after_timed["reused"] == before["reused"]
    with bm25.untimed():
        assert run(q) == first
    after_untimed = bm25.reuse_counts()
    assert after_untimed["run"] == after_timed["run"] and after_untimed["reused"] == after_timed["reused"] + 1


def test_dynamic_seeds_of_a_static_point_set_every_ladder(bm25):
    """The LLM systems have two ladders (`read`, `prompt`): a static point seeds the
    dynamic study with each ladder switched in turn and the other at its static value
    for every question, each a configuration the dynamic space takes."""
    from autotuner.space import SearchSpace
    from autotuner.strategy import dynamic_seeds

    space = SearchSpace.from_program(bm25, "dynamic")
    ladders = [s.name for s in bm25.knobs() if s.kind == "ladder"]
    assert {"read", "prompt"} <= set(ladders)
    static = {s.name: {"knob_val": 1 if s.name == "prompt" else 0} for s in bm25.knobs()}
    seeds = dynamic_seeds(space, [static], list(range(100)))
    assert seeds
    for seed in seeds:
        space.params_of(seed)  # a static ladder value left in would fail here
        assert all("decisions" in seed[name] for name in ladders)
    switched_read = [s for s in seeds if s["read"]["decisions"] != [0] * len(s["read"]["decisions"])]
    assert switched_read and all(set(s["prompt"]["decisions"]) == {1} for s in switched_read)


def test_dense_query_embeddings_are_kept_so_a_kept_configuration_runs_no_encoder(dense):
    """RAG-dense-LLM keeps its query encoders' calls beside the answers: once a
    configuration ran on a question, a cheaper encoder variant with the same answers
    (the reader) runs again in `kept_only` only for its new embedding; a second time
    it runs nothing (every call kept), with the same answer."""
    from approx_opt.program import NotKept

    q = DENSE_QUESTIONS[0]
    exact_reader = dense.build({"read": {"knob_val": 3}})
    fewer_layers = dense.build({"read": {"knob_val": 3}, "query.encoder": {"knob_val": 1}})
    with dense.untimed():
        exact_reader(q)
    with dense.kept_only():
        with pytest.raises(NotKept, match="query"):  # the 5-layer embedding was never run
            fewer_layers(q)
    with dense.untimed():
        answer = fewer_layers(q)
    before = dense.reuse_counts()
    with dense.kept_only():
        assert fewer_layers(q) == answer
    after = dense.reuse_counts()
    assert after["run"] == before["run"] and after["reused"] >= before["reused"] + 2  # the embedding and the answer
