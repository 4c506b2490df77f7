"""Triage on BFCL items (MiniLM embedding and keyword routers) and the tool
component's knobs: exact at 0, skip, substitute, memo (QuantizedMemo), candidates."""

from __future__ import annotations

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.tools.bfcl import load_bfcl
from frontends.components.tools.component import ToolComponent
from frontends.components.tools.registry import ToolRegistry
from frontends.components.tools.triage import EmbeddingTriage, KeywordTriage, words
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

ITEMS = load_bfcl("multiple")[:10]  # 2-4 candidate functions each


@pytest.fixture(scope="module")
def embedding():
    return EmbeddingTriage()


def expected_name(item) -> str:
    return next(iter(item.ground_truth[0]))


@pytest.mark.parametrize("router", ["keyword", "embedding"])
def test_triage_picks_the_expected_function_on_bfcl_items(router, embedding):
    r = embedding if router == "embedding" else KeywordTriage()
    hits = [r.rank(it.question, list(it.registry()))[0][0] == expected_name(it) for it in ITEMS]
    # measured: 9/10 for both; multiple_5 (three weather.* functions) needs the date cue
    assert sum(hits) >= 8, hits


def test_ranking_is_complete_sorted_and_stable(embedding):
    it = ITEMS[0]
    tools = list(it.registry())
    for r in (KeywordTriage(), embedding):
        ranked = r.rank(it.question, tools)
        assert sorted(n for n, _ in ranked) == sorted(t.name for t in tools)
        assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert KeywordTriage().rank("zzz qqq", tools) == [(t.name, 0.0) for t in tools]  # ties: registry order
    assert words("getWeather by_city.date") == ["weather", "city", "date"]


def make_registry(calls: list):
    reg = ToolRegistry()

    @reg.register(default=-1.0, substitutes=[lambda x, scale=1.0: round(x) * scale])
    def scaled_square(x: float, scale: float = 1.0) -> float:
        """Square a number and scale it.

        Args:
            x: the number
            scale: the factor
        """
        calls.append(x)
        return x * x * scale

    @reg.register
    def greet(name: str) -> str:
        """Greet a person by name."""
        return f"hello {name}"

    return reg


def component(calls, **kw):
    return ToolComponent(make_registry(calls), routers=[KeywordTriage(), KeywordTriage()], candidates=[1, 2], **kw)


def test_knob_zero_is_calling_the_tools_directly():
    calls: list = []
    comp = component(calls).exact()
    for x in (1.5, 2.0, 1.5):
        assert comp.call("scaled_square", {"x": x, "scale": 2}) == x * x * 2
    assert comp("greet", {"name": "Ada"}) == "hello Ada"
    assert calls == [1.5, 2.0, 1.5] and comp.stats["runs"] == 4  # no reuse at 0
    assert comp.route("square a number", n=None)[0][0] == "scaled_square"


def test_skip_substitute_and_memo_knobs():
    calls: list = []
    comp = component(calls)
    assert comp.configure({"skip": 1}).call("scaled_square", {"x": 3.0}) == -1.0 and calls == []
    with pytest.raises(ApproxError, match="missing required parameter 'x'"):
        comp.configure({"skip": 1}).call("scaled_square", {})  # validated even when skipped
    assert comp.configure({"substitute": 1}).call("scaled_square", {"x": 2.6, "scale": 3}) == 9.0 and calls == []
    assert comp.configure({"substitute": 1})("greet", {"name": "Bo"}) == "hello Bo"  # no substitute: exact
    memo = comp.configure({"memo": 40})  # floats agree to 2^-12 relative: one bucket
    assert memo.call("scaled_square", {"x": 1.0}) == 1.0
    assert memo.call("scaled_square", {"x": 1.0 + 1e-9}) == 1.0  # reused
    assert memo.call("scaled_square", {"x": 1.5}) == 2.25
    assert memo.call("scaled_square", {"x": 1.0, "scale": 2.0}) == 2.0  # other arguments: other key
    assert calls == [1.0, 1.5, 1.0] and comp.stats["memo_hits"] == 1
    again = comp.configure({"memo": 40})  # configured copies share the table
    assert again.call("scaled_square", {"x": 1.5}) == 2.25 and calls == [1.0, 1.5, 1.0]


def test_candidates_and_triage_knobs():
    comp = component([])
    assert len(comp.route("greet a person", n=None)) == 2
    assert len(comp.configure({"candidates": 1}).route("greet a person", n=None)) == 1
    assert comp.configure({"triage": 1}).route("greet a person")[0][0] == "greet"
    specs = {s.name: (s.transform_type, s.values) for s in comp.knobs()}
    assert specs == {"tools.triage": ("func_substitute", (0, 1)), "tools.candidates": ("param", (0, 1, 2)),
                     "tools.skip": ("task_skipping", (0, 1)), "tools.substitute": ("func_substitute", (0, 1)),
                     "tools.memo": ("memoize", (0, 16, 28, 34, 40, 46))}
    with pytest.raises(ApproxError, match="knob 'memo': knob value 3 is not among its values"):
        comp.configure({"memo": 3})


def test_default_routers_are_embedding_then_keyword(embedding):
    assert [r.name for r in ToolComponent(ITEMS[0].registry()).routers] == ["embedding", "keyword"]  # lazy: no load
    comp = ToolComponent(ITEMS[0].registry(), routers=[embedding, KeywordTriage()])
    assert comp.route(ITEMS[0].question, n=None) == embedding.rank(ITEMS[0].question, list(ITEMS[0].registry()))
