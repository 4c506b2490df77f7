"""RAG-BM25: preprocess the question, BM25 over all 2,067 SQuAD dev paragraphs,
top-3 passages, answer with the extractive reader (pro, 6 layers; or fast, 3);
RAG-BM25-LLM (`llm_system()`): the same program answering with the fine-tuned
Gemma 3 270M (16 new tokens), the pro reader as its cheap model.

One decorated program (`rag.program.rag_program`); its components are IR:
`component.retrieve` (BM25, scoring and top-k in the JIT-compiled kernel of
`frontends.components.retrieval.bm25`) and `component.generate` (the readers).

Knobs (all exact at 0):
  bm25.top_k       param: 2 or 1 passages instead of 3
  bm25.preprocess  param: 1 skips stemming, 2 also keeps stopwords (documents indexed alike)
  bm25.terms       param: the scoring kernel's term skipping (loop_truncate k: the ceil(n/k) rarest terms)
  bm25.docs        param: the scoring kernel's corpus subsetting (loop_perforate k: every k-th document)
  answer.*         the answer op: cascade fast -> pro (`model`), max_new_tokens, passages,
                   context_chars, sentences, precision (bfloat16, float16); with the LLM
                   (`rag.program.llm_answer_models`): cascade pro reader -> Gemma 3 verifying its span,
                   max_new_tokens, passages, context_chars, sentences, precision
  prompt           (LLM) the answer op's prompt budgets per question (context_tokens,
                   compress_tokens decided together), a ladder on the same margin
  read             the answer step: variant per question (rag_program), decided by the
                   BM25 margin between the first and second hit (x100, as an i32)

`system()` builds the Program once (the BM25 index, the readers, the JIT kernel);
`llm_system()` the LLM one.
"""

from __future__ import annotations

import functools

from examples.systems.common import margin_state
from examples.systems.program import program_attribute
from examples.systems.rag.program import TOP_K, RagSystem, rag_system

SCALE, MARGIN_UPPER = 100, 2000  # state = round(100 * margin); margins above 20 are all "sure"
KERNEL_VALUES = (2, 3, 4, 8)  # loop_truncate / loop_perforate factors of the scoring kernel's loops

# retrieval stage -> knobs acting on it alone
STAGES = {"prepare": ["bm25.preprocess"], "run": ["bm25.terms", "bm25.docs"]}


def bm25_margin(hits) -> int:
    return margin_state(hits, SCALE)


def bm25_retrieval(corpus: tuple[str, ...]):
    """The BM25 retriever over `corpus`, its component op with its knobs, and no
    provider worth keeping (scoring costs microseconds)."""
    from frontends.components.declare import Retrieve, Tune
    from frontends.components.retrieval import Bm25Retriever

    retriever = Bm25Retriever(corpus, top_k=TOP_K)
    return retriever, Retrieve("bm25", retriever, top_k=TOP_K,
                               tune=[Tune.param("top_k", 2, 1), Tune.param("preprocess", 1, 2),
                                     Tune.param("terms", *KERNEL_VALUES), Tune.param("docs", *KERNEL_VALUES)]), ()


@functools.lru_cache(maxsize=4)
def system(corpus: tuple[str, ...] | None = None, llm: bool = False) -> RagSystem:
    """The system over `corpus` (default: all SQuAD dev paragraphs), built once;
    `llm`: Gemma 3 answers (RAG-BM25-LLM)."""
    return rag_system("rag_bm25", corpus, bm25_retrieval, bm25_margin, [400, 800], MARGIN_UPPER, STAGES, llm)


def llm_system(corpus: tuple[str, ...] | None = None) -> RagSystem:
    """RAG-BM25-LLM: the system answering with Gemma 3 270M."""
    return system(corpus, llm=True)


__getattr__ = program_attribute(__name__, system)  # `approx-tune run examples.systems.rag.bm25:program ...`
