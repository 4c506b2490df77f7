"""What every answer model shares: the `Answer` it returns, the `AnswerModel`
interface (`answer(question, contexts, max_new_tokens, **options)`;
`answer_with(question, contexts, settings)` for a `component.generate` op), the
prompt format that generative backends and the OpenAI-compatible server agree on
(the cuts of the contexts before a model reads them are in `context_cuts`).

Generation options (`GENERATION`: the generate op's declared per-call settings,
`max_new_tokens` aside) reach a model as keywords, `answer(..., **options)`, as
DSPy's `Predict(signature, **config)` and transformers' `GenerationConfig` take
them: a backend passes on those it `supports` (transformers models by name to
their generation config, an endpoint in its request), so a new option needs no
new model variant and no new parameter anywhere in between. A model that decodes
greedily lists no sampling or search option (`NOT_GREEDY`) in its `supports`, so a
declaration setting one for it is refused, never run greedily as if honoured; a call
whose options draw its tokens at random (`drawing`) is never answered from kept outputs.

Why one interface: the QA systems swap a local reader, a `transformers` causal LM
and an HTTP endpoint for each other (cascades, fallbacks) without
knowing which is which."""

from __future__ import annotations

import numbers
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from approx_dialect.component import GenerateOp
from approx_dialect.diagnostics import ApproxError
from approx_dialect.op_settings import named
from frontends.components.llm.prompting import first_line, read_fields

GENERATION = frozenset(named(GenerateOp.SETTINGS, "call"))
"""The generation options of a generate op (its declared per-call settings)."""

DRAWS = {
    "do_sample": bool, "temperature": lambda v: v > 0, "top_k": lambda v: v > 1, "top_p": lambda v: v < 1,
    "typical_p": lambda v: v < 1, "min_p": lambda v: v > 0, "top_h": lambda v: v > 0,
    "epsilon_cutoff": lambda v: v > 0, "eta_cutoff": lambda v: v > 0,
}
"""The sampling options (transformers' and OpenAI's names), each with whether its value has
the model draw its tokens at random rather than take the argmax (temperature 0 is greedy)."""

NOT_GREEDY = frozenset(DRAWS) | {"num_beams", "num_beam_groups", "diversity_penalty", "length_penalty",
                                 "early_stopping", "penalty_alpha", "dola_layers", "num_return_sequences"}
"""What a greedy decoding cannot honour: sampling, and searches other than greedy (beams,
contrastive, DoLa, several answers). A greedy model's `supports` lists none of them."""

GREEDY = "its decoding is greedy: no sampling, no beam search"
"""Why a greedy model refuses an option of `NOT_GREEDY` (the end of the refusal's line)."""


def drawing(options: dict) -> tuple[str, ...]:
    """The options among `options` whose values draw tokens at random (`DRAWS`): a call
    under them may answer otherwise the next time, so no kept output stands for it."""
    return tuple(k for k, v in sorted(options.items()) if k in DRAWS and v is not None and DRAWS[k](v))


@dataclass(frozen=True)
class Answer:
    """One answer. `confidence` is in [0, 1] (None where a backend gives none);
    `tokens_used` = prompt/input tokens + generated tokens; `new_tokens` = tokens
    the decoding loop produced (answer tokens for an extractive reader);
    `stages` = (model name, confidence) of every model asked, in order;
    `error` = why a fallback answered (the failed model's error line);
    `fields` = (name, value) of a prompt-level call's outputs, each also an
    attribute (`rewrite(q).query`)."""

    text: str
    confidence: float | None
    tokens_used: int
    seconds: float
    model: str
    new_tokens: int = 0
    stages: tuple[tuple[str, float | None], ...] = field(default=())
    error: str | None = None
    fields: tuple[tuple[str, str], ...] = field(default=())

    @property
    def score(self) -> float | None:
        return self.confidence

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "fields":
            raise AttributeError(name)
        for key, value in self.fields:
            if key == name:
                return value
        raise AttributeError(f"the answer has no field '{name}' (fields: {[k for k, _ in self.fields]})")


