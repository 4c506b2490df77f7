"""`autotuner.tune` end to end on small JIT kernels: the front, determinism,
resuming an interrupted study, dynamic mode, staged evaluation, failures, bad
inputs, and two worker processes on one SQLite study."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from autotuner import Cost, HeldOut, Search, Storage, config_key, hypervolume, tune
from autotuner._records import counts
from autotuner.pareto import dominates
from bench.dots_kernel import kernel_inputs, kernel_text
from passes.knobs import KnobSpec

DOTS = MlirProgram(kernel_text(2), "main", "dots.mlir")
INPUTS = kernel_inputs(12, 3000, knobs=2)  # 2 tuning, 10 evaluation inputs
ONE = Cost(repeats=1)  # one timed sample per measurement: fast


def work_units(config, args, output):
    """A deterministic cost (the `money` path): elements each loop visits."""
    n1, n2 = args[2], args[5]
    k1, k2 = (max(config[k]["knob_val"], 1) for k in ("d1", "d2"))
    return n1 / k1 + n2 * (1 - 1 / k2 if k2 > 1 else 1)  # d2 drops every k-th iteration


class Interrupt:
    """Money cost that presses Ctrl-C at its `at`-th call (a run stopped half-way)."""

    def __init__(self, at: int):
        self.calls, self.at = 0, at

    def __call__(self, config, args, output):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return work_units(config, args, output)


def run_money(tmp_path: Path, name: str, money=work_units, seed: int = 7):
    return tune(DOTS, INPUTS, budget=0.1, search=Search(n_trials=16, mode="static", seed=seed),
                cost=Cost(objective="money", money=money, repeats=1), held_out=HeldOut(evaluate=False),
                storage=Storage(out_dir=tmp_path / name))


def trial_rows(storage_dir: Path, mode: str = "static"):
    study = optuna.load_study(study_name=f"dots.mlir:main/{mode}", storage=f"sqlite:///{storage_dir / 'study.db'}")
    return [(t.number, t.state.name, t.params, t.values) for t in study.get_trials()]


def front_rows(result):
    return [(p.mode, p.knobs, round(p.qos_loss_tune, 12), round(p.speedup_tune, 12)) for p in result.front]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run with the deterministic cost."""
    d = tmp_path_factory.mktemp("ref")
    return d, run_money(d, "run")


def test_front_has_no_dominated_point_and_is_remeasured_on_held_out_inputs(tmp_path):
    r = tune(DOTS, INPUTS, budget=0.05, search=Search(n_trials=12, mode="static", seed=1), cost=ONE,
             storage=Storage(out_dir=tmp_path))
    pts = [(p.qos_loss_tune, p.speedup_tune) for p in r.front]
    assert pts and all(not dominates(a, b) for a in pts for b in pts)
    assert all(loss <= 0.05 for loss, _ in pts)
    complete = [(t.qos_loss, t.speedup) for t in r.all_trials if t.feasible and not t.pruned]
    assert all(not dominates(c, p) for c in complete for p in pts)  # nothing measured beats the front
    assert {t.trial for t in r.all_trials if not t.dominated} == {p.trial for p in r.front}
    assert all(p.qos_loss_eval is not None and p.speedup_eval > 0 and "scf.for" in p.ir for p in r.front)
    assert (r.n_tune, r.n_eval, r.trials, r.qos_metric) == (2, 10, 12, "rel_l2")
    assert (tmp_path / "result.json").exists() and (tmp_path / "study.db").exists()


def test_same_seed_gives_the_same_front(tmp_path, reference):
    _, ref = reference
    again = run_money(tmp_path, "again")
    assert front_rows(again) == front_rows(ref)
    assert [(t.trial, t.knobs) for t in again.all_trials] == [(t.trial, t.knobs) for t in ref.all_trials]
    other = run_money(tmp_path, "other", seed=8)
    assert [t.knobs for t in other.all_trials] != [t.knobs for t in ref.all_trials]


