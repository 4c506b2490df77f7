"""Decorated Python calling registered components: the calls lower to component ops
(not opaque pyobj.call), the components' declared knobs are the program's knobs
(`approx-opt --list-knobs` on its IR lists them), knob 0 answers as the plain
Python program, every knob changes its op, and the generated Python runs each
component with the attributes of its transformed op. Real readers (trained MiniLM)
and real BM25 (its JIT-compiled kernel) over 300 SQuAD paragraphs."""

from __future__ import annotations

import json

import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.main import list_knobs
from frontends import DecisionTree, Knob
from frontends.components.declare import Generate, Retrieve, Tune

QUESTIONS = ["Which NFL team represented the AFC at Super Bowl 50?", "What is the Amazon rainforest?",
             "Where did Super Bowl 50 take place?", "What does the word Huguenot mean?",
             "What is the name of the largest river in Europe?"]


@pytest.fixture(scope="module")
def parts():
    from examples import squad
    from examples.systems.common import readers
    from frontends.components.retrieval import Bm25Retriever

    corpus = tuple(squad.paragraphs()[:300])
    fast, pro = readers()
    retriever = Bm25Retriever(corpus, top_k=3)
    bm25 = Retrieve("bm25", retriever, top_k=3, tune=[Tune.param("top_k", 2, 1), Tune.param("preprocess", 1, 2)])
    answer = Generate("answer", pro, tune=[Tune.cascade([fast], [0.2, 0.1]), Tune.param("passages", 2, 1),
                                           Tune.param("sentences", 3, 2), Tune.precision("bfloat16")])
    return corpus, fast, pro, retriever, bm25, answer


def make_rag(corpus, bm25, answer):
    def rag(question):
        hits = bm25(question)
        passages = [corpus[i] for i in hits.ids]
        return answer(question, passages).text

    return rag


@pytest.fixture(scope="module")
def rag(parts):
    corpus, _, _, _, bm25, answer = parts
    return Knob()(make_rag(corpus, bm25, answer))


def test_component_calls_are_component_ops(rag):
    ir = rag.ir()
    assert '"component.retrieve"(%question) <{component = "bm25", retriever = @bm25, top_k = 3 : i64}>' in ir
    assert '"component.generate"(%question, %1) <{component = "answer", model = @pro}>' in ir
    assert 'name = "bm25"' not in ir and 'name = "answer"' not in ir  # no opaque call of either
    assert ir.count('"approx.util.annotation.component"') == 6
    assert set(rag.components) == {"bm25", "fast", "pro"}


def test_list_knobs_of_the_ir_is_the_program_knobs(rag):
    listed = [k["name"] for k in json.loads(list_knobs(rag.ir(), "rag"))]
    assert listed == [k.name for k in rag.knobs()] == [
        "bm25.top_k", "bm25.preprocess", "answer.model", "answer.passages", "answer.sentences", "answer.precision"]


def test_knob_zero_answers_as_the_plain_program(parts, rag):
    corpus, _, pro, retriever, _, _ = parts
    exact = rag.build({k.name: {"knob_val": 0} for k in rag.knobs()})
    for q in QUESTIONS:
        direct = pro.answer(q, [corpus[i] for i in retriever.search(q, 3).ids]).text
        assert exact(q) == rag.python(q) == direct


def test_every_knob_value_changes_its_component_op(rag):
    exact = rag.ir(after=True)
    for spec in rag.knobs():
        label = spec.name.split(".")[0]
        for k in spec.values[1:]:
            tuned = rag.ir(after=True, config={spec.name: {"knob_val": k}})
            ops = {line.strip() for line in tuned.splitlines() if f'component = "{label}"' in line}
            assert ops - {line.strip() for line in exact.splitlines()}, (spec.name, k)


def test_generated_python_runs_the_transformed_attributes(parts, rag):
    corpus, fast, pro, retriever, _, _ = parts
    q = QUESTIONS[1]
    passages = [corpus[i] for i in retriever.search(q, 3).ids]
    top1 = rag.build({"bm25.top_k": {"knob_val": 2}})
    assert top1(q) == pro.answer(q, passages[:1]).text
    b16 = rag.build({"answer.precision": {"knob_val": 1}, "answer.passages": {"knob_val": 1}})
    assert b16(q) == pro.with_precision("bfloat16").answer(q, passages[:2]).text
    fast_first = rag.build({"answer.model": {"knob_val": 2}})  # fast, accepted at confidence >= 0.1
    for q in QUESTIONS:
        passages = [corpus[i] for i in retriever.search(q, 3).ids]
        cheap = fast.answer(q, passages)
        assert fast_first(q) == (cheap.text if cheap.confidence >= 0.1 else pro.answer(q, passages).text)


def first_passage(question, hits, passages):
    return passages[0] if passages else ""


