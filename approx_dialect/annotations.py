"""Module-level annotations `approx.util.annotation.*`: each names a function and
says which approximation to build around it. The passes turn them into
knob / decide / try / transform ops and erase them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, StringAttr, i32, i64
from xdsl.dialects.func import FuncOp
from xdsl.irdl import IRDLOperation, irdl_op_definition, opt_prop_def, prop_def, traits_def
from xdsl.traits import HasParent
from xdsl.utils.exceptions import VerifyException

from approx_dialect.ladder import verify_ladder
from approx_dialect.ops import I32Array, verify_transform_type
from approx_dialect.symbols import frozen_table


def symbol_name(name: str) -> str:
    """Function names are accepted with or without a leading '@'."""
    return name[1:] if name.startswith("@") else name


def function_table(module: ModuleOp) -> dict[str, FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}


def lookup_func(op: IRDLOperation, name: str) -> FuncOp | None:
    module = op.parent_op()
    if not isinstance(module, ModuleOp):
        return None
    table = frozen_table(module)
    if table is None:
        table = function_table(module)
    found = table.get(symbol_name(name))
    return found if isinstance(found, FuncOp) else None


def require_func(op: IRDLOperation, name: str, role: str) -> FuncOp:
    func = lookup_func(op, name)
    if func is None:
        raise VerifyException(
            f"{role} '{symbol_name(name)}' named by {op.name} is not a function of this module"
        )
    return func


class AnnotationOp(IRDLOperation):
    """Common verifier: the annotated function exists in the enclosing module."""

    func_name = prop_def(StringAttr)
    traits = traits_def(HasParent(ModuleOp))

    def verify_(self) -> None:
        require_func(self, self.func_name.data, "function")


@irdl_op_definition
class AnnotationKnobOp(AnnotationOp):
    name = "approx.util.annotation.knob"

    def __init__(self, func_name: str):
        super().__init__(properties={"func_name": StringAttr(func_name)})


@irdl_op_definition
class AnnotationConvertToCallOp(AnnotationOp):
    name = "approx.util.annotation.convert_to_call"

    def __init__(self, func_name: str):
        super().__init__(properties={"func_name": StringAttr(func_name)})


@irdl_op_definition
class AnnotationTransformOp(AnnotationOp):
    name = "approx.util.annotation.transform"
    transform_type = prop_def(StringAttr)
    knob_val = prop_def(IntegerAttr.constr(i32))

    def __init__(self, func_name: str, transform_type: str, knob_val: int):
        super().__init__(
            properties={
                "func_name": StringAttr(func_name),
                "transform_type": StringAttr(transform_type),
                "knob_val": IntegerAttr(knob_val, i32),
            }
        )

    def verify_(self) -> None:
        super().verify_()
        verify_transform_type(self.transform_type.data)
        if self.knob_val.value.data < 0:
            raise VerifyException(
                f"knob_val must be >= 0 (0 is exact), got {self.knob_val.value.data}"
            )


@irdl_op_definition
class AnnotationTryOp(AnnotationOp):
    name = "approx.util.annotation.try"
    recover = prop_def(StringAttr)
    checker = prop_def(StringAttr)

    def __init__(self, func_name: str, recover: str, checker: str):
        super().__init__(
            properties={
                "func_name": StringAttr(func_name),
                "recover": StringAttr(recover),
                "checker": StringAttr(checker),
            }
        )

    def verify_(self) -> None:
        super().verify_()
        require_func(self, self.recover.data, "recovery function")
        require_func(self, self.checker.data, "checker function")


@irdl_op_definition
class AnnotationDecisionTreeOp(AnnotationOp):
    name = "approx.util.annotation.decision_tree"
    transform_type = prop_def(StringAttr)
    # Optional, with the defaults of ApproxMLIR's Python runtime: the state is the
    # function's last argument, passed through unchanged (an identity state function).
    state_indices = opt_prop_def(DenseArrayBase.constr(i64))
    state_function = opt_prop_def(StringAttr)
    num_thresholds = prop_def(IntegerAttr.constr(i32))
    thresholds_uppers = prop_def(I32Array)
    thresholds_lowers = prop_def(I32Array)
    decision_values = prop_def(I32Array)
    thresholds = prop_def(I32Array)
    decisions = prop_def(I32Array)

    def verify_(self) -> None:
        verify_decision_annotation(self, verify_ladder, 1)


def verify_decision_annotation(op: Any, verify_decisions: Callable[[Any], None], n_states: int) -> None:
    """The checks of decision_tree and decision_tree_multi, which differ only in how
    the decisions are given: the function, the transform, the decisions, then the
    state function (returning `n_states` i32)."""
    func = require_func(op, op.func_name.data, "function")
    verify_transform_type(op.transform_type.data)
    verify_decisions(op)
    verify_state_function(op, func, n_states)


def state_indices(op: Any, func: FuncOp) -> list[int]:
    """The argument positions of `func` that `op` passes to its state function
    (without `state_indices`: the last argument)."""
    if op.state_indices is None:
        return [len(func.function_type.inputs.data) - 1]
    return list(op.state_indices.get_values())


def verify_state_function(op: Any, func: FuncOp, n_results: int) -> None:
    """`op.state_function` takes the arguments of `func` at `op.state_indices` and
    returns `n_results` i32 (shared by decision_tree and decision_tree_multi);
    without a state function, the one argument selected is the i32 state itself."""
    n_args = len(func.function_type.inputs.data)
    indices = state_indices(op, func)
    for i in indices:
        if not 0 <= i < n_args:
            raise VerifyException(
                f"state index {i} is out of range: '{func.sym_name.data}' has "
                f"{n_args} arguments"
            )
    if op.state_function is None:
        selected = tuple(func.function_type.inputs.data[i] for i in indices)
        if selected != (i32,):
            raise VerifyException(
                "without a state_function the state is the argument at state_indices (default: the "
                f"last), which must be one i32; '{func.sym_name.data}' gives "
                f"({', '.join(map(str, selected))})"
            )
        return
    state_fn = require_func(op, op.state_function.data, "state function")
    want = tuple(func.function_type.inputs.data[i] for i in indices)
    have = tuple(state_fn.function_type.inputs.data)
    if want != have:
        raise VerifyException(
            f"state function '{state_fn.sym_name.data}' takes "
            f"({', '.join(map(str, have))}) but state_indices select "
            f"({', '.join(map(str, want))})"
        )
    outs = tuple(state_fn.function_type.outputs.data)
    if outs != (i32,) * n_results:
        what = "one i32" if n_results == 1 else f"{n_results} i32 (num_features)"
        raise VerifyException(
            f"state function '{state_fn.sym_name.data}' must return {what}, "
            f"returns ({', '.join(map(str, outs))})"
        )