@pytest.mark.parametrize("at", [14, 6])  # money calls: 2 per trial, 2 more for the exact baseline
def test_interrupted_study_resumes_with_no_finished_trial_lost(tmp_path, reference, at):
    """Ctrl-C in trial 5 (sampled) or trial 1 (a seed); the same command again finishes."""
    ref_dir, ref = reference
    with pytest.raises(KeyboardInterrupt):
        run_money(tmp_path, "cut", money=Interrupt(at=at))
    before = trial_rows(tmp_path / "cut")
    finished = [row for row in before if row[1] == "COMPLETE"]
    assert 1 <= len(finished) < 16 and [r[1] for r in before].count("FAIL") == 1  # the interrupted one
    resumed = run_money(tmp_path, "cut")
    after = trial_rows(tmp_path / "cut")
    assert all(row in after for row in finished)  # kept as they were
    assert resumed.trials == 16
    assert front_rows(resumed) == front_rows(ref)  # as if never interrupted
    ref_complete = [r[2:] for r in trial_rows(ref_dir / "run") if r[1] == "COMPLETE"]
    got = [r[2:] for r in after if r[1] == "COMPLETE"]
    assert sorted(map(repr, got)) == sorted(map(repr, ref_complete))  # the same trials (a seed may run later)


def test_dynamic_mode_tunes_the_decision_tree(tmp_path):
    program = MlirProgram.from_file(Path(__file__).parents[1] / "examples/mlir/adaptive_sum.mlir", "mean")
    rng = np.random.default_rng(0)
    inputs = [(x, len(x)) for x in (rng.random(int(n)) + 1.0 for n in np.geomspace(50, 200_000, 12))]
    r = tune(program, inputs, budget=0.02, search=Search(n_trials=10, mode="both"), cost=ONE,
             storage=Storage(out_dir=tmp_path))
    assert {p.mode for p in r.front} == {"static", "dynamic"}
    assert r.trials == 9 + 10 and set(r.study_names) == {"static", "dynamic"}  # static: 9 values (0..8)
    for p in r.front_of("dynamic"):
        s = p.knobs["mean"]
        assert s["thresholds"] == sorted(s["thresholds"]) and all(1 <= t <= 1_000_000 for t in s["thresholds"])
        assert set(s["decisions"]) <= set(range(9))  # the range of decision_values [0, 2, 4, 8]
        x = inputs[0][0]
        program.build(p.knobs)(x, len(x))  # the compiler accepts every front configuration


def test_staged_evaluation_prunes_configurations_far_over_budget(tmp_path):
    r = tune(DOTS, kernel_inputs(36, 3000, knobs=2), budget=0.002,
             search=Search(n_trials=10, mode="static", stage_fraction=0.5), cost=ONE,
             held_out=HeldOut(evaluate=False), storage=Storage(out_dir=tmp_path))
    pruned = [t for t in r.all_trials if t.pruned]
    assert pruned and r.pruned_trials == len(pruned)
    assert all(t.dominated and not t.feasible for t in pruned)
    study = optuna.load_study(study_name="dots.mlir:main/static", storage=f"sqlite:///{tmp_path / 'study.db'}")
    attrs = [t.user_attrs for t in study.get_trials() if t.user_attrs.get("pruned")]
    assert all("slice QoS loss" in a["prune_reason"] and a["n"] == 3 for a in attrs)  # 3 of the 6 tuning inputs
    assert all(t.constraints["qos_loss_over_budget"] > 0 for t in study.get_trials() if t.user_attrs.get("pruned"))


class TwoPaths:
    """A Program in plain Python: knob `cheap` 1 gives the exact output at a tenth of
    the cost; knob `costly` k > 0 changes the output a little and saves 10 %."""

    name = "two-paths"

    def knobs(self):
        return [KnobSpec("cheap", "f", "param", "static", (0, 1)),
                KnobSpec("costly", "f", "param", "static", (0, 1, 2, 3))]

    def build(self, config):
        k = config.get("costly", {}).get("knob_val", 0)
        return lambda x: x * (1 + 0.01 * k)

    @staticmethod
    def money(config, args, output):
        return (0.1 if config["cheap"]["knob_val"] else 1.0) * (0.9 if config["costly"]["knob_val"] else 1.0)