def test_decorated_callees_and_their_variants_are_in_one_module(parts):
    corpus, fast, pro, retriever, bm25, answer = parts
    cheap = Generate("answer", fast, tune=answer.tune)

    def read_fast(question, hits, passages):
        return cheap(question, passages).text

    def size(hits) -> int:
        return len(hits.ids)

    @Knob(decision_tree=DecisionTree(size, [1], [2], [0, 0], "func_substitute", approx_kernels={1: read_fast}))
    def read(question, hits, passages):
        return answer(question, passages).text

    @Knob()
    def pipeline(question):
        hits = bm25(question)
        return read(question, hits, [corpus[i] for i in hits.ids])

    ir = pipeline.ir()
    assert "func.call @read" in ir and "model = @fast" in ir and "model = @pro" in ir
    assert [k.name for k in pipeline.knobs()][-1] == "read"
    q = QUESTIONS[0]
    passages = [corpus[i] for i in retriever.search(q, 3).ids]
    assert pipeline(q) == pro.answer(q, passages).text
    assert pipeline.build({"read": {"knob_val": 1}})(q) == fast.answer(q, passages).text
    tuned = pipeline.ir(after=True, config={"read": {"knob_val": 1}, "answer.precision": {"knob_val": 1}})
    assert tuned.count("precision = bf16") == 2  # both readers' ops, the variant's too


def test_component_call_with_keywords_is_a_one_line_error(parts):
    corpus, _, _, _, bm25, _ = parts

    @Knob()
    def bad(question):
        return bm25(query=question)

    with pytest.raises(ApproxError, match=r"test_component_frontend.py:\d+:\d+: .*keyword arguments in a call "
                                          r"of component 'bm25'"):
        bad.ir()


def test_tuned_ir_is_the_deployable_program(parts, rag, tmp_path):
    """approx-tune apply writes a front point's transformed IR; load_tuned runs that file
    with the program's environment and component registry, as the tuned configuration runs."""
    from autotuner.cli import main as approx_tune
    from autotuner.results import FrontPoint, TuningResult
    from frontends.deploy import load_tuned

    config = {"answer.model": {"knob_val": 1}, "answer.precision": {"knob_val": 1}, "bm25.top_k": {"knob_val": 1}}
    point = FrontPoint("static", config, 0.0, 2.0, ir=rag.ir(after=True, config=config))
    TuningResult(rag.name, "containment", 0.05, 1, 0, 1.0, front=[point]).save(tmp_path / "result.json")
    assert approx_tune(["apply", "--result", str(tmp_path / "result.json"), "--point", "0",
                        "-o", str(tmp_path / "tuned.mlir")]) == 0
    text = (tmp_path / "tuned.mlir").read_text()
    assert "model = @fast" in text and "precision = bf16" in text and "top_k = 2 : i64" in text
    deployed, tuned = load_tuned(tmp_path / "tuned.mlir", rag), rag.build(config)
    assert [deployed(q) for q in QUESTIONS] == [tuned(q) for q in QUESTIONS]
    with pytest.raises(ApproxError, match="component @fast is not in the registry"):
        load_tuned(tmp_path / "tuned.mlir", rag, components={"pro": parts[2], "bm25": parts[3]})(QUESTIONS[0])
    (tmp_path / "annotated.mlir").write_text(rag.ir())
    with pytest.raises(ApproxError, match=r"annotated.mlir:\d+:\d+: .*give the IR after approx-pipeline"):
        load_tuned(tmp_path / "annotated.mlir", rag)


def test_memoize_and_task_skipping_act_in_the_generated_python(parts):
    corpus, fast, _, retriever, _, _ = parts
    cached = Retrieve("cached", retriever, top_k=3, tune=[Tune.memoize(8)])
    hint = Generate("hint", fast, tune=[Tune.skip("model", fallback=None)])

    @Knob()
    def search(question):
        return cached(question)

    @Knob()
    def hinted(question):
        return hint(question, [corpus[i] for i in cached(question).ids]) is None

    q = QUESTIONS[2]
    plain, memo = search.build({}), search.build({"cached.cache": {"knob_val": 1}})
    assert plain(q) is not plain(q) and list(plain(q).ids) == list(memo(q).ids)
    assert memo(q) is memo(q)  # the second call is answered from the op's cache
    assert "cache = 8 : i64" in search.ir(after=True, config={"cached.cache": {"knob_val": 1}})
    assert hinted(q) is False and hinted.build({"hint.model": {"knob_val": 1}})(q) is True


def test_a_decision_tree_sets_a_component_parameter_per_input(parts):
    """top_k decided per question by its number of words: short questions read 1 passage."""
    corpus, _, pro, retriever, _, _ = parts
    docs = Retrieve("docs", retriever, top_k=3, tune=[Tune.param("top_k", 2, 1, decided=True)])

    def words(question) -> int:
        return len(question.split())

    @Knob(decision_tree=DecisionTree(words, [0], [8], [2, 0], "param", decision_values=[0, 1, 2]))
    def rag(question):
        return answer_of(pro, question, [corpus[i] for i in docs(question).ids])

    assert [k.name for k in rag.knobs()] == ["rag"]  # the decision is the knob
    for q in QUESTIONS:
        k = 1 if words(q) < 8 else 3
        assert rag(q) == pro.answer(q, [corpus[i] for i in retriever.search(q, k).ids]).text, q
    assert {words(q) < 8 for q in QUESTIONS} == {True, False}


def answer_of(model, question, passages):
    return model.answer(question, passages).text
