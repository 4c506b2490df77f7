"""The knobs of component ops: `approx.util.annotation.component` (one knob of one
component: the values it may take) and the table of what each transform_type
does on a component parameter (docs/transformations.md is generated from it).
The ops themselves are in `approx_dialect.component`; the pass that applies the
knobs is `passes/transformations/component_ops.py`."""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, SymbolRefAttr, UnitAttr, f64, i32, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

from approx_dialect.annotations import AnnotationOp
from approx_dialect.component import COMPONENT_OPS, ComponentOp
from approx_dialect.op_settings import Setting
from approx_dialect.precision import PRECISIONS, ir_names, is_precision
from approx_dialect.pyobj import const_value

# How each transform_type acts on a component parameter, and what its values are.
SYMBOL_PARAMETERS = ("model", "encoder", "retriever", "tools", "router", "tool")
INTEGER_TRANSFORMS = ("param", "memoize")

def _numbers(op: type[ComponentOp]) -> str:
    return f"`{op.name.split('.')[1]}`: " + ", ".join(s.name for s in op.SETTINGS if s.kind != "precision")


def numeric_setting(parameter: str) -> Setting | None:
    """The declared numeric setting named `parameter` (of any component op), if one is."""
    found = [s for op in COMPONENT_OPS for s in op.SETTINGS if s.name == parameter and s.kind != "precision"]
    return found[0] if found else None


COMPONENT_TRANSFORMS: dict[str, tuple[str, str]] = {
    "param": ("; ".join(_numbers(op) for op in COMPONENT_OPS if any(s.kind != "precision" for s in op.SETTINGS))
              + " (each op's declared settings: docs/components.md)",
              "k in 1..len(values) sets the attribute to values[k-1] (numbers of the setting's kind); 0 keeps "
              "the written value (absent: uncut, the model's own)"),
    "func_substitute": ("`generate`: model; `embed`: encoder; `retrieve`: retriever; `tool_call`: tools, router; "
                        "`tool_run`: tool",
                        "k calls the cheaper provider values[k-1] (a symbol of the registry); 0 the written one"),
    "precision_reduce": ("`generate`, `embed`, `retrieve`: precision",
                         f"k computes in values[k-1] ({', '.join(p.ir for p in PRECISIONS)}: torch's "
                         f"{', '.join(p.backend for p in PRECISIONS)}; for a retriever its similarity kernel); "
                         "0 as written (absent: the provider's own)"),
    "memoize": ("every component op: cache",
                "k keeps the results of the last values[k-1] distinct inputs (attributes and operands); 0 no cache"),
    "task_skipping": ("every component op (the parameter only names the knob; the fallback: `input` = i, "
                      "or one constant in values, or neither)",
                      "1 drops the op; its result is its fallback, a `component.fallback` (`input` = i: the op's "
                      "operand i passed through; values = [c]: the constant c; each in the shape of the op's result) "
                      "or, with neither, `pyobj.const` None; 0 runs it"),
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
        try:
            [const_value(v) for v in vals]
        except ValueError:
            return "task_skipping's value is its fallback, a constant"
        return None if len(vals) <= 1 else "task_skipping takes at most one value (the fallback)"
    if transform == "cascade":
        ok = parameter == "model" and all(isinstance(v, SymbolRefAttr) for v in vals)
        return None if ok else "cascade on 'model': values are the cheaper models (@name), cheapest first"
    if transform in INTEGER_TRANSFORMS:
        if transform == "memoize" and parameter != "cache":
            return "memoize sets 'cache' (entries of the component's result cache)"
        setting = numeric_setting(parameter) if transform == "param" else None
        if setting is not None:
            errors = [e for v in vals if (e := setting.error(v)) is not None]
            return f"{transform} values: {errors[0]}" if errors else None
        ok = all(isinstance(v, IntegerAttr) and v.value.data >= 1 for v in vals)
        return None if ok else f"{transform} values are integers >= 1"
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
    input = opt_prop_def(IntegerAttr)

    def __init__(self, func_name: str, component: str, parameter: str, transform_type: str,
                 values: list[Attribute], knob_val: int = 0, thresholds: list[float] | None = None,
                 decided: bool = False, input: int | None = None):
        props: dict[str, Attribute] = {
            "func_name": StringAttr(func_name), "component": StringAttr(component),
            "parameter": StringAttr(parameter), "transform_type": StringAttr(transform_type),
            "values": ArrayAttr(values), "knob_val": IntegerAttr(knob_val, i32)}
        if decided:
            props["decided"] = UnitAttr()
        if input is not None:
            props["input"] = IntegerAttr(input, i64)
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
        if self.input is not None and (self.transform_type.data != "task_skipping" or self.values.data
                                       or self.input.value.data < 0):
            raise VerifyException(f"{where}: 'input' = i (>= 0) is a task_skipping fallback, given without a value")
        k = self.knob_val.value.data
        if k not in self.knob_values():
            raise VerifyException(f"{where}: knob_val {k} is out of range 0..{max(self.knob_values())}")
