"""What the five kernels share: the Program the tuner runs (a decorated kernel plus
the numpy code around it that allocates its output buffers and returns its
result), the in-kernel top-k insertion of the ranking kernels, and their QoS
(rank-biased overlap, p = 0.95, averaged over the queries of one input).

Why a wrapper: a JIT kernel cannot return an array (it writes into arguments), so
`KernelProgram.build(config)` returns `run(kernel_for_config, *input)`, where `run`
makes fresh buffers and returns what the metric compares. Its knobs are the
decorated kernel's (`kernel.knobs()`), built by `kernel.build(config)`; the same
`run` around `kernel.python` gives the undecorated Python function."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autotuner.metrics import Metric, rbo

RBO_P = 0.95


class KernelProgram:
    """The autotuner's Program for one decorated kernel: `knobs()`, `build(config)`;
    called directly it runs with the kernel's current configuration.

    `prepare(*input) -> kernel arguments` (the input plus fresh output buffers),
    `finish(kernel arguments) -> output` (what the metric compares); `example()`
    gives a tiny input whose array dtypes and ranks the kernel is lowered for
    before its first call (its knobs are read from that lowering)."""

    def __init__(self, name: str, kernel, prepare: Callable[..., tuple], finish: Callable[[tuple], Any],
                 example: Callable[[], tuple]):
        self.name, self.kernel, self.prepare, self.finish, self.example = name, kernel, prepare, finish, example
        self._typed = False

    def _lower_typed(self) -> None:
        if not self._typed:
            self.kernel.ir(args=self.prepare(*self.example()))
            self._typed = True

    def knobs(self):
        self._lower_typed()
        return self.kernel.knobs()

    def run(self, fn, *inputs):
        args = self.prepare(*inputs)
        fn(*args)
        return self.finish(args)

    def build(self, config: dict[str, dict]) -> Callable[..., Any]:
        self._lower_typed()
        return functools.partial(self.run, self.kernel.build(dict(config or {})))

    def __call__(self, *inputs):
        return self.run(self.kernel, *inputs)

    def python(self, *inputs):
        """The same computation with the undecorated Python function (slow: for tests)."""
        return self.run(self.kernel.python, *inputs)

    def ir(self, after: bool = False, config: dict | None = None, **kw) -> str:
        """The kernel's IR (the tuner's report shows the transformed IR of a front point)."""
        self._lower_typed()
        return self.kernel.ir(after=after, config=config, **kw)

    def __repr__(self) -> str:
        return f"<KernelProgram {self.name}>"


def topk_insert(ids: np.ndarray, vals: np.ndarray, q: int, count: int, k: int, d: int, s: float) -> int:
    """Insert document d with score s into row q of the sorted top-k buffers holding
    `count` entries; returns the new count. Strict comparisons keep the earlier
    document first on ties (numpy's stable argsort of -score)."""
    n = count
    if count < k or s > vals[q, k - 1]:
        pos = min(count, k - 1)
        while pos > 0 and vals[q, pos - 1] < s:
            vals[q, pos] = vals[q, pos - 1]
            ids[q, pos] = ids[q, pos - 1]
            pos -= 1
        vals[q, pos] = s
        ids[q, pos] = d
        n = min(count + 1, k)
    return n


def top_k_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """The numpy reference of the in-kernel top-k: per row, the k best indices,
    best first, earlier index first on ties."""
    return np.argsort(-np.asarray(scores), axis=-1, kind="stable")[..., :k]


def mean_rbo(output: Sequence, reference: Sequence) -> float:
    """Rank-biased overlap (p = 0.95) of each query's ranking, averaged over the
    queries of one input (a batch of rankings, one row per query)."""
    if len(reference) == 0:
        return 1.0
    if len(output) != len(reference):
        return 0.0
    return float(np.mean([rbo(list(o), list(r), RBO_P) for o, r in zip(output, reference)]))


RBO = Metric("rbo", mean_rbo)
REL_L2 = "rel_l2"


def rankings(ids: np.ndarray, counts: np.ndarray) -> list[np.ndarray]:
    """Rows of a top-k buffer cut to how many each query found."""
    return [ids[i, :int(c)].copy() for i, c in enumerate(counts)]
