"""RAG-dense: embed the question with all-MiniLM-L6-v2, similarity search over the
embeddings of all 2,067 SQuAD dev paragraphs (cached under .cache/approx), top-3
passages, answer with the extractive reader (pro, 6 layers; or fast, 3).

Knobs (all exact at 0):
  query.layers, query.precision    the query encoder (query_encoder.py)
  dense_dot, dense_dot#2, dense_docs, dense
              the similarity kernel (frontends.components.retrieval.dense): dimensions,
              precision of the dot product, document subsetting, top-k
  answer.*    the answer component: cascade fast -> pro, passages, sentences or characters per
              passage, answer tokens, precision (bfloat16)
  read        the answer step: variant per question (common.VARIANTS), decided by the
              cosine margin between the first and second hit (x1000, as an i32)
"""

from __future__ import annotations

import functools

from examples import squad
from examples.systems.common import TOP_K, VARIANTS, RagSystem, margin
from frontends import DecisionTree, Knob

SCALE, MARGIN_UPPER = 1000, 250  # state = round(1000 * margin); margins above 0.25 are all "sure"


def dense_margin(hits) -> int:
    return int(round(SCALE * margin(hits)))


@Knob(decision_tree=DecisionTree(dense_margin, [1], [40, 80], [0, 0, 0], "func_substitute", approx_kernels=VARIANTS,
                                 thresholds_lower=[0], thresholds_upper=[MARGIN_UPPER]))
def read(question, hits, passages, reader, fast):
    """Answer from every retrieved passage with the configured reader."""
    return reader(question, passages).text


@Knob()
def rag_dense(question, search, read, corpus, reader, fast):
    """Retrieve, gather the passages, answer (the built parts come in as arguments)."""
    hits = search(question)
    passages = [corpus[i] for i in hits.ids]
    return read(question, hits, passages, reader, fast)


def _search(retriever, config: dict, query):
    """The retriever's kernel built for `config`, embedding questions with `query`."""
    search = retriever.build(config)
    search.encoder = query
    return search


# retrieval stage -> knobs acting on it alone
STAGES = {"prepare": ["query.layers", "query.precision"], "run": ["dense_dot", "dense_dot#2", "dense_docs"]}


@functools.lru_cache(maxsize=2)
def system(corpus: tuple[str, ...] | None = None) -> RagSystem:
    """The system over `corpus` (default: all SQuAD dev paragraphs), built once."""
    from examples.systems.query_encoder import QueryEncoder
    from frontends.components.retrieval import DenseRetriever

    corpus = corpus or squad.paragraphs()
    retriever = DenseRetriever(corpus, top_k=TOP_K, top_k_values=(2, 1))
    return RagSystem("rag_dense", rag_dense, read, retriever, corpus,
                     make_search=functools.partial(_search, retriever), extra=[QueryEncoder(retriever.encoder)],
                     stage_knobs=STAGES)


def __getattr__(name: str):
    if name == "program":  # `approx-tune run examples.systems.rag_dense:program ...`
        return system()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
