"""Components as decorated Python sees them: a call of one of these objects inside a
`@Knob` function lowers to its component op (`approx_dialect.component`), not to an
opaque `pyobj.call`, and the knobs the component declares become
`approx.util.annotation.component` annotations of the module.

    answer = Generate("answer", pro, max_new_tokens=16,
                      tune=[Tune.cascade([fast], thresholds=[0.2, 0.1]), Tune.param("passages", 2, 1),
                            Tune.precision("bfloat16")])
    rewrite = Prompt("rewrite", lm, template="Rewrite as a search query: {question}", outputs=["query"],
                     tune=[Tune.skip(fallback=Tune.input("question"))])

    @Knob()
    def rag(question):
        hits = bm25(rewrite(question).query)    # component.generate (a prompt), component.retrieve
        return answer(question, [corpus[i] for i in hits.ids]).text   # component.generate

Each component declares, once, where it is defined: its label (the knobs are
`<label>.<parameter>`), its provider (the model, encoder, retriever or tool
registry, named by its `name`), the op's attributes as written (the exact
program) and which of them are tunable with which values (`Tune`). Providers are
entries of the component registry the generated Python runs with
(`frontends.components.runtime.ComponentRuntime`). Called outside a decorated
function, a component runs through the same runtime with its written attributes.
A skip (`Tune.skip`) declares what the skipped call returns: one of its inputs
passed through (`Tune.input(name or index)`) or a constant, so the program goes on.
`Prompt` is a prompt-level LLM call (a template with `{name}` fields in, text or
named fields out; the same `component.generate` op, so the same knobs), `RunTool`
a registered tool the program runs (`component.tool_run`). The keywords of
`Generate`, `Prompt` and `Embed` are their op's declared settings (`SETTINGS` of
the op class): a setting declared there is a keyword here.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, StringAttr, SymbolRefAttr, UnitAttr, f64, i64
from xdsl.ir import Attribute, SSAValue

from approx_dialect.component import (
    ComponentOp,
    EmbedOp,
    GenerateOp,
    RetrieveOp,
    ToolCallOp,
    ToolRunOp,
    template_fields,
)
from approx_dialect.component_knobs import AnnotationComponentOp, numeric_setting
from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import attr_of
from approx_dialect.pyobj import OBJ, ConstOp, const_attr
from frontends.components.settings import check_precisions, check_supported, settings_of


def provider_name(provider) -> str:
    name = getattr(provider, "name", None)
    if not isinstance(name, str) or not name:
        raise ApproxError(f"a component provider needs a non-empty 'name' (its symbol), got {provider!r}",
                          where="<component>")
    return name


@dataclass(frozen=True)
class Input:
    """A skip's fallback: the input `which` (a name or an index) of the skipped call."""

    which: int | str


NO_FALLBACK = object()


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
    fallback_input: int | str | None = None
    """task_skipping: the input a skipped call returns (a name or an index)."""

    @staticmethod
    def param(parameter: str, *values: int | float, decided: bool = False) -> "Tune":
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
    def skip(name: str = "skip", *, fallback=NO_FALLBACK) -> "Tune":
        """task_skipping: knob 1 drops the call, which returns `fallback` instead: an input
        passed through (`Tune.input("question")`, by name or index) or a constant (None,
        a number, a string, a tuple), shaped as the call's result (a generate call's:
        an answer whose text and fields are it); `name` names the knob."""
        if fallback is NO_FALLBACK:
            raise ApproxError("Tune.skip needs fallback=: what a skipped call returns (Tune.input('name') passes "
                              "an input through; or a constant, e.g. '' or None)", where="<component>")
        if isinstance(fallback, Input):
            return Tune(name, "task_skipping", fallback_input=fallback.which)
        if fallback is None:
            return Tune(name, "task_skipping")
        try:
            const_attr(fallback)
        except ValueError as err:
            raise ApproxError(f"Tune.skip fallback: {err}", where="<component>") from None
        return Tune(name, "task_skipping", (fallback,))

    @staticmethod
    def input(which: int | str) -> "Input":
        """A skip's fallback: the call's input `which` (its name or its index) passed through."""
        return Input(which)

    def providers(self) -> list:
        return list(self.values) if self.transform_type in ("func_substitute", "cascade") else []

    def attrs(self) -> list[Attribute]:
        if self.transform_type == "task_skipping":
            return [const_attr(v) for v in self.values]
        return [attribute(self.parameter, v) for v in self.values]



