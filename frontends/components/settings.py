"""What a component op asks of its provider: one frozen settings object per op,
built from the op's attributes (symbols as registry names, precision types as
backend names, `approx_dialect.precision`) and handed whole to the provider.

The fields are the op's declared settings (`SETTINGS` of its op class, added by
`declared`), so a setting declared on the op is a field here with nothing else to
write. Those the provider applies (`PROVIDER_SETTINGS`: per call or by a variant)
it lists in its `supports`; the others the runtime applies itself, the same for
every provider (the context cuts, an embedding's dimensions, the result cache).
A setting a provider does not support is refused where the program is declared
(`check_supported`), never silently dropped by the provider or failing late: a
greedy model supports no sampling or search option, so `temperature` and the like
are refused for it. A call whose settings have its provider draw at random
(`draws`) is never answered from kept outputs, whatever the provider says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute

from approx_dialect.component import ComponentOp, EmbedOp, GenerateOp, RetrieveOp
from approx_dialect.diagnostics import ApproxError
from approx_dialect.op_settings import Setting
from approx_dialect.precision import backend_of, is_precision
from frontends.components.llm.base import GREEDY, NOT_GREEDY, drawing


@dataclass(frozen=True)
class Settings:
    """Settings every component op has: `cache` = n keeps the results of the last n
    distinct inputs (None: no cache)."""

    OP: ClassVar[str] = ""
    PROVIDER: ClassVar[str] = ""  # the attribute naming the op's provider
    PROVIDER_SETTINGS: ClassVar[frozenset[str]] = frozenset()  # applied by the provider, if it supports them
    DECLARED: ClassVar[tuple[Setting, ...]] = ()  # the op's declared settings (fields of this class)
    cache: int | None = None
    label: str = field(default="", compare=False)  # the op's `component` label: where its time is counted

    if TYPE_CHECKING:  # the declared settings are fields added by `declared`
        def __getattr__(self, name: str) -> Any: ...

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
        """These settings without the provider settings `provider` does not support,
        and without a precision it builds no variant of: a knob of a component label
        tunes the ops whose provider has it (a cascade's cheaper stage, a cheap twin
        sharing the label, runs its own precision where it has no int8); `check_supported`
        and `check_precisions` refused, where the program was declared, a knob, attribute
        or precision value no provider has."""
        drop = {k: None for k in self.provider_settings() if k not in supports(provider)}
        precision = self.__dict__.get("precision")
        if "precision" not in drop and precision is not None and not builds(provider, precision):
            drop["precision"] = None
        return self.__class__(**{**self.__dict__, **drop}) if drop else self

    def applied(self, applies: str) -> dict[str, Any]:
        """The declared settings applied as `applies` (call, variant, ...) that this op sets."""
        return {s.name: getattr(self, s.name) for s in self.DECLARED
                if s.applies == applies and getattr(self, s.name) is not None}


def declared(op: type[ComponentOp], extra: frozenset[str] = frozenset()):
    """A class decorator (under `@dataclass`): the settings `op` declares become fields
    (None: absent), and those its provider applies (per call, by a variant; required
    ones aside: every provider takes them) with `extra` its PROVIDER_SETTINGS."""
    def add(cls):
        if "__annotations__" not in cls.__dict__:
            cls.__annotations__ = {}
        annotations = cls.__dict__["__annotations__"]
        for s in op.SETTINGS:
            annotations[s.name] = s.python_type() if s.required else s.python_type() | None
            setattr(cls, s.name, s.python_type()() if s.required else None)
        cls.OP, cls.DECLARED = op.name, op.SETTINGS
        cls.PROVIDER_SETTINGS = extra | {s.name for s in op.SETTINGS
                                         if s.applies in ("call", "variant") and not s.required}
        return cls

    return add


@dataclass(frozen=True)
@declared(GenerateOp, extra=frozenset({"template"}))
class GenerateSettings(Settings):
    """`component.generate`: the model answers under the op's declared settings: its
    generation options (`generation()`: at most `max_new_tokens` tokens, ...), passed
    to the model whole, and the variant its precision, layers and token exit select;
    the contexts are cut (`cut`) before it reads them. With a `template` (a
    prompt-level call: a model that `supports` it completes a free prompt), `inputs`
    names the operands and `outputs` the fields of the answer."""

    PROVIDER: ClassVar[str] = "model"
    model: str = ""
    template: str | None = None
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()

    def generation(self) -> dict[str, Any]:
        """The generation options this op sets (its declared per-call settings), as the
        model takes them: `model.answer(question, contexts, **options)`."""
        return self.applied("call")

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
@declared(EmbedOp)
class EmbedSettings(Settings):
    """`component.embed`: the encoder in `precision`; the first `dims` dimensions kept."""

    PROVIDER: ClassVar[str] = "encoder"
    encoder: str = ""


@dataclass(frozen=True)
@declared(RetrieveOp)
class RetrieveSettings(Settings):
    """`component.retrieve`: `top_k` hits; the retriever's own knobs (preprocessing
    level, its scoring kernel's terms / docs / dims / precision)."""

    PROVIDER: ClassVar[str] = "retriever"
    retriever: str = ""


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
    what = f" ({GREEDY})" if setting in NOT_GREEDY else what  # a sampling or search option
    raise ApproxError(f"component '{label}' ({op}): '{setting}' is not supported by its provider {names}{what}",
                      where="<component>")


def draws(provider, settings: Settings) -> tuple[str, ...]:
    """The settings by which `provider`, called under `settings`, draws its tokens at random
    (generation options such as a temperature > 0: `llm.base.drawing`), so that its answer
    may differ the next time and no kept output stands for the call; () for other ops."""
    if not isinstance(settings, GenerateSettings):
        return ()
    return drawing(settings.for_provider(provider).generation())


def builds(provider, precision: str) -> bool:
    """Whether `provider` has a variant of `precision` (its `precisions`; one that lists
    none is trusted to: its `variant` says otherwise)."""
    return precision in getattr(provider, "precisions", (precision,))


def check_precisions(precisions: Sequence[str], providers: Sequence, label: str) -> None:
    """An ApproxError naming each of `precisions` that none of `providers` (those that may
    run the ops labelled `label`) builds: a precision knob value that would change nothing."""
    takers = [p for p in providers if "precision" in supports(p)]
    for value in precisions:
        if takers and not any(builds(p, value) for p in takers):
            names = ", ".join(dict.fromkeys(getattr(p, "name", type(p).__name__) for p in takers))
            raise ApproxError(f"component '{label}': precision {value} is built by none of its providers ({names})",
                              where="<component>")


def _value(name: str, attr: Attribute):
    if isinstance(attr, SymbolRefAttr):
        return attr.root_reference.data
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, ArrayAttr) and all(isinstance(a, StringAttr) for a in attr.data):
        return tuple(a.data for a in attr.data)
    if is_precision(attr):
        return backend_of(attr)
    raise ApproxError(f"component attribute {name} = {attr} has no runtime meaning", where="<components>")
