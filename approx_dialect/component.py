"""`component`: the components of a compound AI program as ops (answer models,
embedding, retrieval, tool calls), with every parameter a knob can change an
attribute in the printed IR.

Why ops: a configuration of a compound system is then a pipeline run. The
`approx.util.annotation.component` annotation (`approx_dialect/component_knobs.py`)
declares one knob of one component (the values it may take); `transform-approx` rewrites the component ops' attributes
(`passes/transformations/component_ops.py`), and the Python generated from the
transformed IR calls each component with the attributes of its op
(`frontends/pygen.py`, `frontends/components/runtime.py`). Knob 0 leaves every
attribute as written: the exact program.

Ops (operands and results are `!pyobj.obj`; `component` is the label that names
the call site's knobs, `<component>.<parameter>`; symbols name entries of the
component registry the program runs with). Each op's tunable attributes are its
`SETTINGS` (`approx_dialect.op_settings.Setting`: kind, values, who applies it,
meaning), declared once below; docs/components.md has the table:
- `component.generate(%question, %contexts) <{component, model, SETTINGS...}>`: an
  answer by a model (an extractive reader, a causal LM, an endpoint) from the
  contexts. With `template` (a prompt with `{name}` fields), `inputs` (the
  operands' names, one per field) and `outputs` (the names of the fields it
  returns) it is a prompt-level call: the model completes the filled-in template
  (the operand named `contexts`, a list, is cut as the settings say);
- `component.embed(%text) <{component, encoder, SETTINGS...}>`: an embedding;
- `component.retrieve(%query) <{component, retriever, SETTINGS...}>`: the top_k
  passages' hits;
- `component.tool_call(%request) <{component, tools, router}>`: routes the request
  to a tool of `tools` with `router` and returns the calls;
- `component.tool_run(%args...) <{component, tool}>`: runs the registered tool
  `tool` (a Python function) on the arguments and returns its result;
- `component.confidence(%answer) -> f64`: an answer's confidence (cascades test it);
- `component.fallback(%input?) <{component, of, value?, outputs?}>`: what a skipped
  call of op `of` returns (task_skipping with a fallback): its input `%input`
  passed through, or the constant `value`, in the shape of that op's result.
Every component op may carry `cache = n`: its results are kept for the last n
distinct (attributes, inputs), as `memoize` sets it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from approx_dialect.op_settings import Setting, properties
from approx_dialect.pyobj import OBJ, ObjType, const_value


class ComponentOp(IRDLOperation):
    """Shared by the component ops: the label, the provider symbol (`PROVIDER` names
    the attribute: model, encoder, retriever, tools), the declared settings
    (`SETTINGS`, each an attribute checked against its declaration) and the result
    cache."""

    PROVIDER: ClassVar[str] = ""
    SETTINGS: ClassVar[tuple[Setting, ...]] = ()
    component = prop_def(StringAttr)
    cache = opt_prop_def(IntegerAttr)

    def __init__(self, operands: Sequence[SSAValue | Sequence[SSAValue]], component: str, provider: str,
                 **params):
        """Every component op is built alike: its operands, one `!pyobj.obj` result, the
        label, the provider symbol under `PROVIDER`, then the settings given."""
        props: dict[str, Attribute] = {"component": StringAttr(component), self.PROVIDER: SymbolRefAttr(provider)}
        for k, v in params.items():
            if v is None:
                continue
            if not isinstance(v, Attribute):
                v = FloatAttr(v, f64) if isinstance(v, float) else IntegerAttr(int(v), i64)
            props[k] = v
        super().__init__(operands=list(operands), result_types=[OBJ], properties=props)

    def provider(self) -> str:
        return cast(SymbolRefAttr, self.properties[self.PROVIDER]).root_reference.data

    def parameters(self) -> dict[str, Attribute]:
        """The op's tunable attributes (every property but the label)."""
        return {k: v for k, v in self.properties.items() if k != "component"}

    def verify_(self) -> None:
        if not self.component.data:
            raise VerifyException(f"{self.name} needs a non-empty 'component' label")
        for setting in (*self.SETTINGS, CACHE):
            attr = self.properties.get(setting.name)
            error = None if attr is None else setting.error(attr)
            if error is not None:
                raise VerifyException(f"{self.name} {error}")
        for v in [*self.operands, *self.results]:
            if not isinstance(v.type, ObjType) and v.type != f64:
                raise VerifyException(f"{self.name} takes and returns !pyobj.obj, got {v.type}")