def attribute(parameter: str, value) -> Attribute:
    """A Python setting as the op's attribute: providers as symbols, precision names
    as float types, numbers as i64."""
    if parameter == "precision":
        return attr_of(value)
    if parameter == "template":
        return StringAttr(value)
    if parameter in ("inputs", "outputs"):
        return ArrayAttr([StringAttr(v) for v in value])
    setting = numeric_setting(parameter)
    if setting is not None and setting.kind == "float" and setting.accepts(value):
        return FloatAttr(float(value), f64)
    if isinstance(value, int) and not isinstance(value, bool):
        return IntegerAttr(value, i64)
    return SymbolRefAttr(provider_name(value))


@dataclass
class Component:
    """A component of a compound AI program: the op it lowers to, its label, its
    provider and written attributes, and its tunable parameters."""

    OP = ComponentOp
    INPUTS = ("input",)  # the names of the call's arguments (a tuple of str)
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
        self.tune = [self._resolved(t) for t in self.tune]

    @property
    def ARITY(self) -> int:  # noqa: N802 - the number of arguments a call takes
        return len(self.INPUTS)

    def _resolved(self, t: Tune) -> Tune:
        """`t` with its skip's fallback input as an index into the call's arguments."""
        which = t.fallback_input
        if which is None:
            return t
        if isinstance(which, str) and which in self.INPUTS:
            return replace(t, fallback_input=self.INPUTS.index(which))
        if isinstance(which, int) and not isinstance(which, bool) and 0 <= which < len(self.INPUTS):
            return t
        raise ApproxError(f"component '{self.label}': its skip's fallback input {which!r} is not one of its "
                          f"inputs {list(self.INPUTS)} (a name or an index)", where="<component>")

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
                                      list(t.thresholds) if t.thresholds is not None else None, t.decided,
                                      t.fallback_input if isinstance(t.fallback_input, int) else None)
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
    no provider of the ops of its label supports, or a precision value none builds
    (components sharing a label share its knobs, so a knob may serve the op of one and
    not of its cheap twin)."""
    by_label: dict[str, list[Component]] = {}
    for comp in components:
        by_label.setdefault(comp.label, []).append(comp)
    for label, comps in by_label.items():
        providers = [p for c in comps for p in c.providers()]
        for t in comps[0].tune:
            if t.transform_type in ("param", "precision_reduce"):
                check_supported(comps[0].OP.name, t.parameter, providers, label)
            if t.transform_type == "precision_reduce":
                check_precisions(t.values, providers, label)


CONTEXT_CUTS = tuple(s.name for s in GenerateOp.SETTINGS if s.applies == "contexts")
"""The generate op's settings that cut its input named contexts (`GenerateSettings.cut`)."""


