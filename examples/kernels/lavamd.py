"""lavaMD kernel (Rodinia's lavaMD, ApproxMLIR's `lavaMD`): particles in a 3-D grid
of boxes; each particle's potential and force sum over the particles of its own
box and of the (up to 26) neighbouring boxes, with Rodinia's exp-based potential:
r2 = v_i + v_j - 2 ri.rj, vij = exp(-a2 r2), fs = 2 vij, force += qj fs (ri - rj),
potential += qj vij, a2 = 2 alpha^2 (alpha = 0.5). Here v = |r|^2, so r2 is the squared
distance (Rodinia draws v at random and omits the 2, which makes r2 no distance).

Inputs (seeded): boxes1d^3 boxes of side 1, each holding a varying number of
particles (Rodinia: 100 in every box) placed uniformly inside it, charges in
{0.1, ..., 1.0} (Rodinia's values). Particle data is stored box by box
(`box_start[b]` .. `box_start[b+1]`); `nbr[b, :nn[b]]` lists box b itself first,
then its neighbours; `dclass[b, n]` = |dx|+|dy|+|dz| of that neighbour (0..3).

Knobs (exact at 0):
  home_box      loop_perforate of the neighbour-box loop
  particle_sum  loop_perforate_rescale of the loop over a neighbour box's particles
                (every k-th particle, the sums scaled by n/kept); a decision tree on
                the neighbour's distance class (dynamic: far boxes approximated more)
QoS: 1 - relative L2 error of the (potential, force) of every particle.
"""

from __future__ import annotations

import math

import numpy as np

from examples.kernels.common import REL_L2, KernelProgram
from frontends import DecisionTree, Knob, StaticTransform

BOXES_1D, MEAN_PARTICLES, ALPHA = 4, 50, 0.5
METRIC = REL_L2


def distance_class(dist: int) -> int:
    return dist


@Knob(decision_tree=DecisionTree(distance_class, [7], [2], [0, 0], "loop_perforate_rescale",
                                 thresholds_lower=[0], thresholds_upper=[4]))
def particle_sum(rv: np.ndarray, qv: np.ndarray, fv: np.ndarray, i: int, first: int, last: int, a2: float,
                 dist: int) -> int:
    """Potential and force on particle i from particles first..last-1 (one box)."""
    v = 0.0
    fx = 0.0
    fy = 0.0
    fz = 0.0
    for j in range(first, last):
        r2 = rv[i, 0] + rv[j, 0] - 2.0 * (rv[i, 1] * rv[j, 1] + rv[i, 2] * rv[j, 2] + rv[i, 3] * rv[j, 3])
        u2 = a2 * r2
        vij = math.exp(-u2)
        fs = 2.0 * vij
        q = qv[j]
        v += q * vij
        fx += q * (fs * (rv[i, 1] - rv[j, 1]))
        fy += q * (fs * (rv[i, 2] - rv[j, 2]))
        fz += q * (fs * (rv[i, 3] - rv[j, 3]))
    fv[i, 0] += v
    fv[i, 1] += fx
    fv[i, 2] += fy
    fv[i, 3] += fz
    return 0


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def home_box(rv: np.ndarray, qv: np.ndarray, fv: np.ndarray, box_start: np.ndarray, nbr: np.ndarray,
             nn: np.ndarray, dclass: np.ndarray, b: int, a2: float) -> int:
    """Accumulate the interactions of box b's particles with each neighbour box."""
    for n in range(nn[b]):
        other = nbr[b, n]
        for i in range(box_start[b], box_start[b + 1]):
            particle_sum(rv, qv, fv, i, box_start[other], box_start[other + 1], a2, dclass[b, n])
    return 0


