"""Component faults. Real misbehaving components
(tests/faulty_components.py): an HTTP server answering 500s, malformed JSON,
no text, impossible log-probabilities or too late; answer models raising or
returning garbage; tools raising, returning garbage or hanging; a retriever
whose index breaks. Where an exact path exists (Fallback, ModelCascade,
SafetyContract, a tool's exact implementation) the answer equals the exact
path's and the fallbacks are counted; where none exists the fault is one
ApproxError line naming the component, within the timeout. In the tuner,
configurations using a faulty component are FAIL trials with an `error`,
counted and listed in the report, and the front comes from the others."""

from __future__ import annotations

import time

import optuna
import pytest

from approx_dialect.diagnostics import ApproxError
from autotuner import Cost, HeldOut, Search, Storage, tune
from autotuner.cli import main as approx_tune
from examples.squad import paragraphs, questions
from frontends.components.llm.escalation import Fallback, ModelCascade
from frontends.components.retrieval import Bm25Retriever
from frontends.components.tools import ToolRunner
from tests import faulty_components as F
from tests.test_llm_support import CONTEXTS, QUESTION, one_torch_thread, untrained_reader  # noqa: F401

# no fault may take longer than this to surface: half of how long a fault holds on (a client that
# waited for a slow server, a dribbled answer or a hanging tool would take HANG s), 50x the client's
# TIMEOUT: room for any busy machine
BOUND = F.HANG / 2


def clear(err: ApproxError, names: str) -> None:
    """One line, names the component, no traceback text."""
    line = str(err)
    assert "\n" not in line and "Traceback" not in line and "error: " in line and names in line, line


@pytest.fixture(scope="module")
def server():
    with F.FaultServer() as s:
        yield s


@pytest.fixture(scope="module")
def exact():
    return untrained_reader(0)


@pytest.fixture(scope="module")
def qa():
    corpus = paragraphs()[:20]
    qs = [q.question for q in questions() if q.paragraph < 20][::7][:10]
    return corpus, qs


@pytest.fixture(scope="module")
def want(exact, qa):
    """The exact model's answers (4 tokens / its default) on the first 3 passages, computed once."""
    corpus, qs = qa
    return {(q, n): exact.answer(q, corpus[:3], n).text for q in qs for n in (4, None)}


# ------------------------------------------------------------------ (a) LLM backend over HTTP


@pytest.mark.parametrize("fault", F.HTTP_FAULTS)
def test_http_backend_fault_alone_is_one_clear_error_within_the_timeout(server, fault):
    model = server.model(fault)
    start = time.monotonic()
    with pytest.raises(ApproxError) as err:
        model.answer(QUESTION, CONTEXTS, 4)
    assert time.monotonic() - start < BOUND
    clear(err.value, server.url)
    assert fault in str(err.value) or "cannot reach" in str(err.value)


@pytest.mark.parametrize("fault", F.HTTP_FAULTS)
def test_http_backend_fault_falls_back_to_the_exact_model(server, exact, fault):
    want = exact.answer(QUESTION, CONTEXTS, 4)
    fb, cas = Fallback(server.model(fault), exact), ModelCascade([server.model(fault)], exact, [0.5], knob=1)
    start = time.monotonic()
    fb, cas = fb.answer(QUESTION, CONTEXTS, 4), cas.answer(QUESTION, CONTEXTS, 4)
    assert time.monotonic() - start < 2 * BOUND
    for a in (fb, cas):
        assert (a.text, a.model) == (want.text, want.model) and server.url in a.error
        assert a.stages[0] == (f"{fault}@{server.url}", None)


# ------------------------------------------------------------------ (b) answer models


@pytest.mark.parametrize("fault", [f for f in F.MODEL_FAULTS if f != "empty"])
def test_faulty_answer_model_alone_is_one_clear_error(exact, fault):
    with pytest.raises(ApproxError) as err:
        F.FaultyModel(exact, fault).answer(QUESTION, CONTEXTS, 4)
    clear(err.value, f"faulty-{fault}")
    assert ("failed: RuntimeError" if fault == "raise" else "returned garbage") in str(err.value)