def written(cls: type[Component], label: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings a declaration writes, checked against the declared settings of
    its op (`SETTINGS`): each keyword is one, of its kind."""
    declared = {s.name: s for s in cls.OP.SETTINGS}
    for name, value in settings.items():
        why = declared[name].value_error(value) if name in declared else \
            f"{cls.__name__} has no setting '{name}' (its settings: {', '.join(declared)})"
        if why is not None:
            raise ApproxError(f"component '{label}': {why}", where="<component>")
    return {name: settings.get(name) for name in declared}


def with_settings(cls: type[Component]) -> type[Component]:
    """`cls` whose signature shows its op's declared settings (taken as `**settings`) as keywords."""
    sig = inspect.signature(cls.__init__)
    params = [p for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD]
    params += [inspect.Parameter(s.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                 annotation=f"{s.python_type().__name__} | None") for s in cls.OP.SETTINGS]
    cls.__init__.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return cls


@with_settings
class Generate(Component):
    """An answer by a model: `answer(question, contexts) -> Answer` (the prompt-level
    call whose prompt is the model's own QA prompt; `Prompt` takes a template). Its
    keywords are the generate op's settings (`GenerateOp.SETTINGS`), as written."""

    OP = GenerateOp
    INPUTS = ("question", "contexts")

    def __init__(self, label: str, model, *, tune: Sequence[Tune] = (), **settings):
        super().__init__(label, model, written(Generate, label, settings), list(tune))


@with_settings
class Embed(Component):
    """An embedding: `encoder(text) -> np.ndarray`; its keywords are the embed op's settings."""

    OP = EmbedOp
    INPUTS = ("text",)

    def __init__(self, label: str, encoder, *, tune: Sequence[Tune] = (), **settings):
        super().__init__(label, encoder, written(Embed, label, settings), list(tune))


class Retrieve(Component):
    """A retrieval: `retriever(query) -> Hits` (query: a question or an embedding)."""

    OP = RetrieveOp
    INPUTS = ("query",)

    def __init__(self, label: str, retriever, *, top_k: int, tune: Sequence[Tune] = ()):
        super().__init__(label, retriever, dict(top_k=top_k), list(tune))


class ToolCall(Component):
    """A tool call: `tools(request) -> calls`, routed by `router`."""

    OP = ToolCallOp
    INPUTS = ("request",)

    def __init__(self, label: str, tools, router, *, tune: Sequence[Tune] = ()):
        super().__init__(label, tools, dict(router=router), list(tune))


@with_settings
class Prompt(Component):
    """A prompt-level LLM call: `call(*inputs) -> Answer`, one argument per `{name}`
    field of `template` (in order of first use), the answer's text its first output
    and each of `outputs` an attribute (`rewrite(q).query`), read from `name: value`
    lines when there are several. An input named `contexts` (a list of passages) is
    what the context cuts (`CONTEXT_CUTS`) act on. The model
    must take a free prompt (`supports` has "template"); others are refused here.
    Its other keywords are the generate op's settings, as for `Generate`."""

    OP = GenerateOp

    def __init__(self, label: str, model, *, template: str, outputs: Sequence[str] = ("text",),
                 tune: Sequence[Tune] = (), **settings):
        where = f"component '{label}'"
        try:
            fields = template_fields(template) if isinstance(template, str) else None
        except ValueError as err:
            raise ApproxError(f"{where}: {err} (a field is {{name}}; write {{{{ and }}}} for braces)",
                              where="<component>") from None
        if not fields:
            raise ApproxError(f"{where}: the template needs at least one {{name}} field (its inputs)",
                              where="<component>")
        outputs = list(outputs) if not isinstance(outputs, str) else [outputs]
        if not outputs or not all(isinstance(o, str) and o.isidentifier() for o in outputs) \
                or len(set(outputs)) != len(outputs):
            raise ApproxError(f"{where}: outputs are distinct names, at least one, got {outputs}", where="<component>")
        attributes = written(Prompt, label, settings)
        cuts = [c for c in CONTEXT_CUTS if attributes[c] is not None] + [t.parameter for t in tune
                                                                         if t.parameter in CONTEXT_CUTS]
        if cuts and "contexts" not in fields:
            raise ApproxError(f"{where}: '{cuts[0]}' cuts the input named contexts, and the template has none",
                              where="<component>")
        self.INPUTS = tuple(fields)
        super().__init__(label, model, dict(attributes, template=template, inputs=tuple(fields),
                                            outputs=tuple(outputs)), list(tune))
        for provider in self.providers():  # a substitute or cascade stage must take the prompt too
            check_supported(self.OP.name, "template", [provider], label)


class RunTool(Component):
    """A tool the program runs: `call(*args) -> the tool's result`, one argument per
    parameter of the tool (a Python function with annotated parameters, or a `Tool`
    of a `ToolRegistry`); its knobs: `Tune.skip(fallback=...)`, `Tune.substitute("tool",
    cheaper_fn)` (same parameters) and `Tune.memoize(n)`."""

    OP = ToolRunOp

    def __init__(self, label: str, tool, *, tune: Sequence[Tune] = ()):
        from frontends.components.tools.registry import tool_of

        tool = tool_of(tool)
        tune = [replace(t, values=tuple(tool_of(v) for v in t.values)) if t.transform_type == "func_substitute"
                else t for t in tune]
        for t in tune:
            for other in t.providers():
                if list(other.properties) != list(tool.properties):
                    raise ApproxError(f"component '{label}': substitute '{other.name}' takes "
                                      f"({', '.join(other.properties)}), not ({', '.join(tool.properties)}) "
                                      f"as '{tool.name}' does", where="<component>")
        if tool.fn is None:
            raise ApproxError(f"component '{label}': tool '{tool.name}' is described only (nothing to run)",
                              where="<component>")
        self.INPUTS = tuple(tool.properties)
        super().__init__(label, tool, {}, list(tune))
