"""RAG-dense: embed the question with all-MiniLM-L6-v2, similarity search over the
embeddings of all 2,067 SQuAD dev paragraphs (cached under .cache/approx), top-3
passages, answer with the extractive reader (pro, 6 layers; or fast, 3);
RAG-dense-LLM (`llm_system()`): the same program answering with the fine-tuned
Gemma 3 270M (16 new tokens), the pro reader as its cheap model.

One decorated program (`rag.program.rag_program`); its components are IR:
`component.embed` (the query encoder, rag/query_encoder.py), `component.retrieve`
(similarity and top-k in the JIT-compiled kernel of
`frontends.components.retrieval.dense`) and `component.generate` (the readers).

Knobs (all exact at 0):
  query.encoder, query.precision   the embed op: first 5 / 4 layers; bfloat16
  dense.top_k      param: 2 or 1 passages instead of 3
  dense.dims       param: the kernel's dimension loop (loop_truncate k: the first ceil(384/k))
  dense.docs       param: the kernel's document subsetting (loop_perforate k: every k-th)
  dense.precision  precision_reduce: the kernel's dot product in f32 or f16 (f64 exact)
  answer.*         the answer op: cascade fast -> pro (`model`), max_new_tokens, passages,
                   context_chars, sentences, precision (bfloat16, float16); with the LLM
                   (`rag.program.llm_answer_models`): cascade pro reader -> Gemma 3 verifying its span,
                   max_new_tokens, passages, context_chars, sentences, precision
  prompt           (LLM) the answer op's prompt budgets per question (context_tokens,
                   compress_tokens decided together), a ladder on the same margin
  read             the answer step: variant per question (rag_program), decided by the
                   cosine margin between the first and second hit (x1000, as an i32)
"""

from __future__ import annotations

import functools

from examples.systems.common import margin_state
from examples.systems.program import program_attribute
from examples.systems.rag.program import TOP_K, RagSystem, rag_system

SCALE, MARGIN_UPPER = 1000, 250  # state = round(1000 * margin); margins above 0.25 are all "sure"
KERNEL_VALUES = (2, 3, 4, 8)  # loop_truncate / loop_perforate factors of the similarity kernel's loops
LAYERS = (5, 4)  # the encoder's cheaper variants: first 5 / 4 layers

# retrieval stage -> knobs acting on it alone
STAGES = {"prepare": ["query.encoder", "query.precision"], "run": ["dense.dims", "dense.docs", "dense.precision"]}


def dense_margin(hits) -> int:
    return margin_state(hits, SCALE)


def dense_retrieval(corpus: tuple[str, ...]):
    """The dense retriever over `corpus`, its retrieval (the query's embedding, then
    the similarity search: two component ops, with their knobs), and the query
    encoders, whose embeddings the tuner's untimed passes keep (deterministic, and
    nearly all of retrieval's time: a configuration scored from kept outputs then
    runs no encoder)."""
    from examples.systems.rag.query_encoder import QueryEncoder
    from frontends import Knob
    from frontends.components.declare import Embed, Retrieve, Tune
    from frontends.components.retrieval import DenseRetriever

    retriever = DenseRetriever(corpus, top_k=TOP_K)
    encoder = QueryEncoder(retriever.encoder)
    fewer_layers = [encoder.first_layers(n) for n in LAYERS]
    query = Embed("query", encoder, tune=[Tune.substitute("encoder", *fewer_layers), Tune.precision("bfloat16")])
    dense = Retrieve("dense", retriever, top_k=TOP_K,
                     tune=[Tune.param("top_k", 2, 1), Tune.param("dims", *KERNEL_VALUES),
                           Tune.param("docs", *KERNEL_VALUES), Tune.precision("float32", "float16")])

    @Knob()
    def search(question):
        return dense(query(question))

    return retriever, search, (encoder, *fewer_layers)


@functools.lru_cache(maxsize=4)
def system(corpus: tuple[str, ...] | None = None, llm: bool = False) -> RagSystem:
    """The system over `corpus` (default: all SQuAD dev paragraphs), built once;
    `llm`: Gemma 3 answers (RAG-dense-LLM)."""
    return rag_system("rag_dense", corpus, dense_retrieval, dense_margin, [40, 80], MARGIN_UPPER, STAGES, llm)


def llm_system(corpus: tuple[str, ...] | None = None) -> RagSystem:
    """RAG-dense-LLM: the system answering with Gemma 3 270M."""
    return system(corpus, llm=True)


__getattr__ = program_attribute(__name__, system)  # `approx-tune run examples.systems.rag.dense:program ...`
