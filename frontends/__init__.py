"""Frontends: Python decorator, LLM / retrieval / tool / torch components.

`Knob` and its settings carry ApproxMLIR's Python names; a decorated function is a
`KnobFunction` (numeric kernels JIT-compiled, orchestration code run as Python
generated from the transformed IR). `components/` holds the answer models, the
retrievers and the tools; `torch_frontend` the torch models. Imports
`approx_dialect`, `passes` and `approx_opt`; never `autotuner` or `examples`."""

from frontends.decorated import KnobFunction
from frontends.knob import Knob, get_config
from frontends.knob_config import (
    Cascade,
    DecisionTree,
    KnobConfig,
    KnobError,
    Memoize,
    Param,
    SafetyContract,
    StaticTransform,
)

__all__ = ["Cascade", "DecisionTree", "Knob", "KnobConfig", "KnobError", "KnobFunction", "Memoize", "Param",
           "SafetyContract", "StaticTransform", "get_config"]