CACHE = Setting("cache", "int", "runtime", "the results of the last n distinct inputs are kept")
"""Every component op's result cache (`memoize` sets it)."""


def _names(attr: Attribute | None) -> list[str] | None:
    """The strings of an array of strings (None when it is not one)."""
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, StringAttr) for a in attr.data):
        return None
    return [cast(StringAttr, a).data for a in attr.data]


def template_fields(template: str) -> list[str]:
    """The `{name}` fields of a prompt template, in order of first use ('{{' and '}}'
    are literal braces); a ValueError for a malformed template or field."""
    import string

    names: list[str] = []
    for _, name, spec, conv in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conv:
            raise ValueError(f"template field {{{name}}} is not a plain name")
        if name not in names:
            names.append(name)
    return names


GENERATE_SETTINGS = (
    Setting("max_new_tokens", "int", "call", "at most n new tokens (an extractive reader: its longest span)"),
    Setting("precision", "precision", "variant", "the model computes in this type"),
    Setting("passages", "int", "contexts", "the first n passages"),
    Setting("sentences", "int", "contexts", "the n sentences of each passage sharing most words with the question"),
    Setting("context_chars", "int", "contexts", "each passage cut to its first n characters"),
    Setting("context_tokens", "int", "contexts", "the passages together cut to their first n tokens (the tail "
            "dropped)"),
    Setting("compress_tokens", "int", "contexts", "the passages brought to n tokens by dropping the sentences "
            "sharing fewest words with the question"),
    Setting("layers", "int", "variant", "the model's first k decoder layers, then its head (a trained early exit)"),
    Setting("token_exit", "int", "variant", "each decoded token leaves at the first trained exit whose top-token "
            "probability is >= p %", high=100),
    Setting("repetition_penalty", "float", "call", "the logits of tokens already in the prompt or the answer are "
            "divided by p (multiplied when negative), as transformers' `repetition_penalty`", low=0),
)
"""The generate op's settings, each declared once (docs/components.md has the table)."""


@irdl_op_definition
class GenerateOp(ComponentOp):
    name = "component.generate"
    PROVIDER: ClassVar[str] = "model"
    SETTINGS: ClassVar[tuple[Setting, ...]] = GENERATE_SETTINGS
    args = var_operand_def(ObjType)
    model = prop_def(SymbolRefAttr)
    vars().update(properties(GENERATE_SETTINGS))
    template = opt_prop_def(StringAttr)
    inputs = opt_prop_def(ArrayAttr)
    outputs = opt_prop_def(ArrayAttr)
    answer = result_def(ObjType)

    def __init__(self, args: Sequence[SSAValue], component: str, model: str, **params):
        super().__init__([list(args)], component, model, **params)

    def verify_(self) -> None:
        super().verify_()
        if self.template is None:
            if self.inputs is not None or self.outputs is not None:
                raise VerifyException(f"{self.name}: 'inputs' and 'outputs' belong to a prompt call (with 'template')")
            if len(self.args) != 2:
                raise VerifyException(f"{self.name} without a template takes (question, contexts), "
                                      f"got {len(self.args)} operands")
            return
        try:
            fields = template_fields(self.template.data)
        except ValueError as err:
            raise VerifyException(f"{self.name}: {err}") from None
        inputs, outputs = _names(self.inputs), _names(self.outputs)
        if inputs is None or sorted(inputs) != sorted(fields) or len(inputs) != len(self.args):
            raise VerifyException(f"{self.name}: 'inputs' must name the template's fields {fields}, one per operand")
        if not outputs or not all(o.isidentifier() for o in outputs) or len(set(outputs)) != len(outputs):
            raise VerifyException(f"{self.name}: 'outputs' must be distinct names, at least one")


EMBED_SETTINGS = (
    Setting("precision", "precision", "variant", "the encoder computes in this type"),
    Setting("dims", "int", "runtime", "the first n dimensions, renormalised"),
)


@irdl_op_definition
class EmbedOp(ComponentOp):
    name = "component.embed"
    PROVIDER: ClassVar[str] = "encoder"
    SETTINGS: ClassVar[tuple[Setting, ...]] = EMBED_SETTINGS
    text = operand_def(ObjType)
    encoder = prop_def(SymbolRefAttr)
    vars().update(properties(EMBED_SETTINGS))
    embedding = result_def(ObjType)

    def __init__(self, text: SSAValue, component: str, encoder: str, **params):
        super().__init__([text], component, encoder, **params)


