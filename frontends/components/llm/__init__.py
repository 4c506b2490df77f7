"""Answer models: one interface, `AnswerModel.answer(question, contexts,
max_new_tokens) -> Answer`, over local torch readers, transformers causal LMs and
OpenAI-compatible endpoints; cascades and fallbacks of them. Programs
call them through `component.generate` ops (`frontends.components.declare.Generate`),
which is where their knobs live. The machine policy of the LLMs (`policy`: `exact_path`,
`paying_precisions`) says which path and precision values pay on this machine. Heavy
imports (torch, transformers, openai) happen when a backend is used, not when this
package is imported."""

from frontends.components.llm.base import Answer, AnswerModel, build_prompt, parse_prompt
from frontends.components.llm.context_cuts import limit_contexts, select_sentences

__all__ = [
    "Answer", "AnswerModel", "build_prompt", "limit_contexts", "select_sentences", "parse_prompt",
    "ModelCascade", "Fallback", "CausalLM", "ExtractiveReader", "OpenAIAnswerModel", "LocalServer",
    "SmolLM2", "Gemma3", "exact_path", "paying_precisions",
]

_LAZY = {
    "ModelCascade": "escalation", "Fallback": "escalation", "CausalLM": "causal",
    "ExtractiveReader": "reader", "OpenAIAnswerModel": "openai_backend", "LocalServer": "serve",
    "SmolLM2": "smollm", "Gemma3": "gemma", "exact_path": "policy", "paying_precisions": "policy",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"frontends.components.llm.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'frontends.components.llm' has no attribute {name!r}")
