"""`component`: the components of a compound AI program as ops (answer models,
embedding, retrieval, tool calls), with every parameter a knob can change an
attribute in the printed IR.

Why ops: a configuration of a compound system is then a pipeline run. The
`approx.util.annotation.component` annotation declares one knob of one component
(the values it may take); `transform-approx` rewrites the component ops' attributes
(`passes/transformations/component_ops.py`), and the Python generated from the
transformed IR calls each component with the attributes of its op
(`frontends/pygen.py`, `frontends/components/runtime.py`). Knob 0 leaves every
attribute as written: the exact program.

Ops (operands and results are `!pyobj.obj`; `component` is the label that names
the call site's knobs, `<component>.<parameter>`; symbols name entries of the
component registry the program runs with):
- `component.generate(%question, %contexts) <{component, model, max_new_tokens?,
  precision?, passages?, sentences?, context_chars?, layers?}>`: an answer by a model
  (an extractive reader, a causal LM, an endpoint) from the contexts, cut to the first
  `passages` passages, the `sentences` sentences of each sharing most words with the
  question, and `context_chars` characters each; `precision` (a type of
  `approx_dialect.precision.PRECISIONS`) is the compute type of local models;
  `layers` = k runs the model's first k decoder layers (a trained early exit);
  absent = uncut / the model's own;
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
- `component.confidence(%answer) -> f64`: an answer's confidence (cascades test it).
Every component op may carry `cache = n`: its results are kept for the last n
distinct (attributes, inputs), as `memoize` sets it.
"""

from __future__ import annotations

from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    f64,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue, TypeAttribute
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from approx_dialect.annotations import AnnotationOp
from approx_dialect.precision import PRECISIONS, ir_names, is_precision
from approx_dialect.pyobj import OBJ, ObjType


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


@irdl_op_definition
class GenerateOp(ComponentOp):
    name = "component.generate"
    PROVIDER: ClassVar[str] = "model"
    INTS: ClassVar[tuple[str, ...]] = ("max_new_tokens", "passages", "sentences", "context_chars", "layers")
    question = operand_def(ObjType)
    contexts = operand_def(ObjType)
    model = prop_def(SymbolRefAttr)
    max_new_tokens = opt_prop_def(IntegerAttr)
    precision = opt_prop_def(TypeAttribute)
    passages = opt_prop_def(IntegerAttr)
    sentences = opt_prop_def(IntegerAttr)
    context_chars = opt_prop_def(IntegerAttr)
    layers = opt_prop_def(IntegerAttr)
    answer = result_def(ObjType)

    def __init__(self, question: SSAValue, contexts: SSAValue, component: str, model: str, **params):
        super().__init__(operands=[question, contexts], result_types=[OBJ],
                         properties=_props(component, ("model", model), **params))


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


COMPONENT_OPS: tuple[type[ComponentOp], ...] = (GenerateOp, EmbedOp, RetrieveOp, ToolCallOp)

# How each transform_type acts on a component parameter, and what its values are.
SYMBOL_PARAMETERS = ("model", "encoder", "retriever", "tools", "router")
INTEGER_TRANSFORMS = ("param", "memoize")

COMPONENT_TRANSFORMS: dict[str, tuple[str, str]] = {
    "param": ("`generate`: max_new_tokens, passages, sentences, context_chars, "
              "layers (early exit: the first k decoder layers); `embed`: dims; "
              "`retrieve`: top_k, preprocess, terms, docs, dims",
              "k in 1..len(values) sets the attribute to values[k-1] (integers); 0 keeps the written "
              "value (absent: uncut, the model's own)"),
    "func_substitute": ("`generate`: model; `embed`: encoder; `retrieve`: retriever; `tool_call`: tools, router",
                        "k calls the cheaper provider values[k-1] (a symbol of the registry); 0 the written one"),
    "precision_reduce": ("`generate`, `embed`, `retrieve`: precision",
                         f"k computes in values[k-1] ({', '.join(p.ir for p in PRECISIONS)}: torch's "
                         f"{', '.join(p.backend for p in PRECISIONS)}; for a retriever its similarity kernel); "
                         "0 as written (absent: the provider's own)"),
    "memoize": ("every component op: cache",
                "k keeps the results of the last values[k-1] distinct inputs (attributes and operands); 0 no cache"),
    "task_skipping": ("every component op (values: none; the parameter only names the knob)",
                      "1 drops the op and its result is `pyobj.const` None (the program reads it as \"step "
                      "skipped\"); 0 runs it"),
    "cascade": ("`generate`: model (values: V cheaper models, cheapest first; `thresholds`: T confidences)",
                "k in 1..V*T asks values[(k-1) // T] first and keeps its answer when `component.confidence` >= "
                "thresholds[(k-1) % T], else the next, ending at the op's own model (an `scf.if` chain); an "
                "op already calling one of the cheaper models is left alone; 0 the op's model alone"),
}
"""Which component-op parameters each transform_type rewrites, and what knob k means there
(docs/transformations.md is generated from this and TRANSFORM_TYPES)."""


