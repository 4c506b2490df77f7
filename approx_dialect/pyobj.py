"""`pyobj`: opaque Python values in the IR, for orchestration code (the glue of a
compound AI system: strings, lists, model outputs, calls to Python callables).

Why a dialect: the approx passes rewrite loops, branches and calls by their
structure (scf/func), whatever flows through them; with Python objects typed
`!pyobj.obj`, a Python function's loops and calls are transformed like a kernel's,
then executed as Python generated from the IR (`frontends.pygen`).

Ops (all minimal on purpose; operators, attribute access, indexing and displays
are calls of Python's own `operator`/builtin functions):
- `pyobj.const <{value}>`: a constant built from a typed attribute (string, integer,
  i1 bool, f64 float, unit = None, array = tuple of constants);
- `pyobj.global <{index, name}>`: entry `index` of the environment table (a Python
  object resolved when the function was lowered); `name` is only for reading;
- `pyobj.call(args) <{callee, name, kwnames?}>`: calls environment entry `callee`;
  the last len(kwnames) arguments are passed by keyword; 0 or more results (more than
  one: the returned value is unpacked, as `a, b = f()`);
- `pyobj.box`: a typed scalar (integer, index, float) as a Python object;
- `pyobj.unbox`: a Python object as a typed scalar: integers with `operator.index`,
  floats with `float()`, i1 with `bool()` (truth value);
- `pyobj.unpack`: `a, b = x` (the length is checked, as in Python).
Nothing of the IR's text is ever executed: callees are integers into a table held
by the frontend, and constants are typed attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException


@irdl_attr_definition
class ObjType(ParametrizedAttribute, TypeAttribute):
    """Any Python object."""

    name = "pyobj.obj"


OBJ = ObjType()


def is_scalar(t: Attribute) -> bool:
    """Types that box/unbox convert: signless integers, index, floats."""
    return isinstance(t, IntegerType | IndexType) or type(t).__name__.startswith("Float")


def _require_scalar(t: Attribute, what: str) -> None:
    """Box and unbox convert the same scalar types, and say so alike."""
    if not is_scalar(t):
        raise VerifyException(f"{what} an integer, index or float, got {t}")


def _check_const(value: Attribute) -> None:
    if isinstance(value, ArrayAttr):
        for v in value.data:
            _check_const(v)
    elif not isinstance(value, StringAttr | IntegerAttr | FloatAttr | UnitAttr):
        raise VerifyException(
            f"pyobj.const value must be a string, integer, float, unit (None) or array of them, got {value}"
        )


def const_attr(value) -> Attribute:
    """The `pyobj.const` attribute of a Python constant (None, bool, int, float, str,
    or a tuple / list of them); a ValueError for anything else."""
    if value is None:
        return UnitAttr()
    if isinstance(value, bool):
        return IntegerAttr(int(value), IntegerType(1))
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, 64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, tuple | list):
        return ArrayAttr([const_attr(v) for v in value])
    raise ValueError(f"a {type(value).__name__} is not a constant (None, bool, int, float, str or a tuple of them)")


def const_value(attr: Attribute):
    """The Python value of a `pyobj.const` attribute (arrays as tuples)."""
    if isinstance(attr, UnitAttr):
        return None
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, IntegerAttr):
        v = int(attr.value.data)
        return bool(v) if isinstance(attr.type, IntegerType) and attr.type.width.data == 1 else v
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, ArrayAttr):
        return tuple(const_value(a) for a in attr.data)
    raise ValueError(f"{attr} is not a constant")


@irdl_op_definition
class ConstOp(IRDLOperation):
    name = "pyobj.const"
    value = prop_def(Attribute)
    result = result_def(ObjType)

    def __init__(self, value: Attribute):
        super().__init__(properties={"value": value}, result_types=[OBJ])

    def verify_(self) -> None:
        _check_const(self.value)


@irdl_op_definition
class GlobalOp(IRDLOperation):
    name = "pyobj.global"
    index = prop_def(IntegerAttr.constr(i64))
    sym = prop_def(StringAttr, prop_name="name")
    result = result_def(ObjType)

    def __init__(self, index: int, name: str):
        super().__init__(
            properties={"index": IntegerAttr(index, i64), "name": StringAttr(name)}, result_types=[OBJ]
        )

    def verify_(self) -> None:
        if self.index.value.data < 0:
            raise VerifyException(f"pyobj.global index must be >= 0, got {self.index.value.data}")


@irdl_op_definition
class CallOp(IRDLOperation):
    name = "pyobj.call"
    args = var_operand_def()
    callee = prop_def(IntegerAttr.constr(i64))
    sym = prop_def(StringAttr, prop_name="name")
    kwnames = opt_prop_def(ArrayAttr)
    res = var_result_def()

    def __init__(
        self,
        callee: int,
        name: str,
        args: Sequence[SSAValue],
        kwnames: Sequence[str] = (),
        result_types: Sequence[Attribute] = (OBJ,),
    ):
        props: dict[str, Attribute] = {"callee": IntegerAttr(callee, i64), "name": StringAttr(name)}
        if kwnames:
            props["kwnames"] = ArrayAttr([StringAttr(k) for k in kwnames])
        super().__init__(operands=[args], properties=props, result_types=[list(result_types)])

    def keywords(self) -> list[str]:
        return [k.data for k in self.kwnames.data] if self.kwnames is not None else []

    def verify_(self) -> None:
        if self.callee.value.data < 0:
            raise VerifyException(f"pyobj.call callee must be >= 0, got {self.callee.value.data}")
        if self.kwnames is not None:
            if not all(isinstance(k, StringAttr) for k in self.kwnames.data):
                raise VerifyException("pyobj.call kwnames must be an array of strings")
            if len(self.kwnames.data) > len(self.args):
                raise VerifyException(
                    f"pyobj.call has {len(self.kwnames.data)} keyword names but {len(self.args)} arguments"
                )
        for t in [a.type for a in self.args] + [r.type for r in self.res]:
            if not isinstance(t, ObjType):
                raise VerifyException(f"pyobj.call takes and returns !pyobj.obj, got {t}")


@irdl_op_definition
class BoxOp(IRDLOperation):
    name = "pyobj.box"
    input = operand_def()
    result = result_def(ObjType)

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value], result_types=[OBJ])

    def verify_(self) -> None:
        _require_scalar(self.input.type, "pyobj.box takes")


@irdl_op_definition
class UnboxOp(IRDLOperation):
    name = "pyobj.unbox"
    input = operand_def(ObjType)
    result = result_def()

    def __init__(self, value: SSAValue, result_type: Attribute):
        super().__init__(operands=[value], result_types=[result_type])

    def verify_(self) -> None:
        _require_scalar(self.result.type, "pyobj.unbox gives")


@irdl_op_definition
class UnpackOp(IRDLOperation):
    name = "pyobj.unpack"
    input = operand_def(ObjType)
    res = var_result_def(ObjType)

    def __init__(self, value: SSAValue, count: int):
        super().__init__(operands=[value], result_types=[[OBJ] * count])


PyObj = Dialect("pyobj", [ConstOp, GlobalOp, CallOp, BoxOp, UnboxOp, UnpackOp], [ObjType])
