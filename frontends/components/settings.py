"""What a component op asks of its provider: one frozen settings object per op,
built from the op's attributes (symbols as registry names, precision types as
backend names, `approx_dialect.precision`) and handed whole to the provider.

Each settings class says which of its settings the provider applies
(`PROVIDER_SETTINGS`: a provider lists those it has in its `supports`); the
others the runtime applies itself, the same for every provider (the context
cuts, an embedding's dimensions, top-k, the result cache). A setting a
provider does not support is refused where the program is declared
(`check_supported`), never silently dropped by the provider or failing late.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute

from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import backend_of, is_precision


@dataclass(frozen=True)
class Settings:
    """Settings every component op has: `cache` = n keeps the results of the last n
    distinct inputs (None: no cache)."""

    OP: ClassVar[str] = ""
    PROVIDER: ClassVar[str] = ""  # the attribute naming the op's provider
    PROVIDER_SETTINGS: ClassVar[frozenset[str]] = frozenset()  # applied by the provider, if it supports them
    cache: int | None = None
    label: str = field(default="", compare=False)  # the op's `component` label: where its time is counted

    @classmethod
    def from_properties(cls, properties: dict[str, Attribute]) -> Settings:
        """The settings of an op's attributes; its label (`component`) names it but is
        not a setting (two ops alike but for their labels have equal settings)."""
        names = {f.name for f in fields(cls)} - {"label"}
        values: dict[str, Any] = {}
        for k, v in properties.items():
            if k == "component":
                values["label"] = _value(k, v)
                continue
            if k not in names:
                raise ApproxError(f"{cls.OP} has no setting '{k}'", where="<components>")
            values[k] = _value(k, v)
        return cls(**values)

    def provider_settings(self) -> dict[str, Any]:
        """The settings the provider applies that this op sets (not None)."""
        return {k: getattr(self, k) for k in sorted(self.PROVIDER_SETTINGS) if getattr(self, k) is not None}

    def providers(self) -> tuple[str, ...]:
        """The registry names this op calls."""
        return (getattr(self, self.PROVIDER),)

    def for_provider(self, provider) -> Settings:
        """These settings without the provider settings `provider` does not support:
        a knob of a component label tunes the ops whose provider has it (a cascade's
        cheaper stage, a cheap twin sharing the label); `check_supported` refused,
        where the program was declared, a knob or attribute no provider has."""
        drop = {k: None for k in self.provider_settings() if k not in supports(provider)}
        return self.__class__(**{**self.__dict__, **drop}) if drop else self


@dataclass(frozen=True)
class GenerateSettings(Settings):
    """`component.generate`: the model answers with at most `max_new_tokens` tokens, in
    `precision`, with its first `layers` layers (an early exit), each decoded token leaving at
    a trained exit whose top-token probability is >= `token_exit` %; the contexts are cut
    (`cut`) before it reads them. With a `template` (a prompt-level call: a model
    that `supports` it completes a free prompt), `inputs` names the operands and
    `outputs` the fields of the answer."""

    OP: ClassVar[str] = "component.generate"
    PROVIDER: ClassVar[str] = "model"
    PROVIDER_SETTINGS: ClassVar[frozenset[str]] = frozenset({"max_new_tokens", "precision", "layers", "template",
                                                             "token_exit"})
    model: str = ""
    template: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    max_new_tokens: int | None = None
    precision: str | None = None
    layers: int | None = None
    token_exit: int | None = None
    passages: int | None = None
    sentences: int | None = None
    context_chars: int | None = None
    context_tokens: int | None = None
    compress_tokens: int | None = None

    def cut(self, question: str, contexts: Sequence, spans=None) -> list:
        """The contexts the model reads (`llm.context_cuts`): the `sentences` of each
        sharing most words with the question, then the first `passages`, each cut to
        `context_chars`, then all together cut to `context_tokens`, then brought to
        `compress_tokens` by dropping the sentences sharing fewest words with the
        question; tokens as `spans(text)` counts them (the model's `token_spans`;
        None: words)."""
        from frontends.components.llm import context_cuts as cuts

        spans = spans or cuts.word_spans
        if self.sentences:
            contexts = cuts.select_sentences(question, contexts, self.sentences)
        if self.passages or self.context_chars:
            contexts = cuts.limit_contexts(contexts, self.passages, self.context_chars)
        if self.context_tokens:
            contexts = cuts.truncate_tokens(contexts, self.context_tokens, spans)
        if self.compress_tokens:
            contexts = cuts.compress_tokens(question, contexts, self.compress_tokens, spans)
        return list(contexts)


@dataclass(frozen=True)
class EmbedSettings(Settings):
    """`component.embed`: the encoder in `precision`; the first `dims` dimensions kept."""

    OP: ClassVar[str] = "component.embed"
    PROVIDER: ClassVar[str] = "encoder"
    PROVIDER_SETTINGS: ClassVar[frozenset[str]] = frozenset({"precision"})
    encoder: str = ""
    precision: str | None = None
    dims: int | None = None


@dataclass(frozen=True)
class RetrieveSettings(Settings):
    """`component.retrieve`: `top_k` hits; the retriever's own knobs (preprocessing
    level, its scoring kernel's terms / docs / dims / precision)."""

    OP: ClassVar[str] = "component.retrieve"
    PROVIDER: ClassVar[str] = "retriever"
    PROVIDER_SETTINGS: ClassVar[frozenset[str]] = frozenset({"preprocess", "terms", "docs", "dims", "precision"})
    retriever: str = ""
    top_k: int = 0
    preprocess: int | None = None
    terms: int | None = None
    docs: int | None = None
    dims: int | None = None
    precision: str | None = None


