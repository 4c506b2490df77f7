"""GPU rows sit beside the CPU rows: `bench/results.py --device cuda` runs only the
SmolLM2 systems, keeps their rows under `gpu_systems` (the CPU rows untouched), and
results.md shows both for each system, the GPU rows' machine named."""

from __future__ import annotations

import json

from bench import results, results_md


def test_cuda_runs_refuse_parts_without_an_llm(capsys):
    assert results.main(["--device", "cuda", "--only", "rag_bm25,rag_bm25_llm"]) == 1
    err = capsys.readouterr().err
    assert "SmolLM2 systems only" in err and "rag_bm25" in err


def test_recorded_gpu_rows_render_beside_the_cpu_rows():
    data = json.loads(results.JSON_PATH.read_text())
    runs = json.loads(results.RUNS_PATH.read_text())
    gpu = {n: r for n, r in data.get("gpu_systems", {}).items() if r}
    assert gpu, "bench/results.json holds no GPU row"
    cpu_details, gpu_details = results_md.run_details(runs)
    md = results_md.markdown(data, cpu_details, {}, [], "cmd", 0.0, runs, gpu_details)
    section = md[md.index("## SmolLM2 systems on a CPU and on a GPU"):md.index("## Kernels")]
    for name, row in gpu.items():
        first = "CPU" if data["systems"].get(name) else "GPU"  # beside its CPU row, where it has one
        assert f"| {name} | {first} |" in section and f"### {name} on a GPU" in section
        assert "GPU" in row["machine"] and row["machine"] in section
        assert f"{row['exact_seconds_per_query']:.3f}" in section
    assert set(gpu) <= set(data["systems"])  # a GPU row never replaces a CPU one


def test_a_row_measured_on_several_workers_says_so():
    row = {"machine": "a 16-core CPU", "workers": 16, "load": None}
    lines = results_md.detail_lines("rag_dense_llm", row, {"n_tune": 40, "n_eval": 200}, "another machine")
    assert "- machine: a 16-core CPU" in lines
    assert any(line.startswith("- worker processes: 16 ") for line in lines)
    one = results_md.detail_lines("rag_dense_llm", {**row, "workers": 1}, {}, "another machine")
    assert not any("worker processes" in line for line in one)
