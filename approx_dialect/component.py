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
component registry the program runs with):
- `component.generate(%question, %contexts) <{component, model, max_new_tokens?,
  precision?, passages?, sentences?, context_chars?, context_tokens?, compress_tokens?,
  layers?, token_exit?}>`: an answer by a model (an extractive reader, a causal LM, an
  endpoint) from the contexts, cut to the first `passages` passages, the `sentences`
  sentences of each sharing most words with the question, and `context_chars` characters
  each, then all together to `context_tokens` tokens (the tail dropped) and to
  `compress_tokens` tokens (the sentences sharing fewest words with the question
  dropped); `precision` (a type of
  `approx_dialect.precision.PRECISIONS`) is the compute type of local models;
  `layers` = k runs the model's first k decoder layers (a trained early exit);
  `token_exit` = p decides an early exit per decoded token: it leaves at the first
  trained exit whose top-token probability is >= p % (1..100);
  absent = uncut / the model's own. With `template` (a prompt with `{name}` fields),
  `inputs` (the operands' names, one per field) and `outputs` (the names of the
  fields it returns) it is a prompt-level call: the model completes the filled-in
  template (the operand named `contexts`, a list, is cut as above);
- `component.embed(%text) <{component, encoder, precision?, dims?}>`: an embedding
  (the first `dims` dimensions, renormalised);
- `component.retrieve(%query) <{component, retriever, top_k, preprocess?, terms?,
  docs?, dims?, precision?}>`: the top_k passages' hits; `preprocess` =
  text-normalisation level (0 = full); `terms` / `docs` / `dims` = the knob values
  of the retriever's scoring kernel (an approx-opt program of its own) on its loops
  over query terms, documents and embedding dimensions (k keeps ceil(n/k) terms or
  dimensions, every k-th document), `precision` its similarity's compute type;
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
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue, TypeAttribute
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

from approx_dialect.precision import ir_names, is_precision
from approx_dialect.pyobj import OBJ, ObjType, const_value


class ComponentOp(IRDLOperation):
    """Shared by the component ops: the label, the provider symbol (`PROVIDER` names
    the attribute: model, encoder, retriever, tools), integer parameters (`INTS`,
    each >= 1; `top_k` may be required) and an optional compute precision."""

    PROVIDER: ClassVar[str] = ""
    INTS: ClassVar[tuple[str, ...]] = ()
    ZERO_OK: ClassVar[tuple[str, ...]] = ()  # integer parameters where 0 is a valid setting
    component = prop_def(StringAttr)
    cache = opt_prop_def(IntegerAttr)

    def provider(self) -> str:
        return cast(SymbolRefAttr, self.properties[self.PROVIDER]).root_reference.data

    def parameters(self) -> dict[str, Attribute]:
        """The op's tunable attributes (every property but the label)."""
        return {k: v for k, v in self.properties.items() if k != "component"}

    def verify_(self) -> None:
        if not self.component.data:
            raise VerifyException(f"{self.name} needs a non-empty 'component' label")
        for name in (*self.INTS, "cache"):
            attr = self.properties.get(name)
            if attr is None:
                continue
            low = 0 if name in self.ZERO_OK else 1
            if not isinstance(attr, IntegerAttr) or attr.value.data < low:
                raise VerifyException(f"{self.name} '{name}' must be an integer >= {low}, got {attr}")
        precision = self.properties.get("precision")
        if precision is not None and not is_precision(precision):
            raise VerifyException(f"{self.name} 'precision' must be {ir_names()}, got {precision}")
        for v in [*self.operands, *self.results]:
            if not isinstance(v.type, ObjType) and v.type != f64:
                raise VerifyException(f"{self.name} takes and returns !pyobj.obj, got {v.type}")


def _props(component: str, provider: tuple[str, str], **params) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {"component": StringAttr(component), provider[0]: SymbolRefAttr(provider[1])}
    for k, v in params.items():
        if v is None:
            continue
        props[k] = v if isinstance(v, Attribute) else IntegerAttr(int(v), i64)
    return props


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


