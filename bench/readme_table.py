"""The README's results table, made from bench/results.json: per system (one line) the
dynamic and the static held-out speedup at each QoS-loss level with its 95 % interval (and the replay's loss
where it is above the level), the paper's dynamic figures, the GPU rows and the
kernels. A row whose exact program a measured configuration beats beyond its interval
(`most_accurate` with `beats_exact`) gives the speedups over that configuration,
marked (d), never the speedup over the exact program alone. The table sits in
README.md between two marker comments; tests/test_readme_table.py checks it.

    .venv/bin/python bench/readme_table.py           # rewrite the table in README.md
    .venv/bin/python bench/readme_table.py --print   # print it
    .venv/bin/python bench/readme_table.py --check   # exit 1 when README.md's table differs
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.results_md import KERNEL_LEVELS, KERNELS, level_point, speedup_text  # noqa: E402
from bench.systems_bench import LEVELS  # noqa: E402
from examples.systems.registry import SYSTEMS  # noqa: E402

RESULTS = ROOT / "bench" / "results.json"
README = ROOT / "README.md"
BEGIN = "<!-- results table: made by bench/readme_table.py from bench/results.json, do not edit -->"
END = "<!-- end of the results table -->"
NAMES = {"rag_bm25": "RAG-BM25", "rag_dense": "RAG-dense", "tools": "tools (reader agent)",
         "rag_bm25_llm": "RAG-BM25-LLM", "rag_dense_llm": "RAG-dense-LLM", "tools_llm": "LLM + tools",
         "agent_llm": "LLM + kernel-tools agent", "lavamd": "lavaMD"}
LLMS = ("Gemma 3", "SmolLM2")  # the LLM a tools row names, from its recorded `model`
NOTES = {
    "d": "(d) exact program dominated: a configuration measured beats the exact program beyond its loss "
         "interval, so the cell gives the speedup over the most accurate configuration measured (each level "
         "counted from its QoS), not over the exact program; both: "
         "[docs/results.md](docs/results.md#rows-whose-exact-program-is-dominated).",
    "h": "(h) levels chosen on held-out figures (recorded before the tuner chose on tuning figures): they "
         "overstate what a replay of a tuning choice gives.",
    "-": "machine `-`: not recorded in the row.",
}


def machine_text(machine: str | None) -> str:
    """A row's machine, short: the GPU, or the CPU with its cores and whether it has AVX-VNNI."""
    if not machine:
        return "-"
    if machine.startswith("GPU "):
        return machine[4:].split(";")[0].replace("NVIDIA ", "").split()[0]
    flags = re.search(r"\(([^)]*)\)", machine)
    cores = re.search(r"(\d+) cores", machine)
    return (f"{cores[1]}-core " if cores else "") + machine.split(" (")[0] + (
        ", AVX-VNNI" if flags and "avx_vnni" in flags[1].split(", ") else "")


def cell(row: dict, mode: str, level, used: set) -> str:
    """One level of one row: the speedup and interval, the loss where the replay is above
    the level; over the most accurate configuration (d) where it dominates the exact program."""
    best = row.get("most_accurate") or {}
    if best.get("beats_exact"):
        used.add("d")
        x = ((best.get("levels") or {}).get(mode) or {}).get(str(level))
        return f"{x:.2f}x (d)" if x is not None else "(d)"
    p = level_point(row, mode, level)
    text = speedup_text(row[mode].get(str(level)), p)
    if p and p.get("qos_loss") is not None and p["qos_loss"] > int(level) / 100 + 1e-9:
        text += f" ({100 * p['qos_loss']:.1f} % loss" + ("" if p.get("meets_level", True) else ": level broken") + ")"
    return text


def label(name: str, row: dict | None) -> str:
    """A row's first cell: the system's name, and for a tools row the LLM its recorded
    model names, ' (Gemma 3)' (the RAG rows name none)."""
    model = (row or {}).get("model", "")
    found = next((llm for llm in LLMS if model.startswith(llm)), None)
    return NAMES.get(name, name) + (f" ({found})" if found and name in ("tools_llm", "agent_llm") else "")


def row_line(name: str, row: dict | None, levels, paper: str, used: set, where: str = "") -> str:
    """One system's or kernel's line: its dynamic, then its static speedups, and `paper`."""
    first = label(name, row) + where
    if row is None:
        return f"| {first} | - | missing |" + " |" * (2 * len(levels))
    machine = machine_text(row.get("machine"))
    used |= {"-"} if machine == "-" else set()
    if row.get("chosen_on") == "held-out":
        used.add("h")
        first += " (h)"
    return "| " + " | ".join([first, machine, *(cell(row, mode, lv, used) for mode in ("dynamic", "static")
                                                 for lv in levels), paper]) + " |"


def table(data: dict) -> str:
    """The table and its notes, as they stand between the README's markers."""
    used: set = set()
    lines = ["| part | machine | dynamic <= 3 % (kernels: 1 %) | <= 6 % (5 %) | <= 9 % (10 %) "
             "| static <= 3 % (1 %) | <= 6 % (5 %) | <= 9 % (10 %) | paper (dynamic) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, system in SYSTEMS.items():
        paper = " / ".join(f"{x:.2f}" for x in system.paper) + "x" if system.paper else ""
        lines.append(row_line(name, data["systems"].get(name), LEVELS, paper, used))
    for name, row in (data.get("gpu_systems") or {}).items():
        if row:
            lines.append(row_line(name, row, LEVELS, "", used, " on a GPU"))
    for name in KERNELS:
        lines.append(row_line(name, data["kernels"].get(name), KERNEL_LEVELS, "", used))
    notes = [f"- {NOTES[k]}" for k in NOTES if k in used]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def between(readme: str, begin: str = BEGIN, end: str = END, page: str = "README.md") -> str:
    """The text between the markers `begin` and `end` of `page` (by default the README's)."""
    if readme.count(begin) != 1 or readme.count(end) != 1:
        raise ValueError(f"{page} needs the markers {begin!r} and {end!r} once each")
    return readme.split(begin, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def splice(readme: str, made: str, begin: str = BEGIN, end: str = END, page: str = "README.md") -> str:
    """`readme` with `made` between its markers (`between`'s)."""
    between(readme, begin, end, page)
    head, rest = readme.split(begin, 1)
    return f"{head}{begin}\n{made}{end}{rest.split(end, 1)[1]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--results", type=Path, default=RESULTS, help="the results file (default bench/results.json)")
    ap.add_argument("--readme", type=Path, default=README, help="the page to write into (default README.md)")
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--print", action="store_true", help="print the table, write nothing")
    what.add_argument("--check", action="store_true", help="exit 1 when the README's table differs, write nothing")
    args = ap.parse_args()
    made = table(json.loads(args.results.read_text()))
    if args.print:
        print(made, end="")
        return 0
    readme = args.readme.read_text()
    if args.check:
        same = between(readme) == made
        print(f"{args.readme}: the results table is {'up to date' if same else 'not what bench/readme_table.py makes'}")
        return 0 if same else 1
    args.readme.write_text(splice(readme, made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
