"""approx-tune run / apply / report, as a user calls them (in-process `main`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autotuner.cli import main
from autotuner.explain import is_exact

ROOT = Path(__file__).resolve().parents[1]
MLIR = str(ROOT / "examples/mlir/adaptive_sum.mlir")


def adaptive_inputs():
    """Inputs generator for the command: 12 arrays of 100 .. 100000 samples, no ground truth."""
    rng = np.random.default_rng(1)
    return [(x, len(x)) for x in (rng.random(int(n)) + 1.0 for n in np.geomspace(100, 100_000, 12))], None


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli")
    argv = ["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--budget", "0.05",
            "--trials", "6", "--mode", "both", "--repeats", "1", "--out", out, "--no-progress"]
    return out, argv


def test_run_writes_the_result_and_resumes(capsys, tuned):
    out, argv = tuned
    code, text, err = run(capsys, *argv)
    assert code == 0, err
    assert "QoS loss = (QoS_exact - QoS) / QoS_exact (rel_l2)" in text and " static " in text
    result = json.loads((out / "result.json").read_text())
    assert result["program"] == "adaptive_sum.mlir:mean" and result["program_spec"].endswith(":mean")
    assert result["trials"] == 6 + 6  # static: 6 of the knob's 9 values (decision_values 0..8); dynamic: 6
    code, text2, _ = run(capsys, *argv)  # the same command again: the study is complete, nothing re-run
    assert code == 0 and json.loads((out / "result.json").read_text())["trials"] == 12


def test_apply_equals_approx_opt_apply_config(capsys, tuned, cli, tmp_path):
    out, argv = tuned
    if not (out / "result.json").exists():
        assert run(capsys, *argv)[0] == 0
    code, _, err = run(capsys, "apply", "--out", out, "--mode", "dynamic", "--point", "0", MLIR,
                       "-o", tmp_path / "a.mlir", "--config-out", tmp_path / "c.json")
    assert code == 0, err
    want = cli(MLIR, "-p", "approx-pipeline", "--apply-config", str(tmp_path / "c.json"))
    assert want.returncode == 0 and (tmp_path / "a.mlir").read_text() == want.stdout
    code, stored, _ = run(capsys, "apply", "--out", out, "--mode", "dynamic", "--point", "0")
    assert code == 0 and stored == want.stdout  # the IR kept in the result is the same program


def test_report_writes_the_folder(capsys, tuned, tmp_path):
    out, argv = tuned
    if not (out / "result.json").exists():
        assert run(capsys, *argv)[0] == 0
    code, text, err = run(capsys, "report", "--out", out, "--to", tmp_path / "rep")
    assert code == 0, err
    assert (tmp_path / "rep" / "index.html").exists() and (tmp_path / "rep" / "front.json").exists()
    # the same result, read back from the study storage instead of result.json
    code, _, err = run(capsys, "report", "--storage", f"sqlite:///{out / 'study.db'}",
                       "--study-name", "adaptive_sum.mlir:mean", "--to", tmp_path / "rep2")
    assert code == 0, err
    assert (tmp_path / "rep2" / "front.json").read_text() == (tmp_path / "rep" / "front.json").read_text()


@pytest.mark.parametrize("argv, message", [
    (["run", "nope.mlir:main", "--inputs", "test_autotuner_cli:adaptive_inputs"], "cannot read input"),
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:missing"], "has no inputs generator 'missing'"),
    (["run", f"{MLIR}:mean", "--inputs", "no_such_module_xyz:f"], "cannot import inputs generator module"),
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--budget", "2"],
     "budget must be a QoS-loss fraction in [0, 1]"),
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--narrow", "mean=9"],
     "value 9 is not among its values [0, 1, 2, 3, 4, 5, 6, 7, 8]"),
    (["apply", "--result", "/nonexistent/result.json"], "cannot read the tuning result"),
    (["report"], "give --out DIR, --result FILE, or --storage URL with --study-name"),
    (["verify"], "give --out DIR, --result FILE, --storage URL with --study-name, or --row NAME"),
    (["verify", "--row", "no_such_row"], "no recorded row 'no_such_row' with chosen points (rows: "),
])
def test_errors_are_one_line(capsys, tmp_path, argv, message):
    code, _, err = run(capsys, *argv, *(["--out", tmp_path] if argv[0] == "run" else []))
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err


def test_verify_remeasures_the_front_paired(capsys, tuned, tmp_path):
    out, argv = tuned
    if not (out / "result.json").exists():
        assert run(capsys, *argv)[0] == 0
    result = json.loads((out / "result.json").read_text())
    assert result["held_out"]["inputs"] == "test_autotuner_cli:adaptive_inputs" and result["metric_spec"] == "rel_l2"
    assert result["timing"].startswith("paired")
    front = result["front"]
    exact = [p for p in front if all(is_exact(v) for v in p["knobs"].values())]
    assert all(p["speedup_eval"] == 1.0 and p["speedup_eval_ci"] is None and p["qos_loss_eval"] == 0.0
               for p in exact)  # the exact program: not timed against itself
    assert all(p["speedup_eval_ci"][0] <= p["speedup_eval"] <= p["speedup_eval_ci"][1]
               for p in front if p not in exact) and len(exact) < len(front)
    code, text, err = run(capsys, "verify", "--out", out, "--reverse", "--json", tmp_path / "v.json")
    assert code == 0, err
    rows = json.loads((tmp_path / "v.json").read_text())
    assert len(rows) == len(front) and "recorded loss" in text
    by_key = {(p["mode"], json.dumps(p["knobs"], sort_keys=True)): p for p in front}
    for r in rows:
        p = by_key[(r["mode"], json.dumps(r["knobs"], sort_keys=True))]
        assert r["recorded_speedup"] == p["speedup_eval"] and r["n"] == result["n_eval"]
        assert r["speedup_ci"][0] <= r["speedup"] <= r["speedup_ci"][1]
        assert abs(r["qos_loss"] - p["qos_loss_eval"]) < 1e-12  # deterministic kernel: the same QoS
    code, _, err = run(capsys, "verify", "--out", out, "--mode", "static", "--point", "0",
                       "--inputs", "test_autotuner_cli:adaptive_inputs")
    assert code == 0, err
    code, _, err = run(capsys, "verify", "--out", out, "--mode", "static", "--point", "99")
    assert code == 1 and "point 99 is not in the static front" in err


def test_verify_a_recorded_row_from_what_the_row_holds(capsys, tmp_path):
    """`verify --row NAME` rebuilds a row's chosen points from bench/results.json alone
    (no reports/ folder of the machine that recorded it): a kernel row, one point."""
    results = ROOT / "bench" / "results.json"
    recorded = json.loads(results.read_text())["kernels"]["kmeans"]["points"]["static"]
    code, text, err = run(capsys, "verify", "--row", "kmeans", "--results", results, "--mode", "static",
                          "--point", "0", "--json", tmp_path / "v.json")
    assert code == 0, err
    [v] = json.loads((tmp_path / "v.json").read_text())
    assert v["recorded_speedup"] in {p["speedup"] for p in recorded.values() if p} and v["speedup"] > 0
    assert v["n"] == 20 and "recorded loss" in text


def test_a_gpu_row_is_named_as_the_results_name_it():
    """`verify --row NAME@cuda` takes the GPU section's row (wall time), NAME the CPU one."""
    from autotuner.verify import result_of_row

    results = str(ROOT / "bench" / "results.json")
    recorded = json.loads(open(results).read())["gpu_systems"]["rag_dense_llm"]["points"]
    gpu, cpu = result_of_row(results, "rag_dense_llm@cuda"), result_of_row(results, "rag_dense_llm")
    assert (gpu.clock, cpu.clock) == ("wall", "cpu")
    assert {p.speedup_eval for p in gpu.front} == {p["speedup"] for m in recorded.values() for p in m.values() if p}