def _value_kind_error(transform: str, parameter: str, values: ArrayAttr) -> str | None:
    vals = list(values.data)
    if transform == "func_substitute":
        ok = parameter in SYMBOL_PARAMETERS and all(isinstance(v, SymbolRefAttr) for v in vals)
        return None if ok else (f"func_substitute swaps one of {', '.join(SYMBOL_PARAMETERS)}; "
                                "values are symbols (@name)")
    if transform == "precision_reduce":
        ok = parameter == "precision" and all(is_precision(v) for v in vals)
        return None if ok else f"precision_reduce sets 'precision'; values are {ir_names()}"
    if transform == "task_skipping":
        return None if not vals else "task_skipping takes no values (knob 1 skips the step)"
    if transform == "cascade":
        ok = parameter == "model" and all(isinstance(v, SymbolRefAttr) for v in vals)
        return None if ok else "cascade on 'model': values are the cheaper models (@name), cheapest first"
    if transform in INTEGER_TRANSFORMS:
        if transform == "memoize" and parameter != "cache":
            return "memoize sets 'cache' (entries of the component's result cache)"
        ok = all(isinstance(v, IntegerAttr) and v.value.data >= (0 if parameter == "preprocess" else 1)
                 for v in vals)
        return None if ok else f"{transform} values are integers >= 1 (preprocess: >= 0)"
    return f"transform_type '{transform}' does not apply to component ops"


@irdl_op_definition
class AnnotationComponentOp(AnnotationOp):
    """One knob of a component: every op labelled `component` in the module gets
    `parameter` rewritten by `transform_type` at `knob_val` (0 = as written; k >= 1
    uses values[k-1]; task_skipping: 1 skips the op; cascade: see the pass).
    `func_name` is the function whose call declared it; the knob's name is
    `<component>.<parameter>`. With `decided`, the knob value is not set here but
    per input by the decision tree of `func_name` with the same transform_type: each
    case of the decision rewrites the ops of its own copy of the body (no knob of
    its own is listed)."""

    name = "approx.util.annotation.component"
    component = prop_def(StringAttr)
    parameter = prop_def(StringAttr)
    transform_type = prop_def(StringAttr)
    values = prop_def(ArrayAttr)
    knob_val = prop_def(IntegerAttr.constr(i32))
    thresholds = opt_prop_def(ArrayAttr)
    decided = opt_prop_def(UnitAttr)

    def __init__(self, func_name: str, component: str, parameter: str, transform_type: str,
                 values: list[Attribute], knob_val: int = 0, thresholds: list[float] | None = None,
                 decided: bool = False):
        props: dict[str, Attribute] = {
            "func_name": StringAttr(func_name), "component": StringAttr(component),
            "parameter": StringAttr(parameter), "transform_type": StringAttr(transform_type),
            "values": ArrayAttr(values), "knob_val": IntegerAttr(knob_val, i32)}
        if decided:
            props["decided"] = UnitAttr()
        if thresholds is not None:
            from xdsl.dialects.builtin import FloatAttr

            props["thresholds"] = ArrayAttr([FloatAttr(float(t), f64) for t in thresholds])
        super().__init__(properties=props)

    def knob_name(self) -> str:
        return f"{self.component.data}.{self.parameter.data}"

    def knob_values(self) -> tuple[int, ...]:
        if self.transform_type.data == "task_skipping":
            return (0, 1)
        n = len(self.values.data)
        if self.transform_type.data == "cascade":
            n *= len(self.thresholds.data) if self.thresholds is not None else 0
        return tuple(range(n + 1))

    def verify_(self) -> None:
        super().verify_()
        where = f"knob '{self.knob_name()}'"
        error = _value_kind_error(self.transform_type.data, self.parameter.data, self.values)
        if error is not None:
            raise VerifyException(f"{where}: {error}")
        if self.transform_type.data == "cascade":
            ts = self.thresholds.data if self.thresholds is not None else ()
            if not ts or not all(getattr(t, "value", None) is not None and 0.0 <= t.value.data <= 1.0 for t in ts):
                raise VerifyException(f"{where}: cascade needs 'thresholds', confidences in [0, 1]")
        elif self.transform_type.data != "task_skipping" and not self.values.data:
            raise VerifyException(f"{where}: list at least one value")
        k = self.knob_val.value.data
        if k not in self.knob_values():
            raise VerifyException(f"{where}: knob_val {k} is out of range 0..{max(self.knob_values())}")


Component = Dialect("component", [GenerateOp, EmbedOp, RetrieveOp, ToolCallOp, ConfidenceOp], [])
