"""The core `approx` ops: knob, decide, try, transform, yield.

Names, operands, properties and regions follow ApproxMLIR (uiuc-arc/approxMLIR,
`approxOps.td`), so IR written for it parses here unchanged. Verifiers check what
the passes later rely on and say what is wrong in words a user can act on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    i1,
    i32,
)
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException

from approx_dialect.ladder import verify_ladder
from approx_dialect.transform_types import TRANSFORM_TYPES, known_transform_names

I32Array = DenseArrayBase.constr(i32)


def i32_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, list(values))


def verify_transform_type(name: str) -> None:
    if name not in TRANSFORM_TYPES:
        raise VerifyException(
            f"unknown transform_type '{name}' (known: {known_transform_names()})"
        )


def _types(values) -> str:
    return "(" + ", ".join(str(v.type) for v in values) + ")"


def verify_yield_types(region: Region, expected: Sequence[Attribute], what: str) -> None:
    """The region is one block that ends in approx.yield of `expected` types."""
    if not region.blocks:
        raise VerifyException(f"{what} region is empty; it must end in approx.yield")
    if len(region.blocks) != 1:
        raise VerifyException(f"{what} region must have exactly one block")
    last = region.block.last_op
    if not isinstance(last, YieldOp):
        raise VerifyException(f"{what} region must end in approx.yield")
    got = tuple(v.type for v in last.operands)
    if got != tuple(expected):
        raise VerifyException(
            f"{what} region yields {_types(last.operands)} but "
            f"({', '.join(str(t) for t in expected)}) is expected"
        )


def verify_block_args(region: Region, operands: Sequence[SSAValue], what: str) -> None:
    args = region.block.args
    if tuple(a.type for a in args) != tuple(o.type for o in operands):
        raise VerifyException(
            f"{what} region takes {_types(args)} but the op passes {_types(operands)}"
        )


def verify_decide(op, verify_decisions: Callable[[Any], None], n_states: int, state: str) -> None:
    """The checks of decide and decide_tree, which differ only in how the decisions
    are given: the transform, the decisions, then the state region (`state` names it
    in errors), which takes the op's state operands and yields `n_states` i32."""
    verify_transform_type(op.transform_type.data)
    verify_decisions(op)
    verify_block_args(op.state, op.state_args, f"{op.name} state")
    verify_yield_types(op.state, [i32] * n_states, state)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of knob bodies and of the state / check regions."""

    name = "approx.yield"
    results_ = var_operand_def()
    assembly_format = "attr-dict ($results_^ `:` type($results_))?"
    traits = traits_def(IsTerminator())

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class KnobOp(IRDLOperation):
    """Scope of one approximation: its body is the exact code; management ops
    (decide, try, transform) inside it say how to approximate it. Inlined by
    finalize-approx."""

    name = "approx.knob"
    args = var_operand_def()
    id = prop_def(IntegerAttr.constr(i32))
    rf = prop_def(IntegerAttr.constr(i32))
    QoS_in = prop_def(I32Array)
    QoS_out = prop_def(I32Array)
    results_ = var_result_def()
    body = region_def()

    def __init__(
        self,
        args: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        knob_id: int = 0,
        rf: int = 0,
    ):
        super().__init__(
            operands=[args],
            result_types=[result_types],
            regions=[body],
            properties={
                "id": IntegerAttr(knob_id, i32),
                "rf": IntegerAttr(rf, i32),
                "QoS_in": i32_array([]),
                "QoS_out": i32_array([]),
            },
        )

    def verify_(self) -> None:
        verify_yield_types(self.body, self.result_types, "approx.knob body")


@irdl_op_definition
class DecideOp(IRDLOperation):
    """Dynamic approximation: the state region computes an i32; the index of the
    decision taken is the number of thresholds t with state >= t."""

    name = "approx.decide"
    state_args = var_operand_def()
    num_thresholds = prop_def(IntegerAttr.constr(i32))
    thresholds_uppers = prop_def(I32Array)
    thresholds_lowers = prop_def(I32Array)
    decision_values = prop_def(I32Array)
    thresholds = prop_def(I32Array)
    decisions = prop_def(I32Array)
    transform_type = prop_def(StringAttr)
    state = region_def("single_block")
    traits = traits_def(HasParent(KnobOp))

    def __init__(
        self,
        state_args: Sequence[SSAValue],
        state: Region,
        *,
        transform_type: str,
        thresholds: Sequence[int],
        decisions: Sequence[int],
        thresholds_lowers: Sequence[int],
        thresholds_uppers: Sequence[int],
        decision_values: Sequence[int],
    ):
        super().__init__(
            operands=[state_args],
            regions=[state],
            properties={
                "num_thresholds": IntegerAttr(len(thresholds), i32),
                "thresholds_uppers": i32_array(thresholds_uppers),
                "thresholds_lowers": i32_array(thresholds_lowers),
                "decision_values": i32_array(decision_values),
                "thresholds": i32_array(thresholds),
                "decisions": i32_array(decisions),
                "transform_type": StringAttr(transform_type),
            },
        )

    def verify_(self) -> None:
        verify_decide(self, verify_ladder, 1, "approx.decide state")


@irdl_op_definition
class TryOp(IRDLOperation):
    """Try-check-recover: the check region yields an i1 over the knob's results;
    when it is false the recovery function computes them instead."""

    name = "approx.try"
    recovery_args = var_operand_def()
    recover = prop_def(StringAttr)
    check = region_def("single_block")
    traits = traits_def(HasParent(KnobOp))

    def __init__(self, recovery_args: Sequence[SSAValue], recover: str, check: Region):
        super().__init__(
            operands=[recovery_args],
            regions=[check],
            properties={"recover": StringAttr(recover)},
        )

    def verify_(self) -> None:
        if not self.recover.data.lstrip("@"):
            raise VerifyException("approx.try needs a non-empty 'recover' function name")
        verify_block_args(self.check, self.recovery_args, "approx.try check")
        verify_yield_types(self.check, [i1], "approx.try check")


@irdl_op_definition
class TransformOp(IRDLOperation):
    """Marks the region it stands in for one transformation at one knob value
    (0 = exact); applied and erased by transform-approx."""

    name = "approx.transform"
    transform_type = prop_def(StringAttr)
    knob_val = prop_def(IntegerAttr.constr(i32))

    def __init__(self, transform_type: str, knob_val: int):
        super().__init__(
            properties={
                "transform_type": StringAttr(transform_type),
                "knob_val": IntegerAttr(knob_val, i32),
            }
        )

    def verify_(self) -> None:
        verify_transform_type(self.transform_type.data)
        if self.knob_val.value.data < 0:
            raise VerifyException(
                f"knob_val must be >= 0 (0 is exact), got {self.knob_val.value.data}"
            )