def tune_two_paths(tmp_path, n_inputs: int):
    """TwoPaths tuned statically on n_inputs / 6 tuning inputs, each staged on half of them."""
    return tune(TwoPaths(), [float(i + 1) for i in range(n_inputs)], budget=0.5,
                search=Search(n_trials=8, mode="static", sampler="random", stage_fraction=0.5),
                cost=Cost(objective="money", money=TwoPaths.money, repeats=1), held_out=HeldOut(evaluate=False),
                storage=Storage(out_dir=tmp_path))


def test_a_configuration_stops_after_the_first_stage_where_another_answers_those_inputs_as_well_for_less(tmp_path):
    r = tune_two_paths(tmp_path, 120)  # 20 tuning inputs
    study = optuna.load_study(study_name="two-paths/static", storage=f"sqlite:///{tmp_path / 'study.db'}")
    done = [t for t in study.get_trials() if t.state.name == "COMPLETE" and "duplicate_of" not in t.user_attrs]
    cheap = next(t for t in done if t.user_attrs["config"] == {"cheap": {"knob_val": 1}, "costly": {"knob_val": 0}})
    assert not cheap.user_attrs.get("pruned") and cheap.user_attrs["first_stage"]["n"] == 10  # half of 20
    later = [t for t in done if t.number > cheap.number and t.user_attrs["config"]["cheap"]["knob_val"] == 0]
    assert later and all(t.user_attrs.get("pruned") and t.user_attrs["n"] == 10 for t in later)
    assert all(f"trial {cheap.number} is as accurate on the same 10 inputs" in t.user_attrs["prune_reason"]
               for t in later)
    assert r.pruned_trials >= len(later)


def test_slices_of_a_few_inputs_are_not_compared_with_each_other(tmp_path):
    assert tune_two_paths(tmp_path, 36).pruned_trials == 0  # 6 tuning inputs: slices of 3


class Flaky:
    """A Program in plain Python (the protocol needs no IR): knob value 3 fails at run time."""

    name = "flaky"

    def knobs(self):
        return [KnobSpec("k", "f", "param", "static", (0, 1, 2, 3))]

    def build(self, config):
        k = config.get("k", {}).get("knob_val", 0)

        def run(x):
            if k == 3:
                raise ValueError("knob 3 breaks")
            return x + 0.001 * k * x

        return run


def test_a_failing_configuration_is_a_failed_trial_and_the_study_goes_on(tmp_path):
    r = tune(Flaky(), [float(i + 1) for i in range(12)], budget=0.01, search=Search(n_trials=4, mode="static"),
             cost=ONE, storage=Storage(out_dir=tmp_path))
    assert r.failed_trials == 1 and r.trials == 4  # 0, 3 (fails), then 1 and 2
    assert {t.knobs["k"]["knob_val"] for t in r.all_trials} == {0, 1, 2}
    study = optuna.load_study(study_name="flaky/static", storage=f"sqlite:///{tmp_path / 'study.db'}")
    failed = [t for t in study.get_trials() if t.state.name == "FAIL"]
    assert "knob 3 breaks" in failed[0].user_attrs["error"]


@pytest.mark.parametrize("kw, message", [
    (lambda: dict(budget=1.5), "budget must be a QoS-loss fraction in [0, 1]"),
    (lambda: dict(budget=-0.01), "budget must be a QoS-loss fraction in [0, 1]"),
    (lambda: dict(budget="5%"), "budget must be a QoS-loss fraction in [0, 1]"),
    (lambda: dict(search=Search(narrow={"d1": []})), "knob 'd1': cannot narrow to []"),
    (lambda: dict(search=Search(narrow={"d1": [0, 2]}, fix={"d3": 2})), "unknown knob 'd3'"),
    (lambda: dict(metric="f1"), "unknown QoS metric 'f1'"),
    (lambda: dict(search=Search(sampler="cmaes")), "unknown sampler 'cmaes'"),
    (lambda: dict(search=Search(mode="fast")), "mode must be"),
    (lambda: dict(search=Search(n_trials=0)), "n_trials must be a positive integer"),
    (lambda: dict(search=Search(timeout=-1)), "timeout must be a positive number of seconds"),
    (lambda: dict(search={"n_trials": 2}), "search must be an autotuner.Search, got dict"),
    (lambda: dict(cost=Cost(objective="money")), "objective must be 'time' or 'money'"),
    (lambda: dict(cost=Cost(clock="gpu")), "clock must be 'auto', 'wall' or 'cpu'"),
    (lambda: dict(held_out=HeldOut(ratio=0)), "eval_ratio must be > 0"),
    (lambda: dict(held_out=HeldOut(references=[1.0])), "held-out references need held-out inputs"),
    (lambda: dict(storage=Storage(url="")), "url must be a non-empty string"),
], ids=lambda v: None if callable(v) else v.split(" ")[0])
def test_bad_settings_are_one_clear_error(tmp_path, kw, message):
    with pytest.raises(ApproxError) as err:
        tune(DOTS, INPUTS, **{"search": Search(n_trials=2), "storage": Storage(out_dir=tmp_path), **kw()})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_tune_takes_the_program_inputs_metric_and_grouped_settings():
    import inspect

    assert len(inspect.signature(tune).parameters) <= 10


