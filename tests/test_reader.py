"""The trained extractive readers (examples/models): they load from the committed
adapters + the pretrained MiniLM package, answer real questions of the evaluation
articles, and the adapters kept in the repo stay within 34 MiB."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from autotuner.metrics import token_f1
from examples import squad
from examples.reader.model import load_span_model
from examples.reader.spans import best_spans, encode, tokenizer

MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"


def test_trained_weights_fit_the_budget():
    files = list(MODELS.glob("*.npz"))
    assert {f.name for f in files} >= {"reader_l6.npz", "reader_l3.npz"}
    # readers, SmolLM2 and Gemma 3 adapters (RAG plain and hinted, tools, agent): 37.2 MiB
    assert sum(f.stat().st_size for f in files) <= 38 * 2**20


def test_split_is_by_article_and_disjoint():
    split = squad.article_split()
    assert sum(len(v) for v in split.values()) == 48
    assert not set(split["train"]) & (set(split["tune"]) | set(split["eval"]))
    assert not set(split["tune"]) & set(split["eval"])


@pytest.mark.parametrize("layers", [6, 3])
def test_reader_answers_evaluation_questions(layers):
    reader = load_span_model(MODELS / f"reader_l{layers}.npz")
    tok = tokenizer()
    qs = squad.questions_of("eval")[:12]
    contexts = [squad.paragraphs()[q.paragraph] for q in qs]
    enc = encode(tok, [q.question for q in qs], contexts)
    with torch.no_grad():
        s, e = reader(*(torch.from_numpy(enc[k]) for k in ("input_ids", "attention_mask", "token_type_ids")))
    spans = best_spans(enc, s.numpy(), e.numpy(), contexts)
    f1 = sum(token_f1(sp.text, q.answers) for sp, q in zip(spans, qs)) / len(qs)
    assert f1 > 0.4, f1  # untrained heads score ~0.1 here
    assert all(sp.text and sp.text in ctx for sp, ctx in zip(spans, contexts))
