"""What the two RAG systems share: the readers, the answer step with its per-question
decision, and `RagSystem`, the autotuner Program that composes the parts.

Why a composed Program: the decorator gives one function one set of annotations,
and a decision tree reads only the function's own arguments. The retrieval score
the decision needs exists only after retrieval, so each system is two decorated
functions (the pipeline, and the answer step `read` whose decision tree reads the
retrieval hits) plus the knobbed components they call (retriever, answer models,
query encoder), all passed in as arguments. `RagSystem.knobs()` is the union of
the parts' knobs (names are distinct), `build(config)` builds every part for its
share of `config` and returns `question -> answer text`.

The answer step's variants (`func_substitute`, chosen per question by the decision
on the retrieval margin, or for every question in static mode):
  0 the configured reader on every retrieved passage (exact)
  1 the configured reader on the top passage only
  2 the fast reader on every retrieved passage
  3 the fast reader on the top passage only
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from approx_opt.config import KnobSpec
from autotuner.metrics import Metric, containment, token_f1
from autotuner.program import exact_config
from examples import squad

MODELS = Path(__file__).resolve().parents[1] / "models"
TOP_K = 3  # passages the exact program reads
# Values of every list knob run from the least to the most approximate, so a knob's largest value (the tuner's
# first trials set each knob there) is its most aggressive one, and neighbouring values have neighbouring effects.
CASCADE_THRESHOLDS = (0.2, 0.1, 0.05)  # reader confidence (p_start * p_end) accepting the fast answer
NARROW = {"answer.precision": [0, 1]}  # float16 (value 2) runs 4x slower than float32 on these CPUs (no fp16 units)


def answer_qos(output: str, reference) -> float:
    """QoS of one answer. Against the gold answers (a tuple: the held-out evaluation)
    the paper's: a gold answer appears in the output (SQuAD normalisation,
    `autotuner.metrics.containment`, whole words). Against the exact program's answer (a string:
    tuning) SQuAD's token F1 between the two: every tuning question counts, not only
    those the exact program gets right, a loss is never negative, and a configuration
    that changes answers a little ranks between one that changes none and one that
    changes many (a pass/fail score ties them on a few dozen tuning questions)."""
    if isinstance(reference, str):
        return token_f1(output, reference)
    return containment(output, reference)


METRIC = Metric("gold answer contained (tuning: token F1 to the exact answer)", answer_qos)


def one_thread() -> None:
    """Torch on one thread, tokenizers in the calling thread: deterministic answers,
    and CPU-time measurements that see all the work (the machines are shared)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(1)


@functools.lru_cache(maxsize=1)
def readers():
    """(fast, pro): the trained MiniLM extractive readers (3 and 6 layers)."""
    from frontends.components.llm import ExtractiveReader

    one_thread()
    return (ExtractiveReader.from_path(MODELS / "reader_l3.npz", name="fast"),
            ExtractiveReader.from_path(MODELS / "reader_l6.npz", name="pro"))


def answer_components():
    """The answer component (ladder fast -> pro: a cascade when `model` > 0) and its
    fast-only twin for the answer step's fast variants; same knobs otherwise."""
    from frontends.components.llm import AnswerComponent

    fast, pro = readers()
    knobs = dict(max_new_tokens=(16, 8), passages=(2, 1), context_chars=(800, 500), sentences=(3, 2),
                 precision=True)
    return (AnswerComponent([fast, pro], name="answer", thresholds=CASCADE_THRESHOLDS, **knobs),
            AnswerComponent([fast], name="answer", **knobs))


# ---------------------------------------------------------------- the answer step's variants
# Same signature as `read` (func_substitute calls approx_read_<k> with its arguments).

def read_top(question, hits, passages, reader, fast):
    return reader(question, passages[:1]).text


def read_fast(question, hits, passages, reader, fast):
    return fast(question, passages).text


def read_fast_top(question, hits, passages, reader, fast):
    return fast(question, passages[:1]).text


VARIANTS = {1: read_top, 2: read_fast, 3: read_fast_top}


def margin(hits) -> float:
    """Score of the best hit minus the second's: a large margin means retrieval is
    sure of its top passage (measured on the tuning articles: BM25 margin >= 7.7
    puts the gold paragraph first 100 % of the time, against 80 % overall)."""
    scores = hits.scores
    return float(scores[0] - scores[1]) if len(scores) > 1 else float(scores[0]) if len(scores) else 0.0


# ---------------------------------------------------------------- the composed program

class TimeUp(KeyboardInterrupt):
    """A search's time budget is spent: raised by `RagSystem.build` between trials,
    which the tuner treats as Ctrl-C (finished trials are kept)."""


class RagRun:
    """One configuration of a RAG system: `run(question) -> answer text`."""

    def __init__(self, pipeline, search, read, corpus, reader, fast, record: dict | None = None):
        self.pipeline, self.search, self.read = pipeline, search, read
        self.corpus, self.reader, self.fast, self.record = corpus, reader, fast, record

    def __call__(self, question: str) -> str:
        text = self.pipeline(question, self.search, self.read, self.corpus, self.reader, self.fast)
        if self.record is not None:
            self.record[question] = text
        return text


