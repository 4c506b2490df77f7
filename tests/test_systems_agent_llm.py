"""The LLM + kernel tools agent (agent_llm) for real: its questions and gold answers
come from the exact kernels, its tools' levels are the kernels' own knobs, the IR lists
the LLM knobs and the kernels' together, knob 0 answers as the undecorated program, its
triage and QA through the engine (where installed) answer as eager torch, and its
profile says where the time goes and which knobs the tuner fixes."""

from __future__ import annotations

import json

import pytest

from approx_opt.main import list_knobs
from approx_opt.program import exact_config
from examples.kernels import kernel
from examples.systems.agent import data as agent_data
from examples.systems.agent import llm as agent_llm
from examples.systems.agent import tools as agent_tools

LLM_KNOBS = {"triage.max_new_tokens", "qa.max_new_tokens", "qa.sentences", "condense"}  # Gemma: no layer exits


@pytest.fixture(scope="module")
def system():
    return agent_llm.system()


def test_items_are_balanced_seeded_and_disjoint():
    tune, held = agent_data.items("tune", 12), agent_data.items("eval", 12)
    assert [i.tool for i in tune[:6]] == list(agent_data.KINDS)
    assert not {i.question for i in tune} & {i.question for i in held}
    assert agent_data.items("tune", 6, seed=1) != tune[:6]
    assert agent_data.make_inputs(3) == ([(i.question,) for i in tune[:3]], [i.answers for i in tune[:3]])


def test_gold_answers_match_the_numpy_references():
    pr, km, md = agent_data.items("eval", 3)
    g = int(pr.question.split("web graph ")[1].split(",")[0])
    ranks = kernel("pagerank").reference_ranks(*agent_tools.graph(g))
    pages = [int(p) for p in pr.question.split("pages ")[1].rstrip(" ranks highest?").replace(" and", ",").split(", ")]
    assert pr.answers == (str(max(pages, key=lambda p: ranks[p])),)
    s, i = 1000, int(md.question.split("particle ")[2].split(",")[0])
    potential = kernel("lavamd").reference(*agent_tools.particles(s))[i, 0]
    assert md.answers == (str(agent_tools.nearest_ten(potential)),)
    points, init, iters = agent_tools.point_set(1000)
    centroids = kernel("kmeans").reference(points, init, iters)
    p = int(km.question.split("point ")[-1].rstrip("?"))
    assert km.answers == (agent_tools.COLOURS[int(((centroids - points[p]) ** 2).sum(axis=1).argmin())],)


def test_tool_levels_are_the_kernels_own_knobs():
    program = kernel("lavamd").program
    assert agent_tools.level_config(program, 0) == exact_config(program)
    assert all(agent_tools.level_config(program, k) != exact_config(program) for k in (1, 2, 3))
    exact, *levels = agent_tools.tools()["lavamd"]
    q = agent_data.items("tune", 3)[2].question
    assert exact(q) == agent_tools.make_tool("lavamd")(q)
    assert any(level(q) != exact(q) for level in levels)
    assert exact("In web graph 3, which of pages 1 and 2 ranks highest?") == ""  # not a lavamd question


def test_ir_lists_llm_and_kernel_knobs(system):
    from examples.systems.rag.program import llm_precisions

    names = [k.name for k in system.knobs()]
    # a precision knob on each LLM op only where a value was measured to pay on this machine
    precision = {f"{op}.precision" for op in ("triage", "qa")} if llm_precisions(agent_llm.agent_model()) else set()
    assert set(names) == LLM_KNOBS | precision | {f"{t}.tool" for t in agent_tools.TOOLS}
    assert [k["name"] for k in json.loads(list_knobs(system.ir(), system.name))] == names


