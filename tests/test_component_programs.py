"""Any compound program: prompt-level LLM calls (`Prompt`, a `component.generate`
op with a template), tools the program runs (`component.tool_run`) and skips that
return their declared fallback. Knob 0 is the plain program; each skip at knob 1
returns its fallback and the lines after it run. The model is the tiny GPT-2 of
the plumbing tests (its text is meaningless; the test checks what runs)."""

from __future__ import annotations

import json
import re
import time

import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.main import list_knobs
from frontends import Knob
from frontends.components.declare import Generate, Prompt, Retrieve, RunTool, Tune
from frontends.components.llm.prompting import fill, read_fields
from frontends.components.retrieval import Bm25Retriever
from tests.test_llm_support import (  # noqa: F401 (one_torch_thread: autouse fixture)
    CONTEXTS,
    QUESTION,
    causal,
    one_torch_thread,
    untrained_reader,
)

REWRITE = "Rewrite the question for search: {question}"
CALLS: list[str] = []
SPANS: list[float] = []  # the wall time of each `words` call, timed inside it


def words(text: str) -> int:
    """The number of words of `text`."""
    t0 = time.perf_counter()
    CALLS.append(text)
    n = len(text.split())
    SPANS.append(time.perf_counter() - t0)
    return n


def spaces(text: str) -> int:
    """A cheaper count: spaces + 1."""
    return text.count(" ") + 1


@pytest.fixture(scope="module")
def parts():
    lm, retriever = causal(0), Bm25Retriever(CONTEXTS)
    rewrite = Prompt("rewrite", lm, template=REWRITE, outputs=["query"], max_new_tokens=5,
                     tune=[Tune.skip(fallback=Tune.input("question")), Tune.param("max_new_tokens", 2)])
    bm25 = Retrieve("bm25", retriever, top_k=2, tune=[Tune.skip(fallback=(2,))])
    answer = Generate("answer", lm, max_new_tokens=3, tune=[Tune.skip(fallback="no answer")])
    count = RunTool("count", words, tune=[Tune.substitute("tool", spaces), Tune.memoize(4), Tune.skip(fallback=0)])

    def pipeline(question):
        query = rewrite(question).query
        hits = bm25(query)
        text = answer(question, [CONTEXTS[i] for i in hits.ids]).text
        return f"{text} ({count(text)} words)"

    pipeline.__qualname__ = "pipeline"
    return lm, retriever, Knob()(pipeline)


def test_knob_zero_is_the_plain_program(parts):
    lm, retriever, program = parts
    query = lm.complete(REWRITE.format(question=QUESTION), ["query"], 5).query
    text = lm.answer(QUESTION, [CONTEXTS[i] for i in retriever.search(query, 2).ids], 3).text
    exact = program.build({k.name: {"knob_val": 0} for k in program.knobs()})
    assert exact(QUESTION) == program.python(QUESTION) == f"{text} ({len(text.split())} words)"


def test_profile_says_where_the_time_goes(parts):
    """Each component's calls are timed under its label; skipped at knob 1, a
    component is not called (its fallback is no call) and takes no time."""
    _, _, program = parts
    profile = program.profile([QUESTION, (QUESTION,)])
    assert set(profile) == {"rewrite", "bm25", "answer", "count", "(program)"}
    assert all(v["calls"] == 2 for v in profile.values())
    assert abs(sum(v["share"] for v in profile.values()) - 1) < 1e-9
    assert all(v["seconds"] > 0 for k, v in profile.items() if k != "(program)")
    # the count's label holds its own two timed calls (the last two, timed inside the tool): the
    # profile's clock encloses them, however busy the machine (no two pieces of work compared)
    assert profile["count"]["seconds"] >= sum(SPANS[-2:]) > 0
    skipped = program.profile([QUESTION], {**{k.name: {"knob_val": 0} for k in program.knobs()},
                                           "answer.skip": {"knob_val": 1}})
    assert "answer" not in skipped and "answer (skipped)" in skipped and "count" in skipped
    with pytest.raises(ApproxError, match="no inputs"):
        program.profile([])


def test_the_profile_runs_each_input_once_more_only_where_a_later_input_first_called_a_component():
    """Warm-up on the first input, one timed pass: where the first input reaches every
    component, each later input runs once; where a later one first calls a component (a
    tool only some inputs call, its first call timed cold), the inputs are timed again."""
    count = RunTool("count", words, tune=[Tune.skip(fallback=0)])
    long = RunTool("long", words, tune=[Tune.skip(fallback=0)])

    def tally(text):
        return count(text) + (long(text) if len(text) > 20 else 0)

    tally.__qualname__ = "tally"
    program = Knob()(tally)
    texts = ["a b", "c d e", "f g h i j k l m n o p"]
    CALLS.clear()
    assert program.profile(texts[:2])["count"]["calls"] == 2 and len(CALLS) == 3  # a b twice, c d e once
    CALLS.clear()
    profile = program.profile(texts)  # "long" first called by the third input: a second timed pass
    assert profile["count"]["calls"] == 3 and profile["long"]["calls"] == 1
    assert len(CALLS) == 1 + 2 * (3 + 1)


def test_the_knobs_are_listed_from_the_ir(parts):
    _, _, program = parts
    names = [k["name"] for k in json.loads(list_knobs(program.ir(), "pipeline"))]
    assert names == [k.name for k in program.knobs()] == [
        "rewrite.skip", "rewrite.max_new_tokens", "bm25.skip", "answer.skip", "count.tool", "count.cache",
        "count.skip"]
    ir = program.ir()
    assert f'template = "{REWRITE}", inputs = ["question"], outputs = ["query"]' in ir
    assert '"component.tool_run"(' in ir and "tool = @words" in ir and "input = 0 : i64" in ir


