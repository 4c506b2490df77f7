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


def mean_split(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """A split generator for `--n-tune`: ((tuning inputs, references), (held-out inputs,
    references)), each reference the input's mean, but every third one (index 1, 4, ...)
    wrong: the exact program gets those wrong, so "kept" leaves them out."""
    rng = np.random.default_rng(seed)
    xs = [rng.random(int(n)) + 1.0 for n in np.geomspace(100, 100_000, n_tune + (n_eval or 2 * n_tune))]
    inputs, refs = [(x, len(x)) for x in xs], [float(np.mean(x)) * (1.5 if i % 3 == 1 else 1.0) for i, x in
                                               enumerate(xs)]
    return (inputs[:n_tune], refs[:n_tune]), (inputs[n_tune:], refs[n_tune:])


def close(output, reference) -> float:
    """QoS: 1 where the mean is right (up to float rounding), else 0."""
    return float(abs(output - reference) <= 1e-9 * abs(reference))


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
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--tuning-qos", "exact"],
     "unknown tuning QoS 'exact' (one of: agreement, gold, kept)"),
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--tuning-qos", "gold"],
     "tuning QoS 'gold' scores against references, and the inputs give none"),
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--n-eval", "4"],
     "--n-eval needs --n-tune"),
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--n-tune", "2"],
     "failed: TypeError"),  # not a split generator: it takes no sizes
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:mean_split", "--n-tune", "2", "--kept-from",
      "test_autotuner_cli:mean_split"], "--kept-from gives the candidates of --tuning-qos kept"),
    (["run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:adaptive_inputs", "--eval-levels", "3,6"],
     "--eval-levels: expected QoS-loss fractions in [0, 1]"),
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


def test_run_help_lists_the_tuning_qos_modes(capsys):
    from autotuner import TUNING_QOS

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    assert "--tuning-qos" in text and "--n-tune" in text and "--kept-from" in text
    lines = text.splitlines()
    for mode, what in TUNING_QOS.items():  # one line each
        assert sum(1 for line in lines if line.split()[:1] == [mode] and what in line) == 1, mode


@pytest.mark.parametrize("mode, note, n_tune", [
    ("gold", "QoS: tuning against the references, as the held-out evaluation against the references", 4),
    ("agreement", "QoS: tuning against the exact program's outputs (every input counts); the held-out", 4),
    ("kept", "QoS: tuning on 3 inputs the exact program gets right (found among 4 tried)", 3),
])
def test_each_tuning_qos_tunes_end_to_end(capsys, tmp_path, mode, note, n_tune):
    """A split generator's sizes (--n-tune, --n-eval), the mode, the levels held out: the
    result says which QoS it tuned on and records the split for `approx-tune verify`."""
    code, text, err = run(capsys, "run", f"{MLIR}:mean", "--inputs", "test_autotuner_cli:mean_split", "--n-tune", 4,
                          "--n-eval", 6, "--metric", "test_autotuner_cli:close", "--tuning-qos", mode,
                          "--budget", "0.5", "--trials", 3, "--mode", "static", "--repeats", 1,
                          "--eval-levels", "0.2,0.5", "--out", tmp_path, "--no-progress")
    assert code == 0, err
    result = json.loads((tmp_path / "result.json").read_text())
    assert [n for n in result["notes"] if n.startswith("QoS:")] == [n for n in result["notes"] if note in n]
    assert any(note in n for n in result["notes"]), result["notes"]
    assert result["n_tune"] == n_tune and result["n_eval"] == 6
    assert result["held_out"] == {"inputs": "test_autotuner_cli:mean_split", "split": True,
                                  "kwargs": {"n_tune": 4, "seed": 0, "n_eval": 6}}
    assert (tmp_path / "kept.json").is_file() == (mode == "kept")
    gold = [p["qos_loss_tune_gold"] for p in result["front"] if p.get("qos_loss_tune_gold") is not None]
    assert bool(gold) == (mode == "agreement")  # the chosen points, scored against the references too
    code, text, err = run(capsys, "verify", "--out", tmp_path, "--mode", "static", "--point", "0")
    assert code == 0 and " 6 inputs" in text, err  # the held-out part of the split, read again
