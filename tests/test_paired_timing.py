"""Paired timing: a speedup is the ratio of exact and approximate times taken side by
side, so a load change of the machine between measurements does not move it.

The Measurer's wall clock here is `TICKS`, which only the programs' runs advance: the
figures are the timing logic's, on any machine (sleeps oversleep on a loaded one)."""

from __future__ import annotations

import numpy as np
import pytest

import autotuner.measure as measure
from autotuner.intervals import bootstrap_ratio
from autotuner.measure import Measurer
from autotuner.settings import Cost
from passes.knobs import KnobSpec


class Ticks:
    """A clock that stands still but for the seconds a program's run says it took."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


TICKS = Ticks()


def wall(repeats: int) -> Cost:
    """Paired timing on the wall clock (`TICKS` here), `repeats` rounds."""
    return Cost(clock="wall", timing="paired", repeats=repeats)


@pytest.fixture(autouse=True)
def ticking_wall_clock(monkeypatch):
    monkeypatch.setitem(measure.CLOCKS, "wall", TICKS)


class SlowProgram:
    """A program whose exact pass takes `seconds` per input (on TICKS) and whose approximate
    version half as long. `drift` multiplies every run's time: the machine slowing down."""

    name = "slow"

    def __init__(self, seconds: float = 0.03):
        self.seconds, self.drift = seconds, 1.0

    def knobs(self):
        return [KnobSpec("half", "run", "func_substitute", "static", (0, 1))]

    def build(self, config):
        factor = 0.5 if config["half"]["knob_val"] else 1.0

        def run(x):
            TICKS.now += self.seconds * factor * self.drift
            return x

        return run


def _measure(drift_after_exact: float):
    program = SlowProgram()
    m = Measurer(program, list(range(6)), None, "rel_l2", wall(3))
    program.drift = drift_after_exact  # switched on after the exact program was first timed
    fn = program.build({"half": {"knob_val": 1}})
    return m.measure(fn, {"half": {"knob_val": 1}})


def test_load_drift_does_not_move_the_speedup():
    steady, drifted = _measure(1.0), _measure(3.0)
    for got in (steady, drifted):
        # the same speedup with and without the drift (timed against the exact time taken
        # before the drift, it would read 2 / 3 = 0.67x)
        assert (got.speedup_low, got.speedup, got.speedup_high) == pytest.approx((2.0, 2.0, 2.0)), got
    assert drifted.exact_seconds == pytest.approx(3 * steady.exact_seconds)  # re-timed under the drift


def test_costly_inputs_are_timed_one_by_one_and_cheap_passes_in_rounds():
    program = SlowProgram(0.03)
    m = Measurer(program, list(range(5)), None, "rel_l2", wall(3))
    assert m.blocks(list(range(5))) == [([i], 1) for i in range(5)]  # each input >= 20 ms: its own block
    quick = SlowProgram(1e-5)
    q = Measurer(quick, list(range(5)), None, "rel_l2", wall(3))
    (idx, loops), = q.blocks(list(range(5)))
    assert idx == [0, 1, 2, 3, 4] and 300 <= loops <= 500  # a pass of 50 us is repeated to last 20 ms
    t = q.paired(quick.build({"half": {"knob_val": 0}}))
    assert t.rounds == 3 and len(t.exact) == 3


def test_bootstrap_interval():
    e, a = np.full(20, 2.0), np.full(20, 1.0)
    assert bootstrap_ratio(e, a) == (2.0, 2.0)
    rng = np.random.default_rng(1)
    e2 = 2.0 + rng.normal(0, 0.3, 40)
    lo, hi = bootstrap_ratio(e2, a[:1].repeat(40))
    assert lo < e2.sum() / 40 < hi and hi - lo < 0.5
    assert bootstrap_ratio([1.0], [0.5]) == (2.0, 2.0)


def test_tuning_times_a_spread_slice_and_measures_qos_on_all():
    program = SlowProgram(0.03)
    m = Measurer(program, list(range(20)), None, "rel_l2", wall(1), timing_seconds=0.2)
    idx = m.timed_inputs(20)
    assert len(idx) == 8 and idx[0] == 0 and idx[-1] == 19  # >= 8 blocks, spread over the split
    got = m.measure(program.build({"half": {"knob_val": 1}}), {"half": {"knob_val": 1}})
    assert got.n == 20 and got.speedup == pytest.approx(2.0)
    assert got.exact_seconds == pytest.approx(0.6)  # per whole pass (20 x 30 ms), estimated from the slice


class CountingProgram(SlowProgram):
    """SlowProgram counting the exact and approximate programs' runs; `fail_at`: an input the
    exact program fails on."""

    def __init__(self, seconds: float, fail_at: int | None = None):
        super().__init__(seconds)
        self.exact_runs, self.approx_runs, self.fail_at = 0, 0, fail_at

    def build(self, config):
        run = super().build(config)
        if config["half"]["knob_val"]:
            def approx(x):
                self.approx_runs += 1
                return run(x)

            return approx

        def exact(x):
            self.exact_runs += 1
            if x == self.fail_at:
                raise ValueError("no answer")
            return run(x)

        return exact


