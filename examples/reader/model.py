"""The reader network lives with the answer-model component
(`frontends.components.llm.span_model`); training uses the same class, so the files
it writes are exactly what the component loads."""

from frontends.components.llm.span_model import SpanModel as Reader
from frontends.components.llm.span_model import load_span_model
from frontends.components.llm.span_model import minilm_dir as default_model_dir

__all__ = ["Reader", "default_model_dir", "load_span_model"]