RETRIEVE_SETTINGS = (
    Setting("top_k", "int", "call", "the n best passages", required=True),
    Setting("preprocess", "int", "call", "text-normalisation level (0: full)", low=0),
    Setting("terms", "int", "call", "the scoring kernel keeps ceil(n/k) query terms (the rarest)"),
    Setting("docs", "int", "call", "the scoring kernel scores every k-th document"),
    Setting("dims", "int", "call", "the scoring kernel keeps ceil(n/k) embedding dimensions"),
    Setting("precision", "precision", "call", "the similarity kernel computes in this type"),
)


@irdl_op_definition
class RetrieveOp(ComponentOp):
    name = "component.retrieve"
    PROVIDER: ClassVar[str] = "retriever"
    SETTINGS: ClassVar[tuple[Setting, ...]] = RETRIEVE_SETTINGS
    query = operand_def(ObjType)
    retriever = prop_def(SymbolRefAttr)
    vars().update(properties(RETRIEVE_SETTINGS))
    hits = result_def(ObjType)

    def __init__(self, query: SSAValue, component: str, retriever: str, top_k: int, **params):
        super().__init__([query], component, retriever, top_k=top_k, **params)


@irdl_op_definition
class ToolCallOp(ComponentOp):
    name = "component.tool_call"
    PROVIDER: ClassVar[str] = "tools"
    request = operand_def(ObjType)
    tools = prop_def(SymbolRefAttr)
    router = prop_def(SymbolRefAttr)
    calls = result_def(ObjType)

    def __init__(self, request: SSAValue, component: str, tools: str, router: str):
        super().__init__([request], component, tools, router=SymbolRefAttr(router))


@irdl_op_definition
class ConfidenceOp(IRDLOperation):
    """The confidence in [0, 1] of a component's answer; an answer without one (a
    model that gives none) stops the program with a one-line error at run time."""

    name = "component.confidence"
    answer = operand_def(ObjType)
    confidence = result_def(f64)

    def __init__(self, answer: SSAValue):
        super().__init__(operands=[answer], result_types=[f64])


@irdl_op_definition
class ToolRunOp(ComponentOp):
    name = "component.tool_run"
    PROVIDER: ClassVar[str] = "tool"
    args = var_operand_def(ObjType)
    tool = prop_def(SymbolRefAttr)
    result = result_def(ObjType)

    def __init__(self, args: Sequence[SSAValue], component: str, tool: str):
        super().__init__([list(args)], component, tool)


@irdl_op_definition
class FallbackOp(IRDLOperation):
    """What a skipped component call returns: its input passed through (one operand),
    or the constant `value` (no operand), in the shape of the result of op `of`
    (for `component.generate`, an answer whose text, and each of `outputs`, is it)."""

    name = "component.fallback"
    input = var_operand_def(ObjType)
    component = prop_def(StringAttr)
    of = prop_def(StringAttr)
    value = opt_prop_def(Attribute)
    outputs = opt_prop_def(ArrayAttr)
    result = result_def(ObjType)

    def __init__(self, inputs: Sequence[SSAValue], component: str, of: str, value: Attribute | None = None,
                 outputs: ArrayAttr | None = None):
        props: dict[str, Attribute] = {"component": StringAttr(component), "of": StringAttr(of)}
        if value is not None:
            props["value"] = value
        if outputs is not None:
            props["outputs"] = outputs
        super().__init__(operands=[list(inputs)], result_types=[OBJ], properties=props)

    def verify_(self) -> None:
        if len(self.input) > 1 or (len(self.input) == 1) == (self.value is not None):
            raise VerifyException(f"{self.name} returns either its one input or its 'value', not both or neither")
        if self.value is not None:
            try:
                const_value(self.value)
            except ValueError as err:
                raise VerifyException(f"{self.name} 'value': {err}") from None


COMPONENT_OPS: tuple[type[ComponentOp], ...] = (GenerateOp, EmbedOp, RetrieveOp, ToolCallOp, ToolRunOp)

Component = Dialect("component", [GenerateOp, EmbedOp, RetrieveOp, ToolCallOp, ToolRunOp, ConfidenceOp,
                                  FallbackOp], [])
