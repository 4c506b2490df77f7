"""No injection, measured: many hostile names and strings pushed through every path
from a user's file to generated Python (and to approx-opt's output and the HTML
report); counts how many ran as data, how many were one clear error, and how many
executed code (a canary file / builtins flag their payloads set) -- which must be 0.

    .venv/bin/python bench/reliability_injection.py [--inputs 1000] [--seed 0] [--report-every 10]

A positive control pastes the same strings into source text, as a careless
generator would, to show the payloads are live."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import hostile as H  # noqa: E402

PATHS = {
    "mlir -> approx-pipeline -> pygen (escaped)": lambda s, d: H.run_mlir(s),
    "mlir -> approx-pipeline -> pygen (spliced raw)": lambda s, d: H.run_mlir(s, raw=True),
    "approx-opt -p approx-pipeline (print, read back)": H.run_approx_opt,
    "@Knob Python source -> pygen": H.run_python,
    "HTML report (static check)": H.run_report,
}


def run(inputs: int, seed: int, report_every: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="approx-injection-"))
    canary = work / "CANARY"
    strings = H.generated(canary, inputs, seed)
    rows, findings = {}, []
    for label, fn in PATHS.items():
        chosen = strings[::report_every] if label.startswith("HTML") else strings
        row = {"tried": 0, "data": 0, "error": 0, "finding": 0, "executed": 0}
        t0 = time.perf_counter()
        for i, s in enumerate(chosen):
            d = work / f"{len(rows)}-{i}"
            d.mkdir()
            row["tried"] += 1
            try:
                row[fn(s, d)] += 1
            except H.Finding as err:
                row["finding"] += 1
                findings.append(f"{label}: {s!r}: {err}")
            if H.fired(canary):
                row["executed"] += 1
                findings.append(f"{label}: {s!r}: CODE EXECUTED")
                H.reset(canary)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        rows[label] = row
    fired = 0
    for s in strings:
        H.naive_control(s)
        fired += H.fired(canary)
        H.reset(canary)
    return {"inputs": len(strings), "rows": rows, "control_fired": fired, "findings": findings}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report-every", type=int, default=10, help="the report path takes every Nth string (0.4 s each)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    import warnings

    warnings.simplefilter("ignore")  # matplotlib: glyphs missing for control characters in the PNG
    r = run(args.inputs, args.seed, args.report_every)
    print(f"hostile inputs: {r['inputs']} distinct strings (seed {args.seed})")
    print(f"{'path':50} {'tried':>6} {'data':>6} {'error':>6} {'finding':>7} {'EXECUTED':>8} {'s':>6}")
    for label, row in r["rows"].items():
        print(f"{label:50} {row['tried']:6} {row['data']:6} {row['error']:6} {row['finding']:7} "
              f"{row['executed']:8} {row['seconds']:6}")
    total = sum(row["executed"] for row in r["rows"].values())
    print(f"code executed (canary set): {total}")
    print(f"positive control (pasted into source text): {r['control_fired']} of {r['inputs']} ran their payload")
    for f in r["findings"][:20]:
        print("  finding:", f)
    print(f"wall time: {time.perf_counter() - t0:.1f} s")
    return 1 if total or r["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
