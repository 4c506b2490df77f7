"""The per-CPU engine table of docs/components.md, made from the engine probes kept in
bench/: `bench/engine_probe.py`'s (SmolLM2, `engine_probe_*.json`) and
`bench/gemma_engine_probe.py`'s (Gemma 3 270M, `gemma_engine_probe*.json`). One line per
probe file: the machine it ran on (CPU model and its decisive instructions), the model, how
many questions, and for each engine value its speedup over the file's baseline (eager torch
float32 where the probe timed it, else the first row) with the answers it gave as the
baseline did. A value that changes answers or loses containment is no exact path; whether
it pays as a precision value is the tuner's question (docs/components.md says which
are offered where). tests/test_engine_table.py checks that the page holds this table.

    .venv/bin/python bench/engine_table.py           # rewrite the table in docs/components.md
    .venv/bin/python bench/engine_table.py --print   # print it
    .venv/bin/python bench/engine_table.py --check   # exit 1 when the page's table differs
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import between, splice  # noqa: E402

PAGE = ROOT / "docs" / "components.md"
BEGIN = "<!-- engine table: made by bench/engine_table.py from bench/*engine_probe*.json, do not edit -->"
END = "<!-- end of the engine table -->"
COLUMNS = ("ort-fp32", "ov-bf16", "ov-ort-int8", "ov-int8", "ov-int8-auto", "ort-int8", "ort-int4")
BASELINES = ("torch float32", "torch f32")


def probes() -> list[Path]:
    """The probe files, SmolLM2's then Gemma's, each by name."""
    bench = ROOT / "bench"
    return sorted(bench.glob("engine_probe_*.json")) + sorted(bench.glob("gemma_engine_probe*.json"))


def cpu_of(machine: str) -> str:
    """'AMD EPYC (avx2, fma, ...), 2 cores; torch ...' -> 'AMD EPYC (avx2, fma, ...)'."""
    return machine.split("),", 1)[0] + ")" if ")," in machine else machine.split(";", 1)[0]


def line_of(path: Path) -> str:
    """One table line of the probe in `path`."""
    probe = json.loads(path.read_text())
    rows = probe["rows"]
    base = next((b for b in BASELINES if b in rows), next(iter(rows)))
    questions = probe["questions"]
    n = questions if isinstance(questions, int) else questions.get("squad", 0)
    model = "Gemma 3 270M" if path.name.startswith("gemma") else "SmolLM2-135M"
    weights = probe.get("weights", "fine-tuned, LoRA merged")
    quiet = {True: "yes", False: "no"}.get(probe.get("quiet"), "-")
    base_time = rows[base]["seconds_per_question"]

    def cell(name: str) -> str:
        row = rows.get(name)
        if row is None or name == base:
            return "" if row is None else "baseline"
        speedup = row.get("speedup", row.get("speedup_vs_torch"))
        if speedup is None:
            speedup = base_time / row["seconds_per_question"]
        same = row.get("same_answer", row.get("same_as_torch_squad"))
        return f"{speedup:.2f}x ({same}/{n} same)"

    return (f"| {cpu_of(probe['machine'])} | {model} ({weights}) | {n} | {base}: {base_time:.2f} s | "
            + " | ".join(cell(c) for c in COLUMNS) + f" | {quiet} | `bench/{path.name}` ({probe['date']}) |")


def table() -> str:
    head = ("| CPU (decisive instructions) | model | questions | baseline, s / question | "
            + " | ".join(COLUMNS) + " | quiet machine | probe |")
    rule = "|" + "---|" * (head.count("|") - 1)
    return "\n".join([head, rule, *(line_of(p) for p in probes())])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--print", action="store_true", help="print the table")
    group.add_argument("--check", action="store_true", help="exit 1 when the page's table differs")
    args = ap.parse_args(argv)
    made, page = table() + "\n", PAGE.relative_to(ROOT)
    if args.print:
        print(made, end="")
        return 0
    text = PAGE.read_text()
    if args.check:
        if between(text, BEGIN, END, str(page)) != made:
            print(f"{page}: the engine table differs from bench/engine_table.py's; run it")
            return 1
        return 0
    PAGE.write_text(splice(text, made, BEGIN, END, str(page)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
