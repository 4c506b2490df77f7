"""The held-out evaluation spread over worker processes (`autotuner.sharded`): the
same QoS figures, intervals included, as one process measuring every input; errors
of a configuration or a worker as one line; `tune(search=Search(jobs=2))` uses it."""

from __future__ import annotations

import numpy as np
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from autotuner import Cost, HeldOut, Search, Storage, tune
from autotuner.figures import PairedTiming
from autotuner.measure import Measurer
from autotuner.sharded import ShardedEvaluation
from autotuner.splits import split_inputs
from bench.dots_kernel import kernel_inputs, kernel_text

pytestmark = pytest.mark.slow  # spawned workers import the toolchain (~5 s each)
CPU = Cost(clock="cpu", timing="paired", repeats=1)



@pytest.fixture(scope="module")
def dots_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("dots") / "dots.mlir"
    path.write_text(kernel_text(2))
    return f"{path}:main"


def configs():
    return [{"d1": {"knob_val": 2}, "d2": {"knob_val": 0}}, {"d1": {"knob_val": 0}, "d2": {"knob_val": 3}}]


def test_shards_give_the_figures_of_one_process(dots_file):
    inputs = kernel_inputs(7, 3000, knobs=2)
    program = MlirProgram(kernel_text(2), "main", "dots.mlir")
    one = Measurer(program, inputs, None, "rel_l2", CPU, what="evaluation")
    with ShardedEvaluation(dots_file, inputs, None, "rel_l2", jobs=3, cost=CPU) as sharded:
        assert [len(s) for s in sharded.shards] == [3, 2, 2]
        np.testing.assert_array_equal(sharded.exact_scores, one.exact_scores)
        seen = []
        got = sharded.measure(configs(), lambda i, m: seen.append(i))
    assert seen == [0, 1]
    for cfg, m in zip(configs(), got):
        ref = one.measure(program.build(cfg), cfg)
        assert m.n == ref.n == 7
        assert m.qos_loss == pytest.approx(ref.qos_loss, abs=1e-12) and m.qos_loss > 0
        assert m.loss_interval == pytest.approx(ref.loss_interval, abs=1e-12)  # per-input scores back in order
        assert m.speedup > 0 and m.speedup_low <= m.speedup <= m.speedup_high
        assert m.exact_seconds > 0


def test_a_failing_configuration_is_one_line_and_the_others_are_measured(dots_file):
    inputs = kernel_inputs(4, 2000, knobs=2)
    with ShardedEvaluation(dots_file, inputs, None, "rel_l2", jobs=2, cost=CPU) as sharded:
        bad, good = sharded.measure([{"d1": {"knob_val": 99}}, configs()[0]])
    assert isinstance(bad, str) and "(shard" in bad and "\n" not in bad
    assert good.n == 4


def test_an_input_that_fails_is_named_by_its_number_in_the_split(dots_file):
    inputs = kernel_inputs(4, 2000, knobs=2)
    inputs[3] = ("not an array", *inputs[3][1:])  # the second input of worker 1's shard [1, 3]
    with pytest.raises(ApproxError, match=r"held-out worker 1: .*evaluation input 3: "):
        ShardedEvaluation(dots_file, inputs, None, "rel_l2", jobs=2, cost=CPU)


def test_a_program_that_cannot_load_stops_with_one_line(tmp_path):
    with pytest.raises(ApproxError, match=r"held-out worker \d: .*nothing\.mlir"):
        ShardedEvaluation(f"{tmp_path}/nothing.mlir:main", [1, 2], None, "rel_l2", jobs=2)


def test_a_metric_workers_cannot_receive_is_refused_in_one_line(dots_file):
    with pytest.raises(ApproxError, match="evaluation workers need a picklable program"):
        ShardedEvaluation(dots_file, [1, 2], None, lambda a, b: 1.0, jobs=2)


def test_joined_timing_counts_each_shard_as_one_pass():
    a = PairedTiming(np.array([2.0, 2.0]), np.array([1.0, 1.0]), rounds=2)  # two rounds of one block
    b = PairedTiming(np.array([3.0]), np.array([1.0]), rounds=1)
    j = PairedTiming.join([a, b])
    assert j.exact_seconds == pytest.approx(a.exact_seconds + b.exact_seconds)
    assert j.approx_seconds == pytest.approx(a.approx_seconds + b.approx_seconds)
    assert j.speedup == pytest.approx(5.0 / 2.0)


def test_tune_with_two_jobs_evaluates_the_front_on_shards(dots_file, tmp_path):
    inputs = kernel_inputs(12, 3000, knobs=2)
    kw = dict(budget=0.05, cost=Cost(repeats=1))
    sharded = tune(dots_file, inputs, search=Search(n_trials=8, mode="static", jobs=2),
                   storage=Storage(out_dir=tmp_path / "two"), **kw)
    single = tune(dots_file, inputs, search=Search(n_trials=8, mode="static"), held_out=HeldOut(jobs=1),
                  storage=Storage(out_dir=tmp_path / "one"), **kw)
    assert sharded.n_eval == single.n_eval == 10
    assert sharded.exact_scores_eval is None  # no references: QoS against the exact outputs
    by_knobs = {str(p.knobs): p for p in single.front}
    shared = [p for p in sharded.front if str(p.knobs) in by_knobs]
    assert shared and all(p.speedup_eval is not None for p in sharded.front)
    for p in shared:
        assert p.qos_loss_eval == pytest.approx(by_knobs[str(p.knobs)].qos_loss_eval, abs=1e-12)
    from autotuner.verify import verify

    _, (eval_in, _) = split_inputs(inputs, None, 5.0, 0)  # the held-out split `tune` made
    one = verify(single, inputs=eval_in, jobs=1)
    two = verify(single, inputs=eval_in, jobs=2)
    assert [v.qos_loss for v in two] == pytest.approx([v.qos_loss for v in one], abs=1e-12)
    assert all(v.n == 10 and v.speedup_ci for v in two)


def test_costly_shards_run_the_exact_program_once_an_input_beside_the_configurations(tmp_path):
    log = tmp_path / "runs.txt"
    inputs = [(str(log), i) for i in range(4)]
    references = [str(i) for i in range(4)]
    cost = Cost(clock="wall", timing="paired", repeats=1)
    with ShardedEvaluation("tests.slow_program:program", inputs, references, "exact_match", jobs=2,
                           cost=cost) as sharded:
        [m] = sharded.measure([{"nap": {"knob_val": 1}}])
        np.testing.assert_array_equal(sharded.exact_scores, np.ones(4))
    runs = log.read_text().split()
    exact = [int(n) for k, n in zip(runs[::2], runs[1::2]) if k == "0"]
    # each shard warms up on its first input, then its one paired round: no exact pass of its own
    assert sorted(exact) == [0, 0, 1, 1, 2, 3]
    assert m.n == 4 and m.qos_loss == 0.0 and m.speedup > 1.0


def test_the_exact_scores_alone_are_measured_on_request(tmp_path):
    log = tmp_path / "runs.txt"
    inputs = [(str(log), i) for i in range(2)]
    with ShardedEvaluation("tests.slow_program:program", inputs, ["0", "x"], "exact_match", jobs=2,
                           cost=Cost(clock="wall", timing="paired", repeats=1)) as sharded:
        np.testing.assert_array_equal(sharded.exact_scores, [1.0, 0.0])
        assert sharded.exact_seconds() > 0
