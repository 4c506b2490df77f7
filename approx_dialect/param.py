"""Parameter knobs: a named integer or float operand (top-k, max tokens, context
length, number of candidates) that the tuner sets from a declared list of values.

Two spellings, as for every approximation here:
- `approx.util.annotation.param {func_name, arg_index, name, values}` names an argument
  of a function (ApproxMLIR's annotation style); emit-management turns it into
- `%v = "approx.param"(%orig) <{name, values}> : (T) -> T` inside the knob, whose uses
  see the tuned value. A `param` transform (static or chosen by a decision tree) with
  knob k >= 1 replaces it by `values[k-1]`; k = 0 by `%orig` (exact).

`values` is `array<i64: ...>` for integer and index operands and `array<f64: ...>`
for float operands; integer values must fit the operand's width.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from approx_dialect.annotations import AnnotationOp, require_func


def _fmt(values) -> str:
    return "[" + ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) + "]"


def verify_param_values(name: str, values: DenseArrayBase, t: Attribute, what: str) -> None:
    """`values` is non-empty and of the kind `t` takes (i64 list for integer/index,
    f64 list for float); integers fit `t`'s width."""
    if not name:
        raise VerifyException("a param needs a non-empty 'name' (e.g. \"top_k\")")
    vals = list(values.get_values())
    if not vals:
        raise VerifyException(f"param '{name}' has no values; list at least one")
    is_int = isinstance(t, IntegerType | IndexType)
    is_float = not is_int and type(t).__name__.startswith(("Float", "BFloat"))
    if not (is_int or is_float):
        raise VerifyException(f"param '{name}': {what} has type {t}; params are integer, index or float")
    want = i64 if is_int else f64
    if values.elt_type != want:
        raise VerifyException(
            f"param '{name}': {what} has type {t}, so values must be array<{want}: ...>, "
            f"got array<{values.elt_type}>"
        )
    if isinstance(t, IntegerType):
        w = t.width.data
        lo, hi = (0, 1) if w == 1 else (-(1 << (w - 1)), (1 << w) - 1)
        for v in vals:
            if not lo <= v <= hi:
                raise VerifyException(f"param '{name}': value {v} does not fit {t}")


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A tunable value: its result is `input` (knob 0) or one of `values`; replaced
    by transform-approx (`param` transform) with an `arith.constant`."""

    name = "approx.param"
    input = operand_def()
    param_name = prop_def(StringAttr, prop_name="name")
    values = prop_def(DenseArrayBase)
    output = result_def()

    def __init__(self, value: SSAValue, name: str, values: DenseArrayBase):
        super().__init__(
            operands=[value],
            result_types=[value.type],
            properties={"name": StringAttr(name), "values": values},
        )

    def verify_(self) -> None:
        if self.output.type != self.input.type:
            raise VerifyException(
                f"approx.param returns {self.output.type} but its operand is {self.input.type}; "
                "they must be the same type"
            )
        verify_param_values(self.param_name.data, self.values, self.input.type, "its operand")


@irdl_op_definition
class AnnotationParamOp(AnnotationOp):
    """Argument `arg_index` of `func_name` is the param `name`, tuned over `values`."""

    name = "approx.util.annotation.param"
    arg_index = prop_def(IntegerAttr.constr(i64))
    param_name = prop_def(StringAttr, prop_name="name")
    values = prop_def(DenseArrayBase)

    def __init__(self, func_name: str, arg_index: int, name: str, values: DenseArrayBase):
        super().__init__(
            properties={
                "func_name": StringAttr(func_name),
                "arg_index": IntegerAttr(arg_index, i64),
                "name": StringAttr(name),
                "values": values,
            }
        )

    def verify_(self) -> None:
        func = require_func(self, self.func_name.data, "function")
        inputs = func.function_type.inputs.data
        i = self.arg_index.value.data
        if not 0 <= i < len(inputs):
            raise VerifyException(
                f"arg_index {i} is out of range: '{func.sym_name.data}' has {len(inputs)} arguments"
            )
        verify_param_values(self.param_name.data, self.values, inputs[i], f"argument {i} of '{func.sym_name.data}'")


def param_values_text(values: DenseArrayBase) -> str:
    return _fmt(values.get_values())