def test_a_skipped_rewrite_returns_its_fallback_and_the_next_line_runs(parts):
    lm, retriever, program = parts
    skipped = program.build({"rewrite.skip": {"knob_val": 1}})
    text = lm.answer(QUESTION, [CONTEXTS[i] for i in retriever.search(QUESTION, 2).ids], 3).text
    assert skipped(QUESTION) == f"{text} ({len(text.split())} words)"  # the question itself was the query
    after = program.ir(after=True, config={"rewrite.skip": {"knob_val": 1}, "rewrite.max_new_tokens": {"knob_val": 1}})
    assert '"component.fallback"(%question) <{component = "rewrite", of = "component.generate", outputs = ["query"]}>' \
        in after and 'component = "rewrite", model' not in after


def test_constant_fallbacks_take_the_shape_of_the_result(parts):
    lm, _, program = parts
    assert program.build({"answer.skip": {"knob_val": 1}})(QUESTION) == "no answer (2 words)"
    assert program.build({"count.skip": {"knob_val": 1}})(QUESTION).endswith("(0 words)")
    text = lm.answer(QUESTION, [CONTEXTS[2]], 3).text  # a skipped retrieval: the hits of its fallback ids
    assert program.build({"bm25.skip": {"knob_val": 1}})(QUESTION) == f"{text} ({len(text.split())} words)"


def test_tool_run_substitute_and_memoize(parts):
    _, _, program = parts
    exact = program.build({})(QUESTION)
    text = exact.rsplit(" (", 1)[0]
    assert program.build({"count.tool": {"knob_val": 1}})(QUESTION) == f"{text} ({text.count(' ') + 1} words)"
    memo = program.build({"count.cache": {"knob_val": 1}})
    CALLS.clear()
    assert memo(QUESTION) == memo(QUESTION) == exact and len(CALLS) == 1  # the second run is the cache's
    assert "cache = 4 : i64" in program.ir(after=True, config={"count.cache": {"knob_val": 1}})


def test_fields_are_read_from_name_value_lines():
    assert fill("Q: {question}\n{contexts}", {"question": "who?", "contexts": ["a  b", "c"]}, ["x"]) == \
        "Q: who?\n[1] a b\n[2] c"
    assert "name: ...; year: ..." in fill("{t}", {"t": "x"}, ["name", "year"])
    assert read_fields("name: Ada\nYear: 1815\nmore", ["name", "year"]) == {"name": "Ada", "year": "1815"}
    assert read_fields("query: super bowl\nignored", ["query"]) == {"query": "super bowl"}
    assert read_fields("only this", ["a", "b"]) == {"a": "", "b": ""}


@pytest.mark.parametrize("declare, message", [
    (lambda: Tune.skip(), r"Tune.skip needs fallback="),
    (lambda: Tune.skip(fallback={"a": 1}), r"a dict is not a constant"),
    (lambda: Generate("a", causal(0), tune=[Tune.skip(fallback=Tune.input("query"))]),
     r"fallback input 'query' is not one of its inputs \['question', 'contexts'\]"),
    (lambda: Prompt("p", untrained_reader(0), template="{question}"),
     r"'template' is not supported by its provider .* \(it cannot take a free prompt\)"),
    (lambda: Prompt("p", causal(0), template="{question}", tune=[Tune.cascade([untrained_reader(0)], [0.5])]),
     r"cannot take a free prompt"),
    (lambda: Prompt("p", causal(0), template="no fields"), r"at least one \{name\} field"),
    (lambda: Prompt("p", causal(0), template="{q!r}"), r"template field \{q\} is not a plain name"),
    (lambda: Prompt("p", causal(0), template="{q}", passages=1), r"'passages' cuts the input named contexts"),
    (lambda: RunTool("t", words, tune=[Tune.substitute("tool", len)]), r"cannot resolve|no type annotation|takes"),
])
def test_bad_declarations_are_one_line(declare, message):
    with pytest.raises(ApproxError, match=message) as err:
        declare()
    assert "\n" not in str(err.value)


ANN = ('"approx.util.annotation.component"() <{{func_name = "p", component = "r", parameter = "skip", '
       'transform_type = "task_skipping", values = [{values}], knob_val = 1 : i32{extra}}}> : () -> ()')
CALL = ('func.func @p(%q: !pyobj.obj) -> !pyobj.obj {{ %r = "component.generate"(%q) <{{component = "r", '
        'model = @m, template = "{template}", inputs = ["question"], outputs = ["query"]}}> : '
        '(!pyobj.obj) -> !pyobj.obj func.return %r : !pyobj.obj }}')


@pytest.mark.parametrize("ann, template, message", [
    (ANN.format(values="", extra=", input = 3 : i64"), "{question}",
     r"knob 'r.skip': fallback input 3 is out of range \(component.generate labelled 'r' has 1 inputs\)"),
    (ANN.format(values='"a", "b"', extra=""), "{question}", r"task_skipping takes at most one value"),
    (ANN.format(values='"a"', extra=", input = 0 : i64"), "{question}", r"'input' = i .* without a value"),
    (ANN.format(values="", extra=""), "{query}", r"'inputs' must name the template's fields \['query'\]"),
])
def test_bad_ir_is_one_line(cli, tmp_path, ann, template, message):
    (tmp_path / "p.mlir").write_text(f"module {{ {ann} {CALL.format(template=template)} }}")
    done = cli(str(tmp_path / "p.mlir"), "-p", "approx-pipeline")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert re.search(message, done.stderr), done.stderr
