"""The five evaluation kernels (examples/kernels): exact output against numpy, knob 0
identical to the undecorated Python function, and one approximate setting per
kernel changing the numbers exactly as the transformation says. Small sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from approx_opt.program import exact_config
from examples.kernels import KERNELS, bm25, kb, kernel, kmeans, lavamd, pagerank
from examples.kernels.common import mean_rbo, top_k_rows


def same_rankings(a, b) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def exact(module):
    return module.program.build(exact_config(module.program))


# ---------------------------------------------------------------- bm25

N_DOCS = 60


@pytest.fixture(scope="module")
def bm25_input():
    from examples import squad

    qs = [q for q in squad.questions() if q.paragraph < N_DOCS][::7][:4]  # questions about these paragraphs
    inp = bm25.batch(qs, N_DOCS)
    assert min(inp[-1]) >= 2
    return inp


def test_bm25_exact_and_python(bm25_input):
    out = exact(bm25)(*bm25_input)
    assert same_rankings(out, bm25.reference(*bm25_input))
    assert same_rankings(out, bm25.program.python(*bm25_input))
    assert same_rankings(out, bm25.program(*bm25_input))


def test_bm25_term_skipping_keeps_the_rarest_terms(bm25_input):
    *head, qlen = bm25_input
    for k in (2, 3):
        out = bm25.program.build({"doc_score": {"knob_val": k}})(*bm25_input)
        fewer = np.array([math.ceil(n / k) for n in qlen])
        assert same_rankings(out, bm25.reference(*head, fewer))
        assert mean_rbo(out, bm25.reference(*bm25_input)) < 1.0


def test_bm25_corpus_subsetting_ranks_every_kth_document(bm25_input):
    index = bm25.corpus_index(N_DOCS)[0]
    row_ptr, col_term, col_count, dl, avgdl, qterms, qidf, qlen = bm25_input
    out = bm25.program.build({"query_topk": {"knob_val": 3}})(*bm25_input)
    for q, ranking in enumerate(out):
        scores = bm25.bm25_scores(index, qterms[q, :qlen[q]], bm25.K1, bm25.B)
        kept = np.arange(0, N_DOCS, 3)
        assert np.array_equal(ranking, kept[top_k_rows(scores[kept], bm25.TOP_K)])


# ---------------------------------------------------------------- kb


@pytest.fixture(scope="module")
def kb_input():
    tune, _ = kb.make_inputs(1, seed=1, per_input=3, embeddings="projection")
    queries, emb = tune[0]
    return queries, np.ascontiguousarray(emb[:40])


def test_kb_exact_and_python(kb_input):
    out = exact(kb)(*kb_input)
    assert same_rankings(out, kb.reference(*kb_input))
    assert same_rankings(out, kb.program.python(*kb_input))
    assert np.allclose(np.linalg.norm(kb_input[1], axis=1), 1.0)


def test_kb_document_skipping_and_precision(kb_input):
    queries, emb = kb_input
    out = kb.program.build({"query_topk": {"knob_val": 2}})(*kb_input)
    kept = np.arange(0, len(emb), 2)
    assert same_rankings(out, [kept[r] for r in kb.reference(queries, emb[kept])])
    low = kb.program.build({"similarity": {"knob_val": 2}})(*kb_input)  # f16 dot products
    assert 0.5 < mean_rbo(low, kb.reference(*kb_input)) <= 1.0


# ---------------------------------------------------------------- kmeans


@pytest.fixture(scope="module")
def kmeans_input():
    points, init, _ = kmeans.generate(5, n=300, dim=3, k=4)
    return points, init, 4


def test_kmeans_exact_and_python(kmeans_input):
    out = exact(kmeans)(*kmeans_input)
    assert np.allclose(out, kmeans.reference(*kmeans_input), rtol=1e-12, atol=1e-12)
    assert np.array_equal(out, kmeans.program.python(*kmeans_input))
    assert np.array_equal(kmeans_input[1], kmeans.generate(5, n=300, dim=3, k=4)[1])  # init untouched


def test_kmeans_truncation_runs_fewer_iterations(kmeans_input):
    points, init, iters = kmeans_input
    out = kmeans.program.build({"kmeans": {"knob_val": 4}})(*kmeans_input)
    assert np.allclose(out, kmeans.reference(points, init, 1), rtol=1e-12, atol=1e-12)
    assert not np.allclose(out, kmeans.reference(points, init, iters))
    # the decision tree on the iteration number: perforated assignment from iteration 2 on
    late = kmeans.program.build({"assign": {"thresholds": [2], "decisions": [0, 8]}})(*kmeans_input)
    assert not np.array_equal(late, exact(kmeans)(*kmeans_input))


# ---------------------------------------------------------------- lavamd


@pytest.fixture(scope="module")
def lavamd_input():
    return lavamd.generate(2, boxes1d=2, mean_particles=6)


def test_lavamd_exact_and_python(lavamd_input):
    out = exact(lavamd)(*lavamd_input)
    assert np.allclose(out, lavamd.reference(*lavamd_input), rtol=1e-12, atol=1e-12)
    assert np.array_equal(out, lavamd.program.python(*lavamd_input))


def test_lavamd_neighbour_perforation_drops_every_other_box(lavamd_input):
    rv, qv, box_start, nbr, nn, dclass = lavamd_input
    out = lavamd.program.build({"home_box": {"knob_val": 2}})(*lavamd_input)
    fewer = (rv, qv, box_start, np.ascontiguousarray(nbr[:, ::2]), (nn + 1) // 2, dclass[:, ::2])
    assert np.allclose(out, lavamd.reference(*fewer), rtol=1e-12, atol=1e-12)
    far = lavamd.program.build({"particle_sum": {"thresholds": [1], "decisions": [0, 2]}})(*lavamd_input)
    own_box = slice(box_start[0], box_start[1])
    assert not np.allclose(far, out) and np.all(np.isfinite(far[own_box]))


# ---------------------------------------------------------------- pagerank


@pytest.fixture(scope="module")
def pagerank_input():
    indptr, src, outdeg = pagerank.generate(4, n=300, avg_degree=4)
    return indptr, src, outdeg, 8


def test_pagerank_exact_and_python(pagerank_input):
    ranks = pagerank.prepare(*pagerank_input)
    pagerank.pagerank(*ranks)
    assert np.allclose(ranks[3], pagerank.reference_ranks(*pagerank_input), rtol=1e-12)
    assert abs(ranks[3].sum() - 1.0) < 1e-9
    assert same_rankings(exact(pagerank)(*pagerank_input), pagerank.program.python(*pagerank_input))


def test_pagerank_truncation_and_edge_sampling(pagerank_input):
    indptr, src, outdeg, iters = pagerank_input
    ranks = pagerank.prepare(*pagerank_input)
    pagerank.pagerank.build({"pagerank": {"knob_val": 4}})(*ranks)
    assert np.allclose(ranks[3], pagerank.reference_ranks(indptr, src, outdeg, 2), rtol=1e-12)
    sampled = pagerank.prepare(*pagerank_input)
    pagerank.pagerank.build({"in_sum": {"thresholds": [8], "decisions": [0, 2]}})(*sampled)
    assert np.allclose(sampled[3], sampled_ranks(indptr, src, outdeg, iters, 8, 2), rtol=1e-12)
    assert not np.allclose(sampled[3], pagerank.reference_ranks(*pagerank_input))


def sampled_ranks(indptr, src, outdeg, iters, threshold, k):
    """numpy: nodes with in-degree >= threshold sum every k-th in-edge, scaled by degree / kept."""
    n = len(outdeg)
    pr = np.full(n, 1.0 / n)
    for _ in range(iters):
        contrib = pr / outdeg
        new = np.empty(n)
        for v in range(n):
            edges = src[indptr[v]:indptr[v + 1]]
            if len(edges) >= threshold:
                new[v] = contrib[edges[::k]].sum() * len(edges) / len(edges[::k])
            else:
                new[v] = contrib[edges].sum()
        pr = (1.0 - pagerank.DAMPING) / n + pagerank.DAMPING * new
    return pr


# ---------------------------------------------------------------- registry, inputs


def test_registry_and_inputs_are_disjoint():
    for name in KERNELS:
        m = kernel(name)
        assert m.program.name == name and m.METRIC is not None
        assert {s.name for s in m.program.knobs()}  # every kernel has knobs
    tune, ev = kmeans.make_inputs(2, seed=0, n=50, dim=2, k=3)
    assert len(ev) == 5 * len(tune)
    assert not any(np.array_equal(t[0], e[0]) for t in tune for e in ev)
    with pytest.raises(KeyError, match="unknown kernel"):
        kernel("nope")


@pytest.mark.slow
def test_tiny_tuning_run(tmp_path):
    from autotuner import Cost, HeldOut, Search, Storage, tune

    tune_in, eval_in = kmeans.make_inputs(1, seed=0, n=400, dim=3, k=4)
    result = tune(kmeans.program, tune_in, metric=kmeans.METRIC, budget=0.1,
                  search=Search(n_trials=3, mode="static"), cost=Cost(clock="cpu", repeats=1),
                  held_out=HeldOut(inputs=eval_in), storage=Storage(out_dir=tmp_path))
    assert result.trials >= 1 and result.front
    assert all(p.qos_loss_eval is not None for p in result.front)
