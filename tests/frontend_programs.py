"""Decorated programs for the frontend tests (and `approx-opt --from-python
tests.frontend_programs:...`): numeric kernels and orchestration functions, each
with its undecorated twin available as `fn.python`."""

from __future__ import annotations

import math

import numpy as np

from frontends import Cascade, DecisionTree, Knob, Memoize, Param, SafetyContract, StaticTransform

# ---------------------------------------------------------------- numeric kernels


def n_state(n: int) -> int:
    return n


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def strided_sum(x: np.ndarray, n: int) -> float:
    s = 0.0
    for i in range(n):
        s += x[i]
    return s


@Knob(static_transform=StaticTransform("loop_truncate", 0))
def prefix_sum(x: np.ndarray) -> float:
    s = 0.0
    for v in x:
        s += v
    return s


@Knob(decision_tree=DecisionTree(n_state, [1], [10, 100], [0, 2, 4], "loop_perforate",
                                 thresholds_upper=[1000]))
def adaptive_sum(x: np.ndarray, n: int) -> float:
    s = 0.0
    for i in range(n):
        s += x[i]
    return s


def first_only(x: np.ndarray, n: int) -> float:
    return x[0] * n


def mean_ok(r: float, x: np.ndarray, n: int) -> bool:
    return r >= 0.0


def mean_recover(x: np.ndarray, n: int) -> float:
    return -1.0


@Knob(static_transform=StaticTransform("func_substitute", 0, approx_kernel=first_only),
      safety_contract=SafetyContract(mean_ok, mean_recover))
def checked_mean(x: np.ndarray, n: int) -> float:
    s = 0.0
    for i in range(n):
        s += x[i]
    return s / n


def mixed_ref(a: int, b: int, f: float) -> float:
    """Integer and float arithmetic, branches and a while loop (the kernel below, undecorated)."""
    q = a // b if b != 0 else 0
    r = a % b if b != 0 else 0
    if a > b:
        m = q * 2
    elif a == b:
        m = 1
    else:
        m = r - a
    w = 0
    while w < 5 and m > -100:
        w += 1
        m -= 3
    t = math.sqrt(abs(f)) + max(a, b, 3) - min(q, r) + (1 if f > 0 else -1.5)
    if not (-1e6 < f < 1e6):
        t = t / 2
    return t + m + w + a ** 2 + (a < b < 100) + (not a) + math.floor(f / 3) - abs(a - b) * 0.5


mixed = Knob(lowering="kernel")(mixed_ref)


def smooth(v: float, w: float) -> float:
    return 0.5 * v + 0.5 * w


@Knob()
def stencil(a: np.ndarray, out: np.ndarray) -> int:
    """5-point average on the interior; the corner gets a helper call and a negative index."""
    n, m = a.shape[0], a.shape[1]
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
    out[0, 0] = smooth(a[-1, -1], a[0, 0])
    return n * m


@Knob(param=Param("k", [1, 2]))
def top_sum(x: np.ndarray, k: int) -> float:
    s = 0.0
    for i in range(k):
        s += x[i]
    return s


@Knob(memoize=Memoize(0))
def poly(v: float) -> float:
    return v * v + 1.0


def zero_variant(v: float) -> float:
    return v * 0.0


def trust_large(r: float, v: float) -> int:
    return 10 if v > 5.0 else 0


@Knob(cascade=Cascade([zero_variant], trust_large, [5]))
def doubled(v: float) -> float:
    return v * 2.0


# ---------------------------------------------------------------- orchestration


def tokens(text):
    return [w.strip(".,?!;:()\"'").lower() for w in text.split()]


def doc_lengths(docs):
    lengths = [len(tokens(d)) for d in docs]
    return lengths, sum(lengths) / max(1, len(lengths))


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def bm25_rank(query, docs, k: int):
    """BM25 over `docs`, the k best indices. The knob's loop is the first loop of the
    function (as in ApproxMLIR), here the one over documents."""
    terms = tokens(query)
    lengths, avg = doc_lengths(docs)
    scored = []
    for i in range(len(docs)):
        words = tokens(docs[i])
        s = 0.0
        for t in terms:
            tf = words.count(t)
            if tf:
                df = sum(1 for d in docs if t in tokens(d))
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[i] / avg))
        scored.append((-s, i))
    scored.sort()
    return [i for _, i in scored[:k]]


def best_sentence(question, passage):
    q = set(tokens(question))
    sentences = [s for s in passage.split(". ") if s]
    best, best_overlap = "", -1
    for s in sentences:
        overlap = len(q & set(tokens(s)))
        if overlap > best_overlap:
            best, best_overlap = s, overlap
    return best


def short_answer(question, passage):
    return passage[:40]


@Knob(static_transform=StaticTransform("func_substitute", 0, approx_kernel=short_answer))
def answer(question, passage):
    return best_sentence(question, passage)


@Knob()
def rag(question, docs, k: int):
    """Retrieve with BM25, then answer from the best passages (both decorated)."""
    ranked = bm25_rank(question, docs, k)
    context = " ".join(docs[i] for i in ranked)
    return answer(question, context)


CALLS: list = []


def record(name):
    CALLS.append(name)
    return name.upper()


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def pipeline(steps: int, tag):
    out = []
    for i in range(steps):
        out.append(record(f"{tag}{i}"))
    return out


@Knob(static_transform=StaticTransform("task_skipping", 0))
def triage(items):
    log = []
    if len(items) > 2:
        log.append(record("big"))
    elif len(items) > 0:
        log.append(record("small"))
    else:
        log.append(record("empty"))
    log.append("done")
    return log


def query_len(q):
    return len(q)


def shout(q):
    return q.upper() + "!"


def not_bad(r, q):
    return "BAD" not in r


def fallback(q):
    return "fallback"


@Knob(decision_tree=DecisionTree(query_len, [0], [4], [0, 1], "func_substitute", approx_kernels={1: shout}),
      safety_contract=SafetyContract(not_bad, fallback))
def respond(q):
    return q + "."


def quick(q, k: int):
    return q + "?" if len(q) < 3 else q + "!"


def sure(r, q, k: int):
    return 100 if r.endswith("!") else 0


@Knob(cascade=Cascade([quick], sure, [50]), param=Param("k", [1, 3]))
def repeat(q, k: int):
    return q * k


def syntax_tour(xs, text):
    """Python features of orchestration code (compared with its undecorated self)."""
    total = 0
    evens = [x * 2 for x in xs if x % 2 == 0]
    pairs = {x: i for i, x in enumerate(xs)}
    seen = {x % 3 for x in xs}
    i = 0
    while i < len(xs) and total < 50:
        total += xs[i]
        i += 1
    label = "many" if len(xs) > 3 else "few"
    if not xs:
        return ("empty", text.upper())
    a, b = xs[0], xs[-1]
    first, last = (a, b) if a <= b else (b, a)
    words = text.split()
    words[0:1] = [w.title() for w in words[:1]]
    msg = f"{label}:{total:03d}:{a!r}/{b}|{' '.join(words)}"
    assert total > -1000, "too negative"
    return (msg, evens, sorted(pairs.items()), sorted(seen), first, last, a in xs and b not in [])
