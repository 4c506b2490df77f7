"""The extractive reader as an answer model: a span network (`span_model.py`, or
any module with its call signature) reads every (question, passage) window and
returns the best-scoring span of all passages.

Windows: each passage is tokenised with the question (`only_second` truncation,
`max_length` tokens, `stride` overlap) as SQuAD readers do. Span score =
start logit + end logit over context tokens, span length <= `max_new_tokens`
(default 30: the reader's "answer tokens"). Confidence = p_start * p_end of the
chosen span under one softmax over the context tokens of all windows, so a
reader unsure between passages is less confident (what cascades threshold).

`device`: where the network runs, a setting of the run (not a knob): a GPU run puts
the reader beside the LLM it stands in for.

No int8 variant: torch's weight-only int8 product (`int8.py`, SmolLM2's) is a
matrix-vector kernel, fast for one decoded token and slow on a reader's 256-token
windows (4.7 s against float32's 0.14 s a question, on an AMD EPYC here). Where a
reader is the cheaper stage of an LLM's cascade, it runs float32 under the LLM's int8
(`missing` says why, where a program asks it for int8 itself)."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import torch

from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import FLOATS
from frontends.components.llm.base import Answer, AnswerModel
from frontends.components.llm.span_model import fold_lora, load_span_model, minilm_dir
from frontends.components.variants import Variants

MAX_LENGTH, STRIDE, MAX_ANSWER_TOKENS = 256, 64, 30


def load_tokenizer(model_dir: Path | None = None):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir or minilm_dir()), local_files_only=True)


class ExtractiveReader(Variants, AnswerModel):
    supports = frozenset({"max_new_tokens", "precision"})  # max_new_tokens: the longest span
    precisions = FLOATS
    missing = {"int8": "torch's weight-only int8 is a matrix-vector kernel, ~30x slower than float32 on "
                       "a reader's windows"}
    deterministic = True  # the best span of one forward pass on the process's torch threads

    def __init__(self, module: torch.nn.Module, tokenizer=None, name: str = "reader",
                 max_length: int = MAX_LENGTH, stride: int = STRIDE,
                 max_answer_tokens: int = MAX_ANSWER_TOKENS, batch_size: int = 32, device: str = "cpu"):
        self.device = torch.device(device)
        self.module = module.eval().to(self.device)
        self.tokenizer = tokenizer or load_tokenizer()
        self.name = name
        self.max_length, self.stride = max_length, stride
        self.max_answer_tokens, self.batch_size = max_answer_tokens, batch_size

    @classmethod
    def from_path(cls, path: str | Path, name: str | None = None, **kw) -> ExtractiveReader:
        """A trained reader from its `.npz` (adapters + head; `span_model.py`)."""
        module = load_span_model(path)
        fold_lora(module)  # answers only: one matrix product a linear map
        return cls(module, name=name or Path(path).stem, **kw)

    def build_variant(self, precision: str, layers: int | None) -> ExtractiveReader:
        other = copy.copy(self)
        other.module = copy.deepcopy(self.module).to(getattr(torch, precision))
        return other

    def encode(self, question: str, contexts: list[str]):
        try:
            return self.tokenizer([question] * len(contexts), contexts, truncation="only_second",
                                  max_length=self.max_length, stride=self.stride, padding=True,
                                  return_overflowing_tokens=True, return_offsets_mapping=True,
                                  return_tensors="pt")
        except Exception as err:  # tokenizers: question longer than the window, ...
            raise ApproxError(f"cannot tokenise the question with its passages: {err}", where=self.name) from None

    @torch.inference_mode()
    def logits(self, enc) -> tuple[np.ndarray, np.ndarray]:
        """(windows, tokens) start and end logits, float64."""
        starts, ends = [], []
        n = enc["input_ids"].shape[0]
        for i in range(0, n, self.batch_size):
            args = [enc[k][i:i + self.batch_size].to(self.device)
                    for k in ("input_ids", "attention_mask", "token_type_ids")]
            s, e = self.module(*args)
            starts.append(s.double().cpu().numpy())
            ends.append(e.double().cpu().numpy())
        return np.concatenate(starts), np.concatenate(ends)

    def _answer(self, question: str, contexts: list[str], max_new_tokens: int | None) -> Answer:
        limit = max_new_tokens or self.max_answer_tokens
        contexts = [c for c in contexts if c.strip()]
        if not contexts:
            return Answer("", 0.0, 0, 0.0, self.name)
        enc = self.encode(question, contexts)
        s_log, e_log = self.logits(enc)
        windows = s_log.shape[0]
        ctx = np.array([[sid == 1 for sid in enc.sequence_ids(w)] for w in range(windows)])
        if not ctx.any():
            raise ApproxError("no passage token fits in a window next to the question", where=self.name)
        s_lp, e_lp = _log_softmax_masked(s_log, ctx), _log_softmax_masked(e_log, ctx)
        length = s_log.shape[1]
        band = np.triu(np.ones((length, length), bool)) & ~np.triu(np.ones((length, length), bool), limit)
        best = (-np.inf, 0, 0, 0)
        for w in range(windows):
            scores = np.where(band & ctx[w][:, None] & ctx[w][None, :],
                              s_lp[w][:, None] + e_lp[w][None, :], -np.inf)
            flat = int(np.argmax(scores))
            if scores.flat[flat] > best[0]:
                best = (float(scores.flat[flat]), w, flat // length, flat % length)
        score, w, s, e = best
        pair = int(enc["overflow_to_sample_mapping"][w])
        offsets = enc["offset_mapping"][w]
        text = contexts[pair][int(offsets[s][0]):int(offsets[e][1])]
        used = int(enc["attention_mask"].sum())
        return Answer(text, float(np.exp(score)), used + e - s + 1, 0.0, self.name, new_tokens=e - s + 1)


def _log_softmax_masked(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """log-softmax over every masked-in entry of the whole array (all windows)."""
    x = np.where(mask, logits, -np.inf)
    top = x.max()
    return x - (top + np.log(np.exp(x - top).sum()))
