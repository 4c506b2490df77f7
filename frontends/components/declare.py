"""Components as decorated Python sees them: a call of one of these objects inside a
`@Knob` function lowers to its component op (`approx_dialect.component`), not to an
opaque `pyobj.call`, and the knobs the component declares become
`approx.util.annotation.component` annotations of the module.

    answer = Generate("answer", pro, max_new_tokens=16,
                      tune=[Tune.cascade([fast], thresholds=[0.2, 0.1]), Tune.param("passages", 2, 1),
                            Tune.precision("bfloat16")])

    @Knob()
    def rag(question):
        hits = bm25(question)              # component.retrieve
        return answer(question, [corpus[i] for i in hits.ids]).text   # component.generate

Each component declares, once, where it is defined: its label (the knobs are
`<label>.<parameter>`), its provider (the model, encoder, retriever or tool
registry, named by its `name`), the op's attributes as written (the exact
program) and which of them are tunable with which values (`Tune`). Providers are
entries of the component registry the generated Python runs with
(`frontends.components.runtime.ComponentRuntime`). Called outside a decorated
function, a component runs through the same runtime with its written attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import (
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from approx_dialect.component import (
    AnnotationComponentOp,
    ComponentOp,
    EmbedOp,
    GenerateOp,
    RetrieveOp,
    ToolCallOp,
)
from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import attr_of
from approx_dialect.pyobj import OBJ, ConstOp
from frontends.components.settings import check_supported, settings_of


def provider_name(provider) -> str:
    name = getattr(provider, "name", None)
    if not isinstance(name, str) or not name:
        raise ApproxError(f"a component provider needs a non-empty 'name' (its symbol), got {provider!r}",
                          where="<component>")
    return name


@dataclass(frozen=True)
class Tune:
    """One tunable parameter of a component: `transform_type` over `values` (knob k >= 1
    uses values[k-1]; 0 keeps the written attribute). Values are numbers (param,
    memoize), providers (func_substitute, cascade: cheapest first) or precision names."""

    parameter: str
    transform_type: str
    values: tuple = ()
    thresholds: tuple[float, ...] | None = None
    decided: bool = False
    """Set per input by the decision tree (same transform_type) of the decorated
    function that calls the component, instead of being a knob of its own."""

    @staticmethod
    def param(parameter: str, *values: int, decided: bool = False) -> "Tune":
        return Tune(parameter, "param", tuple(values), decided=decided)

    @staticmethod
    def substitute(parameter: str, *providers, decided: bool = False) -> "Tune":
        return Tune(parameter, "func_substitute", tuple(providers), decided=decided)

    @staticmethod
    def cascade(cheaper: Sequence, thresholds: Sequence[float]) -> "Tune":
        return Tune("model", "cascade", tuple(cheaper), tuple(float(t) for t in thresholds))

    @staticmethod
    def precision(*names: str, decided: bool = False) -> "Tune":
        return Tune("precision", "precision_reduce", tuple(names), decided=decided)

    @staticmethod
    def memoize(*sizes: int) -> "Tune":
        return Tune("cache", "memoize", tuple(sizes))

    @staticmethod
    def skip(name: str = "skip") -> "Tune":
        """task_skipping: knob 1 drops the call (its result is None); `name` names the knob."""
        return Tune(name, "task_skipping")

    def providers(self) -> list:
        return list(self.values) if self.transform_type in ("func_substitute", "cascade") else []

    def attrs(self) -> list[Attribute]:
        return [attribute(self.parameter, v) for v in self.values]


def attribute(parameter: str, value) -> Attribute:
    """A Python setting as the op's attribute: providers as symbols, precision names
    as float types, numbers as i64."""
    if parameter == "precision":
        return attr_of(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return IntegerAttr(value, i64)
    return SymbolRefAttr(provider_name(value))


@dataclass
class Component:
    """A component of a compound AI program: the op it lowers to, its label, its
    provider and written attributes, and its tunable parameters."""

    OP = ComponentOp
    ARITY = 1
    label: str
    provider: Any
    attributes: dict[str, Any] = field(default_factory=dict)
    tune: list[Tune] = field(default_factory=list)

    def __post_init__(self):
        if not self.label or not self.label.replace("_", "").isalnum():
            raise ApproxError(f"a component label is a name (letters, digits, _), got {self.label!r}",
                              where="<component>")
        self.tune = list(self.tune)
        names = [t.parameter for t in self.tune]
        if len(set(names)) != len(names):
            raise ApproxError(f"component '{self.label}' tunes a parameter twice: {names}", where="<component>")
        for k, v in self.attributes.items():
            if v is not None:
                check_supported(self.OP.name, k, [self.provider], self.label)

    def providers(self) -> list:
        """The providers that may run this component's op: its own, then those its knobs substitute."""
        return [self.provider, *[p for t in self.tune for p in t.providers()]]

    def registry(self) -> dict[str, Any]:
        """Symbol -> provider for every provider this component may call."""
        providers = self.providers()
        if "router" in self.attributes:
            providers.append(self.attributes["router"])
        return {provider_name(p): p for p in providers}

    def op(self, operands: list[SSAValue]) -> ComponentOp:
        """The op with the written attributes."""
        if len(operands) != self.ARITY:
            raise ApproxError(f"component '{self.label}' takes {self.ARITY} argument(s), got {len(operands)}",
                              where="<component>")
        props = {"component": StringAttr(self.label), self.OP.PROVIDER: SymbolRefAttr(provider_name(self.provider))}
        props.update({k: attribute(k, v) for k, v in self.attributes.items() if v is not None})
        return self.OP.create(operands=list(operands), result_types=[OBJ], properties=props)

    def annotations(self, func_name: str) -> list[AnnotationComponentOp]:
        return [AnnotationComponentOp(func_name, self.label, t.parameter, t.transform_type, t.attrs(), 0,
                                      list(t.thresholds) if t.thresholds is not None else None, t.decided)
                for t in self.tune]

    def __call__(self, *args):
        """Outside decorated code: the op as written, run by the runtime."""
        from frontends.components.runtime import ComponentRuntime

        op = self.op([ConstOp(UnitAttr()).result for _ in args])  # placeholders: only its attributes are read
        return ComponentRuntime(self.registry()).run(op.name, settings_of(op.name, op.properties), *args)

    def __hash__(self) -> int:
        return id(self)


