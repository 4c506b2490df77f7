"""What the lowering passes around: an SSA value with what Python knows about it,
and the outcomes of a statement list (returned values, raised)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Attribute, Block, SSAValue


@dataclass(frozen=True)
class Val:
    """An SSA value with what Python knows about it: `weak` marks Python scalars
    (NumPy's NEP 50 promotion: a Python float does not widen an f32 element) and
    `lo` a known lower bound of an integer (no negative-index fix-up needed)."""

    ssa: SSAValue
    weak: bool = True
    lo: int | None = None

    @property
    def type(self) -> Attribute:
        return self.ssa.type


class Returned:
    def __init__(self, values: list[Val]):
        self.values = values


RAISED = "raised"  # the statement list ends in `raise`


def discard(block: Block) -> None:
    """Erase a block built for a trial lowering (drops its uses of outer values)."""
    for op in reversed(list(block.ops)):
        block.detach_op(op)
        op.erase(safe_erase=False)


class Typed:
    """Only a type (what unify_types reads) while loop types are inferred."""

    def __init__(self, t: Attribute):
        self.type = t
