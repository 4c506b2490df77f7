"""Decorated Python kernels, JIT-compiled through MLIR, against the same algorithm
in NumPy (vectorised) and in plain Python (the undecorated function), and the
per-call cost of the decorator. Targets: JIT at least as fast as NumPy,
far faster than Python; a few microseconds per call over the plain function.

The BM25 doc-term matrix is built from SQuAD dev paragraphs (real text; data dir
from APPROX_DATA_DIR, default ../shared/data)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pipeline_bench import median_time  # noqa: E402
from frontends import Knob  # noqa: E402
from frontends.components.folders import data_dir  # noqa: E402

DATA = data_dir()


@Knob()
def dot(a: np.ndarray, b: np.ndarray) -> float:
    s = 0.0
    for i in range(len(a)):
        s += a[i] * b[i]
    return s


def dot_numpy(a, b):
    return float((a * b).sum())


@Knob()
def stencil(a: np.ndarray, out: np.ndarray) -> None:
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            out[i, j] = 0.2 * (a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])


def stencil_numpy(a, out):
    out[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])


@Knob()
def bm25(tf: np.ndarray, idf: np.ndarray, doc_len: np.ndarray, queries: np.ndarray, out: np.ndarray) -> None:
    """out[b, d] = BM25 score of document d for query b (term ids), k1 = 1.2, b = 0.75."""
    n_docs = tf.shape[0]
    avg = 0.0
    for d in range(n_docs):
        avg += doc_len[d]
    avg = avg / n_docs
    for q in range(queries.shape[0]):
        for d in range(n_docs):
            norm = 1.2 * (0.25 + 0.75 * doc_len[d] / avg)
            s = 0.0
            for j in range(queries.shape[1]):
                t = queries[q, j]
                f = tf[d, t]
                s += idf[t] * f * 2.2 / (f + norm)
            out[q, d] = s


def bm25_numpy(tf, idf, doc_len, queries, out):
    norm = 1.2 * (0.25 + 0.75 * doc_len / doc_len.mean())
    f = tf[:, queries]  # docs x queries x terms
    out[:] = (idf[queries][None] * f * 2.2 / (f + norm[:, None, None])).sum(axis=2).T


def squad_matrix(vocab: int = 2000, n_queries: int = 32, terms: int = 8):
    """(tf docs x vocab, idf, doc lengths, query term ids) from SQuAD dev."""
    path = DATA / "squad" / "dev-v1.1.json"
    data = json.loads(path.read_text())["data"]
    words = lambda s: re.findall(r"[a-z0-9]+", s.lower())  # noqa: E731
    paragraphs = [words(p["context"]) for a in data for p in a["paragraphs"]]
    questions = [words(qa["question"]) for a in data for p in a["paragraphs"] for qa in p["qas"]]
    common = [w for w, _ in Counter(w for p in paragraphs for w in set(p)).most_common(vocab)]
    ids = {w: i for i, w in enumerate(common)}
    tf = np.zeros((len(paragraphs), vocab))
    for d, p in enumerate(paragraphs):
        for w in p:
            if w in ids:
                tf[d, ids[w]] += 1
    df = (tf > 0).sum(axis=0)
    idf = np.log(1 + (len(paragraphs) - df + 0.5) / (df + 0.5))
    queries = []
    for q in questions:
        known = [ids[w] for w in q if w in ids]
        if len(known) >= terms:
            queries.append(known[:terms])
        if len(queries) == n_queries:
            break
    return tf, idf, np.array([len(p) for p in paragraphs], np.float64), np.array(queries, np.int64)


def _row(name, size, jit, numpy_t, python_t, err) -> str:
    return (f"| {name} | {size} | {jit * 1e3:.3f} | {numpy_t * 1e3:.3f} | {python_t * 1e3:.1f} | "
            f"{numpy_t / jit:.2f}x | {python_t / jit:.0f}x | {err:.1e} |")


def kernels(repeat: int = 5) -> list[str]:
    rows = []
    rng = np.random.default_rng(0)
    a, b = rng.random(1_000_000), rng.random(1_000_000)
    start = time.perf_counter()
    dot(a, b)
    compile_s = time.perf_counter() - start
    err = abs(dot(a, b) - dot.python(a, b))
    rows.append(_row("dot product", "n = 10^6", median_time(lambda: dot(a, b), repeat),
                     median_time(lambda: dot_numpy(a, b), repeat), median_time(lambda: dot.python(a, b), 1), err))
    grid = rng.random((512, 512))
    o1, o2, o3 = np.zeros_like(grid), np.zeros_like(grid), np.zeros_like(grid)
    stencil(grid, o1)
    stencil.python(grid, o2)
    stencil_numpy(grid, o3)
    rows.append(_row("2-D 5-point stencil", "512 x 512", median_time(lambda: stencil(grid, o1), repeat),
                     median_time(lambda: stencil_numpy(grid, o3), repeat),
                     median_time(lambda: stencil.python(grid, o2), 1), float(np.abs(o1 - o2).max())))
    tf, idf, lengths, queries = squad_matrix()
    s1, s2, s3 = (np.zeros((len(queries), tf.shape[0])) for _ in range(3))
    bm25(tf, idf, lengths, queries, s1)
    bm25.python(tf, idf, lengths, queries[:4], s2[:4])
    bm25_numpy(tf, idf, lengths, queries, s3)
    py = median_time(lambda: bm25.python(tf, idf, lengths, queries[:4], s2[:4]), 1) * len(queries) / 4
    rows.append(_row("BM25 scoring (SQuAD dev)",
                     f"{len(queries)} queries x {tf.shape[0]} docs x {queries.shape[1]} terms",
                     median_time(lambda: bm25(tf, idf, lengths, queries, s1), repeat),
                     median_time(lambda: bm25_numpy(tf, idf, lengths, queries, s3), repeat), py,
                     float(np.abs(s1[:4] - s2[:4]).max())))
    blas = median_time(lambda: np.dot(a, b), repeat)
    rows.append(f"\nnp.dot (BLAS: reassociated, several accumulators, so not bit-identical to the Python "
                f"loop) takes {blas * 1e3:.3f} ms, {blas / median_time(lambda: dot(a, b), repeat):.2f}x the "
                "exact JIT loop's time (which keeps Python's order of additions)")
    rows.append(f"first call of `dot` (lower + approx pipeline + JIT compile): {compile_s * 1e3:.0f} ms")
    return rows


def add(x: int, y: int) -> int:
    return x + y


def echo(x):
    return x


def per_call(n: int = 200_000) -> list[str]:
    """Median over repeats of n calls, in microseconds per call."""
    add_k, echo_k = Knob()(add), Knob()(echo)
    small = np.ones(8)
    add_k(1, 2), echo_k(1), dot(small, small)

    def us(fn, *args, count=n):
        return median_time(lambda: [fn(*args) for _ in range(count)], 5) / count * 1e6

    rows = []
    for what, plain, decorated, args, count in (
            ("scalar kernel `add(x: int, y: int)`", add, add_k, (1, 2), n),
            ("orchestration `echo(x)`", echo, echo_k, ("q",), n),
            ("array kernel `dot(a, b)`, 8 elements", dot.python, dot, (small, small), n // 10)):
        p, d = us(plain, *args, count=count), us(decorated, *args, count=count)
        rows.append(f"| {what} | {p:.2f} | {d:.2f} | {d - p:+.2f} |")
    return rows


def main() -> None:
    print("## Frontend: decorated Python kernels, JIT-compiled, vs NumPy and plain Python")
    print("Median wall time per call (plain Python: one run; BM25's from 4 queries, scaled). "
          "Ratios > 1: the JIT kernel is faster. err: max |JIT - plain Python|.\n")
    print("| kernel | size | JIT ms | NumPy ms | Python ms | NumPy / JIT | Python / JIT | err |")
    print("|---|---|---|---|---|---|---|---|")
    for row in kernels():
        print(row)
    print("\nPer-call cost of the decorator (microseconds per call, median of 5 x many calls):\n")
    print("| function | plain | decorated | overhead |")
    print("|---|---|---|---|")
    for row in per_call():
        print(row)


if __name__ == "__main__":
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
