"""Measurement of one configuration: QoS loss against the exact program and
speedup over it, both on the same inputs in the same process.

QoS loss = (QoS_exact - QoS_approx) / QoS_exact. With ground truth, both QoS are
measured against it (a loss can then be negative: better than exact); without,
QoS_approx is measured against the exact outputs and QoS_exact = 1. Cost: the
first pass over the inputs is the warm-up (its outputs give the QoS), then the
median wall time of `repeats` timed samples, a sample being as many passes as
take >= 20 ms (so microsecond kernels are timed above the clock's noise). The
exact program is timed in the same process on the same inputs: when its samples
are cheap (all of them under 0.25 s) it is timed again with every configuration,
samples alternating with the configuration's (load changes of a shared machine
then hit both alike); otherwise once per split and cached. Speedup = exact /
approximate median. `clock="wall"` times wall-clock seconds (what a user waits:
right for programs that wait on servers or run threads); `clock="cpu"` the
calling thread's CPU seconds, which a busy shared machine barely disturbs (right
for in-process JIT kernels, which run in the calling thread). With
`objective="money"` the ratio is of money costs (`money(config, args, output)`
per run) instead.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from approx_dialect.diagnostics import ApproxError
from autotuner.metrics import Metric, get_metric

WHERE = "<measure>"
MIN_SAMPLE_SECONDS = 0.02  # a timed sample repeats the pass until it lasts this long
INTERLEAVE_SECONDS = 0.25  # re-time the exact program with each configuration when this cheap
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def as_args(x: Any) -> tuple:
    """An input is a tuple of positional arguments; anything else is one argument."""
    return x if isinstance(x, tuple) else (x,)


@dataclass
class Measurement:
    qos_loss: float
    speedup: float
    seconds: float  # median time of one pass (exact: its own; approx: this config's)
    qos: float  # mean per-input quality
    n: int  # inputs measured
    loss_stderr: float = 0.0  # standard error of the per-input losses
    money: float | None = None


class Measurer:
    """Measures configurations of `program` on one split of the inputs."""

    def __init__(self, program, inputs: Sequence, references: Sequence | None, metric: str | Callable | Metric,
                 repeats: int = 5, money: Callable | None = None, objective: str = "time",
                 exact_config: dict | None = None, what: str = "tuning", clock: str = "wall"):
        if clock not in CLOCKS:
            raise ApproxError(f"clock must be 'wall' or 'cpu', got {clock!r}", where=WHERE)
        self.clock, self._now = clock, CLOCKS[clock]
        if repeats < 1:
            raise ApproxError(f"repeats must be >= 1, got {repeats}", where=WHERE)
        if objective not in ("time", "money") or (objective == "money" and money is None):
            raise ApproxError(f"objective must be 'time' or 'money' (with a money cost function), got {objective!r}",
                              where=WHERE)
        if not inputs:
            raise ApproxError(f"the {what} split has no inputs", where=WHERE)
        if references is not None and len(references) != len(inputs):
            raise ApproxError(f"{len(references)} references for {len(inputs)} {what} inputs", where=WHERE)
        self.program, self.metric, self.repeats = program, get_metric(metric), repeats
        self.inputs = [as_args(x) for x in inputs]
        self.references = list(references) if references is not None else None
        self.money_fn, self.objective, self.what = money, objective, what
        self.exact_config = exact_config if exact_config is not None else \
            {s.name: {"knob_val": 0} for s in program.knobs()}
        try:
            fn = program.build(self.exact_config)
        except ApproxError as err:
            raise ApproxError(f"cannot build the exact program: {err.message}", where=err.where) from None
        self.exact_outputs = self._run(fn, self.inputs, exact=True)
        refs = self.references if self.references is not None else self.exact_outputs
        self.exact_scores = self.metric.scores(self.exact_outputs, refs)
        if self.references is not None and self.exact_scores.mean() <= 0:
            raise ApproxError(f"the exact program scores QoS 0 against the ground truth on the {what} split "
                              f"(metric {self.metric.name}): a QoS loss cannot be defined", where=WHERE)
        self.exact_fn = fn
        self._exact_seconds: dict[int, float] = {}
        self._loop_counts: dict[int, int] = {}
        self._exact_money: dict[int, float | None] = {}

    # ------------------------------------------------------------ running

    def _run(self, fn, inputs, exact: bool = False, offset: int = 0) -> list:
        outs = []
        for i, args in enumerate(inputs):
            try:
                outs.append(fn(*args))
            except Exception as err:
                label = "the exact program fails" if exact else "the program fails"
                msg = (f"{err.where + ': ' if err.where else ''}{err.message}" if isinstance(err, ApproxError)
                       else f"{type(err).__name__}: {err}")  # keep where: the failing component's name
                raise ApproxError(f"{label} on {self.what} input {offset + i}: {msg}", where=WHERE) from None
        return outs

    def _sample(self, fn, inputs, loops: int) -> float:
        now = self._now
        t0 = now()
        for _ in range(loops):
            for args in inputs:
                fn(*args)
        return (now() - t0) / loops

    def _loops(self, n: int) -> int:
        """Passes per sample over the first n inputs (calibrated on the exact program)."""
        if n not in self._loop_counts:
            once = self._sample(self.exact_fn, self.inputs[:n], 1)
            self._loop_counts[n] = max(1, min(10_000, math.ceil(MIN_SAMPLE_SECONDS / max(once, 1e-9))))
        return self._loop_counts[n]

    def _money(self, config: dict, inputs, outputs) -> float | None:
        if self.money_fn is None:
            return None
        return float(sum(self.money_fn(config, a, o) for a, o in zip(inputs, outputs)))

    def exact_seconds(self, n: int | None = None) -> float:
        """Median time of one exact pass over the first n inputs (cached)."""
        n = len(self.inputs) if n is None else n
        if n not in self._exact_seconds:
            loops = self._loops(n)
            self._exact_seconds[n] = statistics.median(
                self._sample(self.exact_fn, self.inputs[:n], loops) for _ in range(self.repeats))
        return self._exact_seconds[n]

    def _timed(self, fn, n: int, repeats: int) -> tuple[float, float]:
        """(exact, approximate) median seconds per pass over the first n inputs."""
        loops, inputs = self._loops(n), self.inputs[:n]
        exact = self.exact_seconds(n)
        if exact * loops * repeats > INTERLEAVE_SECONDS:
            return exact, statistics.median(self._sample(fn, inputs, loops) for _ in range(repeats))
        te, ta = [], []
        for _ in range(repeats):
            te.append(self._sample(self.exact_fn, inputs, loops))
            ta.append(self._sample(fn, inputs, loops))
        return statistics.median(te), statistics.median(ta)

    def exact_money(self, n: int | None = None) -> float | None:
        n = len(self.inputs) if n is None else n
        if n not in self._exact_money:
            self._exact_money[n] = self._money(self.exact_config, self.inputs[:n], self.exact_outputs[:n])
        return self._exact_money[n]

    # ------------------------------------------------------------ measuring

    def qos(self, outputs: list, n: int) -> tuple[float, float, float]:
        """(QoS loss, mean quality, standard error of the loss) of outputs of the first n inputs."""
        refs = (self.references if self.references is not None else self.exact_outputs)[:n]
        scores = self.metric.scores(outputs, refs)
        exact = self.exact_scores[:n]
        qos_exact = float(exact.mean()) if self.references is not None else 1.0
        if qos_exact <= 0:  # a slice where the exact program scores 0: compare scores directly
            qos_exact = 1.0
        per_input = (exact - scores) / qos_exact if self.references is not None else 1.0 - scores
        loss = (qos_exact - float(scores.mean())) / qos_exact if self.references is not None \
            else float(per_input.mean())
        se = float(per_input.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
        return loss, float(scores.mean()), se

    def measure(self, fn, config: dict, n: int | None = None, repeats: int | None = None) -> Measurement:
        """QoS loss and speedup of `fn` (the program built for `config`) on the first
        n inputs of the split (all by default)."""
        n = len(self.inputs) if n is None else min(n, len(self.inputs))
        inputs = self.inputs[:n]
        outputs = self._run(fn, inputs)  # the warm-up pass
        loss, quality, se = self.qos(outputs, n)
        money = self._money(config, inputs, outputs)
        if self.objective == "money":
            exact, cost = self.exact_money(n), money
            seconds = float("nan")
        else:
            exact, seconds = self._timed(fn, n, repeats or self.repeats)
            cost = seconds
        speedup = exact / cost if cost > 0 else (1.0 if exact <= 0 else float("inf"))
        return Measurement(loss, speedup, seconds, quality, n, se, money)


def split_inputs(inputs: Sequence, references: Sequence | None, eval_ratio: float, seed: int,
                 eval_inputs: Sequence | None = None, eval_references: Sequence | None = None):
    """Disjoint tuning and evaluation splits, the evaluation split `eval_ratio` times
    the tuning one (seeded permutation); or the given evaluation inputs."""
    if references is not None and len(references) != len(inputs):
        raise ApproxError(f"{len(references)} references for {len(inputs)} inputs", where=WHERE)
    if eval_inputs is not None:
        return (list(inputs), references), (list(eval_inputs), eval_references)
    if len(inputs) < 2:
        raise ApproxError(f"need at least 2 inputs to split into tuning and evaluation, got {len(inputs)}",
                          where=WHERE)
    if not eval_ratio > 0:
        raise ApproxError(f"eval_ratio must be > 0, got {eval_ratio}", where=WHERE)
    order = np.random.default_rng(seed).permutation(len(inputs))
    n_tune = min(len(inputs) - 1, max(1, round(len(inputs) / (1 + eval_ratio))))
    pick = lambda xs, idx: None if xs is None else [xs[i] for i in idx]  # noqa: E731
    tune_idx, eval_idx = order[:n_tune], order[n_tune:]  # shuffled: any prefix is a random slice
    return (pick(inputs, tune_idx), pick(references, tune_idx)), (pick(inputs, eval_idx), pick(references, eval_idx))
