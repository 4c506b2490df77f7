"""Triage on BFCL items (MiniLM embedding and keyword routers) and validated tool
runs with their approximations: exact at 0, skip, substitute, memo (QuantizedMemo)."""

from __future__ import annotations

import pytest

from approx_dialect.diagnostics import ApproxError
from frontends.components.tools.bfcl import load_bfcl
from frontends.components.tools.registry import ToolRegistry
from frontends.components.tools.runner import ToolRunner
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


def test_all_approximations_at_zero_are_calling_the_tools_directly():
    calls: list = []
    runner = ToolRunner(make_registry(calls))
    for x in (1.5, 2.0, 1.5):
        assert runner.call("scaled_square", {"x": x, "scale": 2}, skip=False, substitute=0, memo_bits=0) == x * x * 2
    assert runner("greet", {"name": "Ada"}) == "hello Ada"
    assert calls == [1.5, 2.0, 1.5] and runner.stats["runs"] == 4  # no reuse at 0


def test_skip_substitute_and_memo():
    calls: list = []
    runner = ToolRunner(make_registry(calls))
    assert runner.call("scaled_square", {"x": 3.0}, skip=True) == -1.0 and calls == []
    with pytest.raises(ApproxError, match="missing required parameter 'x'"):
        runner.call("scaled_square", {}, skip=True)  # validated even when skipped
    assert runner.call("scaled_square", {"x": 2.6, "scale": 3}, substitute=1) == 9.0 and calls == []
    assert runner("greet", {"name": "Bo"}, substitute=1) == "hello Bo"  # no substitute: exact
    # floats agree to 2^-12 relative: one bucket
    assert runner.call("scaled_square", {"x": 1.0}, memo_bits=40) == 1.0
    assert runner.call("scaled_square", {"x": 1.0 + 1e-9}, memo_bits=40) == 1.0  # reused
    assert runner.call("scaled_square", {"x": 1.5}, memo_bits=40) == 2.25
    assert runner.call("scaled_square", {"x": 1.0, "scale": 2.0}, memo_bits=40) == 2.0  # other arguments: other key
    assert calls == [1.0, 1.5, 1.0] and runner.stats["memo_hits"] == 1
    assert runner.call("scaled_square", {"x": 1.5}, memo_bits=34) == 2.25 and calls == [1.0, 1.5, 1.0, 1.5]
