"""Retrieval components: BM25 and MiniLM dense retrieval whose scoring
kernels are ApproxMLIR-annotated MLIR, JIT-compiled, and tunable as `Program`s;
plus the ranking measures (RBO, recall@k) the tuner scores them with."""

from frontends.components.retrieval.bm25 import Bm25Retriever, Bm25Search
from frontends.components.retrieval.bm25_index import Bm25Index, bm25_scores
from frontends.components.retrieval.dense import DenseRetriever, DenseSearch
from frontends.components.retrieval.encoder import MiniLMEncoder, corpus_embeddings
from frontends.components.retrieval.metrics import rbo, recall_at_k
from frontends.components.retrieval.ranking import Hits, top_k

__all__ = ["Bm25Index", "Bm25Retriever", "Bm25Search", "DenseRetriever", "DenseSearch", "Hits", "MiniLMEncoder",
           "bm25_scores", "corpus_embeddings", "rbo", "recall_at_k", "top_k"]
