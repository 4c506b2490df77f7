"""The BM25 inverted index (numpy) and the plain numpy BM25 the kernel is checked against.

Postings are stored per term (CSC of the doc-term matrix): the documents holding
term t are doc_ids[indptr[t]:indptr[t+1]] with counts tfs[...]. A query gathers
the rows of its terms into a dense (nterms, ndocs) matrix, rarest term first, which
is what the JIT kernel scores (so term skipping drops the least informative terms).
IDF is Lucene's ln(1 + (N - df + 0.5) / (df + 0.5)) (never negative).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bm25Index:
    vocab: dict[str, int]
    idf: np.ndarray  # (V,) f64
    doc_len: np.ndarray  # (N,) f64: number of terms in each document
    avgdl: float
    indptr: np.ndarray  # (V+1,) int64
    doc_ids: np.ndarray  # (nnz,) int64, sorted within each term
    tfs: np.ndarray  # (nnz,) f64

    @property
    def n_docs(self) -> int:
        return len(self.doc_len)

    @classmethod
    def build(cls, docs: Sequence[Sequence[str]]) -> "Bm25Index":
        """Index tokenised documents (one list of terms per document)."""
        vocab: dict[str, int] = {}
        term_of = np.fromiter((vocab.setdefault(t, len(vocab)) for doc in docs for t in doc), np.int64)
        lens = np.fromiter((len(doc) for doc in docs), np.int64, count=len(docs))
        n = max(len(docs), 1)
        doc_of = np.repeat(np.arange(len(docs), dtype=np.int64), lens)
        keys, counts = np.unique(term_of * n + doc_of, return_counts=True)  # sorted by (term, doc)
        terms = keys // n
        indptr = np.zeros(len(vocab) + 1, np.int64)
        np.cumsum(np.bincount(terms, minlength=len(vocab)), out=indptr[1:])
        df = np.diff(indptr).astype(np.float64)
        idf = np.log1p((len(docs) - df + 0.5) / (df + 0.5))
        doc_len = lens.astype(np.float64)
        avgdl = float(doc_len.mean()) if len(docs) and doc_len.sum() > 0 else 1.0
        return cls(vocab, idf, doc_len, avgdl, indptr, keys % n, counts.astype(np.float64))

    def query_terms(self, terms: Sequence[str]) -> np.ndarray:
        """Ids of the distinct known terms of a query, highest IDF first (ties: term id)."""
        idf, vocab = self.idf, self.vocab
        ids = sorted({vocab[t] for t in terms if t in vocab}, key=lambda i: (-idf[i], i))
        return np.array(ids, np.int64)

    def tf_rows(self, term_ids: np.ndarray) -> np.ndarray:
        """(len(term_ids), N) f64 term frequencies of these terms in every document."""
        rows = np.zeros((len(term_ids), self.n_docs))
        for r, t in enumerate(term_ids):
            lo, hi = self.indptr[t], self.indptr[t + 1]
            rows[r, self.doc_ids[lo:hi]] = self.tfs[lo:hi]
        return rows


def bm25_scores(index: Bm25Index, term_ids: np.ndarray, k1: float = 1.5, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 of every document for these query terms, vectorised numpy:
    sum_t idf_t * tf*(k1+1) / (tf + k1*(1 - b + b*dl/avgdl)), terms added in order."""
    tf = index.tf_rows(term_ids)
    norm = k1 * ((1.0 - b) + b * (index.doc_len / index.avgdl))
    scores = np.zeros(index.n_docs)
    for r, t in enumerate(term_ids):
        scores = scores + index.idf[t] * ((tf[r] * (k1 + 1.0)) / (tf[r] + norm))
    return scores

