"""RAG-BM25: preprocess the question, BM25 over all 2,067 SQuAD dev paragraphs,
top-3 passages, answer with the extractive reader (pro, 6 layers; or fast, 3).

Knobs (all exact at 0):
  preprocess, bm25_terms, bm25_docs, bm25   the retriever (frontends.components.retrieval.bm25):
              simplified preprocessing, term skipping, corpus subsetting, top-k
  answer.*    the answer component: cascade fast -> pro, passages, sentences or characters per
              passage, answer tokens, precision (bfloat16)
  read        the answer step: variant per question (common.VARIANTS), decided by the
              BM25 margin between the first and second hit (x100, as an i32)

`system()` builds the Program once (the BM25 index, the readers, the JIT kernel).
"""

from __future__ import annotations

import functools

from examples import squad
from examples.systems.common import TOP_K, VARIANTS, RagSystem, margin
from frontends import DecisionTree, Knob

SCALE, MARGIN_UPPER = 100, 2000  # state = round(100 * margin); margins above 20 are all "sure"


def bm25_margin(hits) -> int:
    return int(round(SCALE * margin(hits)))


@Knob(decision_tree=DecisionTree(bm25_margin, [1], [400, 800], [0, 0, 0], "func_substitute", approx_kernels=VARIANTS,
                                 thresholds_lower=[0], thresholds_upper=[MARGIN_UPPER]))
def read(question, hits, passages, reader, fast):
    """Answer from every retrieved passage with the configured reader."""
    return reader(question, passages).text


@Knob()
def rag_bm25(question, search, read, corpus, reader, fast):
    """Retrieve, gather the passages, answer (the built parts come in as arguments)."""
    hits = search(question)
    passages = [corpus[i] for i in hits.ids]
    return read(question, hits, passages, reader, fast)


# retrieval stage -> knobs acting on it alone
STAGES = {"prepare": ["preprocess"], "run": ["bm25_terms", "bm25_docs"]}


@functools.lru_cache(maxsize=2)
def system(corpus: tuple[str, ...] | None = None) -> RagSystem:
    """The system over `corpus` (default: all SQuAD dev paragraphs), built once."""
    from frontends.components.retrieval import Bm25Retriever

    corpus = corpus or squad.paragraphs()
    retriever = Bm25Retriever(corpus, top_k=TOP_K, top_k_values=(2, 1))
    return RagSystem("rag_bm25", rag_bm25, read, retriever, corpus, stage_knobs=STAGES)


def __getattr__(name: str):
    if name == "program":  # `approx-tune run examples.systems.rag_bm25:program ...`
        return system()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
