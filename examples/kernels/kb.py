"""Dense similarity search kernel (ApproxMLIR's `kb`, a knowledge-base lookup): a
batch of SQuAD dev question embeddings against the embeddings of all 2,067 SQuAD
dev paragraphs, top-k by dot product (cosine: the vectors are unit length).

Embeddings: all-MiniLM-L6-v2 when the retrieval component's on-disk cache already
holds the paragraph matrix (`corpus_embeddings`; questions are then embedded by
the same model and cached alike); otherwise a deterministic stand-in: TF-IDF
vectors (the BM25 index's terms and IDF) through a fixed seeded Gaussian
projection to 384 dimensions, L2-normalised. `embedding_source()` says which.

Knobs (exact at 0):
  similarity  precision_reduce of the dot product (1: f32, 2: f16 instead of f64)
  query_topk  loop_perforate of the document loop (document skipping)
Neither has a per-input feature to decide on, so there is no decision tree:
dynamic tuning is the static one. QoS: RBO (p = 0.95) of each question's top-20.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from examples import squad
from examples.kernels.bm25 import corpus_index
from examples.kernels.common import RBO, KernelProgram, rankings, top_k_rows, topk_insert
from frontends import Knob, StaticTransform
from frontends.components.retrieval.text import tokenize

DIM = 384
TOP_K = 20
QUERIES_PER_INPUT = 24
PROJECTION_SEED = 1234
METRIC = RBO


@Knob(static_transform=StaticTransform("precision_reduce", 0))
def similarity(queries: np.ndarray, emb: np.ndarray, q: int, d: int) -> float:
    s = 0.0
    for i in range(emb.shape[1]):
        s += queries[q, i] * emb[d, i]
    return s


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def query_topk(queries: np.ndarray, emb: np.ndarray, q: int, k: int, ids: np.ndarray, vals: np.ndarray) -> int:
    """Every document's similarity to query q; the best k kept in row q of ids/vals."""
    count = 0
    for d in range(emb.shape[0]):
        count = topk_insert(ids, vals, q, count, k, d, similarity(queries, emb, q, d))
    return count


@Knob()
def kb(queries: np.ndarray, emb: np.ndarray, k: int, ids: np.ndarray, vals: np.ndarray, found: np.ndarray) -> int:
    for q in range(queries.shape[0]):
        found[q] = query_topk(queries, emb, q, k, ids, vals)
    return queries.shape[0]


def prepare(queries, emb, k=TOP_K) -> tuple:
    nq = queries.shape[0]
    return (queries, emb, k, np.zeros((nq, k), np.int64), np.zeros((nq, k)), np.zeros(nq, np.int64))


def finish(args: tuple) -> list[np.ndarray]:
    return rankings(args[-3], args[-1])


def example() -> tuple:
    return (np.ones((1, 2)), np.ones((3, 2)))


program = KernelProgram("kb", kb, prepare, finish, example)


def reference(queries, emb, k=TOP_K) -> list[np.ndarray]:
    """numpy: the dot products summed dimension by dimension (as the kernel adds
    them, so equal scores stay equal) and a stable top-k."""
    scores = np.zeros((queries.shape[0], emb.shape[0]))
    for i in range(emb.shape[1]):
        scores += queries[:, i:i + 1] * emb[:, i]
    return list(top_k_rows(scores, k))


# ---------------------------------------------------------------- embeddings


class _CachedOnly:
    """An encoder for `corpus_embeddings` that only reads its cache (embedding the
    2,067 paragraphs on a CPU takes minutes: the kernel inputs never do that)."""

    def __init__(self):
        from frontends.components.retrieval.encoder import MiniLMEncoder

        self._enc = MiniLMEncoder()

    def key(self) -> str:
        return self._enc.key()

    def embed(self, texts):
        raise LookupError("no cached embeddings")


@lru_cache(maxsize=1)
def _minilm_paragraphs() -> np.ndarray | None:
    from frontends.components.retrieval.encoder import corpus_embeddings

    try:
        return corpus_embeddings(list(squad.paragraphs()), _CachedOnly())
    except Exception:  # no cache, or no model package: the projection stands in
        return None


def embedding_source(mode: str = "auto") -> str:
    """"minilm" (cached all-MiniLM-L6-v2 paragraph embeddings) or "projection"."""
    if mode not in ("auto", "minilm", "projection"):
        raise ValueError(f"embeddings must be 'auto', 'minilm' or 'projection', got {mode!r}")
    if mode == "auto":
        return "minilm" if _minilm_paragraphs() is not None else "projection"
    return mode


@lru_cache(maxsize=1)
def _projection() -> np.ndarray:
    index = corpus_index()[0]
    return np.random.default_rng(PROJECTION_SEED).standard_normal((len(index.idf), DIM)) / np.sqrt(DIM)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


@lru_cache(maxsize=1)
def _projected_paragraphs() -> np.ndarray:
    index, r = corpus_index()[0], _projection()
    emb = np.zeros((index.n_docs, DIM))
    for t in range(len(index.idf)):
        lo, hi = index.indptr[t], index.indptr[t + 1]
        emb[index.doc_ids[lo:hi]] += (index.tfs[lo:hi] * index.idf[t])[:, None] * r[t]
    return _unit(emb)


def _projected(texts: Sequence[str]) -> np.ndarray:
    index, r = corpus_index()[0], _projection()
    out = np.zeros((len(texts), DIM))
    for i, text in enumerate(texts):
        for term in tokenize(text):
            t = index.vocab.get(term)
            if t is not None:
                out[i] += index.idf[t] * r[t]
    return _unit(out)


def corpus(mode: str = "auto") -> np.ndarray:
    """(2067, 384) f64 unit paragraph embeddings."""
    if embedding_source(mode) == "minilm":
        emb = _minilm_paragraphs()
        if emb is None:
            raise LookupError("no cached MiniLM paragraph embeddings (run the RAG-dense system once)")
        return np.ascontiguousarray(emb, np.float64)
    return _projected_paragraphs()


def embed_questions(texts: Sequence[str], mode: str = "auto") -> np.ndarray:
    if embedding_source(mode) == "minilm":
        from frontends.components.retrieval.encoder import corpus_embeddings

        return np.ascontiguousarray(corpus_embeddings(list(texts)), np.float64)
    return _projected(texts)


def make_inputs(n_tune: int, seed: int = 0, per_input: int = QUERIES_PER_INPUT, embeddings: str = "auto"):
    """(tune, eval) inputs, eval = 5x tune: batches of question embeddings from the
    tuning and the evaluation SQuAD articles (disjoint), seeded; the paragraph
    matrix is one array shared by every input."""
    tune_q, eval_q = squad.sample_questions(n_tune * per_input, seed)
    emb = corpus(embeddings)
    vecs = embed_questions([q.question for q in tune_q + eval_q], embeddings)
    tune_v, eval_v = vecs[:len(tune_q)], vecs[len(tune_q):]
    chunks = lambda v: [(np.ascontiguousarray(v[i:i + per_input]), emb)  # noqa: E731
                        for i in range(0, len(v), per_input)]
    return chunks(tune_v), chunks(eval_v)