def fallback_answer(value, outputs=()) -> Answer:
    """A skipped generate call's answer: `value` (as text) is its text and each of its
    outputs; no model ran (confidence None, nothing spent)."""
    text = "" if value is None else str(value)
    return Answer(text, None, 0, 0.0, "fallback", fields=tuple((o, text) for o in outputs))


class AnswerModel(ABC):
    """Answers a question from passages. Subclasses implement `_answer`; `answer`
    times it and records the stage. `supports`: the settings of a generate op
    (`GenerateSettings.PROVIDER_SETTINGS`) it applies; models with precision or
    early-exit variants mix in `frontends.components.variants.Variants`."""

    name: str = "model"
    supports: frozenset[str] = frozenset({"max_new_tokens"})
    deterministic: bool = False  # the same call gives the same answer (greedy, in process): its outputs may be
    # kept, those of a call whose options draw at random (`drawing`) aside

    def answer_with(self, question: str, contexts: Sequence, settings) -> Answer:
        """The answer under a generate op's settings (contexts already cut): the
        variant its variant settings select, with its generation options."""
        return self.variant_for(settings).answer(question, contexts, **settings.generation())

    def complete_with(self, prompt: str, outputs, settings) -> Answer:
        """A prompt-level call under a generate op's settings: the variant they select
        completes `prompt` with their generation options; `outputs` are read from it."""
        return self.variant_for(settings).complete(prompt, outputs, **settings.generation())

    def complete(self, prompt: str, outputs=("text",), max_new_tokens: int | None = None, **options) -> Answer:
        """The model's completion of a free prompt, timed; its text and fields are the
        outputs read from it (`prompting.read_fields`). Only models whose `supports`
        has "template" take a free prompt (declarations of others are refused)."""
        if "template" not in self.supports:
            raise ApproxError(f"'{self.name}' cannot take a free prompt", where=self.name)
        self.check_options(options)
        start = time.perf_counter()
        try:
            ans = self._complete(prompt, max_new_tokens, one_line=len(outputs) == 1, **options)
        except ApproxError:
            raise
        except Exception as err:  # a backend's bug or crash: one line naming the model
            raise ApproxError(f"model '{self.name}' failed: {type(err).__name__}: {err}", where=self.name) from None
        check_answer(ans, self.name)
        fields = read_fields(ans.text, list(outputs))
        text = fields[outputs[0]] if len(outputs) == 1 else ans.text.strip()
        return replace(ans, text=text, fields=tuple(fields.items()), seconds=time.perf_counter() - start,
                       stages=ans.stages or ((ans.model, ans.confidence),))

    def _complete(self, prompt: str, max_new_tokens: int | None, one_line: bool, **options) -> Answer:
        """What the model writes after `prompt` (models that take free prompts override it;
        `one_line`: only the first line is read, so decoding may stop at its end)."""
        raise ApproxError(f"'{self.name}' cannot take a free prompt", where=self.name)

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """The character span of each token of `text`, for the context's token budgets:
        words here (`context_cuts.word_spans`); a model with its tokenizer at hand counts
        its own tokens."""
        from frontends.components.llm.context_cuts import word_spans

        return word_spans(text)

    def variant_for(self, settings) -> AnswerModel:
        """The model itself: it has no variants (see `Variants` for models that do)."""
        if settings.applied("variant"):
            raise ApproxError(f"'{self.name}' has no variants ({', '.join(settings.applied('variant'))})",
                              where=self.name)
        return self

    def check_options(self, options: dict) -> None:
        """An ApproxError for a generation option this model does not pass on (not in its `supports`)."""
        refused = sorted(set(options) - (self.supports & GENERATION))
        if refused:
            takes = ", ".join(sorted(self.supports & GENERATION)) or "none"
            why = f"; {GREEDY}" if refused[0] in NOT_GREEDY else ""
            raise ApproxError(f"'{self.name}' does not take the generation option '{refused[0]}' "
                              f"(it takes {takes}{why})", where=self.name)

    def answer(self, question: str, contexts: Sequence[str], max_new_tokens: int | None = None,
               **options) -> Answer:
        """The answer, timed, with at most `max_new_tokens` new tokens and the generation
        `options` (keywords: those of `GENERATION` the model `supports`)."""
        if max_new_tokens is not None and max_new_tokens < 1:
            raise ApproxError(f"max_new_tokens must be >= 1, got {max_new_tokens}", where=self.name)
        self.check_options(options)
        start = time.perf_counter()
        try:
            ans = self._answer(question, list(contexts), max_new_tokens, **options)
        except ApproxError:
            raise
        except Exception as err:  # a backend's bug or crash: one line naming the model, for Fallback/ModelCascade
            raise ApproxError(f"model '{self.name}' failed: {type(err).__name__}: {err}", where=self.name) from None
        check_answer(ans, self.name)
        stages = ans.stages or ((ans.model, ans.confidence),)
        return replace(ans, seconds=time.perf_counter() - start, stages=stages)

    @abstractmethod
    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None) -> Answer:
        """The answer (its `seconds` is filled in by `answer`). A model that `supports`
        generation options takes them as keywords too (`**options`): only those are passed."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def check_answer(ans, name: str) -> None:
    """`ans` is an Answer with a text and a confidence in [0, 1] (or None); else an
    ApproxError ("returned garbage"), so no cascade accepts and no caller scores it.
    An empty text is an answer (a reader finds no span); checkers may reject it."""
    if not isinstance(ans, Answer):
        why = f"{type(ans).__name__} instead of an Answer"
    elif not isinstance(ans.text, str):
        why = f"answer text is {type(ans.text).__name__} {ans.text!r:.60}, not a string"
    elif ans.confidence is not None and (isinstance(ans.confidence, bool)
                                         or not isinstance(ans.confidence, numbers.Real)
                                         or not 0.0 <= ans.confidence <= 1.0 + 1e-6):  # float rounding of exp(log p)
        why = f"confidence {ans.confidence!r:.60} is not a number in [0, 1]"
    else:
        return
    raise ApproxError(f"model '{name}' returned garbage: {why}", where=name)


INSTRUCTION = "Answer the question using the context. Reply with a short answer only."
CANDIDATE = "Reader's answer: "
_PASSAGE = re.compile(r"^\[(\d+)\] ", re.M)


def build_prompt(question: str, contexts: Sequence[str], candidate: str | None = None) -> str:
    """The prompt generative models see; `parse_prompt` inverts it (the server
    uses that to serve an extractive reader behind the completions API).
    `candidate`: a cheaper model's answer, on a line after the question, for a model
    trained to read one (`verifier.Verified(..., hinted=True)`)."""
    body = "\n".join(f"[{i + 1}] {' '.join(c.split())}" for i, c in enumerate(contexts))
    hint = "" if candidate is None else f"\n{CANDIDATE}{' '.join(candidate.split())}"
    return f"{INSTRUCTION}\n\nContext:\n{body}\n\nQuestion: {' '.join(question.split())}{hint}\nAnswer:"


def parse_prompt(prompt: str) -> tuple[str, list[str]]:
    """(question, passages) of a prompt made by `build_prompt` (whitespace inside
    passages normalised); a prompt in no known shape is an ApproxError."""
    head, sep, rest = prompt.rpartition("\n\nQuestion: ")
    if not sep or not rest.endswith("\nAnswer:") or "Context:\n" not in head:
        raise ApproxError("prompt is not in the 'Context: ... Question: ... Answer:' shape that build_prompt makes",
                          where="parse_prompt")
    question = rest[: -len("\nAnswer:")].partition(f"\n{CANDIDATE}")[0]
    body = head.split("Context:\n", 1)[1]
    parts = _PASSAGE.split(body)  # ['', '1', text, '2', text, ...]
    return question, [t.rstrip("\n") for t in parts[2::2]]


__all__ = ["Answer", "AnswerModel", "GENERATION", "NOT_GREEDY", "drawing", "first_line", "build_prompt",
           "parse_prompt", "fallback_answer", "check_answer"]
