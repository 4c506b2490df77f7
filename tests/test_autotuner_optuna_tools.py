"""A finished `approx-tune run` study, read with Optuna's own tools (`optuna.load_study`,
`optuna trials`): named objectives, and only evaluated configurations as finished trials."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import optuna

from autotuner.cli import main

ROOT = Path(__file__).resolve().parents[1]
MLIR = str(ROOT / "examples/mlir/adaptive_sum.mlir")
BASE = "adaptive_sum.mlir:mean"


def test_optuna_reads_a_finished_study(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    # two queued copies of one configuration: the second is a repeat, measured once
    queued = optuna.create_study(study_name=f"{BASE}/static", storage=url, directions=["minimize", "maximize"])
    queued.enqueue_trial({"mean": 4})
    queued.enqueue_trial({"mean": 4})
    optuna.logging.set_verbosity(optuna.logging.DEBUG)
    code = main(["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--budget", "0.05",
                 "--trials", "5", "--mode", "both", "--repeats", "1", "--out", str(tmp_path), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    assert optuna.logging.get_verbosity() == optuna.logging.DEBUG  # the caller's setting, restored
    optuna.logging.set_verbosity(optuna.logging.INFO)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["study_names"] == {"static": f"{BASE}/static", "dynamic": f"{BASE}/dynamic"}

    for mode in ("static", "dynamic"):
        study = optuna.load_study(study_name=f"{BASE}/{mode}", storage=url)
        assert study.metric_names == ["qos_loss", "speedup"]
        complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        assert all("duplicate_of" not in t.user_attrs for t in complete)
        front = sorted(p["trial"] for p in result["front"] if p["mode"] == mode)
        assert sorted(t.number for t in study.best_trials) == front
        assert study.user_attrs["result_file"] == str((tmp_path / "result.json").resolve())
        assert len(json.dumps(study.user_attrs)) < 4000  # no result blob in the study
    static = optuna.load_study(study_name=f"{BASE}/static", storage=url).trials
    assert static[0].state.name == "COMPLETE" and static[1].state.name == "PRUNED"
    assert static[1].user_attrs["duplicate_of"] == 0
    assert result["trials"] == 5 + 5  # the repeat is not an evaluation

    optuna_cli = Path(sys.executable).parent / "optuna"
    shown = subprocess.run([str(optuna_cli), "trials", "--study-name", f"{BASE}/static", "--storage", url,
                            "-f", "json"], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert set(rows[0]["values"]) == {"qos_loss", "speedup"}
    assert [r["state"] for r in rows].count("COMPLETE") == 5
    assert [r["number"] for r in rows if r["state"] == "PRUNED"] == [1]


def test_timeout_stops_each_modes_search_between_trials(tmp_path, capsys):
    t0 = time.perf_counter()
    code = main(["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--budget", "0.05",
                 "--trials", "200", "--mode", "dynamic", "--repeats", "1", "--out", str(tmp_path), "--no-progress",
                 "--timeout", "2"])
    assert code == 0, capsys.readouterr().err
    result = json.loads((tmp_path / "result.json").read_text())
    assert 1 <= result["trials"] < 200 and result["tuning_seconds"] < 30
    assert time.perf_counter() - t0 < 120
