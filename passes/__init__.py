"""Rewrite passes of the approx pipeline, in pipeline order, and the knob model.

`APPROX_PIPELINE` is ApproxMLIR's sequence; `approx-opt -p approx-pipeline` runs it.
One file per pass, one per transformation (`passes/transformations/`); `knobs`
reads a program's knobs from its annotations (`KnobSpec`, `DEFAULT_VALUES`) and
applies a configuration to them before the pipeline runs. Imports only
`approx_dialect` and xDSL: nothing of `approx_opt`, `frontends` or `autotuner`
(tests/test_layers.py).
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from passes.config_approx import ConfigApproxPass
from passes.emit_approx import EmitApproxPass
from passes.emit_management import EmitManagementPass
from passes.finalize_approx import FinalizeApproxPass
from passes.pre_emit_transform import PreEmitTransformPass
from passes.transform_approx import TransformApproxPass

PIPELINE_PASSES: tuple[type[ModulePass], ...] = (
    PreEmitTransformPass,
    EmitApproxPass,
    EmitManagementPass,
    ConfigApproxPass,
    TransformApproxPass,
    FinalizeApproxPass,
)

ALL_PASSES: dict[str, type[ModulePass]] = {p.name: p for p in PIPELINE_PASSES}

# Upstream MLIR's generic passes, as xDSL provides them, usable in `-p` pipelines.
GENERIC_PASSES: dict[str, type[ModulePass]] = {
    p.name: p for p in (CanonicalizePass, CommonSubexpressionElimination, DeadCodeElimination)
}

APPROX_PIPELINE_NAME = "approx-pipeline"
APPROX_PIPELINE = ",".join(p.name for p in PIPELINE_PASSES)


@dataclass(frozen=True)
class ApproxPipelinePass(ModulePass):
    """ApproxMLIR's whole pipeline as one pass, for stock `xdsl-opt -p approx-pipeline`
    (approx-opt expands the name into the passes, to verify after each)."""

    name = APPROX_PIPELINE_NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pass_cls in PIPELINE_PASSES:
            pass_cls().apply(ctx, op)


def summary(pass_cls: type[ModulePass]) -> str:
    """The first paragraph of the pass's docstring, on one line."""
    first = (pass_cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in first.splitlines())


def description(pass_cls: type[ModulePass]) -> str:
    """The docstring after its first paragraph."""
    parts = (pass_cls.__doc__ or "").strip().split("\n\n", 1)
    return parts[1].strip() if len(parts) > 1 else ""
