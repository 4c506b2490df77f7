"""The tool component with its knobs: triage (route a query to tools) and
execution (validated calls), each with the approximations of tool calls.

Knobs (exact at 0; meanings shared with the IR transformations, see
frontends/components/llm/knobs.py):
- `triage` (`func_substitute`): k routes with routers[k] (default: 0 = MiniLM
  embedding similarity, 1 = keyword scoring);
- `candidates` (`param`): how many tools `route` returns, values[k-1] (0: the
  caller's n);
- `skip` (`task_skipping`): 1 returns the tool's registered default without running it;
- `substitute` (`func_substitute`): k runs a tool's substitute min(k, #substitutes)
  (tools without substitutes run exactly); a substitute that fails (raises,
  garbage, timeout) falls back to the exact tool (`stats["fallbacks"]`);
- `memo` (`memoize`): k reuses an earlier result of the same tool, substitute and
  arguments, floats compared after clearing k low mantissa bits
  (`frontends.memo.QuantizedMemo`, one table per k shared by configured copies).
`stats` counts runs, skips, fallbacks and memo hits (shared by configured copies)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.knobs import Knob, Knobbed, param_value
from frontends.components.tools.registry import Tool, ToolRegistry
from frontends.components.tools.triage import EmbeddingTriage, KeywordTriage
from frontends.memo import QuantizedMemo
from passes.knobs import DEFAULT_VALUES


def freeze(value: Any) -> Any:
    """A hashable, QuantizedMemo-keyable form of a JSON-like value."""
    if isinstance(value, dict):
        return tuple((str(k), freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


class ToolComponent(Knobbed):
    def __init__(self, registry: ToolRegistry, *, name: str = "tools", routers: Sequence | None = None,
                 candidates: Sequence[int] = (), memo_values: Sequence[int] = DEFAULT_VALUES["memoize"]):
        self.registry, self.name = registry, name
        self.routers = list(routers) if routers is not None else [EmbeddingTriage(), KeywordTriage()]
        if not self.routers:
            raise ApproxError("a tool component needs at least one router", where=name)
        self.candidates_values, self.memo_values = list(candidates), tuple(memo_values)
        self._memos: dict[int, QuantizedMemo] = {}
        self.stats: Counter = Counter()
        self._knob_values = {}

    def knob_table(self) -> list[Knob]:
        table = []
        if len(self.routers) > 1:
            table.append(Knob("triage", "func_substitute", tuple(range(len(self.routers))),
                              "router: " + " / ".join(getattr(r, "name", type(r).__name__) for r in self.routers)))
        if self.candidates_values:
            table.append(Knob("candidates", "param", tuple(range(len(self.candidates_values) + 1)),
                              "tools returned by triage"))
        table.append(Knob("skip", "task_skipping", (0, 1), "1 returns the tool's default without running it"))
        most = max((len(t.substitutes) for t in self.registry), default=0)
        if most:
            table.append(Knob("substitute", "func_substitute", tuple(range(most + 1)), "cheaper tool variant"))
        if len(self.memo_values) > 1:
            table.append(Knob("memo", "memoize", self.memo_values, "reuse results of calls with equal arguments"))
        return table

    def route(self, query: str, n: int | None = 1, tools: Sequence[Tool] | None = None) -> list[tuple[str, float]]:
        """The best `n` tools for `query` (None: all, ranked), from `tools` or the registry."""
        n = param_value(self.knob("candidates"), self.candidates_values, n)
        pool = list(tools) if tools is not None else list(self.registry)
        ranked = self.routers[self.knob("triage")].rank(query, pool)
        return ranked if n is None else ranked[:n]

    def call(self, name: str, args: dict) -> Any:
        """Run tool `name` on `args` (validated first) under the current knobs."""
        tool = self.registry[name]
        args = self.registry.validate(name, args)
        if self.knob("skip"):
            self.stats["skipped"] += 1
            return tool.default
        sub = min(self.knob("substitute"), len(tool.substitutes))
        k = self.knob("memo")
        if k:
            memo = self._memos.setdefault(k, QuantizedMemo(k))
            key = (name, sub, freeze(args))
            hit, value = memo.lookup(*key)
            if hit:
                self.stats["memo_hits"] += 1
                return value
        self.stats["runs"] += 1
        try:
            result = self.registry.call(name, args, sub)
        except ApproxError:
            if not sub:
                raise
            self.stats["fallbacks"] += 1  # the substitute failed: the exact tool answers
            result = self.registry.call(name, args, 0)
        if k:
            memo.store(key, result)
        return result

    __call__ = call
