"""The held-out evaluation spread over worker processes.

A costly program (an LLM answering: a second a question on one core) measured on
hundreds of held-out inputs takes an hour a front in one process. With `jobs`
workers, each takes every `jobs`-th input (its shard) and measures the configurations
on it together as `Measurer.figures_together` does: the warm-up pass (or, on costly
inputs, the first timed round) gives the per-input scores, and the exact and approximate
programs are timed side by side, block by block, in that worker (on costly inputs the
exact program once an input beside all of them, its outputs and seconds those of that
round: no pass runs the exact program only to know its answers, and its scores reach the
parent with the first configurations measured). The
shards' scores (put back in input order) and timed blocks (as seconds of one pass) join
into one `Measurement`: the same figures, intervals included, as one process measuring
all inputs would give, in about 1/jobs of the time. Pairing holds within each worker, so workers sharing
a machine's memory bandwidth slow both programs alike.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from approx_dialect.diagnostics import ApproxError
from autotuner.figures import Figures, Measurement, PairedTiming, check_exact_qos, summarise
from autotuner.loading import as_program
from autotuner.measure import PAIRED, Measurer, as_args
from autotuner.metrics import get_metric
from autotuner.settings import Cost
from autotuner.workers import build, check_picklable

WHERE = "<held-out evaluation>"
POLL_SECONDS = 1.0  # how often the parent checks that its workers are alive


def _shard_main(source, inputs, references, metric, cost, shard, numbers, tasks, results):
    """One worker: the exact program on its shard (the inputs numbered `numbers` in the
    split), then each configuration sent to it (a Ctrl-C ends it quietly: the parent
    reports the interruption)."""
    try:
        _serve_shard(source, inputs, references, metric, cost, shard, numbers, tasks, results)
    except KeyboardInterrupt:
        pass


def _serve_shard(source, inputs, references, metric, cost, shard, numbers, tasks, results):
    try:
        program = as_program(source)
        m = Measurer(program, inputs, references, metric, cost, what="evaluation", whole_split=False,
                     numbers=numbers)
        told = not m.one_pass  # a one-pass shard's exact figures come from its first paired round
        results.put(("ready", shard, _exact_facts(m, cost) if told else None))
    except Exception as err:
        results.put(("failed", shard, _line(err)))
        return
    while (batch := tasks.get()) is not None:  # [(index, config), ...]: measured together ([]: the exact alone)
        built = []
        for index, config in batch:
            try:
                built.append((index, build(program, config), config))
            except Exception as err:
                results.put(("error", shard, index, _line(err)))
        try:
            got = m.figures_together([(fn, config) for _, fn, config in built])
        except Exception as err:  # the exact program failing, or a bug: every configuration of the batch
            if not told:
                results.put(("failed", shard, _line(err)))
                return
            got = [_line(err)] * len(built)
        if not told:
            results.put(("exact", shard, _exact_facts(m, cost)))
            told = True
        for (index, _, _), figures in zip(built, got):
            results.put(("error", shard, index, figures) if isinstance(figures, str) else
                        ("done", shard, index, figures))


def _exact_facts(m: Measurer, cost: Cost) -> tuple:
    """(scores, seconds, money) of the exact program on a worker's shard."""
    return m.exact_scores, m.exact_seconds(), m.exact_money() if cost.money is not None else None


def _line(err: Exception) -> str:
    """One line for the parent: an ApproxError's own, else a bug's type and message."""
    return err.line() if isinstance(err, ApproxError) else f"internal error: {type(err).__name__}: {err}"


