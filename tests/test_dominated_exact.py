"""A speedup means something only against an exact program no configuration beats: a
kernel whose gold references favour a perforated loop over the exact one is tuned,
and the tuner names that configuration on the first lines of `approx-tune run`'s
summary and of its report, and bench/results.py refuses to record its row; an exact
program that is the most accurate gets no such line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from approx_opt.program import MlirProgram
from autotuner import Cost, FrontPoint, HeldOut, Search, Storage, TuningResult, exact_dominated, most_accurate, tune
from autotuner.cli import main as approx_tune
from bench.results import refusal

ROOT = Path(__file__).resolve().parents[1]
MLIR = ROOT / "examples/mlir/adaptive_sum.mlir"
MEAN = MlirProgram.from_file(MLIR, "mean")
WARNING = "The exact program is not the most accurate"


def biased(gold_is_exact: bool):
    """12 arrays of 2000 samples whose odd samples carry a bias: the gold mean is 1 (the
    even samples'), which a loop visiting every 2nd sample hits and the exact loop
    misses; or the gold mean is the exact one (nothing can beat it)."""
    rng = np.random.default_rng(3)
    inputs, refs = [], []
    for _ in range(12):
        x = np.ones(2000)
        x[1::2] += rng.uniform(0.2, 0.8)
        inputs.append((x, len(x)))
        refs.append(float(x.mean()) if gold_is_exact else 1.0)
    return inputs, refs


def dominated_inputs():
    return biased(gold_is_exact=False)


def exact_best_inputs():
    return biased(gold_is_exact=True)


def tuned(out: Path, inputs, evaluate: bool = True) -> TuningResult:
    return tune(MEAN, *inputs, metric="rel_l2", budget=0.05, search=Search(n_trials=4, mode="static", seed=0),
                cost=Cost(repeats=1), held_out=HeldOut(evaluate=evaluate), storage=Storage(out_dir=out))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("dominated")
    return {"dominated": (d / "dominated", tuned(d / "dominated", dominated_inputs())),
            "exact_best": (d / "exact_best", tuned(d / "exact_best", exact_best_inputs()))}


def test_the_configuration_that_beats_the_exact_program_is_found_on_held_out_figures(runs):
    _, r = runs["dominated"]
    best = exact_dominated(r)
    assert best is not None and best.split == "held-out" and best.beats_exact
    assert best.qos_loss_ci[1] < 0 and best.knobs and best.speedup is not None
    assert most_accurate(r).qos_loss_tune < 0
    _, exact = runs["exact_best"]
    assert exact_dominated(exact) is None and not most_accurate(exact).beats_exact


def test_without_held_out_figures_the_tuning_interval_decides(tmp_path):
    r = tuned(tmp_path / "tune_only", dominated_inputs(), evaluate=False)
    best = exact_dominated(r)
    assert best is not None and best.split == "tuning" and best.qos_loss_ci[1] < 0
    assert all(t.qos_loss_ci is not None for t in r.all_trials)  # every trial keeps its loss interval


def test_held_out_figures_overrule_the_tuning_ones_and_no_interval_decides_nothing():
    gain_in_tuning_only = FrontPoint("static", {"k": {"knob_val": 2}}, -0.2, 2.0, -0.01, 1.9,
                                     qos_loss_eval_ci=[-0.05, 0.03], qos_loss_tune_ci=[-0.3, -0.1])
    no_interval = FrontPoint("static", {"k": {"knob_val": 3}}, -0.1, 3.0)
    r = TuningResult("p", "rel_l2", 0.05, 2, 0, 1.0, front=[gain_in_tuning_only, no_interval])
    assert exact_dominated(r) is None
    r.front[1].qos_loss_tune_ci = [-0.15, -0.05]  # a tuning-only point beyond its interval
    assert exact_dominated(r).knobs == {"k": {"knob_val": 3}}


def cli(capsys, *argv) -> str:
    code = approx_tune([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("inputs, dominated", [("dominated_inputs", True), ("exact_best_inputs", False)])
def test_run_prints_it_first(capsys, tmp_path, inputs, dominated):
    out = cli(capsys, "run", f"{MLIR}:mean", "--inputs", f"test_dominated_exact:{inputs}", "--metric", "rel_l2",
              "--budget", "0.05", "--trials", "4", "--mode", "static", "--repeats", "1", "--out", tmp_path,
              "--no-progress")
    first = out.splitlines()[0]
    if dominated:
        best = exact_dominated(TuningResult.from_json((tmp_path / "result.json").read_text()))
        assert first.startswith(f"warning: {WARNING}") and best.configuration() in first
        assert "QoS loss -" in first and "x [" in first and "against a weaker program" in first
    else:
        assert WARNING not in out and first.startswith("adaptive_sum.mlir:mean: ")


@pytest.mark.parametrize("run, dominated", [("dominated", True), ("exact_best", False)])
def test_report_opens_with_it(capsys, runs, tmp_path, run, dominated):
    out_dir, r = runs[run]
    cli(capsys, "report", "--out", out_dir, "--to", tmp_path / "rep")
    md = (tmp_path / "rep" / "summary.md").read_text().splitlines()
    body = (tmp_path / "rep" / "index.html").read_text().split("<body>", 1)[1].strip().splitlines()
    assert md[0].startswith("# Tuning summary") and body[0].startswith("<h1>")
    if dominated:
        configuration = exact_dominated(r).configuration()
        assert md[2].startswith(f"**Warning:** {WARNING}") and configuration in md[2]
        assert body[1].startswith('<p class="warn"') and WARNING in body[1] and "trial" in body[1]
    else:
        assert not any(WARNING in line for line in md) and not any(WARNING in line for line in body)


def test_the_bench_refuses_the_row(runs):
    _, r = runs["dominated"]
    line = refusal("rag_dense", r)
    best = exact_dominated(r)
    assert line.startswith("rag_dense: not recorded:") and best.configuration() in line
    assert f"QoS loss {100 * best.qos_loss:+.2f} %" in line and f"{best.speedup:.2f}x" in line
    assert "\n" not in line
    assert refusal("rag_dense", runs["exact_best"][1]) is None