def test_the_engine_exact_path_gives_eager_torchs_triage_and_answer(system):
    """Knob 0's model through the engine (`policy.exact_path`): on a tuning question of a
    short tool output and one of the longest (bm25's paragraph), the triage's and QA's
    greedy tokens are eager torch's on the same weights."""
    from frontends.components.llm import engine
    from frontends.components.llm.gemma import Gemma3
    from frontends.components.llm.policy import exact_engine

    if not engine.available():
        pytest.skip("onnxruntime-genai not installed (.[engine]): the exact path is torch's")
    if exact_engine("gemma3") is None:
        pytest.skip(f"{engine.ENV}=torch, a GPU run, or eager torch is faster here: the exact path is torch's")
    assert f"exact path through {engine.EXACT}" in system.model
    model = agent_llm.agent_model()
    assert type(model).__name__ == "EngineGemma3"
    eager = Gemma3(model.model, model.tokenizer, name=model.name, exits=model.exits)
    exact = {name: levels[0] for name, levels in agent_tools.tools().items()}
    for item in (it for it in agent_data.items("tune", 5) if it.tool in ("kmeans", "bm25")):
        question = agent_llm.TRIAGE + item.question
        tokens = model.generate(question, agent_llm.GUIDE, agent_llm.TRIAGE_TOKENS)[0]
        assert tokens == eager.generate(question, agent_llm.GUIDE, agent_llm.TRIAGE_TOKENS)[0], item.question
        output = [exact[item.tool](item.question)]
        tokens = model.generate(item.question, output, agent_llm.QA_TOKENS)[0]
        assert tokens == eager.generate(item.question, output, agent_llm.QA_TOKENS)[0], item.question


def test_condense_decides_per_output_length(system):
    """Variant 1 of the condense ladder (QA reads the output's one sentence most like the
    question) runs where the output's length in words is on its side of the threshold, the
    whole output elsewhere."""
    kmeans, bm25 = agent_data.items("tune", 4)[1], agent_data.items("tune", 4)[3]
    short = agent_tools.tools()["kmeans"][0](kmeans.question)
    long = agent_tools.tools()["bm25"][0](bm25.question)
    assert agent_llm.output_words(short) < 40 <= agent_llm.output_words(long)
    assert system.states([kmeans.question, bm25.question]) == [agent_llm.output_words(short),
                                                               agent_llm.output_words(long)]
    exact = exact_config(system)
    skip_short = {**exact, "condense": {"thresholds": [40], "decisions": [1, 0]}}
    one_sentence = {**exact, "qa.sentences": {"knob_val": 2}}
    run, cut = system.build(skip_short), system.build(one_sentence)
    assert run(kmeans.question) == cut(kmeans.question)  # both: QA reads the kmeans tool's one sentence
    assert run(bm25.question) == system.exact()(bm25.question)  # QA reads the whole paragraph


def test_profile_says_where_the_time_goes(system, monkeypatch):
    """Two questions (a pagerank and a kmeans one): the components they call are in the
    profile, the LLM calls take most of the time and the shares add up to the whole.
    The knobs the tuner fixes at exact (`negligible_knobs`, which the tuner itself runs in
    tests/test_systems_conformance.py) are every kernel's, each under 2 % of the time:
    the profile just measured is reused (a new one would time every call again), and the
    three tools these questions never called are timed alone."""
    questions = [it.question for it in agent_data.items("tune", 2)]
    profile = system.profile(questions)
    assert {"triage", "qa", "(program)", "pagerank", "kmeans"} <= set(profile)
    assert profile["triage"]["calls"] == len(questions) and profile["pagerank"]["calls"] == 1
    assert abs(sum(v["share"] for v in profile.values()) - 1) < 1e-9
    # the LLM calls (seconds each) against kernels and tools (milliseconds): a ratio no load inverts
    assert sum(profile[k]["share"] for k in ("triage", "qa")) > 0.5
    monkeypatch.setattr(system, "profile", lambda *a, **k: pytest.fail("the questions were profiled again"))
    fixed = system.negligible_knobs(questions)
    assert set(fixed) == {f"{t}.tool" for t in agent_tools.TOOLS}
    assert all(0 < share < 0.02 for share in fixed.values()), fixed
