"""Tokenising question/paragraph pairs into windows and decoding the best span:
shared by training, evaluation and the answer component."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_LEN, STRIDE, MAX_ANSWER_TOKENS = 256, 64, 30


def tokenizer(model_dir=None):
    from transformers import AutoTokenizer

    from examples.reader.model import default_model_dir

    return AutoTokenizer.from_pretrained(str(model_dir or default_model_dir()), local_files_only=True)


def encode(tok, questions: list[str], contexts: list[str], max_len: int = MAX_LEN):
    """Windows over each context; `overflow_to_sample_mapping` maps windows to pairs."""
    return tok(questions, contexts, truncation="only_second", max_length=max_len, stride=STRIDE,
               return_overflowing_tokens=True, return_offsets_mapping=True, padding="max_length",
               return_tensors="np")


def span_labels(enc, answer_starts: list[int], answer_texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token start/end of the answer in each window; 0 (the [CLS] token) when the
    answer is not inside the window."""
    starts, ends = [], []
    for w, pair in enumerate(enc["overflow_to_sample_mapping"]):
        a0 = answer_starts[pair]
        a1 = a0 + len(answer_texts[pair])
        seq = enc.sequence_ids(w)
        offsets = enc["offset_mapping"][w]
        ctx = [i for i, s in enumerate(seq) if s == 1]
        s_tok = e_tok = 0
        if ctx and offsets[ctx[0]][0] <= a0 and offsets[ctx[-1]][1] >= a1:
            s_tok = next(i for i in ctx if offsets[i][1] > a0)
            e_tok = next(i for i in reversed(ctx) if offsets[i][0] < a1)
        starts.append(s_tok)
        ends.append(e_tok)
    return np.array(starts), np.array(ends)


@dataclass
class Span:
    text: str
    score: float
    window: int


def best_spans(enc, start_logits: np.ndarray, end_logits: np.ndarray, contexts: list[str]) -> list[Span]:
    """The best-scoring context span per (question, context) pair over its windows."""
    best: dict[int, Span] = {}
    for w, pair in enumerate(enc["overflow_to_sample_mapping"]):
        seq = enc.sequence_ids(w)
        ctx = np.array([s == 1 for s in seq])
        s_log = np.where(ctx, start_logits[w], -np.inf)
        e_log = np.where(ctx, end_logits[w], -np.inf)
        top_s = np.argsort(s_log)[-20:]
        top_e = np.argsort(e_log)[-20:]
        for s in top_s:
            for e in top_e:
                if e < s or e - s + 1 > MAX_ANSWER_TOKENS or not np.isfinite(s_log[s] + e_log[e]):
                    continue
                score = float(s_log[s] + e_log[e])
                if pair not in best or score > best[pair].score:
                    offs = enc["offset_mapping"][w]
                    best[pair] = Span(contexts[pair][offs[s][0]:offs[e][1]], score, w)
    return [best.get(i, Span("", float("-inf"), -1)) for i in range(len(contexts))]
