"""BM25 over the 2,067 SQuAD dev paragraphs: the JIT kernel equals plain numpy BM25
on real questions at knob 0 (same scores, same ranking), and each knob changes the
result exactly as its transformation says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import exact_config
from examples.squad import paragraphs, questions
from frontends.components.retrieval import Bm25Index, Bm25Retriever, bm25_scores, top_k
from frontends.components.retrieval.text import stem, tokenize

K = 10


@pytest.fixture(scope="module")
def bm25():
    return Bm25Retriever(paragraphs(), top_k=K, top_k_values=(1, 3, 5))


@pytest.fixture(scope="module")
def qs():
    return [q.question for q in questions()[::211]]  # 51 real questions over all articles


def test_preprocessing_levels():
    text = "The Broncos were playing in Santa Clara's stadium, winning 24-10!"
    assert tokenize(text, 0) == ["bronco", "play", "santa", "clara", "stadium", "win", "24", "10"]
    assert tokenize(text, 1) == ["broncos", "playing", "santa", "clara", "stadium", "winning", "24", "10"]
    assert tokenize(text, 2)[:4] == ["the", "broncos", "were", "playing"]
    assert [stem(w) for w in ("countries", "churches", "played", "running", "quickly", "bus", "is")] == \
        ["country", "church", "play", "run", "quick", "bus", "is"]
    with pytest.raises(ApproxError, match="preprocessing level"):
        tokenize(text, 3)


def test_index_counts_and_idf():
    ix = Bm25Index.build([["a", "b", "a"], ["b"], []])
    assert ix.n_docs == 3 and ix.avgdl == pytest.approx(4 / 3)
    np.testing.assert_array_equal(ix.tf_rows(np.array([ix.vocab["a"], ix.vocab["b"]])), [[2, 0, 0], [1, 1, 0]])
    assert ix.idf[ix.vocab["a"]] == pytest.approx(math.log(1 + (3 - 1 + 0.5) / 1.5))
    assert list(ix.query_terms(["b", "zzz", "a", "b"])) == [ix.vocab["a"], ix.vocab["b"]]  # rarest first


def test_exact_kernel_equals_numpy_bm25(bm25, qs):
    search = bm25.build({})
    for q in qs:
        ref = bm25.reference(q)
        hits = search(q)
        np.testing.assert_array_equal(hits.ids, top_k(ref, K))
        np.testing.assert_array_equal(hits.scores, ref[hits.ids])  # same ops, same order: bit-equal


def test_every_knob_at_zero_is_exact(bm25, qs):
    exact, zero = bm25.build({}), bm25.build(exact_config(bm25))
    assert {s.name for s in bm25.knobs()} == {"bm25_terms", "bm25_docs", "bm25", "preprocess"}
    for q in qs[:10]:
        np.testing.assert_array_equal(exact(q).ids, zero(q).ids)


@pytest.mark.parametrize("k", [2, 8])
def test_term_skipping_scores_the_rarest_terms(bm25, qs, k):
    search, ix = bm25.build({"bm25_terms": {"knob_val": k}}), bm25.index(0)
    for q in qs[:15]:
        terms = ix.query_terms(tokenize(q))
        ref = bm25_scores(ix, terms[: math.ceil(len(terms) / k)])
        hits = search(q)
        np.testing.assert_array_equal(hits.ids, top_k(ref, K))
        np.testing.assert_array_equal(hits.scores, ref[hits.ids])


@pytest.mark.parametrize("transform, k, subset", [
    ("loop_perforate", 3, lambda n, k: np.arange(0, n, k)),
    ("loop_truncate", 4, lambda n, k: np.arange(math.ceil(n / k))),
    ("loop_perforate_modulo", 2, lambda n, k: np.arange(0, n, k)),  # drops i with i mod 2 == 1
])
def test_corpus_subsetting_returns_the_best_of_the_subset(qs, transform, k, subset):
    r = Bm25Retriever(paragraphs(), top_k=K, doc_transform=transform)
    search = r.build({"bm25_docs": {"knob_val": k}})
    docs = subset(r.index().n_docs, k)
    for q in qs[:15]:
        ref = r.reference(q)
        hits = search(q)
        assert set(hits.ids) <= set(docs)
        np.testing.assert_array_equal(hits.ids, docs[top_k(ref[docs], K)])


@pytest.mark.parametrize("knob, n", [(1, 1), (3, 5)])
def test_top_k_param_returns_a_prefix(bm25, qs, knob, n):
    exact, search = bm25.build({}), bm25.build({"bm25": {"knob_val": knob}})
    for q in qs[:10]:
        np.testing.assert_array_equal(search(q).ids, exact(q).ids[:n])


@pytest.mark.parametrize("level", [1, 2])
def test_simplified_preprocessing_uses_its_own_index(bm25, qs, level):
    search = bm25.build({"preprocess": {"knob_val": level}})
    differs = 0
    for q in qs[:15]:
        hits = search(q)
        np.testing.assert_array_equal(hits.ids, top_k(bm25.reference(q, level), K))
        differs += not np.array_equal(hits.ids, bm25.build({})(q).ids)
    assert differs > 0


def test_query_without_known_terms_ties_broken_by_document_order(bm25):
    hits = bm25.build({})("the of and which?")  # stopwords only: every score 0
    np.testing.assert_array_equal(hits.ids, np.arange(K))
    assert not hits.scores.any()


def test_errors_are_one_line(bm25):
    with pytest.raises(ApproxError, match="preprocess"):
        bm25.build({"preprocess": {"knob_val": 5}})
    with pytest.raises(ApproxError, match="unknown knob"):
        bm25.build({"bm25_nope": {"knob_val": 1}})
    with pytest.raises(ApproxError, match="top_k"):
        Bm25Retriever(["a b"], top_k=0)
    with pytest.raises(ApproxError, match="document subsetting"):
        Bm25Retriever(["a b"], doc_transform="task_skipping")