def check_knobs(components: Sequence[Component]) -> None:
    """Refuse a knob that changes nothing: one setting (param, precision_reduce) that
    no provider of the ops of its label supports (components sharing a label share
    its knobs, so a knob may serve the op of one and not of its cheap twin)."""
    by_label: dict[str, list[Component]] = {}
    for comp in components:
        by_label.setdefault(comp.label, []).append(comp)
    for label, comps in by_label.items():
        providers = [p for c in comps for p in c.providers()]
        for t in comps[0].tune:
            if t.transform_type in ("param", "precision_reduce"):
                check_supported(comps[0].OP.name, t.parameter, providers, label)


class Generate(Component):
    """An answer by a model: `answer(question, contexts) -> Answer`."""

    OP = GenerateOp
    ARITY = 2

    def __init__(self, label: str, model, *, tune: Sequence[Tune] = (), max_new_tokens: int | None = None,
                 passages: int | None = None, sentences: int | None = None, context_chars: int | None = None,
                 precision: str | None = None, layers: int | None = None):
        super().__init__(label, model, dict(max_new_tokens=max_new_tokens, passages=passages, sentences=sentences,
                                            context_chars=context_chars, precision=precision, layers=layers),
                         list(tune))


class Embed(Component):
    """An embedding: `encoder(text) -> np.ndarray`."""

    OP = EmbedOp

    def __init__(self, label: str, encoder, *, tune: Sequence[Tune] = (), dims: int | None = None,
                 precision: str | None = None):
        super().__init__(label, encoder, dict(dims=dims, precision=precision), list(tune))


class Retrieve(Component):
    """A retrieval: `retriever(query) -> Hits` (query: a question or an embedding)."""

    OP = RetrieveOp

    def __init__(self, label: str, retriever, *, top_k: int, tune: Sequence[Tune] = ()):
        super().__init__(label, retriever, dict(top_k=top_k), list(tune))


class ToolCall(Component):
    """A tool call: `tools(request) -> calls`, routed by `router`."""

    OP = ToolCallOp

    def __init__(self, label: str, tools, router, *, tune: Sequence[Tune] = ()):
        super().__init__(label, tools, dict(router=router), list(tune))
