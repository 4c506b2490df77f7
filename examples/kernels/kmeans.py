"""k-means kernel (ApproxMLIR's `kmeans`, Rodinia-style Lloyd iterations): points
drawn around seeded random centres, k-means++ initial centroids, a
fixed number of iterations of assignment (nearest centroid, sums accumulated)
and update (centroid = mean of its points).

Knobs (exact at 0):
  kmeans    loop_truncate of the iteration loop (fewer iterations)
  assign    loop_perforate of the point loop: only every k-th point is assigned
            and accumulated; a decision tree on the iteration number (dynamic:
            coarse early iterations, exact late ones)
  distance  loop_perforate of the dimension loop of the squared distance
QoS: 1 - relative L2 error of the final centroids.
"""

from __future__ import annotations

import math

import numpy as np

from examples.kernels.common import REL_L2, KernelProgram
from frontends import DecisionTree, Knob, StaticTransform

N_POINTS, DIM, N_CLUSTERS, ITERATIONS = 20000, 8, 16, 16
METRIC = REL_L2


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def distance(points: np.ndarray, centroids: np.ndarray, i: int, c: int) -> float:
    s = 0.0
    for j in range(points.shape[1]):
        diff = points[i, j] - centroids[c, j]
        s += diff * diff
    return s


def nearest(points: np.ndarray, centroids: np.ndarray, i: int) -> int:
    best = 0
    best_d = math.inf
    for c in range(centroids.shape[0]):
        d = distance(points, centroids, i, c)
        if d < best_d:
            best_d = d
            best = c
    return best


def iteration(it: int) -> int:
    return it


@Knob(decision_tree=DecisionTree(iteration, [5], [6], [0, 0], "loop_perforate", thresholds_upper=[ITERATIONS]))
def assign(points: np.ndarray, centroids: np.ndarray, sums: np.ndarray, counts: np.ndarray, labels: np.ndarray,
           it: int) -> int:
    """Assign each point to its nearest centroid, adding it to that cluster's sums."""
    for i in range(points.shape[0]):
        c = nearest(points, centroids, i)
        labels[i] = c
        counts[c] += 1.0
        for j in range(points.shape[1]):
            sums[c, j] += points[i, j]
    return 0


def update(centroids: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> int:
    """Centroids = means of their clusters (an empty cluster keeps its centroid); sums reset."""
    for c in range(centroids.shape[0]):
        for j in range(centroids.shape[1]):
            if counts[c] > 0.0:
                centroids[c, j] = sums[c, j] / counts[c]
            sums[c, j] = 0.0
        counts[c] = 0.0
    return 0


@Knob(static_transform=StaticTransform("loop_truncate", 0))
def kmeans(points: np.ndarray, centroids: np.ndarray, sums: np.ndarray, counts: np.ndarray, labels: np.ndarray,
           iters: int) -> int:
    for it in range(iters):
        assign(points, centroids, sums, counts, labels, it)
        update(centroids, sums, counts)
    return iters


def prepare(points, init, iters=ITERATIONS) -> tuple:
    """Kernel arguments: working centroids (a copy of init), sums, counts, labels."""
    k, d = init.shape
    return (points, init.copy(), np.zeros((k, d)), np.zeros(k), np.zeros(len(points), np.int64), iters)


def finish(args: tuple) -> np.ndarray:
    return args[1]


def example() -> tuple:
    return (np.zeros((3, 2)), np.zeros((2, 2)), 1)


program = KernelProgram("kmeans", kmeans, prepare, finish, example)


def reference(points, init, iters=ITERATIONS) -> np.ndarray:
    """numpy Lloyd iterations (first nearest centroid on ties, as the kernel)."""
    cent = init.copy()
    for _ in range(iters):
        d = ((points[:, None, :] - cent[None, :, :]) ** 2).sum(axis=2)
        labels = d.argmin(axis=1)
        for c in range(len(cent)):
            members = points[labels == c]
            if len(members):
                cent[c] = members.mean(axis=0)
    return cent


def kmeans_pp(points: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding (numpy): each next centroid drawn with probability
    proportional to the squared distance to the nearest one chosen so far."""
    chosen = [points[rng.integers(len(points))]]
    d2 = ((points - chosen[0]) ** 2).sum(axis=1)
    for _ in range(1, k):
        chosen.append(points[rng.choice(len(points), p=d2 / d2.sum())])
        d2 = np.minimum(d2, ((points - chosen[-1]) ** 2).sum(axis=1))
    return np.array(chosen)


def generate(seed: int, n: int = N_POINTS, dim: int = DIM, k: int = N_CLUSTERS) -> tuple:
    """One input: n points around k seeded Gaussian centres (spread 1, centres in a
    10-wide box) and k-means++ initial centroids (seeded)."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-10.0, 10.0, (k, dim))
    points = centres[rng.integers(0, k, n)] + rng.standard_normal((n, dim))
    return (points, kmeans_pp(points, k, rng), ITERATIONS)


def make_inputs(n_tune: int, seed: int = 0, **sizes):
    """(tune, eval) inputs, eval = 5x tune, each its own seeded point set (disjoint seeds)."""
    inputs = [generate(seed * 100_003 + i, **sizes) for i in range(6 * n_tune)]
    return inputs[:n_tune], inputs[n_tune:]
