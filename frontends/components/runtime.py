"""What runs a component op: the Python generated from transformed IR calls
`R.run(op name, settings, *operands)`, where `settings` is the op's frozen settings
object (`frontends.components.settings`: symbols as registry names, precision
types as backend names) and `R` holds the component registry (symbol ->
provider). One implementation per op, registered with `@implements(OpClass)`
(a new op is one registration), so what a setting means is decided here and
nowhere else:

- generate: the contexts are cut (`GenerateSettings.cut`), then
  `model.answer_with(question, contexts, settings)` (the model's variant for
  `precision` and `layers`, at most `max_new_tokens`); with a `template` (a
  prompt-level call) the input named `contexts` is cut, the template filled in
  (`llm.prompting.fill`) and `model.complete_with(prompt, outputs, settings)`
  answers, its outputs read from `name: value` lines;
- embed: `encoder.embed([text])[0]` by the encoder's variant for `precision`,
  the first `dims` dimensions renormalised;
- retrieve: `retriever.search(query, top_k, **the settings it applies)`
  (preprocess, terms, docs, dims, precision: those the retriever supports);
- tool_call: `tools.call(request, router)` with the router's provider;
- tool_run: `tool.run(*args)`: the registered tool, its arguments validated;
- fallback (a skipped call): its input or constant, as the skipped op's result
  (a generate op's: an answer whose text and outputs are it; a retrieve op's:
  hits of those ids);
- confidence: the answer's confidence (an error when the model gives none);
- `cache = n` on any op: results are kept for the last n distinct inputs.
A provider gets the settings it `supports` (a knob of a component label may
also rewrite a cheaper stage or twin that lacks it; the declaration refused any
setting no provider of the label has).

Reuse while measuring (`Reuse`, held by each decorated program and shared by the
runtimes of its configurations): a costly program's answers are deterministic
(greedy decoding on one torch thread, or a greedy request to an endpoint), so the autotuner's untimed pass (the one
that gives a configuration's QoS) may take the result of a call of the given
providers (its answer models) from an earlier call with the same attributes and
operands, in any configuration (the exact program's answer where an approximate
one escalates to the same call, a variant that decides exact on a question, the
slice of a staged evaluation). Timed passes never read these results: they run
every call. A call whose settings have its model draw at random (a temperature > 0
for an endpoint that takes one: `settings.draws`) is never kept nor read.

Time per label (`OpTimes`, held by each decorated program as `times`): while it
is measuring, each call's wall time is added to its op's label (`component`), so
`KnobFunction.profile` says where a program's time goes.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from xdsl.ir import Operation

from approx_dialect.component import ConfidenceOp, EmbedOp, FallbackOp, GenerateOp, RetrieveOp, ToolCallOp, ToolRunOp
from approx_dialect.diagnostics import ApproxError
from approx_opt.program import NotKept
from frontends.components.settings import (
    EmbedSettings,
    FallbackSettings,
    GenerateSettings,
    RetrieveSettings,
    Settings,
    ToolCallSettings,
    ToolRunSettings,
    draws,
    supports,
)

_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}


def implements(op: type[Operation]) -> Callable:
    """Register `fn(runtime, settings, *operands)` as what runs `op`."""
    def register(fn: Callable) -> Callable:
        _IMPLEMENTATIONS[op.name] = fn
        return fn

    return register


class Reuse:
    """The results one program keeps for its untimed passes: those of calls whose
    providers are all among `keep`'s (none: nothing is kept), in memory and, once
    `attach`ed, on disk (`kept.KeptOutputs`: shared by worker processes and later
    studies). Each kept result carries the seconds its call took when it ran. The cost
    model of the autotuner's untimed passes keeps two sums: `costed`, the kept seconds of
    every kept call made (read or run: what the calls cost when they ran), and `spent`,
    the time actually spent in them (~0 for a read; a run's, model variant built
    included); a pass's time plus the change of `unspent` (`costed` less `spent`) over
    it is what it would take with every call run."""

    def __init__(self):
        self.providers: frozenset[int] = frozenset()  # ids of the providers whose calls are kept
        self.size = 0
        self.results: OrderedDict = OrderedDict()  # key -> (result, wall seconds, CPU seconds)
        self.hits = self.calls = 0
        self.read: dict[int, int] = {}  # provider id -> its calls answered from kept results
        self.store = None  # kept.KeptOutputs, once attached
        self.costed = {"wall": 0.0, "cpu": 0.0}
        self.spent = {"wall": 0.0, "cpu": 0.0}
        self._reading = False
        self._only = False  # reading kept results only: a call not kept raises NotKept

    def keep(self, providers=(), size: int = 100_000) -> None:
        """Keep the results of calls of ops whose providers (models, ...) are all among
        `providers` (the last `size` calls), for `reading`; none: keep nothing and forget
        what was kept. Only for deterministic providers."""
        self.providers, self.size = frozenset(id(p) for p in providers), size
        self.results.clear()
        self.hits = self.calls = 0
        self.read.clear()

    def attach(self, path) -> None:
        """Keep results on disk in `path` too (None: in memory only), and read those
        kept there by earlier runs of the same program."""
        from frontends.components.kept import KeptOutputs

        if self.store is not None:
            self.store.close()
        self.store = KeptOutputs(path) if path is not None else None

    @contextmanager
    def reading(self, only: bool = False) -> Iterator[Reuse]:
        """Within: a kept call returns the kept result instead of running (an untimed
        pass: its outputs are the same, its cost is not measured but read). `only`: a
        call of a kept provider that was not kept raises `NotKept` instead of running
        (a configuration scored from kept results alone, or not at all)."""
        before, self._reading, only_before, self._only = self._reading, True, self._only, only
        try:
            yield self
        finally:
            self._reading, self._only = before, only_before

    def unspent(self, clock: str) -> float:
        """`costed` less `spent` on `clock` ("wall" or "cpu"): what the kept calls made so
        far took when they ran beyond the time spent in them now, which an untimed pass
        adds to its own time to model a pass that runs every call."""
        return self.costed[clock] - self.spent[clock]

    def is_reading(self) -> bool:
        return self._reading

    def is_reading_only(self) -> bool:
        return self._reading and self._only

    def counts(self) -> dict[str, int]:
        """{'reused': calls answered from kept results, 'run': calls run and kept}."""
        return {"reused": self.hits, "run": self.calls}

    def read_of(self, provider) -> int:
        """How many calls of `provider` were answered from kept results (an endpoint's
        requests not sent)."""
        return self.read.get(id(provider), 0)


class OpTimes:
    """Wall time of one program's component calls per label (`component`), while
    `measuring`: where a program's time goes (`KnobFunction.profile`)."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.active = False

    @contextmanager
    def measuring(self) -> Iterator[OpTimes]:
        """Within: every component call's wall time is added to its label's (from zero)."""
        self.seconds, self.calls, self.active = {}, {}, True
        try:
            yield self
        finally:
            self.active = False

    def add(self, label: str, seconds: float) -> None:
        self.seconds[label] = self.seconds.get(label, 0.0) + seconds
        self.calls[label] = self.calls.get(label, 0) + 1


