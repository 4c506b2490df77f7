"""Measurement of one configuration: QoS loss against the exact program and
speedup over it, both on the same inputs in the same process.

QoS loss = (QoS_exact - QoS_approx) / QoS_exact. With ground truth, both QoS are
measured against it (a loss can then be negative: better than exact); without,
QoS_approx is measured against the exact outputs and QoS_exact = 1.

Speedup is always paired: the exact and the approximate program are timed side by
side, never against an exact time taken at another moment (on a shared machine
that is another experiment). The inputs are cut into blocks of consecutive inputs
whose exact run lasts >= 20 ms (one input per block for programs that take longer;
a block repeats its inputs when the whole pass is shorter, so microsecond kernels
are timed above the clock's noise). Each block is timed exact then approximate (or
approximate then exact, alternating), so a load change of the machine hits both
alike; cheap passes (under 0.25 s) get `repeats` rounds, costly ones as many as
give >= 8 blocks in all (at most `repeats`). Speedup = total exact time / total
approximate time; its 95 % interval is a bootstrap over the timed blocks. The
first pass over the inputs is the warm-up (its outputs give the QoS; a program
with an `untimed()` context runs it within, e.g. to reuse the results of its
deterministic components; timed passes run outside it). On a split timed whole
whose QoS is against references and whose exact run of one input lasts
DEFER_SECONDS or more (an LLM pipeline's held-out questions), each program warms up
on the first input only and its outputs come from the first round of its paired
timing, every input its own block: no pass runs only to know the answers. While
tuning (`timing_seconds`, `TUNING_TIMING_SECONDS`), a costly pass is timed on
evenly spread inputs whose exact run lasts about 2 s (QoS on all of them); the
held-out evaluation times every input.
`timing="model"` (a program that keeps its component calls' outputs, `Reuse`): no
configuration is timed while it is measured; its untimed pass reads the calls kept
from earlier passes, and its time is modelled: the pass's own time with each kept
call counted at the seconds it took when it ran (`Reuse.unspent`), so only the calls
that changed run, and the exact program's time is modelled the same way. The few
configurations that could reach the front are then timed paired (`timed_figures`).
`clock="wall"` times wall-clock seconds (what a user waits: right for programs
that wait on servers or run threads); `clock="cpu"` the calling thread's CPU
seconds, which a busy shared machine barely disturbs (right for in-process JIT
kernels and torch on one thread). With `objective="money"` the ratio is of money
costs (`money(config, args, output)` per run) instead.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import NotKept, offered
from autotuner.figures import Figures, Measurement, PairedTiming, check_exact_qos, summarise
from autotuner.metrics import Metric, get_metric
from autotuner.settings import Cost

WHERE = "<measure>"
MIN_BLOCK_SECONDS = 0.02  # a timed block holds (or repeats) inputs until its exact run lasts this long
CHEAP_PASS_SECONDS = 0.25  # a pass this cheap is timed in `repeats` rounds
MIN_BLOCKS = 8  # costly passes: rounds until this many blocks are timed (at most `repeats` rounds)
DEFER_SECONDS = 1.0  # an exact run of one input this long: outputs come from the first paired round
TUNING_TIMING_SECONDS = 2.0  # tuning: time evenly spread inputs whose exact run lasts this long
TIMING = ("paired: exact and approximate timed side by side, block by block (a block: consecutive inputs "
          "whose exact run lasts >= 20 ms, one input for costly programs), order alternating; speedup = total "
          "exact time / total approximate time; interval: 95 % bootstrap over the blocks. Tuning times evenly "
          "spread tuning inputs whose exact run lasts >= 2 s (all of them when a pass is shorter; QoS on all); "
          "the held-out evaluation times every held-out input")
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
TIMINGS = ("paired", "model")
PAIRED = Cost(clock="wall", timing="paired")  # a Measurer's cost when none is given


def as_args(x: Any) -> tuple:
    """An input is a tuple of positional arguments; anything else is one argument."""
    return x if isinstance(x, tuple) else (x,)


class Measurer:
    """Measures configurations of `program` on one split of the inputs."""

    def __init__(self, program, inputs: Sequence, references: Sequence | None, metric: str | Callable | Metric,
                 cost: Cost = PAIRED, *, exact_config: dict | None = None, what: str = "tuning",
                 timing_seconds: float | None = None, whole_split: bool = True,
                 numbers: Sequence[int] | None = None):
        """`cost`: how cost is measured, its clock and timing given (not "auto": `tune`
        resolves those for the program; see the module docstring); `whole_split=False`:
        the inputs are a shard of a split (`autotuner.sharded`), whose exact QoS is
        checked on the whole split, not here; `numbers`: each input's number in that
        split, which an error names (default: its position here)."""
        if not isinstance(cost, Cost):
            raise TypeError(f"cost must be an autotuner.Cost, got {type(cost).__name__}")
        if cost.clock not in CLOCKS:
            raise ApproxError(f"clock must be 'wall' or 'cpu', got {cost.clock!r}", where=WHERE)
        if cost.timing not in TIMINGS:
            raise ApproxError(f"timing must be one of {', '.join(TIMINGS)}, got {cost.timing!r}", where=WHERE)
        self.cost, self._now = cost, CLOCKS[cost.clock]
        self.timing_seconds = timing_seconds  # time a slice whose exact run lasts this long (None: all)
        # the program's untimed contexts, read once (`approx_opt.program.CostlyProgram`)
        self._untimed_hook, self._kept_only = offered(program, "untimed"), offered(program, "kept_only")
        if not inputs:
            raise ApproxError(f"the {what} split has no inputs", where=WHERE)
        if references is not None and len(references) != len(inputs):
            raise ApproxError(f"{len(references)} references for {len(inputs)} {what} inputs", where=WHERE)
        self.program, self.metric = program, get_metric(metric)
        self.inputs = [as_args(x) for x in inputs]
        self.numbers = list(numbers) if numbers is not None else list(range(len(self.inputs)))
        self.references = list(references) if references is not None else None
        self.what = what
        self.exact_config = exact_config if exact_config is not None else \
            {s.name: {"knob_val": 0} for s in program.knobs()}
        try:
            fn = program.build(self.exact_config)
        except ApproxError as err:
            raise ApproxError(f"cannot build the exact program: {err.message}", where=err.where) from None
        self._input_seconds: list[float] = []  # exact time per input (warm-up run): sizes the timed blocks
        self._modelled: list[float] = []  # the last untimed pass's modelled seconds per input
        self._whole_split, self._exact_scores = whole_split, None
        self.exact_fn = fn
        if cost.timing == "model":  # the exact outputs kept by an earlier run are read, their time modelled
            with self._untimed() as kept:
                self._exact_outputs = self._run(fn, self.inputs, exact=True, kept=kept)
        else:
            self._exact_outputs = self._run(fn, self.inputs[:1], exact=True)
        self.one_pass = (cost.timing == "paired" and cost.objective == "time" and timing_seconds is None
                         and self.references is not None and self._exact_pending
                         and self._input_seconds[0] >= DEFER_SECONDS)  # see the module docstring
        if not self.one_pass:  # else the other exact outputs come from the first paired round
            self._complete_exact()
            self.exact_scores  # noqa: B018 (checks the exact QoS now)
        self._exact_passes: dict[int, list[float]] = {}  # exact pass times measured alongside, per slice
        self._exact_money: dict[int, float | None] = {}

    @property
    def exact_outputs(self) -> list:
        """The exact program's outputs on the split (run now if deferred and not timed yet)."""
        self._complete_exact()
        return self._exact_outputs

    @property
    def exact_scores(self) -> np.ndarray:
        if self._exact_scores is None:
            outputs = self.exact_outputs
            self._exact_scores = self.metric.scores(outputs, self.references if self.with_references else outputs)
            if self._whole_split:
                check_exact_qos(self._exact_scores, self.with_references, self.what, self.metric.name)
        return self._exact_scores

    @property
    def _exact_pending(self) -> bool:
        """Whether exact outputs are still to come (a `one_pass` split before its first timing)."""
        return len(self._exact_outputs) < len(self.inputs)

    def _complete_exact(self) -> None:
        """The exact outputs not run yet, run now (untimed: nothing is paired with them)."""
        if self._exact_pending:
            done = len(self._exact_outputs)
            self._exact_outputs += self._run(self.exact_fn, self.inputs[done:], exact=True, first=done)

    @property
    def with_references(self) -> bool:
        """QoS against ground truth (else against the exact program's outputs)."""
        return self.references is not None

    # ------------------------------------------------------------ running

    def _untimed(self):
        """The program's untimed context (`untimed()`: e.g. reading kept component outputs), if any."""
        return self._untimed_hook() if self._untimed_hook else contextlib.nullcontext()

    def _run(self, fn, inputs, exact: bool = False, kept=None, first: int = 0) -> list:
        """Outputs of `fn` on `inputs` (the split's from its `first`); with `kept` (what the untimed
        context yields: the program's `Reuse`, or None) each input's modelled seconds go to
        `_modelled` (see the module docstring)."""
        outs, now, clock = [], self._now, self.cost.clock
        self._modelled = []
        for i, args in enumerate(inputs):
            unspent = kept.unspent(clock) if kept is not None else 0.0
            t0 = now()
            try:
                outs.append(fn(*args))
            except Exception as err:
                raise self._failure(err, first + i, exact) from None
            seconds = now() - t0
            if kept is not None:
                seconds += kept.unspent(clock) - unspent
            self._modelled.append(seconds)
            if exact:
                self._input_seconds.append(seconds)
        return outs

    def _failure(self, err: Exception, i: int, exact: bool) -> ApproxError:
        label = "the exact program fails" if exact else "the program fails"
        msg = (f"{err.where + ': ' if err.where else ''}{err.message}" if isinstance(err, ApproxError)
               else f"{type(err).__name__}: {err}")  # keep where: the failing component's name
        return ApproxError(f"{label} on {self.what} input {self.numbers[i]}: {msg}", where=WHERE)

    def _one(self, fn, i: int, exact: bool) -> tuple[float, Any]:
        """(seconds, output) of `fn` on input i, timed."""
        t0 = self._now()
        try:
            out = fn(*self.inputs[i])
        except Exception as err:
            raise self._failure(err, i, exact) from None
        return self._now() - t0, out

    def _sample(self, fn, inputs, loops: int) -> float:
        now = self._now
        t0 = now()
        for _ in range(loops):
            for args in inputs:
                fn(*args)
        return (now() - t0) / loops

    def timed_inputs(self, n: int) -> list[int]:
        """The inputs (indices among the first n) that `paired` times: all, or with
        `timing_seconds` set and a costlier pass, evenly spread inputs whose exact run
        lasts `timing_seconds` (at least MIN_BLOCKS of them): a paired estimate on a
        slice, for tuning, where timing the exact program beside every trial doubles
        its cost. The QoS is always measured on all n inputs."""
        secs = self._input_seconds[:n]
        if self.timing_seconds is None or sum(secs) <= self.timing_seconds:
            return list(range(n))
        for k in range(min(MIN_BLOCKS, n), n + 1):
            idx = sorted({round(i * (n - 1) / max(k - 1, 1)) for i in range(k)})
            if sum(secs[i] for i in idx) >= self.timing_seconds:
                return idx
        return list(range(n))

    def blocks(self, indices: list[int]) -> list[tuple[list[int], int]]:
        """(inputs, loops) of the timed blocks: consecutive inputs of `indices` until
        their exact run lasts MIN_BLOCK_SECONDS; inputs shorter than that in all are
        one block repeated `loops` times."""
        secs = [self._input_seconds[i] for i in indices]
        total = sum(secs)
        if total < MIN_BLOCK_SECONDS:
            return [(list(indices), max(1, min(10_000, math.ceil(MIN_BLOCK_SECONDS / max(total, 1e-9)))))]
        out, current, acc = [], [], 0.0
        for i, t in zip(indices, secs):
            current.append(i)
            acc += t
            if acc >= MIN_BLOCK_SECONDS:
                out.append((current, 1))
                current, acc = [], 0.0
        if current:  # a short tail joins the last block
            out[-1] = (out[-1][0] + current, 1)
        return out

    def paired(self, fn, n: int | None = None, repeats: int | None = None) -> PairedTiming:
        """Time `fn` and the exact program side by side, block by block, on the first
        n inputs (or the slice `timed_inputs` picks; see the module docstring)."""
        got = self.paired_together([fn], n, repeats)[0]
        if isinstance(got, Exception):
            raise got
        return got

    def paired_together(self, fns: Sequence, n: int | None = None,
                        repeats: int | None = None) -> list[PairedTiming | Exception]:
        """`paired` for several programs at once (each one's timing, or what it raised): in
        each block the exact program runs once beside all of them, the order rotating (each
        as often just before the exact run as just after), so k programs cost k + 1 runs a
        block, not 2k."""
        n = len(self.inputs) if n is None else min(n, len(self.inputs))
        repeats = repeats or self.cost.repeats
        if self._exact_pending and n == len(self.inputs):
            return [got if isinstance(got, ApproxError) else got[0] for got in self._paired_capturing(fns, repeats)]
        self._complete_exact()
        indices = self.timed_inputs(n)
        blocks = self.blocks(indices)
        timed = sum(self._input_seconds[i] for i in indices)
        if timed < CHEAP_PASS_SECONDS:
            rounds = repeats
        else:
            rounds = max(1, min(repeats, math.ceil(MIN_BLOCKS / len(blocks))))
        k = len(fns)
        exact: list[float] = []
        approx: list[list[float]] = [[] for _ in fns]
        failed: list[Exception | None] = [None] * k
        for b, (idx, loops) in enumerate(blocks * rounds):
            xs = [self.inputs[i] for i in idx]
            for j in _rotated(b, k):
                if j == 0:
                    exact.append(self._sample(self.exact_fn, xs, loops))
                elif failed[j - 1] is None:
                    try:
                        approx[j - 1].append(self._sample(fns[j - 1], xs, loops))
                    except Exception as err:  # noqa: BLE001 (the caller gets it, the others go on)
                        failed[j - 1] = err
        scale = sum(self._input_seconds[:n]) / timed if len(indices) < n and timed > 0 else 1.0
        timings = [PairedTiming(np.array(exact), np.array(t), rounds, scale, len(indices)) for t in approx]
        self._exact_passes.setdefault(n, []).append(scale * float(np.sum(exact)) / rounds)
        return [err if err is not None else t for err, t in zip(failed, timings)]

    def _paired_capturing(self, fns: Sequence, repeats: int) -> list[tuple[PairedTiming, list] | ApproxError]:
        """(`paired` timing, outputs) of each of `fns` on the whole split of a `one_pass`
        Measurer, or the error it failed with: every input its own block (each is costly),
        the exact program run once per block beside all of them, the order rotating (each
        configuration as often just before the exact run as just after); the first round
        gives their outputs and, while deferred, the exact outputs and seconds per input."""
        n, k = len(self.inputs), len(fns)
        rounds = max(1, min(repeats, math.ceil(MIN_BLOCKS / n)))
        exact, exact_outputs = [], []
        approx: list[list[float]] = [[] for _ in fns]
        outputs: list[list] = [[] for _ in fns]
        failed: list[ApproxError | None] = [None] * k
        for r in range(rounds):
            for i in range(n):
                for j in _rotated(r * n + i, k):
                    if j == 0:
                        te, e = self._one(self.exact_fn, i, True)
                        exact.append(te)
                        if r == 0:
                            exact_outputs.append(e)
                    elif failed[j - 1] is None:
                        try:
                            ta, a = self._one(fns[j - 1], i, False)
                        except ApproxError as err:
                            failed[j - 1] = err
                            continue
                        approx[j - 1].append(ta)
                        if r == 0:
                            outputs[j - 1].append(a)
        if self._exact_pending:
            self._exact_outputs, self._input_seconds = exact_outputs, exact[:n]
        exact_times = np.array(exact)
        self._exact_passes.setdefault(n, []).append(float(exact_times.sum()) / rounds)
        return [err if err is not None else (PairedTiming(exact_times, np.array(t), rounds, 1.0, n), outs)
                for err, t, outs in zip(failed, approx, outputs)]

    def _money(self, config: dict, inputs, outputs) -> float | None:
        money = self.cost.money
        return None if money is None else float(sum(money(config, a, o) for a, o in zip(inputs, outputs)))

    def exact_seconds(self, n: int | None = None) -> float:
        """Time of one exact pass over the first n inputs, for information (speedups never
        use it): the median of the passes timed alongside configurations in this
        process, or the warm-up pass when none was."""
        n = len(self.inputs) if n is None else n
        if not self._exact_passes.get(n):
            self._complete_exact()
            return float(sum(self._input_seconds[:n]))
        return statistics.median(self._exact_passes[n])

    def exact_money(self, n: int | None = None) -> float | None:
        n = len(self.inputs) if n is None else n
        if n not in self._exact_money:
            self._exact_money[n] = self._money(self.exact_config, self.inputs[:n], self.exact_outputs[:n])
        return self._exact_money[n]

    # ------------------------------------------------------------ measuring

    def figures(self, fn, config: dict, n: int | None = None, repeats: int | None = None,
                kept_only: bool = False) -> Figures:
        """Per-input scores, money and paired timing of `fn` (the program built for
        `config`) on the first n inputs of the split (all by default). `kept_only`: the
        QoS pass reads kept outputs only (the program's `kept_only` context; a call not
        kept raises `NotKept`)."""
        n = len(self.inputs) if n is None else min(n, len(self.inputs))
        inputs = self.inputs[:n]
        if self.one_pass and n == len(self.inputs) and not kept_only:  # warm-up on the first input
            self._run(fn, inputs[:1])
            timing, outputs = _raised(self._paired_capturing([fn], repeats or self.cost.repeats)[0])
            return Figures(self.metric.scores(outputs, self.references), self._money(config, inputs, outputs), timing)
        with (self._kept_only() if kept_only else self._untimed()) as kept:
            outputs = self._run(fn, inputs, kept=kept if self.cost.timing == "model" else None)  # the warm-up pass
        refs = (self.references if self.references is not None else self.exact_outputs)[:n]
        scores = self.metric.scores(outputs, refs)
        money = self._money(config, inputs, outputs)
        if self.cost.objective == "money":
            return Figures(scores, money, None)
        if self.cost.timing == "model":
            return Figures(scores, money, None, (float(sum(self._input_seconds[:n])), float(sum(self._modelled))))
        return Figures(scores, money, self.paired(fn, n, repeats))

    def score(self, fn, config: dict) -> Measurement | None:
        """QoS loss and modelled speedup of `fn` on the whole split from kept outputs
        alone, with no model run; None where a call was not kept (or nothing is kept:
        "model" timing and the program's `kept_only` context are needed)."""
        if self.cost.timing != "model" or self._kept_only is None:
            return None
        try:
            figures = self.figures(fn, config, kept_only=True)
        except NotKept:
            return None
        return summarise(figures, self.exact_scores, self.with_references, self.cost.objective)

    def timed_figures(self, fn, n: int | None = None, repeats: int | None = None) -> dict:
        """The paired timing of `fn` beside the exact program (as `measure` times it in
        "paired" timing), for a configuration whose QoS was measured already."""
        return _timed(self.paired(fn, n, repeats))

    def timed_figures_together(self, fns: Sequence) -> list[dict | Exception]:
        """`timed_figures` of several programs, timed together (`paired_together`)."""
        return [got if isinstance(got, Exception) else _timed(got) for got in self.paired_together(fns)]

    def measure(self, fn, config: dict, n: int | None = None, repeats: int | None = None) -> Measurement:
        """QoS loss and speedup of `fn` (the program built for `config`) on the first
        n inputs of the split (all by default)."""
        n = len(self.inputs) if n is None else min(n, len(self.inputs))
        figures = self.figures(fn, config, n, repeats)
        exact_money = self.exact_money(n) if self.cost.objective == "money" else None
        return summarise(figures, self.exact_scores[:n], self.with_references, self.cost.objective, exact_money)

    def figures_together(self, programs: Sequence[tuple[Callable, dict]]) -> list[Figures | str]:
        """Each (program, config)'s `figures` on the whole split, or the error line it failed
        with. On a `one_pass` split (costly inputs, timed whole) the exact program runs once
        per input beside all of them (`_paired_capturing`): k configurations cost k + 1 runs
        an input, not 2k."""
        if not self.one_pass:
            out: list[Figures | str] = []
            for fn, config in programs:
                try:
                    out.append(self.figures(fn, config))
                except ApproxError as err:
                    out.append(err.line())
            return out
        live: list[ApproxError | None] = []
        for fn, _ in programs:  # the warm-up on the first input
            try:
                self._run(fn, self.inputs[:1])
                live.append(None)
            except ApproxError as err:
                live.append(err)
        runs = iter(self._paired_capturing([fn for (fn, _), err in zip(programs, live) if err is None],
                                           self.cost.repeats))
        out = []
        for (_, config), err in zip(programs, live):
            got = err if err is not None else next(runs)
            if isinstance(got, ApproxError):
                out.append(got.line())
            else:
                timing, outputs = got
                out.append(Figures(self.metric.scores(outputs, self.references),
                                   self._money(config, self.inputs, outputs), timing))
        return out

    def measure_together(self, programs: Sequence[tuple[Callable, dict]],
                         on_result: Callable[[int, Measurement | str], Any] | None = None) -> list[Measurement | str]:
        """Each (program, config) measured on the whole split, as `measure` does (a
        Measurement, or the error line it failed with), through `figures_together`: on a
        costly split the exact program runs once per input beside all of them, and their
        figures come when the last input is measured. `on_result(i, figure)` as each is."""
        out: list[Measurement | str] = []
        for i, got in enumerate(self.figures_together(programs)):
            out.append(got if isinstance(got, str) else
                       summarise(got, self.exact_scores, self.with_references, self.cost.objective,
                                 self.exact_money() if self.cost.objective == "money" else None))
            if on_result is not None:
                on_result(i, out[-1])
        return out


def _rotated(step: int, k: int) -> list[int]:
    """The order of the exact program (0) and k others (1..k) in timed block `step`: rotating
    by one a block, so each runs as often just before the exact program as just after it."""
    start = step % (k + 1)
    return [*range(start, k + 1), *range(start)]


def _timed(t: PairedTiming) -> dict:
    low, high = t.interval()
    return {"speedup": t.speedup, "speedup_low": low, "speedup_high": high, "seconds": t.approx_seconds,
            "exact_seconds": t.exact_seconds}


def _raised(got):
    """A `_paired_capturing` result, its error raised."""
    if isinstance(got, ApproxError):
        raise got
    return got
