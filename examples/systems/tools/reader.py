"""The trained extractive readers (examples/models/reader_l6.npz "pro",
reader_l3.npz "fast") as scorers of candidate argument values.

The agent asks one question per parameter ("What is the base (The base of the
triangle)?") over the user's request, all questions of a call in one batch,
and reads the reader's start/end log-probabilities at the candidate spans
(tools/text.py): a span's score is log p_start + log p_end, each a softmax over
the request's tokens, so a value is the span the reader would answer,
restricted to well-formed values (whole words, numbers).

`ArgumentReader` is a reader as the provider of the agent's `component.generate`
op; the op's knobs (tools/agent.py) are `answer.model` (a cascade from fast to pro:
fast's scores are kept when its confidence, the smallest over the call's
parameters of the probability of the best candidate, is >= THRESHOLDS[k-1]),
`answer.precision` (bfloat16), `answer.passages` (1: string parameters only) and
`answer.skip` (no reader: cue words alone)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from approx_dialect.diagnostics import ApproxError
from frontends.components.variants import Variants

MODELS = Path(__file__).resolve().parents[2] / "models"
THRESHOLDS = (0.0, 0.3, 0.5, 0.7, 0.9)  # 0.0: the fast reader alone
READER_GROUPS = (("string", "str_list"), ("int", "float", "num_list"))  # the reader op's contexts: strings first


class SpanScorer(Variants):
    """log p(start) + log p(end) of character spans of one context, for several questions."""

    supports = frozenset({"precision"})

    def __init__(self, reader):
        self.reader, self.name = reader, reader.name

    def build_variant(self, precision: str, layers: int | None) -> SpanScorer:
        return SpanScorer(self.reader.variant(precision))

    @classmethod
    def load(cls, which: str) -> SpanScorer:
        from frontends.components.llm.reader import ExtractiveReader

        path = MODELS / {"pro": "reader_l6.npz", "fast": "reader_l3.npz"}[which]
        if not path.is_file():
            raise ApproxError(f"no trained reader at {path} (python -m examples.train_reader)", where="tools agent")
        return cls(ExtractiveReader.from_path(path, name=which))

    def score(self, questions: Sequence[str], context: str, spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """(questions, spans) array of span log-probabilities (-inf where a span has no token)."""
        if not questions or not spans:
            return np.zeros((len(questions), len(spans)))
        tok = self.reader.tokenizer
        enc = tok(list(questions), [context] * len(questions), truncation="only_second",
                  max_length=self.reader.max_length, padding=True, return_offsets_mapping=True,
                  return_tensors="pt")
        s_log, e_log = self.reader.logits(enc)
        out = np.full((len(questions), len(spans)), -np.inf)
        offsets = enc["offset_mapping"].numpy()
        a = np.array([sp[0] for sp in spans])
        b = np.array([sp[1] for sp in spans])
        for q in range(len(questions)):
            idx = np.flatnonzero(np.array([sid == 1 for sid in enc.sequence_ids(q)]))
            if not idx.size:
                continue
            starts, ends = offsets[q, idx, 0], offsets[q, idx, 1]  # increasing
            first = np.searchsorted(ends, a, side="right")  # first token ending after the span's start
            last = np.searchsorted(starts, b, side="left") - 1  # last token starting before its end
            ok = (first <= last) & (first < idx.size) & (last >= 0)
            s_lp, e_lp = _log_softmax(s_log[q, idx]), _log_softmax(e_log[q, idx])
            out[q, ok] = s_lp[first[ok]] + e_lp[last[ok]]
        return out


def _log_softmax(x: np.ndarray) -> np.ndarray:
    top = x.max()
    return x - (top + np.log(np.exp(x - top).sum()))


def best_probability(scores: np.ndarray) -> float:
    """Probability of the best candidate under a softmax over the candidates."""
    finite = scores[np.isfinite(scores)]
    if finite.size == 0:
        return 1.0
    p = np.exp(finite - finite.max())
    return float(1.0 / p.sum())


@dataclass(frozen=True)
class SpanScores:
    """A reader's answer for argument filling: the span log-probabilities of each
    asked parameter's candidates, and the confidence a cascade tests (the smallest,
    over the parameters, probability of the best candidate; 1 when nothing was asked)."""

    scores: dict
    confidence: float


class ArgumentReader(Variants):
    """A scorer as the answer model of `component.generate(%request, %kinds)`: the
    request is (question, function), the contexts are the groups of parameter kinds
    to ask about (`passages = 1`: the first group only). Named like its scorer."""

    supports = frozenset({"precision"})

    def __init__(self, scorer: SpanScorer):
        self.scorer, self.name = scorer, scorer.name

    def build_variant(self, precision: str, layers: int | None) -> ArgumentReader:
        return ArgumentReader(self.scorer.variant(precision))

    def answer_with(self, request, kind_groups, settings) -> SpanScores:
        """`answer` by the variant of the op's settings (its precision)."""
        return self.variant_for(settings).answer(request, kind_groups)

    def answer(self, request, kind_groups, max_new_tokens=None) -> SpanScores:
        from examples.systems.tools.fill import reader_questions

        question, function = request
        kinds = tuple(k for group in kind_groups for k in group)
        names, questions, spans = reader_questions(question, function, kinds)
        if not names:
            return SpanScores({}, 1.0)
        union = sorted({sp for c in spans for sp in c})
        col = {sp: i for i, sp in enumerate(union)}
        table = self.scorer.score(questions, question, union)
        per = [table[q, [col[sp] for sp in c]] for q, c in enumerate(spans)]
        conf = min((best_probability(p) for p in per if p.size > 1), default=1.0)
        return SpanScores(dict(zip(names, per)), conf)


def load_readers() -> tuple[SpanScorer, SpanScorer]:
    """(fast, pro). The tokenizer runs in the calling thread (its thread pool off), so
    the autotuner's CPU clock sees all of a request's work."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return SpanScorer.load("fast"), SpanScorer.load("pro")


def scores_of(answer: SpanScores | None) -> dict:
    """The span scores of the reader op's answer; {} when the step was skipped (None)."""
    return {} if answer is None else answer.scores
