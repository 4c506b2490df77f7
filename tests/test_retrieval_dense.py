"""Dense retrieval with the real all-MiniLM-L6-v2 on 50 SQuAD paragraphs (the full
corpus is embedded only by the bench): embeddings as sentence-transformers gives
them, cached on disk; the JIT similarity kernel equals numpy at knob 0 and each
knob changes the numbers as its transformation says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import exact_config
from examples.squad import paragraphs, questions
from frontends.components.retrieval import DenseRetriever, MiniLMEncoder, corpus_embeddings, recall_at_k, top_k

K = 10
STEP = 69  # paragraphs 0, 69, 138, ...: 30 paragraphs from every article


@pytest.fixture(scope="module")
def encoder():
    return MiniLMEncoder()


@pytest.fixture(scope="module")
def dense(encoder, tmp_path_factory):
    corpus = list(paragraphs())[::STEP]
    return DenseRetriever(corpus, encoder, top_k=K, cache=tmp_path_factory.mktemp("emb"))


@pytest.fixture(scope="module")
def queries(dense):
    """(question, gold index in the small corpus, query vector) for 20 real questions."""
    qs = [next(q for q in questions() if q.paragraph == p) for p in range(0, len(paragraphs()), STEP)][:20]
    vecs = dense.encoder.embed([q.question for q in qs])
    return [(q.question, q.paragraph // STEP, v) for q, v in zip(qs, vecs)]


def test_embeddings_are_unit_vectors_that_find_the_paragraph(dense, queries):
    e = dense.embeddings
    assert e.shape == (len(dense.corpus), 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=1e-5)
    hits = [dense.build({}).run(v) for _, _, v in queries]
    assert np.mean([recall_at_k(h.ids, gold, 5) for h, (_, gold, _) in zip(hits, queries)]) >= 0.8


# sentence-transformers 6.2.0, SentenceTransformer(<package model dir>).encode(texts), first and last dims
ST_FIRST = [[-0.0074753, 0.0255711, -0.0563937, -0.0012681, 0.0170521, 0.0293666],
            [0.0037567, 0.0352263, 0.0127675, -0.086967, -0.0361493, 0.0468462]]
ST_LAST = [[0.1061125, 0.0819327, 0.0150769], [0.0595786, -0.0192716, 0.0147019]]


def test_same_as_sentence_transformers(encoder):
    e = encoder.embed(["Which NFL team represented the AFC at Super Bowl 50?", paragraphs()[0]])
    np.testing.assert_allclose(e[:, :6], ST_FIRST, atol=2e-6)
    np.testing.assert_allclose(e[:, -3:], ST_LAST, atol=2e-6)
    assert float(e[0] @ e[1]) == pytest.approx(0.6983331, abs=2e-6)


def test_corpus_embeddings_are_cached_by_text(tmp_path, dense):
    class Counting(MiniLMEncoder):
        calls = 0

        def embed(self, texts):
            Counting.calls += 1
            return super().embed(texts)

    enc = Counting()
    enc._tok, enc._model = dense.encoder._tok, dense.encoder._model  # share the loaded model
    texts = [q.question for q in questions()[:3]]
    first = corpus_embeddings(texts, enc, tmp_path)
    again = corpus_embeddings(texts, enc, tmp_path)
    assert Counting.calls == 1 and len(list(tmp_path.glob("minilm_*.npy"))) == 1
    np.testing.assert_array_equal(first, again)
    assert first.shape == (3, 384) and first.dtype == np.float32
    corpus_embeddings(texts[:2], enc, tmp_path)  # other texts, other key
    assert Counting.calls == 2 and len(list(tmp_path.glob("minilm_*.npy"))) == 2


def test_exact_kernel_equals_numpy(dense, queries):
    search = dense.build({})
    zero = dense.build(exact_config(dense))
    for _, _, v in queries:
        ref = dense.reference(v)
        hits = search.run(v)
        np.testing.assert_array_equal(hits.ids, top_k(ref, K))
        np.testing.assert_array_equal(zero.run(v).ids, hits.ids)
        np.testing.assert_allclose(hits.scores, ref[hits.ids], rtol=1e-12)


def test_search_embeds_the_question(dense, queries):
    search = dense.build({})
    question, _, v = queries[0]
    np.testing.assert_array_equal(search(question).ids, search.run(v).ids)


@pytest.mark.parametrize("k", [3, 8])
def test_dimension_truncation_is_the_dot_product_of_the_first_dims(dense, queries, k):
    search, d = dense.build({"dense_dot": {"knob_val": k}}), math.ceil(384 / k)
    for _, _, v in queries:
        ref = dense.reference(v, dims=d)
        hits = search.run(v)
        np.testing.assert_array_equal(hits.ids, top_k(ref, K))
        np.testing.assert_allclose(hits.scores, ref[hits.ids], rtol=1e-12)


@pytest.mark.parametrize("knob, low", [(1, np.float32), (2, np.float16)])
def test_precision_is_the_dot_product_in_the_lower_type(dense, queries, knob, low):
    """Op by op in the lower type: products rounded, summed left to right."""
    search = dense.build({"dense_dot#2": {"knob_val": knob}})
    e = dense.embeddings.astype(low)
    for _, _, v in queries[:5]:
        q = v.astype(low)
        acc = np.zeros(len(e), low)
        for j in range(len(q)):
            acc = acc + e[:, j] * q[j]
        hits = search.run(v)
        np.testing.assert_array_equal(hits.scores, acc.astype(np.float64)[hits.ids])
        np.testing.assert_array_equal(hits.ids, top_k(acc.astype(np.float64), K))


@pytest.mark.parametrize("transform, k, subset", [
    ("loop_perforate", 4, lambda n, k: np.arange(0, n, k)),
    ("loop_truncate", 2, lambda n, k: np.arange(math.ceil(n / k))),
])
def test_document_subsetting_returns_the_best_of_the_subset(dense, queries, transform, k, subset):
    r = DenseRetriever(dense.corpus, dense.encoder, dense.embeddings, top_k=K, doc_transform=transform)
    search, docs = r.build({"dense_docs": {"knob_val": k}}), subset(len(dense.corpus), k)
    for _, _, v in queries:
        hits = search.run(v)
        assert set(hits.ids) <= set(docs)
        np.testing.assert_array_equal(hits.ids, docs[top_k(dense.reference(v)[docs], K)])


def test_top_k_param_and_ties(dense, queries):
    exact, top3 = dense.build({}), dense.build({"dense": {"knob_val": 2}})
    for _, _, v in queries[:5]:
        np.testing.assert_array_equal(top3.run(v).ids, exact.run(v).ids[:3])
    twins = np.repeat(dense.embeddings[:3], 2, axis=0)  # rows 2i and 2i+1 equal: ties keep document order
    r = DenseRetriever(dense.corpus[:6], dense.encoder, twins, top_k=6)
    hits = r.build({}).run(twins[2])
    assert list(hits.ids[:2]) == [2, 3] and sorted(hits.ids) == list(range(6))


def test_wrong_embeddings_shape_is_an_error(dense):
    with pytest.raises(ApproxError, match="shape"):
        DenseRetriever(dense.corpus, dense.encoder, dense.embeddings[:, :100])
