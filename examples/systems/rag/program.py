"""A RAG system as one decorated program: its retrieval and answer models are
components (`frontends.components.declare`), so the IR holds them as
`component.retrieve` / `component.generate` ops whose attributes the knobs
rewrite, and a configuration is one run of approx-opt's pipeline.

The program (built by `rag_program`):

    def rag(question):                      # the pipeline
        hits = retrieve(question)           # component.retrieve
        passages = [corpus[i] for i in hits.ids]
        return read(question, hits, passages)

    @Knob(decision_tree=ladder on state(hits), func_substitute)
    def read(question, hits, passages):     # the answer step, one func of the same module
        return answer(question, passages).text        # component.generate

`read` and its variant 1 call the answer op through `prompt(question, hits,
passages)`; with the LLM, its ladder on state(hits) (transform param) sets the
answer op's prompt budgets per question (`answer.context_tokens` and `answer.compress_tokens`,
decided: decision k sets both to their k-th value, one step of prompt length).

The answer step's variants (`func_substitute`, per question or static), lowered
into the module too, so their component ops take the same knobs:
  1 the answer model on the top passage only
  2 the cheap model on every retrieved passage
  3 the cheap model on the top passage only
  4 (the LLM) the answer model without its verifier, on every retrieved passage
The answer model is the pro extractive reader (cheap model: the fast reader,
`answer_models`) or the fine-tuned Gemma 3 270M verifying the pro reader's span (cheap
model: the pro reader, `llm_answer_models`).
`RagSystem` is its Program (`program.SystemProgram`) with what the tuning scripts
need besides (exact answers, the retrieval stages' share of the time, the decision's
states)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from examples.systems.common import answer_model_name, gemma, readers, reuse_answers
from examples.systems.program import SystemProgram
from frontends import DecisionTree, Knob
from frontends.components.declare import Generate, Tune
from frontends.components.llm.policy import paying_precisions
from frontends.components.llm.verifier import Verified

TOP_K = 3  # passages the exact program reads
CASCADE_THRESHOLDS = (0.2, 0.1, 0.05)  # reader confidence (p_start * p_end) accepting the fast answer
LLM_TOKENS = 16  # new tokens of the exact LLM program
LLM_CASCADE_THRESHOLDS = (0.6, 0.4, 0.2)  # pro-reader confidence accepting the reader's answer instead of the LLM's
LLM_TOKEN_EXITS = (99, 95, 90, 80)  # percent: an exit's top-token probability letting a decoded token leave there
PROMPT_TOKENS = (320, 200)  # answer.context_tokens: the passages' first tokens (3 SQuAD passages: ~365)
COMPRESS_TOKENS = (240, 140)  # answer.compress_tokens: then the sentences sharing most words with the question


def answer_models(fast, pro) -> tuple[Generate, Generate]:
    """The answer component (pro; a cascade from fast when `answer.model` > 0) and its
    fast twin for the fast variants: one label, so they share every knob (the cascade
    leaves the twin's op alone: it already calls the cheaper model). Values of every
    knob run from the least to the most approximate."""
    tune = [Tune.cascade([fast], CASCADE_THRESHOLDS), Tune.param("max_new_tokens", 16, 8),
            Tune.param("passages", 2, 1), Tune.param("context_chars", 800, 500), Tune.param("sentences", 3, 2),
            Tune.precision("bfloat16", "float16")]
    return Generate("answer", pro, tune=tune), Generate("answer", fast, tune=tune)


def llm_answer_models(reader, llm) -> tuple[Generate, Generate, Generate]:
    """The generative answer component (the exact program: `llm` in float32 with all its layers, every
    retrieved passage in full, LLM_TOKENS new tokens, verifying the `reader`'s span
    (`verifier.Verified`: more accurate than either alone); a cascade from the reader when
    `answer.model` > 0), the reader as its cheap twin for the cheap variants and `llm` alone (no
    verifier) for the variant that skips the verifier. Each value is a step in cost and quality
    (measured on tuning questions, one thread): the prefill of ~500 prompt tokens is most of the time on
    a CPU, so the context values (keeping 31-79 % of the passages' characters) cut most; the model
    answers in ~4-8 tokens, so 4 and 2 new tokens cut long answers for ~1.1-1.2x; 25 / 20 layers give
    1.24 / 1.39x (trained exits, docs/components.md); a per-token exit at 99-80 % confidence 0.97-1.04x
    (decode is ~22 % of the time). The precision values are those measured to pay on this machine
    (`llm_precisions`): bfloat16 prefill runs 3.2x faster than float32 on a CPU with AMX and 5x slower
    on one without bf16 instructions. The prompt budgets (in the model's tokens) are decided per
    question by `prompt`'s ladder (`rag_program`): the passages together cut to PROMPT_TOKENS, then
    brought to COMPRESS_TOKENS by dropping the sentences sharing fewest words with the question."""
    precisions = llm_precisions(llm)
    tune = [Tune.precision(*precisions)] if precisions else []  # first: where it pays, the gentlest step
    tune += [Tune.cascade([reader], LLM_CASCADE_THRESHOLDS), Tune.param("max_new_tokens", 4, 2),
             Tune.param("passages", 2, 1), Tune.param("context_chars", 600, 350), Tune.param("sentences", 3, 2),
             Tune.param("layers", 25, 20), Tune.param("token_exit", *LLM_TOKEN_EXITS),
             Tune.param("context_tokens", *PROMPT_TOKENS, decided=True),
             Tune.param("compress_tokens", *COMPRESS_TOKENS, decided=True)]
    # early exits only where the model's adapters trained them (an untrained cut answers junk)
    tune = [t for t in tune if t.parameter not in ("layers", "token_exit") or t.parameter in llm.supports]
    return (Generate("answer", Verified(llm, reader), max_new_tokens=LLM_TOKENS, tune=tune),
            Generate("answer", reader, tune=tune), Generate("answer", llm, max_new_tokens=LLM_TOKENS, tune=tune))


def llm_precisions(llm) -> list[str]:
    """The LLM's precision values that it builds (the answer op's cascade stage, the
    reader, runs its own where it has none of one), that answer RAG questions faster than
    float32 on this machine, and as float32 does on most of them (`policy.paying_precisions` on
    the library's RAG probe, `policy.rag_probe`)."""
    return paying_precisions(llm, max_new_tokens=LLM_TOKENS)


def rag_program(name: str, corpus: Sequence[str], retrieve, answer: Generate, fast: Generate,
                state: Callable, thresholds: Sequence[int], upper: int, alone: Generate | None = None):
    """The decorated pipeline (see the module docstring); `state(hits) -> int` is the
    answer step's decision state, `thresholds` its ladder (and the prompt's, when the
    answer op has decided knobs); `alone`: the answer model without its verifier (variant 4)."""
    decided = [t for t in answer.tune if t.decided]

    budgets = DecisionTree(state, [1], list(thresholds), [0] * (len(thresholds) + 1), "param",
                           thresholds_lower=[0], thresholds_upper=[upper],
                           decision_values=list(range(len(decided[0].values) + 1))) if decided else None

    @Knob(decision_tree=budgets)
    def prompt(question, hits, passages):
        """Answer with the prompt budgets decided for this question (if any)."""
        return answer(question, passages).text

    def read_top(question, hits, passages):
        return prompt(question, hits, passages[:1])

    def read_fast(question, hits, passages):
        return fast(question, passages).text

    def read_fast_top(question, hits, passages):
        return fast(question, passages[:1]).text

    def read_alone(question, hits, passages):
        return alone(question, passages).text

    variants = {1: read_top, 2: read_fast, 3: read_fast_top} | ({4: read_alone} if alone is not None else {})

    @Knob(decision_tree=DecisionTree(state, [1], list(thresholds), [0] * (len(thresholds) + 1), "func_substitute",
                                     approx_kernels=variants, thresholds_lower=[0], thresholds_upper=[upper]))
    def read(question, hits, passages):
        """Answer from every retrieved passage."""
        return prompt(question, hits, passages)

    def rag(question):
        """Retrieve, gather the passages, answer."""
        hits = retrieve(question)
        passages = [corpus[i] for i in hits.ids]
        return read(question, hits, passages)

    rag.__name__ = rag.__qualname__ = name
    return Knob()(rag)


def rag_system(name: str, corpus: Sequence[str] | None, retrieval: Callable, state: Callable,
               thresholds: Sequence[int], upper: int, stage_knobs: dict[str, Sequence[str]],
               llm: bool = False) -> RagSystem:
    """The RAG system `name` (`llm`: `name`_llm, Gemma 3 answering) over `corpus`
    (None: all SQuAD dev paragraphs): `retrieval(corpus)` gives its retriever (whose
    exact build is `RagSystem.search`), its retrieval by it (a component op, or a
    decorated function of them) and the retrieval's costly deterministic providers,
    kept beside the answer models (`reuse`); `state`, `thresholds` and `upper` are the
    answer step's decision (`rag_program`)."""
    from examples import squad

    corpus = tuple(corpus or squad.paragraphs())
    retriever, retrieve, keep = retrieval(corpus)
    name = f"{name}_llm" if llm else name
    answer, cheap, *alone = llm_answer_models(readers()[1], gemma()) if llm else answer_models(*readers())
    program = rag_program(name, corpus, retrieve, answer, cheap, state, thresholds, upper, *alone)
    reuse = [answer.provider, cheap.provider, *(a.provider for a in alone), *keep] if reuse_answers(llm) else ()
    return RagSystem(name, program, corpus, retriever.build({}), state, stage_knobs=stage_knobs,
                     model=answer_model_name(llm), reuse=reuse)


class RagSystem(SystemProgram):
    """A RAG system's Program (`SystemProgram`), plus its `corpus`, `search` (the exact
    retrieval, with `prepare` / `run` stages), `state` (the answer step's decision state
    of a retrieval's hits) and the knobs acting on each retrieval stage alone
    (`stage_knobs`)."""

    def __init__(self, name: str, program, corpus: Sequence[str], search, state: Callable,
                 stage_knobs: dict[str, Sequence[str]] | None = None, model: str = "", reuse: Sequence = ()):
        super().__init__(name, program, model, reuse)
        self.search, self.state = search, state
        self.corpus = tuple(corpus)
        self.stage_knobs = {k: tuple(v) for k, v in (stage_knobs or {}).items()}

    def stage_shares(self, questions: Sequence[str]) -> dict[str, float]:
        """Share of the exact program's time in each retrieval stage over `questions`:
        `prepare` (preprocessing / query embedding) and `run` (the scoring kernel), thread
        CPU time, against the exact program's profile of them (`exact_profile`: the one
        the tuner has just measured; the stages alone take milliseconds)."""
        total = sum(v["seconds"] for v in self.exact_profile(questions).values())
        self.search.run(self.search.prepare(questions[0]))  # warm: a first call may compile
        spent = {"prepare": 0.0, "run": 0.0}
        for q in questions:
            t0 = time.thread_time()
            prepared = self.search.prepare(q)
            t1 = time.thread_time()
            self.search.run(prepared)
            spent["prepare"] += t1 - t0
            spent["run"] += time.thread_time() - t1
        return {k: v / total if total > 0 else 0.0 for k, v in spent.items()}

    def negligible_knobs(self, questions: Sequence[str], share: float = 0.02) -> dict[str, float]:
        """Knobs of retrieval stages taking less than `share` of the exact program's time
        (removing such a stage entirely would give at most 1 / (1 - share)), with the
        stage's measured share; the top-k knob is not among them (it changes what is read)."""
        shares = self.stage_shares(questions)
        return {k: shares[stage] for stage, knobs in self.stage_knobs.items() if shares[stage] < share for k in knobs}

    def states(self, questions: Sequence[str]) -> list[int]:
        """The decision's state (scaled retrieval margin) of each question, retrieval exact."""
        return [self.state(self.search(q)) for q in questions]
