"""The `approx` dialect: ops and annotations in ApproxMLIR's generic form, defined
once in xDSL and exported to upstream MLIR as IRDL (see `irdl_export`).

Holds the ops and their verifiers (`ops`, `annotations`, `tree`, `cascade`, `param`,
`component`, `pyobj`), the table of transform types (`transform_types`; `docs` writes
it out as docs/transformations.md), reading
and writing IR with xDSL (`context`: parse with locations, verify, print; the
faster parse of large inputs is `approx_opt.parsing`), the toolchain's one error
type (`diagnostics`), and the fixes to xDSL itself (`xdsl_compat`). Imports only
xDSL, numpy and the upstream MLIR bindings: nothing of `passes`, `approx_opt`,
`frontends` or `autotuner` (tests/test_layers.py)."""

from xdsl.ir import Dialect

from approx_dialect.annotations import (
    AnnotationConvertToCallOp,
    AnnotationDecisionTreeOp,
    AnnotationKnobOp,
    AnnotationTransformOp,
    AnnotationTryOp,
    symbol_name,
)
from approx_dialect.cascade import AnnotationCascadeOp
from approx_dialect.component_knobs import AnnotationComponentOp
from approx_dialect.ladder import decision_index
from approx_dialect.ops import DecideOp, KnobOp, TransformOp, TryOp, YieldOp
from approx_dialect.param import AnnotationParamOp, ParamOp
from approx_dialect.transform_types import TRANSFORM_TYPES
from approx_dialect.tree import AnnotationDecisionTreeMultiOp, DecideTreeOp, tree_decision

Approx = Dialect(
    "approx",
    [
        KnobOp,
        DecideOp,
        DecideTreeOp,
        TryOp,
        TransformOp,
        YieldOp,
        ParamOp,
        AnnotationKnobOp,
        AnnotationDecisionTreeOp,
        AnnotationDecisionTreeMultiOp,
        AnnotationTransformOp,
        AnnotationTryOp,
        AnnotationConvertToCallOp,
        AnnotationParamOp,
        AnnotationCascadeOp,
        AnnotationComponentOp,
    ],
    [],
)

__all__ = [
    "Approx",
    "AnnotationCascadeOp",
    "AnnotationComponentOp",
    "AnnotationConvertToCallOp",
    "AnnotationDecisionTreeMultiOp",
    "AnnotationDecisionTreeOp",
    "AnnotationKnobOp",
    "AnnotationParamOp",
    "AnnotationTransformOp",
    "AnnotationTryOp",
    "DecideOp",
    "DecideTreeOp",
    "KnobOp",
    "ParamOp",
    "TRANSFORM_TYPES",
    "TransformOp",
    "TryOp",
    "YieldOp",
    "decision_index",
    "tree_decision",
    "symbol_name",
]
