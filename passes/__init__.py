"""Rewrite passes of the approx pipeline, in pipeline order.

`APPROX_PIPELINE` is ApproxMLIR's sequence; `approx-opt -p approx-pipeline` runs it.
"""

from xdsl.passes import ModulePass

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

APPROX_PIPELINE_NAME = "approx-pipeline"
APPROX_PIPELINE = ",".join(p.name for p in PIPELINE_PASSES)


def summary(pass_cls: type[ModulePass]) -> str:
    return (pass_cls.__doc__ or "").strip().splitlines()[0]


def description(pass_cls: type[ModulePass]) -> str:
    return "\n".join((pass_cls.__doc__ or "").strip().splitlines()[2:]).strip()