@dataclass(frozen=True)
class ToolCallSettings(Settings):
    """`component.tool_call`: `tools` routes the request with `router`."""

    OP: ClassVar[str] = "component.tool_call"
    PROVIDER: ClassVar[str] = "tools"
    tools: str = ""
    router: str = ""

    def providers(self) -> tuple[str, ...]:
        return (self.tools, self.router)


@dataclass(frozen=True)
class ToolRunSettings(Settings):
    """`component.tool_run`: the registered tool `tool` runs on the operands."""

    OP: ClassVar[str] = "component.tool_run"
    PROVIDER: ClassVar[str] = "tool"
    tool: str = ""


@dataclass(frozen=True)
class FallbackSettings(Settings):
    """`component.fallback`: a skipped call of op `of` returns its input, or `value`
    (`has_value`), shaped as that op's result (a generate op's with `outputs`)."""

    OP: ClassVar[str] = "component.fallback"
    of: str = ""
    value: Any = None
    has_value: bool = False
    outputs: tuple[str, ...] = ()

    @classmethod
    def from_properties(cls, properties: dict[str, Attribute]) -> Settings:
        from approx_dialect.pyobj import const_value

        value = properties.get("value")
        label = f"{_value('component', properties['component'])} (skipped)" if "component" in properties else ""
        return cls(of=_value("of", properties["of"]), value=None if value is None else const_value(value),
                   has_value=value is not None, outputs=_value("outputs", properties.get("outputs", ArrayAttr([]))),
                   label=label)

    def providers(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class ConfidenceSettings(Settings):
    """`component.confidence`: no settings (an answer's confidence)."""

    OP: ClassVar[str] = "component.confidence"

    def providers(self) -> tuple[str, ...]:
        return ()


SETTINGS: dict[str, type[Settings]] = {s.OP: s for s in (GenerateSettings, EmbedSettings, RetrieveSettings,
                                                          ToolCallSettings, ToolRunSettings, ConfidenceSettings,
                                                          FallbackSettings)}


def settings_of(op: str, properties: dict[str, Attribute]) -> Settings:
    """The settings of an op named `op` with attributes `properties`."""
    if op not in SETTINGS:
        raise ApproxError(f"no runtime for '{op}'", where="<components>")
    return SETTINGS[op].from_properties(properties)


def supports(provider) -> frozenset[str]:
    """The provider settings `provider` applies (its `supports`; none when it lists none)."""
    return frozenset(getattr(provider, "supports", frozenset()))


def check_supported(op: str, setting: str, providers: Sequence, label: str) -> None:
    """An ApproxError unless one of `providers` (those that may run the ops labelled
    `label`) supports `setting`, when it is one a provider applies."""
    if setting not in SETTINGS[op].PROVIDER_SETTINGS or any(setting in supports(p) for p in providers):
        return
    names = ", ".join(dict.fromkeys(getattr(p, "name", type(p).__name__) for p in providers))
    what = " (it cannot take a free prompt)" if setting == "template" else ""
    raise ApproxError(f"component '{label}' ({op}): '{setting}' is not supported by its provider {names}{what}",
                      where="<component>")


def _value(name: str, attr: Attribute):
    if isinstance(attr, SymbolRefAttr):
        return attr.root_reference.data
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr) and all(isinstance(a, StringAttr) for a in attr.data):
        return tuple(a.data for a in attr.data)
    if is_precision(attr):
        return backend_of(attr)
    raise ApproxError(f"component attribute {name} = {attr} has no runtime meaning", where="<components>")
