"""The report's numbers and files from a hand-built TuningResult: summary.md's
speedups per QoS-loss level, front.json's exact shape, the PNG/SVG, and the
HTML escaping of user text (the browser checks are in test_report_chromium.py)."""

from __future__ import annotations

import json
import re

import pytest

from autotuner.report import write_report
from autotuner.report_html import script_json
from autotuner.report_plot import figure, fmt_tick, nice_ticks
from autotuner.report_summary import best_speedup, fmt_setting, speedup_cells, speedup_table
from autotuner.results import FrontPoint, TrialPoint, TuningResult

IR = """func.func @mean(%arg0: memref<?xf64>, %arg1: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %cst = arith.constant 0.0 : f64
  %0 = scf.for %i = %c0 to %arg1 step %c4 iter_args(%acc = %cst) -> (f64) {
    %v = memref.load %arg0[%i] : memref<?xf64>
    %s = arith.addf %acc, %v : f64
    scf.yield %s : f64
  }
  return %0 : f64
}"""


def _front() -> list[FrontPoint]:
    def fp(mode, knobs, lt, st, le, se):
        return FrontPoint(mode, knobs, lt, st, le, se, seconds_tune=0.02 / st, seconds_eval=0.1 / se, ir=IR)

    ladder = {"thresholds": [3, 9], "decisions": [0, 2, 4]}
    return [
        fp("static", {"mean": {"knob_val": 0}}, 0.0, 1.0, 0.0, 1.0),
        fp("static", {"mean": {"knob_val": 2}}, 0.008, 1.6, 0.012, 1.55),
        fp("static", {"mean": {"knob_val": 4}}, 0.025, 2.4, 0.029, 2.3),
        fp("static", {"mean": {"knob_val": 8}}, 0.07, 3.9, 0.095, 3.7),
        fp("dynamic", {"mean": ladder}, 0.005, 1.9, 0.006, 1.85),
        fp("dynamic", {"mean": {"thresholds": [2, 5], "decisions": [2, 4, 8]}}, 0.03, 3.1, 0.045, 3.0),
        fp("dynamic", {"mean": {"thresholds": [1, 2], "decisions": [4, 8, 8]}}, 0.085, 4.6, 0.088, 4.4),
    ]


def sample_result(program="examples/mlir/adaptive_sum.mlir:mean", knob="mean") -> TuningResult:
    """A realistic result: two fronts, dominated trials, one far off-scale trial."""
    front = _front()
    if knob != "mean":
        for p in front:
            p.knobs = {knob: p.knobs["mean"]}
    trials = [TrialPoint(p.mode, p.knobs, p.qos_loss_tune, p.speedup_tune, False, trial=i)
              for i, p in enumerate(front)]
    for i in range(24):
        mode = ("static", "dynamic")[i % 2]
        loss = 0.004 * (i + 1)
        trials.append(TrialPoint(mode, {knob: {"knob_val": i % 5}}, loss, 0.9 + 0.08 * i, True, trial=20 + i,
                                 feasible=loss <= 0.1))
    trials.append(TrialPoint("static", {knob: {"knob_val": 64}}, 1.0, 14.0, True, trial=99, feasible=False))
    return TuningResult(program=program, qos_metric="relative_l2", budget=0.1, trials=len(trials) + 2,
                        failed_trials=2, tuning_seconds=83.4, front=front, all_trials=trials, n_tune=40,
                        n_eval=200, seed=7, sampler="nsga2", notes=["hand-built for the report tests"])


def test_speedup_levels_pick_best_point_within_level():
    front = _front()
    t = speedup_table(front)
    assert t["static"]["tune"] == [1.6, 2.4, 2.4, 3.9]
    # held out: the replay of the point chosen on tuning, whatever its held-out loss (9.5 % at <= 9 %)
    assert t["static"]["eval"] == [1.55, 2.3, 2.3, 3.7]
    assert t["dynamic"]["tune"] == [1.9, 3.1, 3.1, 4.6]
    assert t["dynamic"]["eval"] == [1.85, 3.0, 3.0, 4.4]
    cells = speedup_cells(front)
    assert cells["static"]["eval"][3].endswith("(above the level)") and "above" not in cells["static"]["eval"][2]
    # A loss equal to a level counts (0.03 is not exactly representable).
    assert best_speedup(front, "dynamic", "tune", 0.03) == 3.1
    # No point within the level -> None, shown as "-".
    assert best_speedup([p for p in front if p.qos_loss_tune > 0.02], "static", "tune", 0.01) is None


