"""The `approx` dialect: ops and annotations in ApproxMLIR's generic form, defined
once in xDSL and exported to upstream MLIR as IRDL (see `irdl_export`)."""

from xdsl.ir import Dialect

from approx_dialect.annotations import (
    AnnotationConvertToCallOp,
    AnnotationDecisionTreeOp,
    AnnotationKnobOp,
    AnnotationTransformOp,
    AnnotationTryOp,
    symbol_name,
)
from approx_dialect.ladder import decision_index
from approx_dialect.ops import DecideOp, KnobOp, TransformOp, TryOp, YieldOp
from approx_dialect.transform_types import TRANSFORM_TYPES

Approx = Dialect(
    "approx",
    [
        KnobOp,
        DecideOp,
        TryOp,
        TransformOp,
        YieldOp,
        AnnotationKnobOp,
        AnnotationDecisionTreeOp,
        AnnotationTransformOp,
        AnnotationTryOp,
        AnnotationConvertToCallOp,
    ],
    [],
)

__all__ = [
    "Approx",
    "AnnotationConvertToCallOp",
    "AnnotationDecisionTreeOp",
    "AnnotationKnobOp",
    "AnnotationTransformOp",
    "AnnotationTryOp",
    "DecideOp",
    "KnobOp",
    "TRANSFORM_TYPES",
    "TransformOp",
    "TryOp",
    "YieldOp",
    "decision_index",
    "symbol_name",
]