@pytest.mark.parametrize("fault", F.MODEL_FAULTS)
def test_faulty_answer_model_in_a_cascade_or_fallback_takes_the_exact_path_and_counts(exact, qa, want, fault):
    corpus, qs = qa
    qs = qs[:6]
    contexts = corpus[:3]
    model = F.FaultyModel(exact, fault, every=3)
    checker = F.non_empty if fault == "empty" else None
    # an empty answer is not an error; a cascade rejects it through its confidence function
    conf = (lambda a: a.confidence if a.text.strip() else 0.0) if fault == "empty" else None
    # threshold 1e-9: the cascade accepts every working answer, so it escalates exactly on the faults
    escalations = [Fallback(model, exact, checker), ModelCascade([model], exact, [1e-9], knob=1, confidence=conf)]
    for escalation in escalations:
        before, fallbacks = model.faults, 0
        for q in qs:
            a = escalation.answer(q, contexts, 4)
            fallbacks += a.model == exact.name
            assert a.text == want[q, 4]  # the faulty model wraps the exact one
            assert (a.error is not None) == (a.model == exact.name) or fault == "empty"
        assert model.faults - before == len(qs) // 3 == fallbacks


def test_exact_model_failing_in_a_cascade_is_the_cascades_clear_error(exact):
    bad = F.FaultyModel(exact, "raise")
    with pytest.raises(ApproxError) as err:
        ModelCascade([F.FaultyModel(exact, "none")], bad, [0.5], knob=1).answer(QUESTION, CONTEXTS, 4)
    clear(err.value, "faulty-raise")


@pytest.mark.parametrize("fault", F.MODEL_FAULTS)
def test_safety_contract_recovers_from_a_faulty_model(exact, qa, want, fault):
    corpus, qs = qa
    qs = qs[:6]
    contexts = corpus[:3]
    F.ACTIVE.update(exact=exact, approx=F.FaultyModel(exact, fault, every=2))
    before = F.RECOVERED["answer"]
    got = [F.contracted_answer(q, contexts) for q in qs]
    assert got == [want[q, None] for q in qs]
    assert F.RECOVERED["answer"] - before == F.ACTIVE["approx"].faults == len(qs) // 2


def test_safety_contract_recovers_from_a_faulty_backend(server, exact, qa, want):
    corpus, qs = qa
    F.ACTIVE.update(exact=exact, approx=server.model("http500"))
    before = F.RECOVERED["answer"]
    assert [F.contracted_answer(q, corpus[:3]) for q in qs[:3]] == [want[q, None] for q in qs[:3]]
    assert F.RECOVERED["answer"] - before == 3


def test_safety_contract_whose_recovery_fails_is_one_clear_error(exact):
    F.ACTIVE.update(exact=F.FaultyModel(exact, "raise"), approx=F.FaultyModel(exact, "none"))
    with pytest.raises(ApproxError) as err:
        F.contracted_answer(QUESTION, CONTEXTS)
    clear(err.value, "faulty-raise")


# ------------------------------------------------------------------ (c) tools


@pytest.mark.parametrize("sub, fault", [(2, "raise"), (3, "garbage"), (4, "hang")])
def test_faulty_tool_substitute_alone_is_one_clear_error_within_its_timeout(sub, fault):
    reg = F.make_tools()
    start = time.monotonic()
    with pytest.raises(ApproxError) as err:
        reg.call("convert", {"amount": 10, "rate": 1.17}, sub)
    assert time.monotonic() - start < BOUND
    clear(err.value, f"tool convert (substitute {sub})")
    assert {"raise": "failed: ZeroDivisionError", "garbage": "returned garbage: str 'NaN EUR'",
            "hang": f"no result within {F.TIMEOUT:g} s"}[fault] in str(err.value)