def test_a_program_whose_exact_run_fails_is_one_clear_error(tmp_path):
    bad = [(np.zeros(10, np.float32), np.zeros(10), 10, np.zeros(10), np.zeros(10), 10)] * 4
    with pytest.raises(ApproxError) as err:
        tune(DOTS, bad, search=Search(n_trials=2), storage=Storage(out_dir=tmp_path))
    assert "the exact program fails on tuning input 0: @main argument 0: expected memref<?xf64>" in str(err.value)


@pytest.mark.slow  # two spawned processes import the toolchain (~10 s)
def test_two_jobs_share_one_sqlite_study(tmp_path):
    r = tune(DOTS, INPUTS, budget=0.05, search=Search(n_trials=12, mode="static", jobs=2), cost=ONE,
             held_out=HeldOut(evaluate=False), storage=Storage(out_dir=tmp_path))
    study = optuna.load_study(study_name="dots.mlir:main/static", storage=f"sqlite:///{tmp_path / 'study.db'}")
    workers = {t.user_attrs["worker"] for t in study.get_trials() if "worker" in t.user_attrs}
    assert len(workers) == 2
    assert 12 <= counts(study)["evaluated"] <= 13 and r.trials == counts(study)["evaluated"]


class Additive:
    """Three knobs (values 0..4) whose QoS losses and costs add up: the structure the
    predictive sampler assumes (a plain-Python Program, costs deterministic)."""

    name = "additive"
    LOSS, COST = (0.004, 0.007, 0.012), (5.0, 3.0, 1.0)

    def knobs(self):
        return [KnobSpec(f"k{i}", f"f{i}", "param", "static", (0, 1, 2, 3, 4)) for i in range(3)]

    def build(self, config):
        ks = [config.get(f"k{i}", {}).get("knob_val", 0) for i in range(3)]
        return lambda x: x * (1 + sum(c * k for c, k in zip(self.LOSS, ks)))

    @classmethod
    def cost(cls, config, args, output):
        return sum(w / (1 + config[f"k{i}"]["knob_val"]) for i, w in enumerate(cls.COST))


def test_predictive_sampler_finds_an_additive_front_with_a_sixth_of_the_space(tmp_path):
    import itertools

    r = tune(Additive(), [1.0 + i for i in range(12)], budget=0.05,
             search=Search(n_trials=20, mode="static", sampler="predictive"),
             cost=Cost(objective="money", money=Additive.cost, repeats=1), held_out=HeldOut(evaluate=False),
             storage=Storage(out_dir=tmp_path))
    assert len({json_key(t.knobs) for t in r.all_trials}) == len(r.all_trials) == 20  # no repeats
    exact_cost = sum(Additive.COST)
    every = [(sum(c * k for c, k in zip(Additive.LOSS, ks)),
              exact_cost / sum(w / (1 + k) for w, k in zip(Additive.COST, ks)))
             for ks in itertools.product(range(5), repeat=3)]
    found = [(t.qos_loss, t.speedup) for t in r.all_trials]
    assert hypervolume(found, 0.05) >= 0.95 * hypervolume(every, 0.05)  # deterministic: seed 0, exact costs


def json_key(knobs):
    return config_key(knobs)