@irdl_op_definition
class GenerateOp(ComponentOp):
    name = "component.generate"
    PROVIDER: ClassVar[str] = "model"
    INTS: ClassVar[tuple[str, ...]] = ("max_new_tokens", "passages", "sentences", "context_chars", "context_tokens",
                                       "compress_tokens", "layers", "token_exit")
    args = var_operand_def(ObjType)
    model = prop_def(SymbolRefAttr)
    max_new_tokens = opt_prop_def(IntegerAttr)
    precision = opt_prop_def(TypeAttribute)
    passages = opt_prop_def(IntegerAttr)
    sentences = opt_prop_def(IntegerAttr)
    context_chars = opt_prop_def(IntegerAttr)
    context_tokens = opt_prop_def(IntegerAttr)
    compress_tokens = opt_prop_def(IntegerAttr)
    layers = opt_prop_def(IntegerAttr)
    token_exit = opt_prop_def(IntegerAttr)
    template = opt_prop_def(StringAttr)
    inputs = opt_prop_def(ArrayAttr)
    outputs = opt_prop_def(ArrayAttr)
    answer = result_def(ObjType)

    def __init__(self, args: Sequence[SSAValue], component: str, model: str, **params):
        super().__init__(operands=[list(args)], result_types=[OBJ],
                         properties=_props(component, ("model", model), **params))

    def verify_(self) -> None:
        super().verify_()
        if self.token_exit is not None and self.token_exit.value.data > 100:
            raise VerifyException(f"{self.name} 'token_exit' is a confidence in percent (1..100), "
                                  f"got {self.token_exit.value.data}")
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


@irdl_op_definition
class EmbedOp(ComponentOp):
    name = "component.embed"
    PROVIDER: ClassVar[str] = "encoder"
    INTS: ClassVar[tuple[str, ...]] = ("dims",)
    text = operand_def(ObjType)
    encoder = prop_def(SymbolRefAttr)
    precision = opt_prop_def(TypeAttribute)
    dims = opt_prop_def(IntegerAttr)
    embedding = result_def(ObjType)

    def __init__(self, text: SSAValue, component: str, encoder: str, **params):
        props = _props(component, ("encoder", encoder), **params)
        super().__init__(operands=[text], result_types=[OBJ], properties=props)


@irdl_op_definition
class RetrieveOp(ComponentOp):
    name = "component.retrieve"
    PROVIDER: ClassVar[str] = "retriever"
    INTS: ClassVar[tuple[str, ...]] = ("top_k", "preprocess", "terms", "docs", "dims")
    ZERO_OK: ClassVar[tuple[str, ...]] = ("preprocess",)
    query = operand_def(ObjType)
    retriever = prop_def(SymbolRefAttr)
    top_k = prop_def(IntegerAttr)
    preprocess = opt_prop_def(IntegerAttr)
    terms = opt_prop_def(IntegerAttr)
    docs = opt_prop_def(IntegerAttr)
    dims = opt_prop_def(IntegerAttr)
    precision = opt_prop_def(TypeAttribute)
    hits = result_def(ObjType)

    def __init__(self, query: SSAValue, component: str, retriever: str, top_k: int, **params):
        super().__init__(operands=[query], result_types=[OBJ],
                         properties=_props(component, ("retriever", retriever), top_k=top_k, **params))


@irdl_op_definition
class ToolCallOp(ComponentOp):
    name = "component.tool_call"
    PROVIDER: ClassVar[str] = "tools"
    request = operand_def(ObjType)
    tools = prop_def(SymbolRefAttr)
    router = prop_def(SymbolRefAttr)
    calls = result_def(ObjType)

    def __init__(self, request: SSAValue, component: str, tools: str, router: str):
        super().__init__(operands=[request], result_types=[OBJ],
                         properties=_props(component, ("tools", tools), router=SymbolRefAttr(router)))


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
        super().__init__(operands=[list(args)], result_types=[OBJ], properties=_props(component, ("tool", tool)))


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
