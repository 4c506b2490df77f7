"""Validated execution of registered tools with the approximations of a tool run,
chosen per call (no knob state is kept here: what a call approximates is an
argument, so the caller, e.g. Python generated from the IR, decides):

- `skip`: return the tool's registered default without running it (arguments are
  still validated);
- `substitute` = k: run the tool's k-th cheaper variant (min(k, #substitutes);
  tools without substitutes run exactly); a substitute that fails (raises, garbage,
  timeout) falls back to the exact tool (`stats["fallbacks"]`);
- `memo_bits` = k: reuse an earlier result of the same tool, substitute and
  arguments, floats compared after clearing k low mantissa bits
  (`frontends.memo.QuantizedMemo`, one table per k).
All three at 0 run the tool exactly. `stats` counts runs, skips, fallbacks and memo hits."""

from __future__ import annotations

from collections import Counter
from typing import Any

from approx_dialect.diagnostics import ApproxError
from frontends.components.tools.registry import ToolRegistry
from frontends.memo import QuantizedMemo


def freeze(value: Any) -> Any:
    """A hashable, QuantizedMemo-keyable form of a JSON-like value."""
    if isinstance(value, dict):
        return tuple((str(k), freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


class ToolRunner:
    def __init__(self, registry: ToolRegistry, name: str = "tools"):
        self.registry, self.name = registry, name
        self._memos: dict[int, QuantizedMemo] = {}
        self.stats: Counter = Counter()

    def call(self, name: str, args: dict, *, skip: bool = False, substitute: int = 0, memo_bits: int = 0) -> Any:
        """Run tool `name` on `args` (validated first) with the approximations given."""
        tool = self.registry[name]
        args = self.registry.validate(name, args)
        if skip:
            self.stats["skipped"] += 1
            return tool.default
        sub = min(substitute, len(tool.substitutes))
        if memo_bits:
            memo = self._memos.setdefault(memo_bits, QuantizedMemo(memo_bits))
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
        if memo_bits:
            memo.store(key, result)
        return result

    __call__ = call
