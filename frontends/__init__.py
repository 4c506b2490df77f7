"""Frontends: Python decorator, LLM / retrieval / tool / torch components.

`Knob` and its settings carry ApproxMLIR's Python names; a decorated function is a
`KnobFunction` (numeric kernels JIT-compiled, orchestration code run as Python
generated from the transformed IR). `components/` holds the answer models, the
retrievers and the tools; `torch_frontend` the torch models. Imports
`approx_dialect`, `passes` and `approx_opt`; never `autotuner` or `examples`.

A pipeline needs one import: `from frontends import Knob, Generate, Prompt, Retrieve,
Tune, OpenAIAnswerModel, Bm25Retriever, ...` (`__all__`): the decorator, the component
declarations, the providers they call (loaded on first use: torch, transformers and
the openai client are imported only by a program that uses them), and the LLMs' machine
policy (`exact_path`, `paying_precisions`: `frontends.components.llm.policy`; the run's
device and engine: `frontends.components.run_settings`)."""

from frontends.components.declare import Embed, Generate, Prompt, Retrieve, RunTool, ToolCall, Tune
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

_PROVIDERS = {
    "frontends.components.llm": ("Answer", "AnswerModel", "CausalLM", "ExtractiveReader", "Fallback", "ModelCascade",
                                 "Gemma3", "OpenAIAnswerModel", "SmolLM2", "exact_path", "paying_precisions"),
    "frontends.components.retrieval": ("Bm25Retriever", "DenseRetriever", "Hits", "MiniLMEncoder"),
    "frontends.components.tools": ("KeywordTriage", "EmbeddingTriage", "Tool", "ToolRegistry"),
}
_LAZY = {name: module for module, names in _PROVIDERS.items() for name in names}

__all__ = ["Cascade", "DecisionTree", "Knob", "KnobConfig", "KnobError", "KnobFunction", "Memoize", "Param",
           "SafetyContract", "StaticTransform", "get_config",
           "Embed", "Generate", "Prompt", "Retrieve", "RunTool", "ToolCall", "Tune", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'frontends' has no attribute {name!r}")
