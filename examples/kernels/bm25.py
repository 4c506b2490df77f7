"""BM25 ranking kernel (ApproxMLIR's `bm25`): a batch of SQuAD dev questions scored
against all 2,067 SQuAD dev paragraphs, top-k per question.

Outside the kernel (numpy): the paragraphs tokenised and indexed once
(`Bm25Index` of the retrieval component: IDF, document lengths), its postings
turned into a doc-term count matrix in CSR form (per document its term ids,
sorted, and their counts). The kernel scores document by document: each query
term is looked up in the document's row by binary search. Query terms come
rarest (highest IDF) first, so term skipping drops the least informative ones.

Knobs (exact at 0):
  doc_score   loop_truncate of the query-term loop (term skipping); a decision
              tree on the number of query terms (dynamic: long queries lose more)
  query_topk  loop_perforate of the document loop (corpus subsetting)
QoS: RBO (p = 0.95) of each question's top-20, averaged over the batch.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from examples import squad
from examples.kernels.common import RBO, KernelProgram, rankings, top_k_rows, topk_insert
from frontends import DecisionTree, Knob, StaticTransform
from frontends.components.retrieval.bm25_index import Bm25Index, bm25_scores
from frontends.components.retrieval.text import tokenize

K1, B = 1.5, 0.75
TOP_K = 20
QUERIES_PER_INPUT = 24
METRIC = RBO


def n_terms(nterms: int) -> int:
    return nterms


@Knob(decision_tree=DecisionTree(n_terms, [6], [6], [0, 0], "loop_truncate", thresholds_upper=[16]))
def doc_score(row_ptr: np.ndarray, col_term: np.ndarray, col_count: np.ndarray, qterms: np.ndarray,
              qidf: np.ndarray, q: int, nterms: int, d: int, norm: float) -> float:
    """BM25 of document d for query q: its terms' counts found by binary search in row d."""
    s = 0.0
    start = row_ptr[d]
    end = row_ptr[d + 1]
    for t in range(nterms):
        term = qterms[q, t]
        lo = start
        hi = end
        while lo < hi:
            mid = (lo + hi) // 2
            if col_term[mid] < term:
                lo = mid + 1
            else:
                hi = mid
        if lo < end and col_term[lo] == term:
            f = col_count[lo]
            s += qidf[q, t] * ((f * (K1 + 1.0)) / (f + norm))
    return s


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def query_topk(row_ptr: np.ndarray, col_term: np.ndarray, col_count: np.ndarray, dl: np.ndarray, avgdl: float,
               qterms: np.ndarray, qidf: np.ndarray, q: int, nterms: int, k: int, ids: np.ndarray,
               vals: np.ndarray) -> int:
    """Score every document for query q, keeping the best k in row q of ids/vals."""
    count = 0
    for d in range(dl.shape[0]):
        norm = K1 * ((1.0 - B) + B * (dl[d] / avgdl))
        s = doc_score(row_ptr, col_term, col_count, qterms, qidf, q, nterms, d, norm)
        count = topk_insert(ids, vals, q, count, k, d, s)
    return count


@Knob()
def bm25(row_ptr: np.ndarray, col_term: np.ndarray, col_count: np.ndarray, dl: np.ndarray, avgdl: float,
         qterms: np.ndarray, qidf: np.ndarray, qlen: np.ndarray, k: int, ids: np.ndarray, vals: np.ndarray,
         found: np.ndarray) -> int:
    for q in range(qterms.shape[0]):
        found[q] = query_topk(row_ptr, col_term, col_count, dl, avgdl, qterms, qidf, q, qlen[q], k, ids, vals)
    return qterms.shape[0]


def prepare(row_ptr, col_term, col_count, dl, avgdl, qterms, qidf, qlen, k=TOP_K) -> tuple:
    """Kernel arguments: the input and fresh top-k buffers (ids, scores, how many found)."""
    nq = qterms.shape[0]
    return (row_ptr, col_term, col_count, dl, avgdl, qterms, qidf, qlen, k,
            np.zeros((nq, k), np.int64), np.zeros((nq, k)), np.zeros(nq, np.int64))


def finish(args: tuple) -> list[np.ndarray]:
    """The ranking of each query of the batch."""
    return rankings(args[-3], args[-1])


def example() -> tuple:
    """A tiny input (two documents, one query) with the real dtypes and ranks."""
    return (np.array([0, 1, 2]), np.array([0, 1]), np.array([1.0, 2.0]), np.array([1.0, 2.0]), 1.5,
            np.array([[1]]), np.array([[0.5]]), np.array([1]))


program = KernelProgram("bm25", bm25, prepare, finish, example)


# ---------------------------------------------------------------- inputs


@lru_cache(maxsize=2)
def corpus_index(n_docs: int | None = None) -> tuple[Bm25Index, np.ndarray, np.ndarray, np.ndarray]:
    """(index, row_ptr, col_term, col_count) of the first n_docs SQuAD dev paragraphs
    (all by default): the CSR doc-term count matrix transposed from the postings."""
    docs = squad.paragraphs()[:n_docs]
    index = Bm25Index.build([tokenize(p) for p in docs])
    terms = np.repeat(np.arange(len(index.idf), dtype=np.int64), np.diff(index.indptr))
    order = np.lexsort((terms, index.doc_ids))  # by document, then term id
    row_ptr = np.zeros(index.n_docs + 1, np.int64)
    np.cumsum(np.bincount(index.doc_ids, minlength=index.n_docs), out=row_ptr[1:])
    return index, row_ptr, terms[order], index.tfs[order]


def batch(questions, n_docs: int | None = None) -> tuple:
    """One kernel input: the questions' term ids (rarest first, padded) and IDFs."""
    index, row_ptr, col_term, col_count = corpus_index(n_docs)
    term_ids = [index.query_terms(tokenize(q.question)) for q in questions]
    width = max(1, max(len(t) for t in term_ids))
    qterms = np.zeros((len(questions), width), np.int64)
    qidf = np.zeros((len(questions), width))
    for i, t in enumerate(term_ids):
        qterms[i, :len(t)] = t
        qidf[i, :len(t)] = index.idf[t]
    qlen = np.array([len(t) for t in term_ids], np.int64)
    return (row_ptr, col_term, col_count, index.doc_len, index.avgdl, qterms, qidf, qlen)


def make_inputs(n_tune: int, seed: int = 0, per_input: int = QUERIES_PER_INPUT, n_docs: int | None = None):
    """(tune, eval) inputs, eval = 5x tune: batches of questions of the tuning and of
    the evaluation SQuAD articles (disjoint), seeded."""
    tune_q, eval_q = squad.sample_questions(n_tune * per_input, seed)
    chunks = lambda qs: [batch(qs[i:i + per_input], n_docs) for i in range(0, len(qs), per_input)]  # noqa: E731
    return chunks(tune_q), chunks(eval_q)


def reference(row_ptr, col_term, col_count, dl, avgdl, qterms, qidf, qlen, k=TOP_K) -> list[np.ndarray]:
    """numpy BM25 from the postings of the same corpus (the retrieval component's
    `bm25_scores`) and a stable top-k."""
    n = len(dl)
    index = corpus_index(None if n == len(squad.paragraphs()) else n)[0]
    return [top_k_rows(bm25_scores(index, qterms[i, :qlen[i]], K1, B), k) for i in range(len(qlen))]
