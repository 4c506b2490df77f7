"""What runs a component op: the Python generated from transformed IR calls
`R.run(op name, settings, *operands)`, where `settings` are the op's attributes
(symbols as registry names, float types as torch precision names) and `R` holds the
component registry (symbol -> provider). One implementation per op, so what an
attribute means is decided here and nowhere else:

- generate: the contexts are cut (`sentences`, then `passages` and `context_chars`,
  `frontends.components.llm.base`), the model computes in `precision`
  (`with_precision`) with its first `layers` layers (`with_layers`),
  `model.answer(question, contexts, max_new_tokens)`;
- embed: `encoder.embed([text])[0]` in `precision`, the first `dims`
  dimensions renormalised;
- retrieve: `retriever.search(query, top_k, **the op's other attributes)`
  (preprocess, terms, docs, dims, precision: those the retriever has);
- tool_call: `tools.call(request, router)` with the router's provider;
- confidence: the answer's confidence (an error when the model gives none);
- `cache = n` on any op: results are kept for the last n distinct inputs.

Reuse while measuring (`reuse_results`, `reusing`): a costly program's answers
are deterministic (greedy decoding, one torch thread), so the autotuner's untimed
pass (the one that gives a configuration's QoS) may take the result of a call of
the given providers (its answer models) from an earlier call with the same
attributes and operands, in any configuration
(the exact program's answer where an approximate one escalates to the same call,
a variant that decides exact on a question, the slice of a staged evaluation).
Timed passes never read these results: they run every call.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import contextmanager
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute

from approx_dialect.component import PRECISION_TYPES
from approx_dialect.diagnostics import ApproxError


class ComponentRuntime:
    """The registry of one program's providers, and the op implementations."""

    def __init__(self, registry: dict[str, Any]):
        self.registry = dict(registry)
        self._caches: dict[tuple, OrderedDict] = {}

    @staticmethod
    def settings(properties: dict[str, Attribute]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in properties.items():
            if isinstance(v, SymbolRefAttr):
                out[k] = v.root_reference.data
            elif isinstance(v, IntegerAttr):
                out[k] = int(v.value.data)
            elif isinstance(v, StringAttr):
                out[k] = v.data
            elif type(v) in PRECISION_TYPES:
                out[k] = PRECISION_TYPES[type(v)]
            else:
                raise ApproxError(f"component attribute {k} = {v} has no runtime meaning")
        return out

    def provider(self, name: str, op: str):
        try:
            return self.registry[name]
        except KeyError:
            known = ", ".join(sorted(self.registry)) or "none"
            raise ApproxError(f"{op}: component @{name} is not in the registry (registered: {known})",
                              where="<components>") from None

    def run(self, op: str, settings: dict[str, Any], *args):
        if _REUSE.providers:
            providers = tuple(id(self.registry[v]) for v in settings.values()
                              if isinstance(v, str) and v in self.registry)
            if providers and all(p in _REUSE.providers for p in providers):
                return self._reused(op, settings, providers, args)
        return self._cached(op, settings, args)

    def _reused(self, op: str, settings: dict[str, Any], providers: tuple, args: tuple):
        key = _hashable(args)
        if key is None:
            return self._cached(op, settings, args)
        key = (op, tuple(sorted(settings.items())), providers, key)
        if _REUSE.reading and key in _REUSE.results:
            if op == "component.generate":
                self.model(settings)  # a variant of the model is built here, as the call would, not in a timed pass
            _REUSE.hits += 1
            return _REUSE.results[key]
        result = _REUSE.results[key] = self._cached(op, settings, args)
        _REUSE.calls += 1
        while len(_REUSE.results) > _REUSE.size:
            _REUSE.results.popitem(last=False)
        return result

    def _cached(self, op: str, settings: dict[str, Any], args: tuple):
        size = settings.get("cache")
        if not size:
            return self._run(op, settings, args)
        key = _hashable(args)
        if key is None:
            return self._run(op, settings, args)
        table = self._caches.setdefault((op, tuple(sorted(settings.items()))), OrderedDict())
        if key in table:
            table.move_to_end(key)
            return table[key]
        result = table[key] = self._run(op, settings, args)
        while len(table) > size:
            table.popitem(last=False)
        return result

    def _run(self, op: str, s: dict[str, Any], args: tuple):
        if op == "component.generate":
            return self.generate(s, *args)
        if op == "component.embed":
            return self.embed(s, *args)
        if op == "component.retrieve":
            return self.retrieve(s, *args)
        if op == "component.tool_call":
            return self.tool_call(s, *args)
        raise ApproxError(f"no runtime for '{op}'", where="<components>")

    def model(self, s: dict[str, Any]):
        """The model a generate op with settings `s` calls (its precision and depth)."""
        model = self.provider(s["model"], "component.generate")
        if s.get("precision"):
            model = model.with_precision(s["precision"])
        if s.get("layers"):
            model = model.with_layers(s["layers"])
        return model

    def generate(self, s: dict[str, Any], question, contexts):
        from frontends.components.llm.base import limit_contexts, select_sentences

        model = self.model(s)
        if s.get("sentences"):
            contexts = select_sentences(question, contexts, s["sentences"])
        if s.get("passages") or s.get("context_chars"):
            contexts = limit_contexts(contexts, s.get("passages"), s.get("context_chars"))
        return model.answer(question, contexts, s.get("max_new_tokens"))

    def embed(self, s: dict[str, Any], text):
        encoder = self.provider(s["encoder"], "component.embed")
        if s.get("precision"):
            encoder = encoder.with_precision(s["precision"])
        v = np.asarray(encoder.embed([text])[0])
        if s.get("dims"):
            v = v[: s["dims"]]
            v = v / max(float(np.linalg.norm(v)), 1e-12)
        return v

    def retrieve(self, s: dict[str, Any], query):
        retriever = self.provider(s["retriever"], "component.retrieve")
        extra = {k: s[k] for k in ("preprocess", "terms", "docs", "dims", "precision") if k in s}
        return retriever.search(query, s["top_k"], **extra)

    def tool_call(self, s: dict[str, Any], request):
        tools = self.provider(s["tools"], "component.tool_call")
        return tools.call(request, self.provider(s["router"], "component.tool_call"))

    @staticmethod
    def confidence(answer) -> float:
        c = getattr(answer, "confidence", None)
        if c is None:
            raise ApproxError(f"cascade: the answer of '{getattr(answer, 'model', '?')}' gives no confidence "
                              "to compare with the threshold", where="<components>")
        return float(c)


class _Reuse:
    """The results kept for untimed passes (process-wide: every build of a program shares them)."""

    def __init__(self):
        self.providers: frozenset[int] = frozenset()  # ids of the providers whose calls are kept
        self.reading = False
        self.size = 0
        self.results: OrderedDict = OrderedDict()
        self.hits = self.calls = 0


_REUSE = _Reuse()


def reuse_results(providers=(), size: int = 100_000) -> None:
    """Keep the results of calls of ops whose providers (models, ...) are all among
    `providers` (the last `size` calls), for `reusing`; none: keep nothing and forget
    what was kept. Only for deterministic providers."""
    _REUSE.providers, _REUSE.size = frozenset(id(p) for p in providers), size
    _REUSE.results.clear()
    _REUSE.hits = _REUSE.calls = 0


@contextmanager
def reusing():
    """Within: a call kept by `reuse_results` returns the kept result instead of running
    (an untimed pass: its outputs are the same, its cost is not measured)."""
    before, _REUSE.reading = _REUSE.reading, True
    try:
        yield
    finally:
        _REUSE.reading = before


def reuse_counts() -> dict[str, int]:
    """{'reused': calls answered from kept results, 'run': calls run and kept}."""
    return {"reused": _REUSE.hits, "run": _REUSE.calls}


def _hashable(args: tuple):
    """A cache key for `args` (lists as tuples), or None when they cannot be one."""
    def key(x):
        if isinstance(x, list | tuple):
            return tuple(key(v) for v in x)
        hash(x)
        return x

    try:
        return key(args)
    except TypeError:
        return None
