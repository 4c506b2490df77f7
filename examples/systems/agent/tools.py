"""The agent's five tools: ApproxMLIR's kernels (examples/kernels/*.py) run on the
instance a question names and answer it in one sentence.

Each tool takes the question text, finds its instance (the graph, point set or
particle system the question names by number, built from that seed by the
kernel module's own `generate`; a SQuAD question for the two retrievals), runs the
JIT-compiled kernel and states what it found:

  pagerank  "In web graph 7, which of pages 12, 407, 1993 and 55 ranks highest?"
  kmeans    "In point set 3, which cluster holds point 1234?" (clusters are named by colours)
  lavamd    "In particle system 5, what is the potential of particle 88, to the nearest ten?"
  bm25      "Search the documents: <a SQuAD question>"   (the top paragraph by BM25)
  kb        "Look up in the knowledge base: <a SQuAD question>"   (the top paragraph by embedding)

A kernel's knobs enter the agent as a ladder of its configurations
(`level_config`): level 1 sets the kernel's innermost knob (its first, e.g. pagerank's
in-edge sum) to its first non-zero value, level 2 every knob to its first, level 3
every knob to its second (a decision-tree knob: that value at every leaf), each
built by the kernel's own pipeline (`KernelProgram.build`). The tool op substitutes level k for the
exact kernel (`Tune.substitute("tool", ...)`), so its one knob walks the kernel's
own approximations from mild to strong; level 0 is the exact kernel."""

from __future__ import annotations

import functools
import re

from approx_opt.program import exact_config
from examples import squad
from examples.kernels import kernel

TOOLS = ("pagerank", "kmeans", "lavamd", "bm25", "kb")
LEVELS = 3  # approximate configurations per kernel
CANDIDATES = 4  # pages a pagerank question names
COLOURS = ("amber", "azure", "beige", "coral", "crimson", "cyan", "gold", "indigo", "ivory", "jade", "lilac",
           "magenta", "olive", "orchid", "scarlet", "teal")  # kmeans' 16 clusters, by centroid index
PREFIX = {"bm25": "Search the documents: ", "kb": "Look up in the knowledge base: "}


def level_config(program, k: int) -> dict:
    """Configuration of `program` (a KernelProgram) at level k (the module docstring)."""
    if k == 0:
        return exact_config(program)
    config = {}
    for i, spec in enumerate(program.knobs()):
        values = [v for v in spec.values if v >= (1 if spec.kind == "static" else 2)]  # a leaf's 1 changes nothing
        v = 0 if k == 1 and i > 0 else values[min(max(k - 1, 1), len(values)) - 1]
        if spec.kind == "static":
            config[spec.name] = {"knob_val": v}
        else:
            current = spec.current
            config[spec.name] = {"thresholds": list(current["thresholds"]),
                                 "decisions": [v] * (spec.num_thresholds + 1)}
    return config


class NotFor(Exception):
    """The question names no instance of this tool (the triage picked the wrong one)."""


def _number(pattern: str, question: str) -> int:
    m = re.search(pattern, question)
    if m is None:
        raise NotFor(pattern)
    return int(m.group(1))


# ---------------------------------------------------------------- instances (seeded, kept)

@functools.lru_cache(maxsize=64)
def graph(g: int) -> tuple:
    return kernel("pagerank").generate(g)


@functools.lru_cache(maxsize=64)
def point_set(s: int) -> tuple:
    return kernel("kmeans").generate(s)


@functools.lru_cache(maxsize=64)
def particles(s: int) -> tuple:
    return kernel("lavamd").generate(s)


def squad_question(question: str, tool: str) -> str:
    """The text a retrieval searches with: the question without its tool's prefix."""
    return question.removeprefix(PREFIX[tool])


# ---------------------------------------------------------------- what each kernel answers

def pagerank_answer(run, question: str) -> str:
    g = _number(r"web graph (\d+)", question)
    pages = [int(p) for p in re.findall(r"\d+", question.split("pages", 1)[-1])]
    order = run(*graph(g))[0]  # the top nodes, best first
    position = {int(p): i for i, p in enumerate(order)}
    best = min(pages, key=lambda p: position.get(p, len(position)))
    return f"Page {best} ranks highest of pages {', '.join(map(str, pages))} in web graph {g}."


def kmeans_answer(run, question: str) -> str:
    s = _number(r"point set (\d+)", question)
    i = _number(r"point (\d+)\?", question)
    points = point_set(s)[0]
    centroids = run(*point_set(s))
    label = int(((centroids - points[i]) ** 2).sum(axis=1).argmin())
    return f"Point {i} of point set {s} lies in the {COLOURS[label]} cluster."


def lavamd_answer(run, question: str) -> str:
    s = _number(r"particle system (\d+)", question)
    i = _number(r"particle (\d+),", question)
    potential = float(run(*particles(s))[i, 0])
    return f"The potential of particle {i} in particle system {s} is about {nearest_ten(potential)}."


def nearest_ten(x: float) -> int:
    """The potential as the question asks for it (small approximation errors keep it)."""
    return int(round(x / 10.0)) * 10


def bm25_answer(run, question: str) -> str:
    from examples.kernels.bm25 import batch

    q = squad.Question("", squad_question(question, "bm25"), (), (), -1, "")
    top = run(*batch([q]))[0]
    return squad.paragraphs()[int(top[0])]


def kb_answer(run, question: str) -> str:
    from examples.kernels.kb import corpus, embed_questions

    top = run(embed_questions([squad_question(question, "kb")]), corpus())[0]
    return squad.paragraphs()[int(top[0])]


ANSWERS = {"pagerank": pagerank_answer, "kmeans": kmeans_answer, "lavamd": lavamd_answer, "bm25": bm25_answer,
           "kb": kb_answer}


def make_tool(name: str, k: int = 0):
    """The tool `name` running its kernel at level k (a function of the question text,
    named `<name>_l<k>`: the tool op's symbol)."""
    program = kernel(name).program
    run = None

    def tool(question: str) -> str:
        """Run the kernel on the instance the question names and say what it found
        ("" when the question names none: the agent then answers without a tool)."""
        nonlocal run
        if run is None:
            run = program.build(level_config(program, k))
        try:
            return ANSWERS[name](run, question)
        except (NotFor, IndexError):
            return ""

    tool.__name__ = tool.__qualname__ = f"{name}_l{k}"
    return tool


@functools.lru_cache(maxsize=None)
def tools() -> dict[str, tuple]:
    """name -> (the exact tool, its levels 1..LEVELS): one set per process, so every
    program built from them shares the compiled kernels."""
    return {name: tuple(make_tool(name, k) for k in range(LEVELS + 1)) for name in TOOLS}