class ComponentRuntime:
    """The registry of one program's providers (a configuration's), its result
    caches, the program's `reuse` table (none: nothing is reused) and its `times`
    (each call timed under its label while they are measuring)."""

    def __init__(self, registry: dict[str, Any], reuse: Reuse | None = None, times: OpTimes | None = None):
        self.registry = dict(registry)
        self.reuse = reuse if reuse is not None else Reuse()
        self.times = times if times is not None else OpTimes()
        self._caches: dict[tuple, OrderedDict] = {}

    def provider(self, name: str, op: str):
        try:
            return self.registry[name]
        except KeyError:
            known = ", ".join(sorted(self.registry)) or "none"
            raise ApproxError(f"{op}: component @{name} is not in the registry (registered: {known})",
                              where="<components>") from None

    def run(self, op: str, settings: Settings, *args):
        if self.times.active:
            t0 = time.perf_counter()
            try:
                return self._call(op, settings, args)
            finally:
                self.times.add(settings.label or op, time.perf_counter() - t0)
        return self._call(op, settings, args)

    def _call(self, op: str, settings: Settings, args: tuple):
        if self.reuse.providers:
            called = [self.registry[v] for v in settings.providers() if v in self.registry]
            providers = tuple(id(p) for p in called)
            if providers and all(p in self.reuse.providers for p in providers) \
                    and not any(draws(p, settings) for p in called):  # a call drawing at random: never kept
                return self._reused(op, settings, providers, args)
        return self._cached(op, settings, args)

    def _reused(self, op: str, settings: Settings, providers: tuple, args: tuple):
        reuse, operands = self.reuse, _hashable(args)
        if operands is None:
            return self._cached(op, settings, args)
        w0, c0 = time.perf_counter(), time.thread_time()
        try:
            result, wall, cpu = self._kept_call(op, settings, providers, args, operands)
        finally:
            reuse.spent["wall"] += time.perf_counter() - w0
            reuse.spent["cpu"] += time.thread_time() - c0
        reuse.costed["wall"] += wall
        reuse.costed["cpu"] += cpu
        return result

    def _kept_call(self, op: str, settings: Settings, providers: tuple, args: tuple, operands):
        """(result, wall seconds, CPU seconds the call took when it ran)."""
        reuse = self.reuse
        key = (op, settings, providers, operands)
        kept = reuse.results.get(key)
        # a call kept in memory is on disk already: a timed pass does not write it again
        disk_key = self._disk_key(op, settings, operands) if reuse.store is not None and kept is None else None
        if disk_key is not None and reuse.is_reading():
            kept = reuse.store.get(disk_key)
        if reuse.is_reading() and kept is not None:
            if isinstance(settings, GenerateSettings):
                self.model(settings)  # a variant of the model is built here, as the call would, not in a timed pass
            reuse.hits += 1
            for p in set(providers):
                reuse.read[p] = reuse.read.get(p, 0) + 1
            reuse.results[key] = kept
            return kept
        if reuse.is_reading_only():
            raise NotKept(f"{settings.label or op}: this call was not kept")
        if isinstance(settings, GenerateSettings):
            self.model(settings)  # building a variant is not the call's cost
        w0, c0 = time.perf_counter(), time.thread_time()
        result = self._cached(op, settings, args)
        kept = reuse.results[key] = (result, time.perf_counter() - w0, time.thread_time() - c0)
        if disk_key is not None:
            reuse.store.put(disk_key, op, result, kept[1], kept[2])
        reuse.calls += 1
        while len(reuse.results) > reuse.size:
            reuse.results.popitem(last=False)
        return kept

    def _disk_key(self, op: str, settings: Settings, operands) -> str:
        from frontends.components.kept import call_key, provider_identity

        names = tuple(f"{v}={provider_identity(self.registry[v])}" for v in settings.providers() if v in self.registry)
        return call_key(op, settings, names, operands)

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

    def _run(self, op: str, settings: Settings, args: tuple):
        impl = _IMPLEMENTATIONS.get(op)
        if impl is None:
            raise ApproxError(f"no runtime for '{op}'", where="<components>")
        return impl(self, settings, *args)

    def model(self, s: GenerateSettings):
        """The model a generate op with settings `s` calls (its variant for precision and layers)."""
        model = self.provider(s.model, s.OP)
        return model.variant_for(s.for_provider(model))


