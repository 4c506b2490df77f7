"""One path from a knob to the provider: each component op's settings object has
exactly the op's declared attributes, the precision table is the one source of
the IR types and backend names, the defaults give the unannotated call's result
(real readers, BM25, MiniLM, BFCL tools), and a setting no provider of a
component supports is refused where the program is declared."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerType

from approx_dialect.component import COMPONENT_OPS
from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import PRECISIONS, attr_of, backend_names, backend_of, ir_names
from frontends import Knob
from frontends.components.declare import Generate, Retrieve, Tune
from frontends.components.runtime import ComponentRuntime
from frontends.components.settings import (
    SETTINGS,
    EmbedSettings,
    GenerateSettings,
    RetrieveSettings,
    ToolCallSettings,
)
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

QUESTION = "Which NFL team represented the AFC at Super Bowl 50?"


@pytest.fixture(scope="module")
def parts():
    from examples import squad
    from examples.systems.common import readers
    from frontends.components.retrieval import Bm25Retriever

    corpus = tuple(squad.paragraphs()[:50])
    fast, pro = readers()
    return corpus, fast, pro, Bm25Retriever(corpus, top_k=3)


@pytest.mark.parametrize("op", COMPONENT_OPS, ids=lambda op: op.name)
def test_each_op_has_one_settings_class_with_its_attributes(op):
    declared = set(op.get_irdl_definition().properties) - {"component"}
    assert {f.name for f in fields(SETTINGS[op.name])} - {"label"} == declared
    assert SETTINGS[op.name].PROVIDER_SETTINGS <= declared


def test_the_label_names_an_op_without_being_a_setting():
    """The `component` label is where a call's time is counted (`profile`), not a
    setting: two ops alike but for their labels share results and variants."""
    from xdsl.dialects.builtin import IntegerAttr, StringAttr, SymbolRefAttr

    def props(label):
        return {"component": StringAttr(label), "retriever": SymbolRefAttr("bm25"), "top_k": IntegerAttr(3, 64)}

    a, b = (RetrieveSettings.from_properties(props(x)) for x in ("search", "fallback_search"))
    assert (a.label, b.label) == ("search", "fallback_search")
    assert a == b and hash(a) == hash(b)


def test_the_precision_table_is_the_one_source():
    assert [(p.ir, p.backend) for p in PRECISIONS] == [("f32", "float32"), ("bf16", "bfloat16"), ("f16", "float16"),
                                                       ("i8", "int8"), ("i4", "int4")]
    assert ir_names() == "f32, bf16, f16, i8 or i4" and backend_names() == "float32, bfloat16, float16, int8 or int4"
    for t, name in ((Float32Type, "float32"), (BFloat16Type, "bfloat16"), (Float16Type, "float16")):
        assert backend_of(t()) == name and type(attr_of(name)) is t
    assert backend_of(IntegerType(4)) == "int4" and attr_of("int4") == IntegerType(4)
    with pytest.raises(ApproxError, match="precision must be float32, bfloat16, float16, int8 or int4, got 'int3'"):
        attr_of("int3")


def test_settings_at_their_defaults_give_the_unannotated_result(parts):
    """Each op with only its required attributes runs its provider as a plain call does."""
    from examples.systems.rag.query_encoder import QueryEncoder
    from examples.systems.tools.components import ItemTools
    from examples.systems.tools.data import query_of
    from frontends.components.retrieval import MiniLMEncoder
    from frontends.components.tools.bfcl import load_bfcl
    from frontends.components.tools.triage import KeywordTriage

    corpus, _, pro, retriever = parts
    encoder, tools, router = QueryEncoder(MiniLMEncoder()), ItemTools(), KeywordTriage()
    runtime = ComponentRuntime({"pro": pro, "bm25": retriever, "minilm_l6": encoder, "item_tools": tools,
                                "keyword": router})
    hits = runtime.run("component.retrieve", RetrieveSettings(retriever="bm25", top_k=3), QUESTION)
    assert list(hits.ids) == list(retriever.search(QUESTION, 3).ids)
    passages = [corpus[i] for i in hits.ids]
    got = runtime.run("component.generate", GenerateSettings(model="pro"), QUESTION, passages)
    want = pro.answer(QUESTION, passages)
    assert (got.text, got.confidence, got.tokens_used) == (want.text, want.confidence, want.tokens_used)
    vec = runtime.run("component.embed", EmbedSettings(encoder="minilm_l6"), QUESTION)
    assert np.array_equal(vec, encoder.embed([QUESTION])[0])
    query = query_of(next(it for it in load_bfcl("multiple") if len(it.functions) > 1))
    assert runtime.run("component.tool_call", ToolCallSettings(tools="item_tools", router="keyword"), query) == \
        tools.call(query, router)


def test_a_written_setting_the_provider_lacks_is_refused_at_declaration(parts):
    _, _, pro, retriever = parts
    with pytest.raises(ApproxError, match=r"component 'answer' \(component.generate\): 'layers' is not supported "
                                          r"by its provider pro"):
        Generate("answer", pro, layers=3)
    bm25 = Retrieve("docs", retriever, top_k=3, tune=[Tune.precision("float16")])
    with pytest.raises(ApproxError, match=r"component 'docs' \(component.retrieve\): 'precision' is not supported "
                                          r"by its provider bm25$"):
        program(bm25).knobs()


def program(first, second=None):
    """A decorated program calling `first` (and `second`) once; its knobs are checked when it is lowered."""
    def ask(question):
        return first(question)

    def ask_both(question):
        hits = first(question)
        second(question)
        return hits

    return Knob()(ask if second is None else ask_both)


def test_a_knob_serves_the_ops_of_its_label_that_support_it(parts):
    """Components sharing a label share its knobs: `precision` on a label whose dense
    retriever has it and whose BM25 twin has not is accepted, and each op's provider
    gets the settings it supports."""
    from frontends.components.retrieval import DenseRetriever

    corpus, _, _, bm25 = parts
    dense = DenseRetriever(corpus, top_k=3)
    tune = [Tune.precision("float16")]
    twins = program(Retrieve("docs", dense, top_k=3, tune=tune), Retrieve("docs", bm25, top_k=3, tune=tune))
    assert [k.name for k in twins.knobs()] == ["docs.precision"]
    settings = RetrieveSettings(retriever="docs", top_k=3, precision="float16")
    assert settings.for_provider(bm25).precision is None and settings.for_provider(dense) is settings


def test_a_precision_value_runs_where_its_provider_builds_it(parts):
    """A precision value reaches the providers of its label that build it (the dense
    retriever's float16); one that builds no variant of it (int8) runs its own precision,
    as a cascade's cheaper stage does under its LLM's int8; a value no provider of the
    label builds is refused where the program is declared."""
    from frontends.components.retrieval import DenseRetriever

    corpus, _, _, bm25 = parts
    dense = DenseRetriever(corpus, top_k=3)
    assert "int8" not in dense.precisions
    assert RetrieveSettings(retriever="docs", top_k=3, precision="int8").for_provider(dense).precision is None
    with pytest.raises(ApproxError, match=rf"component 'docs': precision int8 is built by none of its providers "
                                          rf"\({dense.name}\)$"):
        program(Retrieve("docs", dense, top_k=3, tune=[Tune.precision("float16", "int8")])).knobs()


def test_precision_variants_are_built_once_per_provider(parts):
    _, fast, _, _ = parts
    bf = fast.variant("bfloat16")
    assert bf is fast.variant("bfloat16") and bf.variant("float32") is fast and bf.name == "fast[bfloat16]"
    with pytest.raises(ApproxError, match="'fast' has no early exit"):
        fast.variant(layers=2)


def test_each_program_holds_its_own_reuse_table(parts):
    """Declaring a second program keeping the same model's results leaves the first's
    kept results and counts alone; within `reading`, a kept call is reused."""
    corpus, _, pro, _ = parts
    passages = list(corpus[:2])

    def program_of():
        answer = Generate("answer", pro)

        def ask(question, passages):
            return answer(question, passages).text

        return Knob()(ask)

    first = program_of()
    first.reuse.keep([pro])
    run = first.build({})
    text = run(QUESTION, passages)
    second = program_of()
    second.reuse.keep([pro])
    assert second.build({})(QUESTION, passages) == text
    with first.reuse.reading():
        assert run(QUESTION, passages) == text
    assert first.reuse.counts() == {"reused": 1, "run": 1} and second.reuse.counts() == {"reused": 0, "run": 1}