class RagSystem:
    """The autotuner's Program for one RAG system (see the module docstring).

    `retriever`: a Program (`knobs`, `build`) whose built object answers
    `search(question) -> Hits`; `extra`: knobbed parts configured before the
    retriever is built (the dense query encoder), passed to `make_search`."""

    def __init__(self, name: str, pipeline, read, retriever, corpus: Sequence[str],
                 make_search: Callable | None = None, extra: Sequence = (),
                 stage_knobs: dict[str, Sequence[str]] | None = None):
        one_thread()
        self.name, self.pipeline, self.read, self.retriever = name, pipeline, read, retriever
        self.corpus = tuple(corpus)
        self.answer, self.answer_fast = answer_components()
        self.make_search, self.extra = make_search, list(extra)
        self.stage_knobs = {k: tuple(v) for k, v in (stage_knobs or {}).items()}  # retrieval stage -> its knobs
        self.exact_answers: dict[str, str] = {}  # answers of the exact configuration, as it runs
        self.deadline: float | None = None  # time.perf_counter() after which building a new configuration stops
        self._lock = threading.Lock()

    def parts(self) -> list:
        return [self.retriever, *self.extra, self.answer, self.read]

    def knobs(self) -> list[KnobSpec]:
        specs = [s for part in self.parts() for s in part.knobs()]
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ApproxError(f"two parts of {self.name} have a knob of the same name: {names}", where=self.name)
        return specs

    def split(self, config: dict | None) -> list[dict]:
        """`config` cut into one configuration per part (unknown knobs are an error)."""
        config = dict(config or {})
        out = []
        for part in self.parts():
            names = {s.name for s in part.knobs()}
            out.append({k: config.pop(k) for k in list(config) if k in names})
        if config:
            known = ", ".join(s.name for s in self.knobs())
            raise ApproxError(f"unknown knob '{next(iter(config))}' (knobs: {known})", where=self.name)
        return out

    def build(self, config: dict | None = None) -> RagRun:
        exact = is_exact(config)
        if self.deadline is not None and not exact and time.perf_counter() > self.deadline:
            raise TimeUp(f"{self.name}: time budget spent")
        ret_cfg, *extra_cfg, ans_cfg, read_cfg = self.split(config)
        with self._lock:
            if self.make_search is not None:
                search = self.make_search(ret_cfg, *[p.build(c) for p, c in zip(self.extra, extra_cfg)])
            else:
                search = self.retriever.build(ret_cfg)
            reader = self.answer.build(ans_cfg)
            fast = self.answer_fast.build({k: v for k, v in ans_cfg.items() if k != "answer.model"})
            read = self.read.build(read_cfg)
            pipeline = self.pipeline.build({})
        record = self.exact_answers if exact else None
        return RagRun(pipeline, search, read, self.corpus, reader, fast, record)

    def exact(self) -> RagRun:
        return self.build(exact_config(self))

    def profile(self, questions: Sequence[str]) -> dict[str, float]:
        """Share of the exact program's time in each retrieval stage: `prepare`
        (preprocessing / query embedding) and `run` (the scoring kernel), thread CPU time."""
        run = self.exact()
        spent = {"prepare": 0.0, "run": 0.0, "total": 0.0}
        for q in questions:
            run(q)  # warm
            t0 = time.thread_time()
            prepared = run.search.prepare(q)
            t1 = time.thread_time()
            run.search.run(prepared)
            t2 = time.thread_time()
            run(q)
            t3 = time.thread_time()
            spent["prepare"] += t1 - t0
            spent["run"] += t2 - t1
            spent["total"] += t3 - t2
        return {k: v / spent["total"] for k, v in spent.items() if k != "total"}

    def negligible_knobs(self, questions: Sequence[str], share: float = 0.02) -> dict[str, float]:
        """Knobs of retrieval stages taking less than `share` of the exact program's time
        (removing such a stage entirely would give at most 1 / (1 - share)), with the
        stage's measured share; the top-k knob is not among them (it changes what is read)."""
        shares = self.profile(questions)
        return {k: shares[stage] for stage, knobs in self.stage_knobs.items() if shares[stage] < share for k in knobs}

    def states(self, questions: Sequence[str]) -> list[int]:
        """The decision's state (scaled retrieval margin) of each question, retrieval exact."""
        search = self.exact().search
        state = self.read.knob_config.decision_tree.state_function
        return [state(search(q)) for q in questions]

    def ir(self, after: bool = False, config: dict | None = None) -> str:
        """The decorated parts' IR (after the pipeline with `config`), headed by the
        settings of the knobbed components (which run as Python objects)."""
        parts = self.split(config)
        head = [f"// {self.name}: knobbed components (Python objects), as configured"]
        for part, cfg in zip(self.parts()[:-1], parts[:-1]):
            for spec in part.knobs():
                head.append(f"//   {spec.name} ({spec.transform_type}) = {cfg.get(spec.name, {'knob_val': 0})}")
        body = [self.pipeline.ir(after=after), self.read.ir(after=after, config=parts[-1] if after else None)]
        return "\n".join(head) + "\n" + "\n".join(body)


def is_exact(config: dict | None) -> bool:
    """Every knob at 0 (static), or every decision 0 (a ladder)."""
    for setting in (config or {}).values():
        if setting.get("knob_val", 0) != 0 or any(setting.get("decisions", ())) or \
                any(setting.get("tree_decisions", ())):
            return False
    return True


def held_out_questions(n_tune: int, seed: int = 0):
    """(questions, gold answers) of the held-out evaluation split of `question_sets`:
    what `approx-tune verify` re-measures a RAG system's front on."""
    return question_sets(n_tune, seed)[1]


def question_sets(n_tune: int, seed: int = 0):
    """(tune questions, tune answers), (evaluation questions, evaluation answers):
    disjoint articles, evaluation 5x tuning, seeded (examples/squad.py)."""
    tune, evaluation = squad.sample_questions(n_tune, seed)
    return ([q.question for q in tune], [q.answers for q in tune]), \
        ([q.question for q in evaluation], [q.answers for q in evaluation])