def test_faulty_tool_substitutes_fall_back_to_the_exact_tool():
    tools = ToolRunner(F.make_tools())
    args = [{"amount": float(a), "rate": 1.17} for a in range(5)]
    exact = [tools.call("convert", x) for x in args]
    assert tools.call("convert", args[1], substitute=1) != exact[1]  # a real approximation
    start = time.monotonic()
    for sub in (2, 3, 4):
        before = tools.stats["fallbacks"]
        assert [tools.call("convert", x, substitute=sub) for x in args] == exact
        assert tools.stats["fallbacks"] - before == len(args)
    assert time.monotonic() - start < len(args) * BOUND


def test_a_faulty_exact_tool_is_one_clear_error():
    reg = F.make_tools()
    reg.register(F.make_tools()["convert"].substitutes[1], name="broken", timeout=0.2)  # exact = raising one
    with pytest.raises(ApproxError) as err:
        ToolRunner(reg).call("broken", {"amount": 1.0, "rate": 2.0}, substitute=2)
    clear(err.value, "tool broken")


# ------------------------------------------------------------------ (d) retriever


def test_faulty_retriever_alone_is_one_clear_error(qa):
    corpus, qs = qa
    flaky = F.FlakySearch(Bm25Retriever(corpus, top_k=3).build({}))
    with pytest.raises(ApproxError) as err:
        flaky(qs[0])
    clear(err.value, "retrieval.bm25")
    assert "KeyError" in str(err.value)


def test_safety_contract_recovers_from_a_faulty_retriever(qa):
    corpus, qs = qa
    search = Bm25Retriever(corpus, top_k=3).build({})
    F.ACTIVE.update(search=search, flaky=F.FlakySearch(search, every=2))
    before = F.RECOVERED["retrieve"]
    assert [F.contracted_retrieve(q) for q in qs] == [search(q).ids.tolist() for q in qs]
    assert F.RECOVERED["retrieve"] - before == F.ACTIVE["flaky"].faults == len(qs) // 2


# ------------------------------------------------------------------ the tuner


def test_tuning_with_faulty_configurations_fails_those_trials_counts_and_reports_them(server, exact, qa, tmp_path):
    corpus, qs = qa
    program = F.FaultyRag(corpus, exact, server)
    r = tune(program, qs[:8], metric="exact_match", budget=0.5,
             search=Search(n_trials=8, mode="static", stage_fraction=0), cost=Cost(repeats=1),
             held_out=HeldOut(inputs=qs[8:]), storage=Storage(out_dir=tmp_path))
    study = optuna.load_study(study_name="faulty_rag/static", storage=f"sqlite:///{tmp_path / 'study.db'}")
    failed = [t for t in study.get_trials() if t.state.name == "FAIL" and "duplicate_of" not in t.user_attrs]
    assert r.failed_trials == len(failed) == len(r.failures) >= 1 and r.trials == 8
    faulty = F.is_faulty
    for t, f in zip(failed, r.failures):
        assert faulty(t.user_attrs["config"]) and t.user_attrs["error"] == f["error"]
        assert "\n" not in f["error"] and ("retrieval.bm25" in f["error"] or "faulty-int_text" in f["error"]
                                           or server.url in f["error"])
    assert r.front and not any(faulty(p.knobs) for p in r.front)
    assert all(not faulty(t.knobs) for t in r.all_trials)  # finished trials are the working ones
    approx_tune(["report", "--out", str(tmp_path)])
    html, md = (tmp_path / "report" / "index.html").read_text(), (tmp_path / "report" / "summary.md").read_text()
    assert f"({r.failed_trials} failed" in html and f"({r.failed_trials} failed" in md
    assert f"Failed trials ({r.failed_trials}; not on the front)" in html and "## Failed trials" in md
    first = r.failures[0]["error"]
    assert first.split(": error: ")[-1][:30] in md
