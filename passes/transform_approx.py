"""transform-approx: apply each `approx.transform` to the region it stands in."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from approx_dialect import TransformOp
from approx_dialect.param import ParamOp
from passes.ir_utils import ModuleSymbols, ops_of
from passes.transformations import REWRITES, component_ops


@dataclass(frozen=True)
class TransformApproxPass(ModulePass):
    """Rewrite the region of every `approx.transform` by its transform_type.

    `loop_perforate`: step of the first scf.for times k. `func_substitute`: the
    call to `__internal_f` becomes a call to `approx_f_<k>`. `task_skipping`: of
    the first scf.if/index_switch chain keep branch k (n+1 skips all). Knob 0
    leaves the region exact. The transform ops are erased. Component knobs
    (`approx.util.annotation.component`) rewrite their component ops' attributes
    (`passes/transformations/component_ops.py`) and are erased; a decided one is
    rewritten in each case of its function's decision instead.
    """

    name = "transform-approx"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        symbols = ModuleSymbols(op)
        for transform in ops_of(op, TransformOp):
            decided = component_ops.decided_by(transform)
            if decided:
                component_ops.apply_decided(transform, decided)
            if not decided or _has_params(transform):  # the function's own `Param` follows the same decision
                REWRITES[transform.transform_type.data](transform, symbols)
            transform.detach()
            transform.erase()
        component_ops.apply_all(op)


def _has_params(transform: TransformOp) -> bool:
    """The function's own `approx.param` ops in this case of a decision: it sets them too."""
    return transform.transform_type.data == "param" and any(
        isinstance(op, ParamOp) for op in transform.parent_region().walk())
