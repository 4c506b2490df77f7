"""The report of a tuning run, a folder people read and act on:

- `index.html`: one self-contained page (interactive Pareto plot, tables, IR);
- `pareto.png` / `pareto.svg`: the plot for papers and slides;
- `summary.md`: speedup over exact at <= 1, 3, 6, 9 % QoS loss, and the search's
  progress (hypervolume of the front over evaluations, also `hypervolume.svg`);
- `front.json`: the front, machine-readable.

It reads only a `TuningResult` (autotuner/results.py), so the report of a
finished study can be written again without re-running anything."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from autotuner.report_html import render_html
from autotuner.report_progress import hypervolume_markdown, hypervolume_svg
from autotuner.report_summary import GOLD_NOTE, MODELLED_NOTE, MODES, finite, front_json, summary_markdown  # noqa: F401 (the notes: the report's surface)
from autotuner.results import TuningResult


def _display_order(result: TuningResult) -> TuningResult:
    """Front sorted by mode, then QoS loss: #1..#n read in order everywhere."""
    def key(p):
        loss = p.qos_loss_tune if finite(p.qos_loss_tune) else float("inf")
        speed = p.speedup_tune if finite(p.speedup_tune) else 0.0
        return (MODES.index(p.mode) if p.mode in MODES else len(MODES), str(p.mode), loss, -speed)

    return dataclasses.replace(result, front=sorted(result.front, key=key))


def _write(path: Path, text: str) -> None:
    """Atomic: a report being rewritten is never seen half-written."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_report(result: TuningResult, out_dir: Path) -> Path:
    """Write the report folder; returns the path of index.html."""
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ApproxError(f"cannot create the report folder: {err.strerror}", where=str(out_dir)) from None
    result = _display_order(result)
    _write(out_dir / "summary.md", "\n".join([summary_markdown(result), *hypervolume_markdown(result)]))
    if hypervolume_svg(result):
        _write(out_dir / "hypervolume.svg", hypervolume_svg(result) + "\n")
    _write(out_dir / "front.json", json.dumps(front_json(result), indent=2, ensure_ascii=False) + "\n")
    from autotuner.report_png import write_images

    write_images(result, out_dir)
    index = out_dir / "index.html"
    _write(index, render_html(result))
    return index
