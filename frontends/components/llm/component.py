"""The answer-model component with its knobs: a ladder of models (cheapest
first, the exact model last) plus max new tokens, context length and precision.

Knobs (each exact at 0; see knobs.py for the shared meanings):
- `model`: `cascade` when thresholds are given (ladder.py's Cascade over the
  ladder), else `func_substitute` (k >= 1 answers with ladder[k-1] alone);
- `max_new_tokens`, `passages`, `context_chars`, `sentences`: `param` over the
  given lists (k = 0 keeps the caller's value: the call's max_new_tokens, all
  passages, whole passages; `sentences` keeps the n sentences of each passage
  that share most words with the question, `base.select_sentences`);
- `precision`: `precision_reduce`, k computes local torch models in
  PRECISIONS[k] (1 = bfloat16, 2 = float16); HTTP endpoints are unaffected;
- `layers`: `param` early exit, k >= 1 runs generative models with trained
  exits (smollm.py) on their first values[k-1] layers; other models are unaffected.
Only knobs with something to choose from are listed."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import PRECISIONS, Answer, AnswerModel, limit_contexts, select_sentences
from frontends.components.llm.knobs import Knob, Knobbed, param_value
from frontends.components.llm.ladder import Cascade


class AnswerComponent(Knobbed, AnswerModel):
    def __init__(self, ladder: Sequence[AnswerModel], *, name: str = "answer",
                 thresholds: Sequence[float] = (), max_new_tokens: Sequence[int] = (),
                 passages: Sequence[int] = (), context_chars: Sequence[int] = (),
                 sentences: Sequence[int] = (), precision: bool = False, layers: Sequence[int] = (),
                 confidence: Callable[[Answer], float | None] | None = None):
        if not ladder:
            raise ApproxError("an answer component needs at least one model (the exact one, last)", where=name)
        self.ladder, self.name = list(ladder), name
        self.thresholds = [float(t) for t in thresholds]
        self.max_new_tokens_values, self.passages_values = list(max_new_tokens), list(passages)
        self.context_chars_values, self.precision = list(context_chars), precision
        self.sentences_values, self.layers_values = list(sentences), list(layers)
        self.confidence = confidence
        self._knob_values = {}

    def knob_table(self) -> list[Knob]:
        table, v = [], len(self.ladder) - 1
        if v and self.thresholds:
            table.append(Knob("model", "cascade", tuple(range(v * len(self.thresholds) + 1)),
                              "cascade over the ladder: start variant and acceptance threshold"))
        elif v:
            table.append(Knob("model", "func_substitute", tuple(range(v + 1)),
                              "k >= 1 answers with ladder[k-1] instead of the exact (last) model"))
        for knob, values, meaning in (("max_new_tokens", self.max_new_tokens_values, "tokens the model may produce"),
                                      ("passages", self.passages_values, "first n passages"),
                                      ("context_chars", self.context_chars_values, "characters kept per passage"),
                                      ("sentences", self.sentences_values,
                                       "sentences kept per passage (most words shared with the question)"),
                                      ("layers", self.layers_values, "early exit: decoder layers the LLM runs")):
            if values:
                table.append(Knob(knob, "param", tuple(range(len(values) + 1)), meaning))
        if self.precision:
            table.append(Knob("precision", "precision_reduce", tuple(range(len(PRECISIONS))),
                              "local torch models compute in " + "/".join(PRECISIONS)))
        return table

    def model_for_call(self) -> AnswerModel:
        """The model (or cascade) the current knob values answer with."""
        ladder = self.ladder
        if self.knob("precision"):
            ladder = [m.with_precision(PRECISIONS[self.knob("precision")]) for m in ladder]
        if self.knob("layers"):
            ladder = [m.with_layers(self.layers_values[self.knob("layers") - 1]) for m in ladder]
        k = self.knob("model")
        if k == 0:
            return ladder[-1]
        if self.thresholds:
            return Cascade(ladder[:-1], ladder[-1], self.thresholds, k, self.confidence)
        return ladder[k - 1]

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None) -> Answer:
        contexts = select_sentences(question, contexts,
                                    param_value(self.knob("sentences"), self.sentences_values, None))
        contexts = limit_contexts(
            contexts,
            param_value(self.knob("passages"), self.passages_values, None),
            param_value(self.knob("context_chars"), self.context_chars_values, None),
        )
        n = param_value(self.knob("max_new_tokens"), self.max_new_tokens_values, max_new_tokens)
        return self.model_for_call().answer(question, contexts, n)

    def __call__(self, question: str, contexts: Sequence[str], max_new_tokens: int | None = None) -> Answer:
        return self.answer(question, contexts, max_new_tokens)
