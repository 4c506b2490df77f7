"""An answer model checking a cheaper model's answer: `Verified(model, candidate)`.

The cheaper model (an extractive reader) proposes a span; the generative `model` writes its
own answer and, from the same reading of the prompt (`generate_scored`), scores the span as
an answer of its own: the mean log-probability per token it gives each (its turn's end
included). The span answers when it scores more than `margin` nats per token below the
model's own answer (a span the model finds about as likely as what it would say, where
the reader is usually right); else the model's answer does.

Why: the two are right on different questions. On the RAG-BM25 questions (BM25 top 3,
`bench/composition_probe.py`, the margin fitted on 100 tuning questions, replayed on 200
held out) the MiniLM reader was right on 0.525, Gemma 3 270M on 0.570 and the verifier on
0.635 (22 gained / 9 lost against Gemma alone), for one extra pass over the span's few
tokens and the reader's own time. A cascade on the reader's confidence reached 0.580."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from frontends.components.llm.base import Answer, AnswerModel, build_prompt, first_line
from frontends.components.llm.causal import sequence_confidence

if TYPE_CHECKING:
    from frontends.components.llm.smollm import SmolLM2

MARGIN = -1.0  # nats per token: fitted on the probe's tuning questions (docs/systems.md)


def mean(values) -> float:
    return sum(values) / len(values) if values else float("-inf")


class Verified(AnswerModel):
    """`model` (a generative model with `generate_scored`, e.g. `SmolLM2`, `Gemma3` or their
    engine builds) verifying `candidate`'s answer; see the module docstring. `hinted`: the
    model reads the candidate's span in its prompt (`build_prompt(..., candidate=span)`:
    adapters trained so, `examples/train_gemma.py prepare --hints`) before answering and scoring it. The op's
    settings reach `model` (its variants, its generation options); `candidate` answers as
    it is. Confidence: the chosen answer's exp(mean log-probability) under `model`."""

    deterministic = True

    def __init__(self, model: SmolLM2, candidate: AnswerModel, margin: float = MARGIN,
                 name: str | None = None, hinted: bool = False):
        self.model, self.candidate, self.margin, self.hinted = model, candidate, float(margin), bool(hinted)
        self.name = name or f"{model.name}_{'reading' if hinted else 'verifying'}_{candidate.name}"
        self.deterministic = bool(model.deterministic and candidate.deterministic)

    @property
    def supports(self) -> frozenset[str]:  # type: ignore[override]
        """The model's settings but free prompts (a verifier answers questions from passages)."""
        return self.model.supports - {"template"}

    def identity(self) -> str:
        """Names its outputs across processes (kept outputs): both models' and the margin."""
        from frontends.components.kept import provider_identity

        return (f"{type(self).__module__}.{type(self).__name__}:{self.margin}:{'hinted:' if self.hinted else ''}"
                f"{provider_identity(self.model)}+{provider_identity(self.candidate)}")

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """The model's tokens: the prompt budgets count what it reads."""
        return self.model.token_spans(text)

    def variant_for(self, settings) -> Verified:
        """The model's variant for `settings`, verifying the same candidate."""
        model = self.model.variant_for(settings)
        return self if model is self.model else Verified(model, self.candidate, self.margin, self.name, self.hinted)

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None, **options) -> Answer:
        proposed = self.candidate.answer(question, contexts)
        span = proposed.text.strip()
        model = self.model
        continuations = [model.continuation_ids(span)] if span else []
        content = build_prompt(question, contexts, span) if self.hinted else model.prompt(question, contexts)
        tokens, logps, prompt, scores = model.generate_scored(content, continuations, max_new_tokens, **options)
        own = first_line(model.tokenizer.decode(tokens, skip_special_tokens=True))
        take_span = bool(scores) and mean(scores[0]) - mean(logps) > self.margin
        chosen = scores[0] if take_span else logps
        used = proposed.tokens_used + prompt + len(tokens) + sum(len(c) for c in continuations)
        ans = Answer(span if take_span else own, sequence_confidence(chosen), used, 0.0, self.name,
                     new_tokens=len(tokens), stages=((proposed.model, proposed.confidence),
                                                    (model.name, sequence_confidence(logps))))
        return replace(ans, error=proposed.error)
