"""The trained extractive readers (examples/models/reader_l6.npz "pro",
reader_l3.npz "fast") as scorers of candidate argument values.

The agent asks one question per parameter ("What is the base (The base of the
triangle)?") over the user's request, all questions of a call in one batch,
and reads the reader's start/end log-probabilities at the candidate spans
(tools_text.py): a span's score is log p_start + log p_end, each a softmax over
the request's tokens, so a value is the span the reader would answer,
restricted to well-formed values (whole words, numbers).

`ReaderChoice` is the answer-model component with the knob `model` (the
`cascade` transformation, docs/cascade.md, over the ladder [fast, pro]):
0 = pro alone (exact); k >= 1 = fast first, kept when its confidence (the
smallest, over the call's parameters, probability of the best candidate among
the candidates) is >= THRESHOLDS[k-1], else pro again; and `precision`
(`precision_reduce`: 1 computes both readers in bfloat16, PRECISIONS[1])."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import PRECISIONS
from frontends.components.llm.knobs import Knob, Knobbed
from passes.transformations.cascade import decode

MODELS = Path(__file__).resolve().parents[1] / "models"
THRESHOLDS = (0.0, 0.3, 0.5, 0.7, 0.9)  # 0.0: the fast reader alone


class SpanScorer:
    """log p(start) + log p(end) of character spans of one context, for several questions."""

    def __init__(self, reader):
        self.reader, self.name = reader, reader.name
        self._variants = {"float32": self}

    def with_precision(self, precision: str) -> SpanScorer:
        """The same reader computing in `precision` (ExtractiveReader.with_precision; made once)."""
        if precision not in self._variants:
            other = SpanScorer(self.reader.with_precision(precision))
            other._variants = self._variants
            self._variants[precision] = other
        return self._variants[precision]

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


class ReaderChoice(Knobbed):
    """Scores candidate values with the pro reader, or fast first (cascade knob)."""

    def __init__(self, fast: SpanScorer, pro: SpanScorer, thresholds: Sequence[float] = THRESHOLDS,
                 name: str = "answer"):
        self.fast, self.pro, self.thresholds, self.name = fast, pro, tuple(thresholds), name
        self._knob_values = {}

    def knob_table(self) -> list[Knob]:
        return [Knob("model", "cascade", tuple(range(len(self.thresholds) + 1)),
                     "reader: 0 = pro; k = fast, escalating to pro below confidence " +
                     "/".join(f"{t:g}" for t in self.thresholds)),
                Knob("precision", "precision_reduce", (0, 1), "readers compute in float32 / bfloat16")]

    def score(self, questions: Sequence[str], context: str, candidates: Sequence[Sequence[tuple[int, int]]]
              ) -> list[np.ndarray]:
        """Per question, the log-probabilities of its own candidate spans."""
        plan = decode(self.knob("model"), 1, len(self.thresholds))
        models = [self.pro] if plan is None else [self.fast, self.pro]
        if self.knob("precision"):
            models = [m.with_precision(PRECISIONS[self.knob("precision")]) for m in models]
        union = sorted({sp for c in candidates for sp in c})
        col = {sp: i for i, sp in enumerate(union)}
        for i, model in enumerate(models):
            table = model.score(questions, context, union)
            per = [table[q, [col[sp] for sp in c]] for q, c in enumerate(candidates)]
            if i == len(models) - 1:
                break
            conf = min((best_probability(p) for p in per if p.size > 1), default=1.0)
            if conf >= self.thresholds[plan[1]]:
                break
        return per


def load_readers() -> tuple[SpanScorer, SpanScorer]:
    """(fast, pro). The tokenizer runs in the calling thread (its thread pool off), so
    the autotuner's CPU clock sees all of a request's work."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return SpanScorer.load("fast"), SpanScorer.load("pro")