@implements(GenerateOp)
def generate(runtime: ComponentRuntime, s: GenerateSettings, *args):
    model = runtime.provider(s.model, s.OP)
    if s.template is None:
        question, contexts = args
        return model.answer_with(question, s.cut(question, contexts, _spans(model)), s.for_provider(model))
    from frontends.components.llm.prompting import fill

    values = dict(zip(s.inputs, args))
    if "contexts" in values:
        words = " ".join(str(v) for k, v in values.items() if k != "contexts")
        values["contexts"] = s.cut(words, values["contexts"], _spans(model))
    return model.complete_with(fill(s.template, values, s.outputs), s.outputs, s.for_provider(model))


def _spans(model):
    """How `model` counts the tokens of the context budgets (its tokenizer, else words)."""
    return getattr(model, "token_spans", None)


@implements(EmbedOp)
def embed(runtime: ComponentRuntime, s: EmbedSettings, text):
    encoder = runtime.provider(s.encoder, s.OP)
    if s.precision is not None and "precision" in supports(encoder):  # as for_provider keeps it
        encoder = encoder.variant_for(s)
    v = np.asarray(encoder.embed([text])[0])
    if s.dims:
        v = v[: s.dims]
        v = v / max(float(np.linalg.norm(v)), 1e-12)
    return v


@implements(RetrieveOp)
def retrieve(runtime: ComponentRuntime, s: RetrieveSettings, query):
    retriever = runtime.provider(s.retriever, s.OP)
    return retriever.search(query, s.top_k, **s.for_provider(retriever).provider_settings())


@implements(ToolCallOp)
def tool_call(runtime: ComponentRuntime, s: ToolCallSettings, request):
    tools = runtime.provider(s.tools, s.OP)
    return tools.call(request, runtime.provider(s.router, s.OP))


@implements(ToolRunOp)
def tool_run(runtime: ComponentRuntime, s: ToolRunSettings, *args):
    return runtime.provider(s.tool, s.OP).run(*args)


@implements(FallbackOp)
def fallback(runtime: ComponentRuntime, s: FallbackSettings, *inputs):
    value = s.value if s.has_value else inputs[0]
    if s.of == GenerateOp.name:
        from frontends.components.llm.base import fallback_answer

        return fallback_answer(value, s.outputs)
    if s.of == RetrieveOp.name:
        from frontends.components.retrieval.ranking import Hits

        try:
            ids = np.asarray(value, dtype=np.int64).reshape(-1)
        except (TypeError, ValueError):
            raise ApproxError(f"a skipped retrieval returns document ids, not {value!r:.60}",
                              where="<components>") from None
        return Hits(ids, np.zeros(len(ids)))
    return value


@implements(ConfidenceOp)
def confidence(runtime: ComponentRuntime, s: Settings, answer) -> float:
    c = getattr(answer, "confidence", None)
    if c is None:
        raise ApproxError(f"cascade: the answer of '{getattr(answer, 'model', '?')}' gives no confidence "
                          "to compare with the threshold", where="<components>")
    return float(c)


def _hashable(args: tuple):
    """A cache key for `args` (lists as tuples, dicts as their items sorted by key: a
    tool's schema is an operand of the call that writes it), or None when they cannot be
    one. Its repr is the same in every process (kept outputs on disk are keyed by it)."""
    def key(x):
        if isinstance(x, list | tuple):
            return tuple(key(v) for v in x)
        if isinstance(x, dict):
            return ("<dict>", *sorted((k, key(v)) for k, v in x.items()))
        hash(x)
        return x

    try:
        return key(args)
    except TypeError:
        return None
