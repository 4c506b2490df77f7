"""The agent's questions: NQ-open augmented with questions that need each tool, as
ApproxMLIR's LLM + tools agent (appendix B.8) is evaluated.

How they are made (seeded; `items(part, n, seed)`, round-robin over the six kinds so
any first n are balanced):
- pagerank: a seeded power-law graph (its number names it); four pages drawn from the
  exact top-100; gold: the one the exact kernel ranks highest.
- kmeans: a seeded point set; a random point; gold: the colour naming the cluster whose
  exact final centroid is nearest to it.
- lavamd: a seeded particle system; a random particle; gold: its exact potential to the
  nearest ten (so containment is meaningful for a number).
- bm25 / kb: SQuAD dev questions, kept where the exact kernel's top paragraph holds a
  gold answer; gold: SQuAD's answers.
- none: NQ-open dev questions (no tool); gold: NQ's answers.
Every gold answer of a tool question is read off the exact tool's own output
(`agent_tools`). Parts: "tune" (graph / point / particle instances 0.., SQuAD's tuning
articles, the first half of a seeded NQ order), "eval" (instances 1000.., SQuAD's
evaluation articles, NQ's second half) and "train", what the triage adapter learns from
(instances 2000.., SQuAD's training articles; its no-tool questions are SQuAD training
questions without a prefix, NQ having no third part): disjoint."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass

import numpy as np

from examples import squad
from examples.systems.agent.tools import CANDIDATES, PREFIX, TOOLS, graph, particles, point_set, tools
from frontends.components.folders import data_dir

KINDS = (*TOOLS, "none")
INSTANCE_BASE = {"tune": 0, "eval": 1000, "train": 2000}
TOP = 100  # pagerank candidates come from the exact top-100


@dataclass(frozen=True)
class Item:
    question: str
    answers: tuple[str, ...]
    tool: str  # the tool it needs ("none": no tool)


@functools.lru_cache(maxsize=1)
def nq_questions() -> tuple[tuple[str, tuple[str, ...]], ...]:
    path = data_dir() / "nq_open" / "NQ-open.dev.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return tuple((r["question"], tuple(r["answer"])) for r in rows)


def exact(tool: str, question: str) -> str:
    return tools()[tool][0](question)


def _kernel_item(tool: str, n: int, rng: np.random.Generator) -> Item:
    if tool == "pagerank":
        top = exact_top(n)
        pages = [int(p) for p in top[np.sort(rng.choice(TOP, CANDIDATES, replace=False))]]
        pages = [pages[i] for i in rng.permutation(CANDIDATES)]
        q = f"In web graph {n}, which of pages {', '.join(map(str, pages[:-1]))} and {pages[-1]} ranks highest?"
        return Item(q, (exact(tool, q).split()[1],), tool)
    if tool == "kmeans":
        q = f"In point set {n}, which cluster holds point {int(rng.integers(len(point_set(n)[0])))}?"
        return Item(q, (exact(tool, q).split()[-2],), tool)
    q = (f"In particle system {n}, what is the potential of particle {int(rng.integers(len(particles(n)[1])))}, "
         "to the nearest ten?")
    return Item(q, (re.findall(r"-?\d+", exact(tool, q))[-1],), tool)


def exact_top(n: int) -> np.ndarray:
    from examples.kernels import kernel

    return kernel("pagerank").reference(*graph(n))[0][:TOP]


def _squad_items(tool: str, part: str, seed: int):
    """SQuAD questions of `part`'s articles (seeded order) that the exact tool answers."""
    qs = squad.questions_of(part)
    for i in np.random.default_rng([seed, KINDS.index(tool)]).permutation(len(qs)):
        q = qs[i]
        question = PREFIX[tool] + q.question
        found = squad_normal(exact(tool, question))
        if any(squad_normal(a) in found for a in q.answers):
            yield Item(question, tuple(q.answers), tool)


def squad_normal(text: str) -> str:
    from autotuner.metrics import normalize_answer

    return f" {normalize_answer(text)} "


def _no_tool_items(part: str, seed: int):
    if part == "train":
        qs = squad.questions_of("train")
        for i in np.random.default_rng([seed, 98]).permutation(len(qs)):
            yield Item(qs[i].question, tuple(qs[i].answers), "none")
        return
    rows = nq_questions()
    order = np.random.default_rng([seed, 99]).permutation(len(rows))
    half = order[: len(rows) // 2] if part == "tune" else order[len(rows) // 2:]
    for i in half:
        yield Item(rows[i][0], rows[i][1], "none")


def _stream(kind: str, part: str, seed: int):
    if kind == "none":
        yield from _no_tool_items(part, seed)
    elif kind in PREFIX:
        yield from _squad_items(kind, part, seed)
    else:
        k = 0
        while True:
            n = INSTANCE_BASE[part] + k
            yield _kernel_item(kind, n, np.random.default_rng([seed, KINDS.index(kind), n]))
            k += 1


@functools.lru_cache(maxsize=8)
def _part(part: str, seed: int) -> tuple[list[Item], list]:
    return [], [_stream(kind, part, seed) for kind in KINDS]


def items(part: str, n: int, seed: int = 0) -> list[Item]:
    """The first `n` items of `part` ("tune", "eval" or "train"), the six kinds in turn."""
    if part not in INSTANCE_BASE:
        raise ValueError(f"unknown part {part!r} (tune, eval, train)")
    made, streams = _part(part, seed)
    while len(made) < n:
        made.append(next(streams[len(made) % len(KINDS)]))
    return made[:n]


def question_sets(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """(tune questions, tune answers), (held-out questions, held-out answers): the
    first n_tune tuning items and the first n_eval (default 5 x n_tune) held-out ones."""
    tune = items("tune", n_tune, seed)
    held = items("eval", 5 * n_tune if n_eval is None else n_eval, seed)
    return ([i.question for i in tune], [i.answers for i in tune]), \
        ([i.question for i in held], [i.answers for i in held])


def held_out_questions(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """(questions, gold answers) of the held-out part: what `approx-tune verify` re-measures."""
    return question_sets(n_tune, seed, n_eval)[1]


def kept_candidates(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """The questions "kept" tuning tries (`common.kept_pool` of `question_sets`)."""
    from examples.systems.common import kept_pool

    return kept_pool(question_sets, n_tune, seed)


def make_inputs(n: int = 12, seed: int = 0):
    """(argument tuples, gold answers) of the first n tuning items: `approx-tune run
    examples.systems.agent.llm:program --inputs examples.systems.agent.data:make_inputs`."""
    chosen = items("tune", n, seed)
    return [(i.question,) for i in chosen], [i.answers for i in chosen]
