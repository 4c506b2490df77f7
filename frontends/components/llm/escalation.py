"""Answer models made of other answer models: the confidence cascade and the fallback.

`ModelCascade` has exactly the semantics of the `cascade` transformation
(docs/cascade.md): variants 1..V (cheapest first), then the exact model; knob k = 0
asks the exact model only; k in 1..V*T starts at variant s = (k-1) // T + 1 and
accepts a variant's answer when confidence >= thresholds[(k-1) % T] (a confidence
equal to the threshold is accepted), else asks the next one, and after variant V
the exact model. Which models are asked, in which order, with which threshold is
`approx_dialect.cascade.escalation`, the function the component cascade and the
function cascade run too. Thresholds here are confidences in [0, 1] (the IR of a
function cascade scales them to parts per million, an i32).

It is not the component cascade (`Tune.cascade` on a `Generate`, whose escalation
the pass writes into the program's IR as an `scf.if` chain): that one is a knob the
autotuner tunes and decision trees set per input, each stage a component call timed,
cached and reused on its own, and a failing stage fails the configuration (a FAIL
trial saying why). `ModelCascade` is one answer model with its knob fixed when it is
built, for reliability: a variant that fails (an ApproxError: unreachable, timeout,
garbage) counts as not confident, the next model answers and `error` says why (only
a failure of the exact model is the cascade's error); the answer records every stage
asked (`stages`) and counts all their tokens; `confidence=` may score answers
another way. Use `Tune.cascade` to tune a program's escalation; `ModelCascade` to
hand a program (or a `Generate`) one model that escalates past failures.

`Fallback` is SafetyContract for answer models: the primary answers unless it
fails (an ApproxError: unreachable endpoint, timeout) or a checker rejects its
answer; then the recovery model answers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from approx_dialect.cascade import escalation
from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import GENERATION, Answer, AnswerModel


def _confidence_of(answer: Answer) -> float | None:
    return answer.confidence


class ModelCascade(AnswerModel):
    def __init__(self, variants: Sequence[AnswerModel], exact: AnswerModel, thresholds: Sequence[float],
                 knob: int = 0, confidence: Callable[[Answer], float | None] | None = None,
                 name: str | None = None):
        if not variants or not thresholds:
            raise ApproxError("a cascade needs at least one variant and one threshold", where="ModelCascade")
        limit = len(variants) * len(thresholds)
        if not 0 <= knob <= limit:
            raise ApproxError(f"cascade knob {knob} is outside 0..{limit} "
                              f"({len(variants)} variants x {len(thresholds)} thresholds)", where="ModelCascade")
        self.variants, self.exact = list(variants), exact
        self.thresholds, self.knob = [float(t) for t in thresholds], knob
        self.confidence = confidence or _confidence_of
        self.name = name or "cascade(" + ", ".join(m.name for m in [*self.variants, exact]) + ")"

    @property
    def supports(self) -> frozenset[str]:  # type: ignore[override]
        """The generation options every model of the cascade takes (it builds no variants)."""
        return GENERATION.intersection(*(m.supports for m in [*self.variants, self.exact]))

    def plan(self) -> tuple[list[AnswerModel], float | None]:
        """(models in the order they may be asked, acceptance threshold)."""
        chain = escalation(self.knob, self.variants, self.thresholds)
        if chain is None:
            return [self.exact], None
        cheaper, threshold = chain
        return [*cheaper, self.exact], threshold

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None, **options) -> Answer:
        models, threshold = self.plan()
        stages, tokens, errors = [], 0, []
        for i, model in enumerate(models):
            last = i == len(models) - 1
            try:
                ans = model.answer(question, contexts, max_new_tokens, **options)
            except ApproxError as err:  # a failed variant is not confident: ask the next (last: the exact model)
                if last:
                    raise
                stages.append((model.name, None))
                errors.append(str(err).splitlines()[0])
                continue
            tokens += ans.tokens_used
            conf = None if last else self.confidence(ans)
            stages.append((ans.model, ans.confidence if last else conf))
            if last:
                break
            if conf is None:
                raise ApproxError(f"cascade: '{model.name}' gives no confidence to compare with the threshold "
                                  "(pass confidence=...)", where=self.name)
            if conf >= threshold:
                break
        return replace(ans, tokens_used=tokens, stages=tuple(stages), error="; ".join(errors) or ans.error)


class Fallback(AnswerModel):
    """`primary` unless it raises one of `errors` or `checker(answer)` is False;
    then `recover`. The answer's `error` says why the recovery answered."""

    def __init__(self, primary: AnswerModel, recover: AnswerModel,
                 checker: Callable[[Answer], bool] | None = None,
                 errors: tuple[type[BaseException], ...] = (ApproxError,), name: str | None = None):
        self.primary, self.recover, self.checker, self.errors = primary, recover, checker, errors
        self.name = name or f"{primary.name}|{recover.name}"

    @property
    def supports(self) -> frozenset[str]:  # type: ignore[override]
        """The settings both models apply."""
        return self.primary.supports & self.recover.supports

    def variant_for(self, settings) -> Fallback:
        """Both models' variants for `settings` (each keeps its own, so this is cheap)."""
        if not settings.applied("variant"):
            return self
        return Fallback(self.primary.variant_for(settings), self.recover.variant_for(settings),
                        self.checker, self.errors, self.name)

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None, **options) -> Answer:
        return self._either(lambda model: model.answer(question, contexts, max_new_tokens, **options))

    def complete(self, prompt: str, outputs=("text",), max_new_tokens: int | None = None, **options) -> Answer:
        """A prompt-level call: the primary's completion, else the recovery's."""
        if "template" not in self.supports:
            raise ApproxError(f"'{self.name}' cannot take a free prompt", where=self.name)
        self.check_options(options)
        return self._either(lambda model: model.complete(prompt, outputs, max_new_tokens, **options))

    def _either(self, ask: Callable[[AnswerModel], Answer]) -> Answer:
        try:
            first = ask(self.primary)
        except self.errors as err:
            why, stage, tokens = str(err).splitlines()[0], (self.primary.name, None), 0
        else:
            if self.checker is None or self.checker(first):
                return first
            why, stage, tokens = f"checker rejected the answer of {first.model}", (first.model, first.confidence), \
                first.tokens_used
        ans = ask(self.recover)
        return replace(ans, tokens_used=tokens + ans.tokens_used, stages=(stage, *ans.stages), error=why)