def test_report_files(tmp_path):
    index = write_report(sample_result(), tmp_path / "rep")
    out = index.parent
    assert index.name == "index.html"
    assert {p.name for p in out.iterdir()} == {"index.html", "pareto.png", "pareto.svg", "summary.md", "front.json"}

    md = (out / "summary.md").read_text()
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()
             if line.startswith("| static") or line.startswith("| dynamic")]
    rows = {tuple(c[:2]): c[2:] for c in cells}
    assert rows[("static", "tuning")] == ["1.60x", "2.40x", "2.40x", "3.90x"]
    # held out: the replay of the point chosen on tuning, said where it is above the level
    assert rows[("static", "evaluation")] == ["1.55x (above the level)", "2.30x", "2.30x", "3.70x (above the level)"]
    assert rows[("dynamic", "evaluation")] == ["1.85x", "3.00x (above the level)", "3.00x", "4.40x"]
    assert "QoS loss = (QoS_exact - QoS_approx) / QoS_exact" in md
    assert "trials: 34 (2 failed)" in md and "tuning wall time: 83.40 s" in md

    fj = json.loads((out / "front.json").read_text())
    assert list(fj) == ["program", "qos_metric", "budget", "trials", "tuning_seconds", "front", "timing",
                        "importances", "ablations"]
    assert fj["program"] == "examples/mlir/adaptive_sum.mlir:mean" and fj["budget"] == 0.1 and fj["trials"] == 34
    assert len(fj["front"]) == 7
    for p in fj["front"]:
        assert list(p) == ["mode", "knobs", "qos_loss_tune", "speedup_tune", "qos_loss_eval", "speedup_eval",
                           "speedup_tune_ci", "speedup_tune_modelled", "speedup_eval_ci", "qos_loss_eval_ci",
                           "qos_loss_tune_gold"]
    # Display order: static then dynamic, each by increasing tuning loss.
    assert [p["mode"] for p in fj["front"]] == ["static"] * 4 + ["dynamic"] * 3
    assert fj["front"][4]["knobs"] == {"mean": {"thresholds": [3, 9], "decisions": [0, 2, 4]}}

    assert (out / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "pareto.png").stat().st_size > 20_000
    assert "<svg" in (out / "pareto.svg").read_text()[:2000]


def test_intervals_gap_importances_and_ablations_are_reported(tmp_path):
    r = sample_result()
    r.front[2].speedup_eval_ci = [2.1, 2.4]
    r.timing = "paired: exact and approximate timed side by side"
    r.importances = {"static": {"speedup": {"mean": 0.9, "other": 0.1}, "qos_loss": {"mean": 1.0}}}
    r.ablations = [{"label": "static, QoS loss up to 3 %", "knobs": {"mean": {"knob_val": 4}}, "n": 40,
                    "speedup": 2.3, "speedup_ci": [2.1, 2.5], "qos_loss": 0.029,
                    "rows": [{"knob": "mean", "setting": {"knob_val": 4}, "speedup_without": 1.0,
                              "speedup_without_ci": [0.98, 1.02], "qos_loss_without": 0.0, "speedup_share": 1.0,
                              "qos_loss_share": 0.029}]}]
    out = write_report(r, tmp_path).parent
    md = (out / "summary.md").read_text()
    # the level's point, with its interval
    assert ("| static | evaluation | 1.55x (above the level) | 2.30x [2.10, 2.40] | 2.30x [2.10, 2.40] | "
            "3.70x (above the level) |") in md
    assert "| 3 | static | 2.50 % | 2.40x | 2.90 % | 2.30x [2.10, 2.40] | -4 % |" in md  # tuning vs held-out gap
    assert "| static | mean | 90 % | 100 % |" in md
    assert "| mean | 4 | 1.00x [0.98, 1.02] | 0.00 % | 100 % | 2.90 % |" in md
    assert "Timing, tuning and held-out alike: paired" in md
    page = (out / "index.html").read_text()
    assert "2.30x [2.10, 2.40]" in page and "Which knobs matter" in page and "Ablation, static" in page
    fj = json.loads((out / "front.json").read_text())
    assert fj["front"][2]["speedup_eval_ci"] == [2.1, 2.4] and fj["ablations"][0]["rows"][0]["knob"] == "mean"