class ShardedEvaluation:
    """Workers each holding a shard of the held-out inputs; `measure` sends them
    configurations, each measured as `Measurer` measures with `cost`. Use as a context
    manager (the workers end with it)."""

    def __init__(self, source, inputs: Sequence, references: Sequence | None, metric, *, jobs: int,
                 cost: Cost = PAIRED, progress: Callable[[str], None] | None = None):
        inputs = [as_args(x) for x in inputs]
        if not inputs:
            raise ApproxError("the evaluation split has no inputs", where=WHERE)
        jobs = max(1, min(jobs, len(inputs)))
        self.n, self.jobs, self.objective, self.progress = len(inputs), jobs, cost.objective, progress
        self.with_references = references is not None
        self.shards = [list(range(s, len(inputs), jobs)) for s in range(jobs)]
        check_picklable((source, inputs, references, metric, cost),
                        f"{jobs} evaluation workers need a picklable program (or its spec), inputs and metric", WHERE)
        ctx = mp.get_context("spawn")  # not fork: the JIT and torch state must not be shared
        self._results = ctx.Queue()
        self._tasks = [ctx.Queue() for _ in range(jobs)]
        self._procs = []
        for s, idx in enumerate(self.shards):
            refs = None if references is None else [references[i] for i in idx]
            p = ctx.Process(target=_shard_main, daemon=True,
                            args=(source, [inputs[i] for i in idx], refs, metric, cost, s, idx, self._tasks[s],
                                  self._results))
            p.start()
            self._procs.append(p)
        self._say(f"[held-out] {self.n} inputs on {jobs} workers: loading the program")
        self._metric_name, self._with_money = get_metric(metric).name, cost.money is not None
        self._exact: dict[int, tuple] = {}  # shard -> (scores, seconds, money) of its exact program
        self._scores: np.ndarray | None = None
        for _ in range(jobs):
            msg = self._next()
            if msg[0] != "ready":
                self._failed(msg)
            if msg[2] is not None:
                self._exact_arrived(msg[1], msg[2])
        self._exact_passes: list[float] = []

    def _failed(self, msg):
        """A worker's "failed" message (or an unexpected one) as the error it ends the evaluation with."""
        self.close()
        raise ApproxError(f"held-out worker {msg[1]}: {msg[2]}", where=WHERE)

    def _exact_arrived(self, shard: int, facts: tuple) -> None:
        """Shard `shard`'s exact figures in; with the last of them, the exact QoS is checked."""
        self._exact[shard] = facts
        if len(self._exact) < self.jobs:
            return
        scores = np.zeros(self.n)
        for s, (part, _, _) in self._exact.items():
            scores[self.shards[s]] = part
        try:
            check_exact_qos(scores, self.with_references, "evaluation", self._metric_name)
        except ApproxError:
            self.close()
            raise
        self._scores = scores
        self._warm_seconds = sum(f[1] for f in self._exact.values())
        self._exact_money = sum(f[2] or 0.0 for f in self._exact.values()) if self._with_money else None

    @property
    def exact_scores(self) -> np.ndarray:
        """The exact program's scores on all inputs (where a shard has measured nothing yet,
        it runs the exact program alone now)."""
        missing = [s for s in range(self.jobs) if s not in self._exact]
        for s in missing:
            self._tasks[s].put([])
        while len(self._exact) < self.jobs:
            msg = self._next()
            if msg[0] != "exact":
                self._failed(msg)
            self._exact_arrived(msg[1], msg[2])
        return self._scores

    def _say(self, line: str) -> None:
        if self.progress:
            self.progress(line)

    def _next(self):
        """The next message of any worker; a worker that died is an error, not a hang."""
        while True:
            try:
                return self._results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                dead = [(s, p.exitcode) for s, p in enumerate(self._procs) if p.exitcode is not None]
                if dead:
                    self.close()
                    s, code = dead[0]
                    raise ApproxError(f"held-out worker {s} died (exit code {code})", where=WHERE) from None

    def measure(self, configs: Sequence[dict], on_result: Callable[[int, Measurement | str], Any] | None = None
                ) -> list[Measurement | str]:
        """Each configuration measured on all inputs: a Measurement, or the error line of
        the first shard it failed on. Each worker measures them together on its shard
        (`Measurer.figures_together`: on costly inputs its exact program runs once an input
        beside all of them). `on_result(i, figure)` as soon as configuration i is measured
        on every shard."""
        batch = list(enumerate(configs))  # one batch: each worker times its exact program once beside all of them
        for q in self._tasks:
            q.put(batch)
        parts: dict[int, dict[int, Figures | str]] = {i: {} for i in range(len(configs))}
        out: list[Measurement | str | None] = [None] * len(configs)
        finished = 0
        while finished < len(configs):
            msg = self._next()
            if msg[0] == "exact":
                self._exact_arrived(msg[1], msg[2])
                continue
            if msg[0] == "failed":
                self._failed(msg)
            kind, s, i, payload = msg
            parts[i][s] = payload if kind == "done" else f"{payload} (shard {s})"
            if len(parts[i]) < self.jobs:
                continue
            errors = [p for p in parts[i].values() if isinstance(p, str)]
            out[i] = errors[0] if errors else self._join(parts.pop(i))
            finished += 1
            self._say(f"[held-out] {finished}/{len(configs)} configurations measured")
            if on_result is not None:
                on_result(i, out[i])
        return out  # type: ignore[return-value]

    def _join(self, parts: dict[int, Figures]) -> Measurement:
        scores = np.zeros(self.n)
        for s, f in parts.items():
            scores[self.shards[s]] = f.scores
        timings = [parts[s].timing for s in range(self.jobs)]
        timing = None if any(t is None for t in timings) else PairedTiming.join(timings)  # type: ignore[arg-type]
        monies = [f.money for f in parts.values()]
        money = None if any(v is None for v in monies) else float(sum(monies))  # type: ignore[arg-type]
        m = summarise(Figures(scores, money, timing), self.exact_scores, self.with_references, self.objective,
                      self._exact_money)
        if m.exact_seconds is not None:
            self._exact_passes.append(m.exact_seconds)
        return m

    def exact_seconds(self) -> float:
        """One exact pass over all inputs: the median of those timed alongside, else the warm-up."""
        if self._exact_passes:
            return statistics.median(self._exact_passes)
        self.exact_scores  # noqa: B018 (waits for them)
        return self._warm_seconds

    def exact_money(self) -> float | None:
        self.exact_scores  # noqa: B018 (waits for them)
        return self._exact_money

    def close(self) -> None:
        for q in self._tasks:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join()

    def __enter__(self) -> ShardedEvaluation:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
