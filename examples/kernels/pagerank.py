"""PageRank kernel (ApproxMLIR's `pagerank`, CRONO-style pull iterations) on a
seeded power-law graph stored as in-edges in CSR form (`indptr`, `src`), with
every node's out-degree; damping 0.85, a fixed number of iterations.

Graph (numpy, seeded): a Chung-Lu graph whose expected in- and out-degrees
follow power laws (exponent ~2.1 for in-degrees, ~2.5 for out-degrees);
every node gets at least one out-edge, so no rank leaks from dangling nodes.

Knobs (exact at 0):
  pagerank  loop_truncate of the iteration loop (fewer iterations)
  in_sum    loop_perforate_rescale of a node's in-edge loop (every k-th edge, the
            sum scaled by in-degree/kept); a decision tree on the in-degree
            (dynamic: only nodes with many in-edges are sampled)
QoS: RBO (p = 0.95) of the top-100 nodes by rank.
"""

from __future__ import annotations

import numpy as np

from examples.kernels.common import RBO, KernelProgram, top_k_rows
from frontends import DecisionTree, Knob, StaticTransform

N_NODES, AVG_DEGREE, ITERATIONS, DAMPING, TOP_K = 20_000, 10, 20, 0.85, 100
METRIC = RBO


def in_degree(indptr: np.ndarray, v: int) -> int:
    return indptr[v + 1] - indptr[v]


@Knob(decision_tree=DecisionTree(in_degree, [0, 3], [32], [0, 0], "loop_perforate_rescale",
                                 thresholds_lower=[1], thresholds_upper=[4096]))
def in_sum(indptr: np.ndarray, src: np.ndarray, contrib: np.ndarray, v: int) -> float:
    """Sum of the contributions (rank / out-degree) of v's in-neighbours."""
    s = 0.0
    for e in range(indptr[v], indptr[v + 1]):
        s += contrib[src[e]]
    return s


@Knob(static_transform=StaticTransform("loop_truncate", 0))
def pagerank(indptr: np.ndarray, src: np.ndarray, outdeg: np.ndarray, pr: np.ndarray, contrib: np.ndarray,
             iters: int, damping: float) -> int:
    n = pr.shape[0]
    base = (1.0 - damping) / n
    for it in range(iters):
        for u in range(n):
            contrib[u] = pr[u] / outdeg[u]
        for v in range(n):
            pr[v] = base + damping * in_sum(indptr, src, contrib, v)
    return iters


def prepare(indptr, src, outdeg, iters=ITERATIONS) -> tuple:
    """Kernel arguments: ranks start uniform; a scratch array for the contributions."""
    n = len(outdeg)
    return (indptr, src, outdeg, np.full(n, 1.0 / n), np.zeros(n), iters, DAMPING)


def finish(args: tuple) -> list[np.ndarray]:
    """The ranking of the top nodes (one ranking: a batch of one for the metric)."""
    return [top_k_rows(args[3], TOP_K)]


def example() -> tuple:
    return (np.array([0, 1, 2]), np.array([1, 0]), np.ones(2), 1)


program = KernelProgram("pagerank", pagerank, prepare, finish, example)


def reference_ranks(indptr, src, outdeg, iters=ITERATIONS) -> np.ndarray:
    """numpy pull iterations (Jacobi: every node reads the previous ranks)."""
    n = len(outdeg)
    pr = np.full(n, 1.0 / n)
    dst = np.repeat(np.arange(n), np.diff(indptr))
    for _ in range(iters):
        contrib = pr / outdeg
        pr = (1.0 - DAMPING) / n + DAMPING * np.bincount(dst, weights=contrib[src], minlength=n)
    return pr


def reference(indptr, src, outdeg, iters=ITERATIONS) -> list[np.ndarray]:
    return [top_k_rows(reference_ranks(indptr, src, outdeg, iters), TOP_K)]


def generate(seed: int, n: int = N_NODES, avg_degree: int = AVG_DEGREE) -> tuple:
    """One input: (indptr, src, outdeg) of a seeded Chung-Lu power-law graph."""
    rng = np.random.default_rng(seed)
    w_in = (np.arange(1, n + 1) ** (-1 / 1.1))[rng.permutation(n)]
    w_out = (np.arange(1, n + 1) ** (-1 / 1.5))[rng.permutation(n)]
    m = n * avg_degree
    s = rng.choice(n, m, p=w_out / w_out.sum())
    d = rng.choice(n, m, p=w_in / w_in.sum())
    s = np.concatenate([s, np.arange(n)])  # at least one out-edge per node
    d = np.concatenate([d, (np.arange(n) + rng.integers(1, n, n)) % n])  # never a self-loop
    keep = s != d
    s, d = s[keep], d[keep]
    order = np.lexsort((s, d))
    s, d = s[order], d[order]
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(d, minlength=n), out=indptr[1:])
    outdeg = np.bincount(s, minlength=n).astype(np.float64)
    return (indptr, s.astype(np.int64), outdeg)


def make_inputs(n_tune: int, seed: int = 0, **sizes):
    """(tune, eval) inputs, eval = 5x tune, each its own seeded graph."""
    inputs = [generate(seed * 100_003 + i, **sizes) for i in range(6 * n_tune)]
    return inputs[:n_tune], inputs[n_tune:]
