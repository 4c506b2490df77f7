"""Using what was measured: the static study seeds the dynamic one, `--warm-start`
reuses an earlier study's measurements, no configuration is measured twice, the
hypervolume over evaluations, `--patience`, and the default sampler on a recorded
landscape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from autotuner import DEFAULT_SAMPLER, Cost, HeldOut, Search, Storage, tune
from autotuner._optimize import stopper_for
from autotuner._records import REUSED, counts, hypervolume_of_study
from autotuner.cli import main as cli_main
from autotuner.loading import as_program
from autotuner.pareto import hypervolume, hypervolume_curve
from autotuner.space import SearchSpace
from bench.dots_kernel import kernel_inputs, kernel_text

DOTS = MlirProgram(kernel_text(3), "main", "dots.mlir")
INPUTS = kernel_inputs(12, 3000)
ADAPTIVE = MlirProgram.from_file(Path(__file__).parents[1] / "examples/mlir/adaptive_sum.mlir", "mean")
NO_EVAL = HeldOut(evaluate=False)


def paid(cost) -> Cost:
    """A deterministic money cost, one sample per measurement: fast and repeatable."""
    return Cost(objective="money", money=cost, repeats=1)


def work_units(config, args, output):
    """A deterministic cost: elements the three loops visit."""
    return sum(args[3 * i + 2] / max(config[k]["knob_val"], 1) for i, k in enumerate(("d1", "d2", "d3")))


def adaptive_cost(config, args, output):
    n = args[1]
    s = config["mean"]
    ts, ds = (s["thresholds"], s["decisions"]) if "decisions" in s else ([], [s["knob_val"]])
    return n / max(ds[sum(n >= t for t in ts)], 1)


def study_of(out: Path, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out / 'study.db'}")


def measured_keys(study) -> list[str]:
    """Keys of the configurations this study measured itself (not reused, not repeats)."""
    return [t.user_attrs["key"] for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
            if REUSED not in t.user_attrs and "duplicate_of" not in t.user_attrs]


def reused_keys(study) -> list[str]:
    return [t.user_attrs["key"] for t in study.get_trials() if REUSED in t.user_attrs]


def test_hypervolume_curve_grows_with_each_point_that_enlarges_the_front():
    pts = [(0.0, 1.0), (0.02, 1.5), None, (0.2, 3.0), (0.03, 1.4), (0.01, 1.2)]
    curve = hypervolume_curve(pts, 0.05)
    assert curve[:3] == [0.0, 0.0, pytest.approx(0.03 * 0.5)]  # exact adds nothing; (0.02, 1.5) from 0.02 to 0.05
    assert curve[3] == curve[4] == curve[5]  # a failure, a point over budget, a dominated point
    assert curve[-1] == pytest.approx(hypervolume([p for p in pts if p], 0.05)) and curve[-1] > curve[-2]
    assert hypervolume_curve([(0.04, 2.0)], 0.05, start=[(0.0, 1.5)])[0] == pytest.approx(0.05 * 0.5)


def test_static_trials_seed_the_dynamic_study_and_nothing_is_measured_twice(tmp_path):
    rng = np.random.default_rng(0)
    inputs = [(x, len(x)) for x in (rng.random(int(n)) + 1.0 for n in np.geomspace(50, 20_000, 12))]
    r = tune(ADAPTIVE, inputs, budget=0.02, search=Search(n_trials=8), cost=paid(adaptive_cost), held_out=NO_EVAL,
             storage=Storage(out_dir=tmp_path))
    static = study_of(tmp_path, "adaptive_sum.mlir:mean/static")
    dynamic = study_of(tmp_path, "adaptive_sum.mlir:mean/dynamic")
    n_static = len(measured_keys(static))
    assert n_static == min(8, SearchSpace.from_program(as_program(ADAPTIVE), "static").size())  # distinct values
    reused = reused_keys(dynamic)
    # lifted: every decision the static value
    assert len(reused) == n_static and all('"decisions"' in k for k in reused)
    assert not set(measured_keys(dynamic)) & set(reused)  # the dynamic search measured none of them again
    assert counts(dynamic)["evaluated"] == 8 and r.trials == n_static + 8  # reused ones are not evaluations
    assert r.hypervolume["dynamic"][0] == pytest.approx(r.hypervolume["static"][-1])  # starts where static ended


def test_a_static_point_the_dynamic_study_copied_is_replayed_held_out_once(tmp_path, monkeypatch):
    """A dynamic front point copied from the static study is the static point: it takes
    that point's held-out replay instead of being replayed again (a deterministic cost:
    the same fronts on every machine)."""
    from autotuner import Measurer
    from autotuner.space import config_key

    replays, figures = [], Measurer.figures

    def counted(self, fn, config, *args, **kwargs):
        if self.what == "evaluation":
            replays.append(config_key(config))
        return figures(self, fn, config, *args, **kwargs)

    monkeypatch.setattr(Measurer, "figures", counted)
    rng = np.random.default_rng(0)
    inputs = [(x, len(x)) for x in (rng.random(int(n)) + 1.0 for n in np.geomspace(50, 20_000, 12))]
    r = tune(ADAPTIVE, inputs, budget=0.05, search=Search(n_trials=6), cost=paid(adaptive_cost),
             held_out=HeldOut(ratio=1.0), storage=Storage(out_dir=tmp_path))
    copied = {t.number: int(t.user_attrs[REUSED].split("#")[1])
              for t in study_of(tmp_path, "adaptive_sum.mlir:mean/dynamic").get_trials() if REUSED in t.user_attrs}
    static = {p.trial: p for p in r.front if p.mode == "static"}
    pairs = [(p, static[copied[p.trial]]) for p in r.front
             if p.mode == "dynamic" and copied.get(p.trial) in static and static[copied[p.trial]].speedup_eval != 1.0]
    assert pairs  # a copy of a static point other than the exact program is on the dynamic front
    for p, s in pairs:
        assert config_key(p.knobs) not in replays and config_key(s.knobs) in replays
        assert (p.qos_loss_eval, p.speedup_eval, p.speedup_eval_ci) == (s.qos_loss_eval, s.speedup_eval,
                                                                      s.speedup_eval_ci)
    assert len(replays) == len(set(replays))


def test_warm_start_reuses_an_earlier_study_with_another_budget(tmp_path):
    first = tune(DOTS, INPUTS, budget=0.1, search=Search(n_trials=12, mode="static"), cost=paid(work_units),
                 held_out=NO_EVAL, storage=Storage(out_dir=tmp_path, study_name="a"))
    second = tune(DOTS, INPUTS, budget=0.05, search=Search(n_trials=6, mode="static"), cost=paid(work_units),
                  held_out=NO_EVAL, storage=Storage(out_dir=tmp_path, study_name="b", warm_start="a"))
    old, new = study_of(tmp_path, "a/static"), study_of(tmp_path, "b/static")
    assert sorted(reused_keys(new)) == sorted(measured_keys(old))  # every measurement of the first study
    assert len(measured_keys(new)) == 6 and not set(measured_keys(new)) & set(measured_keys(old))
    assert first.trials == 12 and second.trials == 6
    assert any("reused from study 'a/static'" in n for n in second.notes)
    # an earlier run's output folder works as well (its last run: study b, which holds both studies' measurements),
    # and settings that change what a measurement means are refused
    third = tune(DOTS, INPUTS, budget=0.05, search=Search(n_trials=1, mode="static"), cost=paid(work_units),
                 held_out=NO_EVAL, storage=Storage(out_dir=tmp_path / "c", warm_start=str(tmp_path)))
    assert third.trials == 1 and len(reused_keys(study_of(tmp_path / "c", "dots.mlir:main/static"))) == 12 + 6
    with pytest.raises(ApproxError, match=r"other settings \(n_tune"):
        tune(DOTS, INPUTS[:6], budget=0.05, search=Search(n_trials=1, mode="static"), cost=paid(work_units),
             held_out=NO_EVAL, storage=Storage(out_dir=tmp_path, study_name="d", warm_start="a"))
    with pytest.raises(ApproxError, match="no study 'nope/static'"):
        tune(DOTS, INPUTS, search=Search(n_trials=1, mode="static"), cost=paid(work_units), held_out=NO_EVAL,
             storage=Storage(out_dir=tmp_path, study_name="e", warm_start="nope"))


def test_patience_stops_when_the_hypervolume_stops_growing(tmp_path):
    r = tune(DOTS, INPUTS, budget=0.05, search=Search(n_trials=60, mode="static", patience=4),
             cost=paid(work_units), held_out=NO_EVAL, storage=Storage(out_dir=tmp_path))
    curve = r.hypervolume["static"]
    assert r.trials == len(curve) - 1 < 60
    assert curve[-1] == curve[-5] and curve[-1] > 0  # no growth over the last 4 evaluations
    assert all(curve[i] < curve[i + 4] for i in range(len(curve) - 5) if curve[i] > 0)  # never that long before


def test_configurations_scored_from_kept_outputs_leave_the_sampler_its_trials():
    """A sweep adds thousands of scored trials before the sampler runs: they are not
    proposals, so they neither end the search as repeats nor count as its evaluations."""
    study = optuna.create_study(directions=["minimize", "maximize"])
    dist = {"x": optuna.distributions.IntDistribution(0, 10_000)}
    for i in range(200):
        study.add_trial(optuna.trial.create_trial(params={"x": i}, distributions=dist, values=[0.0, 1.0 + i],
                                                  user_attrs={"scored": True}))
    stopper = stopper_for(n_trials=10, space_size=None, patience=None, budget=0.05, deadline=None)
    assert stopper.max_total < 200 and not stopper.done(study)
    curve = hypervolume_of_study(study, 0.05)
    assert len(curve) == 1 and curve[0] > 0  # scored points count from the start, as reused ones do


def test_cli_patience_must_be_positive(tmp_path, capsys):
    code = cli_main(["run", "examples/mlir/adaptive_sum.mlir:mean", "--inputs", "test_autotuner_cli:adaptive_inputs",
                     "--patience", "0", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "patience must be a positive" in err


def test_default_sampler_finds_the_recorded_dots_front_within_a_tenth_of_the_space():
    from bench.tuning_bench import replay
    from bench.tuning_landscapes import Landscape

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    land = Landscape.load("dots")
    order = replay(land, DEFAULT_SAMPLER, 0, 13)
    assert len(order) == 13 == len(set(order))  # 10 % of 125, no configuration twice
    assert hypervolume(order, land.budget) >= 0.95 * hypervolume(list(land.table.values()), land.budget)


def test_default_sampler_finds_the_recorded_llm_front_in_20_of_its_108_configurations():
    """The RAG-BM25-LLM reference landscape (SmolLM2's precision, passages, answer tokens,
    layers and a prompt cut, every configuration measured on the device's cores): the
    tuner's search finds its whole front within 6 % in 20 evaluations."""
    from bench.tuning_bench import replay
    from bench.tuning_landscapes import Landscape

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    land = Landscape.load("rag_bm25_llm")
    order = replay(land, DEFAULT_SAMPLER, 0, 20)
    assert len(order) == 20  # 20 evaluations, none a repeat
    assert hypervolume(order, land.budget) >= 0.95 * hypervolume(list(land.table.values()), land.budget)


def test_report_shows_the_hypervolume_over_evaluations(tmp_path):
    from autotuner.report import write_report
    from autotuner.results import TuningResult

    result = TuningResult("p.mlir:main", "rel_l2", 0.05, 6, 0, 1.0,
                          hypervolume={"static": [0.0, 0.0, 0.01, 0.02, 0.02, 0.02, 0.02]})
    index = write_report(result, tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "static: 6 evaluations, hypervolume 0.02, last grew at evaluation 3" in summary
    assert "| hypervolume | 0 | 0 | 0.01 | 0.02 | 0.02 |" in summary  # after 0, 1, 2, 5, 6 evaluations
    svg = (tmp_path / "hypervolume.svg").read_text()
    assert svg.count("<polyline") == 1 and "static" in svg
    assert "Search progress" in index.read_text() and "last grew at evaluation 3" in index.read_text()


def test_a_cached_factory_is_a_program_spec():
    """`module:system` where system is functools.lru_cache-wrapped (the RAG systems' factories)
    loads like a plain factory: results record such specs, and verify rebuilds from them."""
    import functools

    @functools.lru_cache(maxsize=1)
    def system():
        return DOTS

    assert as_program(system) is DOTS