@Knob()
def lavamd(rv: np.ndarray, qv: np.ndarray, fv: np.ndarray, box_start: np.ndarray, nbr: np.ndarray,
           nn: np.ndarray, dclass: np.ndarray, alpha: float) -> int:
    a2 = 2.0 * alpha * alpha
    for b in range(nn.shape[0]):
        home_box(rv, qv, fv, box_start, nbr, nn, dclass, b, a2)
    return nn.shape[0]


def prepare(rv, qv, box_start, nbr, nn, dclass, alpha=ALPHA) -> tuple:
    return (rv, qv, np.zeros((len(qv), 4)), box_start, nbr, nn, dclass, alpha)


def finish(args: tuple) -> np.ndarray:
    return args[2]


def example() -> tuple:
    return (np.zeros((1, 4)), np.zeros(1), np.array([0, 1]), np.zeros((1, 27), np.int64), np.ones(1, np.int64),
            np.zeros((1, 27), np.int64))


program = KernelProgram("lavamd", lavamd, prepare, finish, example)


def reference(rv, qv, box_start, nbr, nn, dclass, alpha=ALPHA) -> np.ndarray:
    """numpy: the same sums, vectorised per (box, neighbour box) pair."""
    a2 = 2.0 * alpha * alpha
    fv = np.zeros((len(qv), 4))
    for b in range(len(nn)):
        home = slice(box_start[b], box_start[b + 1])
        for n in range(nn[b]):
            o = nbr[b, n]
            other = slice(box_start[o], box_start[o + 1])
            ri, rj = rv[home], rv[other]
            r2 = ri[:, :1] + rj[:, 0] - 2.0 * (ri[:, 1:] @ rj[:, 1:].T)
            vij = np.exp(-(a2 * r2))
            fv[home, 0] += vij @ qv[other]
            for c in (1, 2, 3):
                fv[home, c] += (2.0 * vij * (ri[:, c:c + 1] - rj[:, c])) @ qv[other]
    return fv


def generate(seed: int, boxes1d: int = BOXES_1D, mean_particles: int = MEAN_PARTICLES) -> tuple:
    """One input (see the module docstring); the particle count of a box is uniform
    in [mean/2, 3 mean/2]."""
    rng = np.random.default_rng(seed)
    nb = boxes1d ** 3
    counts = rng.integers(mean_particles // 2, mean_particles * 3 // 2 + 1, nb)
    box_start = np.zeros(nb + 1, np.int64)
    np.cumsum(counts, out=box_start[1:])
    corner = np.array([(x, y, z) for x in range(boxes1d) for y in range(boxes1d) for z in range(boxes1d)], float)
    pos = np.repeat(corner, counts, axis=0) + rng.uniform(0.0, 1.0, (int(box_start[-1]), 3))
    rv = np.column_stack([(pos ** 2).sum(axis=1), pos])  # Rodinia's rv: (v = |r|^2, x, y, z)
    qv = rng.integers(1, 11, int(box_start[-1])) / 10.0
    nbr = np.zeros((nb, 27), np.int64)
    dclass = np.zeros((nb, 27), np.int64)
    nn = np.zeros(nb, np.int64)
    for b, c in enumerate(corner.astype(int)):
        offsets = sorted(((dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1)),
                         key=lambda o: abs(o[0]) + abs(o[1]) + abs(o[2]))
        for o in offsets:
            x, y, z = c + o
            if 0 <= x < boxes1d and 0 <= y < boxes1d and 0 <= z < boxes1d:
                nbr[b, nn[b]] = (x * boxes1d + y) * boxes1d + z
                dclass[b, nn[b]] = abs(o[0]) + abs(o[1]) + abs(o[2])
                nn[b] += 1
    return (rv, qv, box_start, nbr, nn, dclass)


def make_inputs(n_tune: int, seed: int = 0, **sizes):
    """(tune, eval) inputs, eval = 5x tune, each its own seeded particle system."""
    inputs = [generate(seed * 100_003 + i, **sizes) for i in range(6 * n_tune)]
    return inputs[:n_tune], inputs[n_tune:]