def test_a_costly_held_out_program_runs_once_for_its_outputs_and_its_timing(monkeypatch):
    """Held out with references, where an exact input lasts DEFER_SECONDS, the exact and the
    approximate program warm up on the first input and the first paired round gives their
    outputs: the figures of separate untimed passes, with one pass fewer of each."""

    half = {"half": {"knob_val": 1}}
    inputs, refs = [0.0, 1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 2.0, 3.0, 5.0]
    got = {}
    for defer in (0.0, 10.0):  # 0: every input is costly enough to defer; 10: none is
        monkeypatch.setattr(measure, "DEFER_SECONDS", defer)
        program = CountingProgram(0.03)
        m = Measurer(program, inputs, refs, "rel_l2", wall(1), what="evaluation")
        assert program.exact_runs == (1 if defer == 0.0 else 5)
        r = m.measure(program.build(half), half)
        assert program.exact_runs == (1 + 5 if defer == 0.0 else 5 + 5)  # the timing ran the exact program once more
        assert program.approx_runs == (1 + 5 if defer == 0.0 else 5 + 5)  # a warm-up input, or a QoS pass
        second = m.measure(program.build(half), half)  # a second configuration: the exact outputs are known
        assert program.exact_runs == (1 + 5 + 5 if defer == 0.0 else 5 + 5 + 5)
        assert second.qos_loss == r.qos_loss
        got[defer] = (r.qos_loss, list(m.exact_scores), m.exact_outputs)
        assert (r.speedup_low, r.speedup, r.speedup_high) == pytest.approx((2.0, 2.0, 2.0))
        assert m.exact_seconds() == pytest.approx(0.15)  # 5 x 30 ms
    assert got[0.0] == got[10.0]
    # without references the QoS needs the exact outputs first: nothing is deferred
    program = CountingProgram(0.03)
    monkeypatch.setattr(measure, "DEFER_SECONDS", 0.0)
    Measurer(program, inputs, None, "rel_l2", wall(1))
    assert program.exact_runs == 5


def test_a_deferred_exact_program_failing_in_the_timing_names_its_input(monkeypatch):
    from approx_dialect.diagnostics import ApproxError

    monkeypatch.setattr(measure, "DEFER_SECONDS", 0.0)
    program = CountingProgram(0.001, fail_at=3)
    m = Measurer(program, [0, 1, 2, 3], [0, 1, 2, 3], "rel_l2", wall(1), what="evaluation")
    half = {"half": {"knob_val": 1}}
    with pytest.raises(ApproxError, match="the exact program fails on evaluation input 3: ValueError: no answer"):
        m.measure(program.build(half), half)


class Tiers(SlowProgram):
    """Knob `tier` v runs 1/(v + 1) of the exact time; tier 3 fails on input 2."""

    def __init__(self, seconds: float):
        super().__init__(seconds)
        self.exact_runs = 0

    def knobs(self):
        return [KnobSpec("tier", "run", "func_substitute", "static", (0, 3))]

    def build(self, config):
        v = config["tier"]["knob_val"]

        def run(x):
            if v == 0:
                self.exact_runs += 1
            if v == 3 and x == 2:
                raise ValueError("tier 3 has no answer")
            TICKS.now += self.seconds / (v + 1)
            return x + (v == 2)  # tier 2 answers wrong everywhere

        return run


def test_configurations_measured_together_share_one_exact_run_per_input(monkeypatch):
    """On a costly held-out split, k configurations measured together cost one exact run an
    input (not k), with the figures each gets measured alone; one that fails is its error
    line and the others are measured."""
    monkeypatch.setattr(measure, "DEFER_SECONDS", 0.0)
    inputs = [0.0, 1.0, 2.0, 3.0, 4.0]
    configs = [{"tier": {"knob_val": v}} for v in (1, 2, 3)]
    program = Tiers(0.03)
    m = Measurer(program, inputs, inputs, "rel_l2", wall(1), what="evaluation")
    got = m.measure_together([(program.build(c), c) for c in configs])
    assert program.exact_runs == 1 + 5  # the warm-up input, then once per input for all three
    assert got[2] == "<measure>: error: the program fails on evaluation input 2: ValueError: tier 3 has no answer"
    alone = Tiers(0.03)
    m_alone = Measurer(alone, inputs, inputs, "rel_l2", wall(1), what="evaluation")
    for c, together in zip(configs[:2], got[:2]):
        single = m_alone.measure(alone.build(c), c)
        assert (together.speedup, together.qos_loss) == pytest.approx((single.speedup, single.qos_loss))
    assert got[0].speedup == pytest.approx(2.0) and got[1].speedup == pytest.approx(3.0)
    assert got[0].qos_loss == 0.0 and got[1].qos_loss > 0.0
    assert m.exact_seconds() == pytest.approx(0.15)


def test_front_points_timed_together_share_the_exact_runs():
    program = CountingProgram(0.03)
    m = Measurer(program, list(range(6)), None, "rel_l2", wall(1))
    fns = [program.build({"half": {"knob_val": 1}}) for _ in range(3)]
    before = program.exact_runs
    figures = m.timed_figures_together(fns)
    assert program.exact_runs - before == 6 and program.approx_runs == 3 * 6  # k + 1 runs an input, not 2k
    assert [f["speedup"] for f in figures] == pytest.approx([2.0, 2.0, 2.0])


def test_a_point_failing_while_timed_together_leaves_the_others_timed():
    program = CountingProgram(0.03)
    m = Measurer(program, list(range(4)), None, "rel_l2", wall(1))

    def broken(x):
        raise ValueError("lost")

    good, bad = m.timed_figures_together([program.build({"half": {"knob_val": 1}}), broken])
    assert good["speedup"] == pytest.approx(2.0) and isinstance(bad, ValueError)