def test_missing_eval_and_empty_front(tmp_path):
    r = sample_result()
    for p in r.front:
        p.qos_loss_eval = p.speedup_eval = None
    md_dir = write_report(r, tmp_path / "a").parent
    assert "| static | evaluation | - | - | - | - |" in (md_dir / "summary.md").read_text()
    assert json.loads((md_dir / "front.json").read_text())["front"][0]["speedup_eval"] is None
    empty = TuningResult("p", "exact_match", 0.05, 3, 3, 1.0)
    page = write_report(empty, tmp_path / "b").read_text()
    assert "The front is empty" in page


HOSTILE = ["<script>window.__pwned=1</script>", '"><img src=x onerror=window.__pwned=1>']


@pytest.mark.parametrize("bad", HOSTILE)
def test_user_text_is_escaped(tmp_path, bad):
    r = sample_result(program=bad, knob=bad)
    r.front[0].ir = f"func.func @{bad}() {{ return }}"
    r.notes = [bad]
    page = write_report(r, tmp_path).read_text()
    assert bad not in page
    assert "<img" not in page and page.count("<script") == 2  # the JSON data block and our script
    # The JSON data block cannot be closed early and holds the text intact.
    block = re.search(r'<script type="application/json" id="marks">(.*?)</script>', page, re.S).group(1)
    assert "<" not in block and ">" not in block
    assert any(bad in line for d in json.loads(block) for line in d["l"])
    md = (tmp_path / "summary.md").read_text()
    assert "<script" not in md and "<img" not in md


def test_script_json_escapes_separators():
    s = script_json({"a": "</script>&\u2028\u2029"})
    assert not set("<>&\u2028\u2029") & set(s)
    assert json.loads(s) == {"a": "</script>&\u2028\u2029"}


def test_helpers():
    assert fmt_setting({"knob_val": 3}) == "3"
    assert fmt_setting({"thresholds": [1], "decisions": [0, 2]}) == "thresholds [1] -> decisions [0, 2]"
    assert nice_ticks(0, 10.5) == [0, 2.5, 5, 7.5, 10]
    assert [fmt_tick(v, 2.5) for v in (0, 2.5)] == ["0.0", "2.5"] and fmt_tick(0.3, 0.1) == "0.3"
    assert nice_ticks(0.8, 4.9)[0] >= 0.8


def test_axes_cover_every_trial_and_zoom_to_the_front():
    r = sample_result()
    tune, ev, full, zoom = figure(r)
    # Every trial inside the full panel, the one losing 100 % at 14x too: none hidden on a border.
    assert not [m for m in tune + ev if full.clamp(m)[2]]
    assert full.x0 < 0 <= full.x1 and full.x1 >= 1.0 and full.y1 >= 14
    assert full.log  # 0.9x to 14x: a log speedup axis keeps the front's figures apart
    assert 0 < full.yfrac(2.0) < full.yfrac(4.0) < 1 and full.yticks()[:3] == [1, 2, 5]
    # The zoom shows the front, the far trial on its border.
    assert zoom is not None and zoom.x1 < 0.25 and [(m.loss, m.speedup) for m in tune if zoom.clamp(m)[2]] == [
        (1.0, 14.0)]


def test_a_narrow_speedup_range_stays_linear():
    r = sample_result()
    r.all_trials = [t for t in r.all_trials if t.speedup < 3]
    r.front = [p for p in r.front if p.speedup_tune < 3 and (p.speedup_eval or 0) < 3]
    _, _, full, _ = figure(r)
    assert not full.log and full.y0 <= 0.9 and full.y1 >= max(t.speedup for t in r.all_trials)
