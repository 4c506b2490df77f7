"""What runs a component op: the Python generated from transformed IR calls
`R.run(op name, settings, *operands)`, where `settings` is the op's frozen settings
object (`frontends.components.settings`: symbols as registry names, precision
types as backend names) and `R` holds the component registry (symbol ->
provider). One implementation per op, so what a setting means is decided here
and nowhere else:

- generate: the contexts are cut (`GenerateSettings.cut`), then
  `model.answer_with(question, contexts, settings)` (the model's variant for
  `precision` and `layers`, at most `max_new_tokens`);
- embed: `encoder.embed([text])[0]` by the encoder's variant for `precision`,
  the first `dims` dimensions renormalised;
- retrieve: `retriever.search(query, top_k, **the settings it applies)`
  (preprocess, terms, docs, dims, precision: those the retriever supports);
- tool_call: `tools.call(request, router)` with the router's provider;
- confidence: the answer's confidence (an error when the model gives none);
- `cache = n` on any op: results are kept for the last n distinct inputs.
A provider gets the settings it `supports` (a knob of a component label may
also rewrite a cheaper stage or twin that lacks it; the declaration refused any
setting no provider of the label has).

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

from approx_dialect.diagnostics import ApproxError
from frontends.components.settings import EmbedSettings, GenerateSettings, RetrieveSettings, Settings, ToolCallSettings


class ComponentRuntime:
    """The registry of one program's providers, and the op implementations."""

    def __init__(self, registry: dict[str, Any]):
        self.registry = dict(registry)
        self._caches: dict[tuple, OrderedDict] = {}

    def provider(self, name: str, op: str):
        try:
            return self.registry[name]
        except KeyError:
            known = ", ".join(sorted(self.registry)) or "none"
            raise ApproxError(f"{op}: component @{name} is not in the registry (registered: {known})",
                              where="<components>") from None

    def run(self, op: str, settings: Settings, *args):
        if _REUSE.providers:
            providers = tuple(id(self.registry[v]) for v in settings.providers() if v in self.registry)
            if providers and all(p in _REUSE.providers for p in providers):
                return self._reused(op, settings, providers, args)
        return self._cached(op, settings, args)

    def _reused(self, op: str, settings: Settings, providers: tuple, args: tuple):
        key = _hashable(args)
        if key is None:
            return self._cached(op, settings, args)
        key = (op, settings, providers, key)
        if _REUSE.reading and key in _REUSE.results:
            if isinstance(settings, GenerateSettings):
                self.model(settings)  # a variant of the model is built here, as the call would, not in a timed pass
            _REUSE.hits += 1
            return _REUSE.results[key]
        result = _REUSE.results[key] = self._cached(op, settings, args)
        _REUSE.calls += 1
        while len(_REUSE.results) > _REUSE.size:
            _REUSE.results.popitem(last=False)
        return result

    def _cached(self, op: str, settings: Settings, args: tuple):
        size = settings.cache
        if not size:
            return self._run(op, settings, args)
        key = _hashable(args)
        if key is None:
            return self._run(op, settings, args)
        table = self._caches.setdefault((op, settings), OrderedDict())
        if key in table:
            table.move_to_end(key)
            return table[key]
        result = table[key] = self._run(op, settings, args)
        while len(table) > size:
            table.popitem(last=False)
        return result

    def _run(self, op: str, s: Any, args: tuple):
        if op == "component.generate":
            return self.generate(s, *args)
        if op == "component.embed":
            return self.embed(s, *args)
        if op == "component.retrieve":
            return self.retrieve(s, *args)
        if op == "component.tool_call":
            return self.tool_call(s, *args)
        raise ApproxError(f"no runtime for '{op}'", where="<components>")

    def model(self, s: GenerateSettings):
        """The model a generate op with settings `s` calls (its variant for precision and layers)."""
        model = self.provider(s.model, s.OP)
        return model.variant_for(s.for_provider(model))

    def generate(self, s: GenerateSettings, question, contexts):
        model = self.provider(s.model, s.OP)
        return model.answer_with(question, s.cut(question, contexts), s.for_provider(model))

    def embed(self, s: EmbedSettings, text):
        encoder = self.provider(s.encoder, s.OP)
        if s.for_provider(encoder).precision:
            encoder = encoder.variant_for(s)
        v = np.asarray(encoder.embed([text])[0])
        if s.dims:
            v = v[: s.dims]
            v = v / max(float(np.linalg.norm(v)), 1e-12)
        return v

    def retrieve(self, s: RetrieveSettings, query):
        retriever = self.provider(s.retriever, s.OP)
        return retriever.search(query, s.top_k, **s.for_provider(retriever).provider_settings())

    def tool_call(self, s: ToolCallSettings, request):
        tools = self.provider(s.tools, s.OP)
        return tools.call(request, self.provider(s.router, s.OP))

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
