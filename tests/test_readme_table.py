"""The README's results table is what bench/readme_table.py makes from bench/results.json,
and the script marks a row whose exact program is dominated instead of showing its
speedup over the exact program."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

from bench import readme_table

ROOT = Path(__file__).resolve().parents[1]
RESULTS = json.loads((ROOT / "bench" / "results.json").read_text())


def test_readme_table_is_made_from_results_json():
    assert readme_table.between((ROOT / "README.md").read_text()) == readme_table.table(RESULTS), (
        "README.md's results table differs from bench/results.json: run .venv/bin/python bench/readme_table.py")


def test_check_flag_agrees():
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "readme_table.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def system_line(made: str, label: str) -> str:
    return next(line for line in made.splitlines() if line.startswith(f"| {label} |"))


def test_a_dominated_row_is_marked_not_shown_as_a_speedup():
    data = copy.deepcopy(RESULTS)
    row = data["systems"]["rag_bm25"]
    row["most_accurate"] = {**row["most_accurate"], "beats_exact": True, "qos_loss_ci": [-0.2, -0.01],
                            "levels": {"static": {"3": 1.0, "6": 1.0, "9": 1.0},
                                       "dynamic": {"3": 1.25, "6": 1.5, "9": 1.75}}}
    made = readme_table.table(data)
    line = system_line(made, "RAG-BM25")
    assert "1.25x (d) | 1.50x (d) | 1.75x (d) | 1.00x (d)" in line
    assert f"{row['dynamic']['6']:.2f}x" not in line  # the speedup over the exact program is not shown
    assert "exact program dominated" in made and "docs/results.md" in made


def test_the_recorded_dominated_rows_are_marked():
    made = readme_table.table(RESULTS)
    for name, row in RESULTS["systems"].items():
        line = system_line(made, readme_table.label(name, row))
        dominated = bool((row.get("most_accurate") or {}).get("beats_exact"))
        assert ("(d)" in line) == dominated, line


def test_a_replay_above_its_level_says_its_loss():
    data = copy.deepcopy(RESULTS)
    data["systems"]["rag_bm25"]["points"]["static"]["3"].update(qos_loss=0.05, meets_level=False)
    line = system_line(readme_table.table(data), "RAG-BM25")
    assert "(5.0 % loss: level broken)" in line


def test_splice_replaces_only_the_table():
    page = f"before\n{readme_table.BEGIN}\nold\n{readme_table.END}\nafter\n"
    out = readme_table.splice(page, "new\n")
    assert out == f"before\n{readme_table.BEGIN}\nnew\n{readme_table.END}\nafter\n"
    assert readme_table.between(out) == "new\n"
