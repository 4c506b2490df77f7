"""The search's progress in the report: the hypervolume of the tuning front after
each evaluation (`TuningResult.hypervolume`), as a table in summary.md and a line
chart (hypervolume.svg, and inline in index.html). A curve that has long stopped
growing says more evaluations would likely not pay (`approx-tune run --patience N`
stops there)."""

from __future__ import annotations

from autotuner.report_plot import COLORS
from autotuner.report_summary import MODES

W, H = 560, 260
LEFT, RIGHT, TOP, BOTTOM = 70, 18, 34, 44
DEFINITION = ("Hypervolume: the area between the front and the reference point (QoS loss = budget, speedup 1), "
              "after each evaluation of the search; measurements reused from another study count from evaluation 0.")


def _curves(result) -> dict[str, list[float]]:
    curves = getattr(result, "hypervolume", None) or {}
    return {m: [float(v) for v in curves[m]] for m in MODES if curves.get(m)}


def last_growth(curve: list[float]) -> int:
    """The evaluation after which the hypervolume last grew (0: never)."""
    return max((i for i in range(1, len(curve)) if curve[i] > curve[i - 1]), default=0)


def _marks(n: int) -> list[int]:
    picks = {0, n} | {k for k in (1, 2, 5, 10, 20, 30, 50, 100, 200, 500) if k < n}
    return sorted(picks)


def hypervolume_markdown(result) -> list[str]:
    """Lines of summary.md's progress section (none when the result has no curve)."""
    curves = _curves(result)
    if not curves:
        return []
    lines = ["## Search progress: hypervolume of the front over evaluations", "", DEFINITION, ""]
    for mode, curve in curves.items():
        n = len(curve) - 1
        marks = _marks(n)
        lines += [f"{mode}: {n} evaluations, hypervolume {curve[-1]:.4g}, last grew at evaluation "
                  f"{last_growth(curve)}", "",
                  "| evaluations | " + " | ".join(str(k) for k in marks) + " |",
                  "|---|" + "---|" * len(marks),
                  "| hypervolume | " + " | ".join(f"{curve[k]:.4g}" for k in marks) + " |", ""]
    return lines


def hypervolume_svg(result) -> str:
    """A line chart of every mode's curve; empty when the result has none."""
    curves = _curves(result)
    if not curves:
        return ""
    n = max(len(c) for c in curves.values()) - 1
    top = max(max(c) for c in curves.values()) or 1.0
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def xy(i: int, v: float) -> str:
        return f"{LEFT + i / max(n, 1) * pw:.1f},{TOP + (1 - v / top) * ph:.1f}"

    out = [f'<svg class="progress" viewBox="0 0 {W} {H}" role="img" xmlns="http://www.w3.org/2000/svg" '
           'aria-label="Hypervolume of the front over evaluations">',
           f'<text class="title" x="{LEFT}" y="{TOP - 12}" font-size="14">Hypervolume of the front over '
           'evaluations</text>',
           f'<line x1="{LEFT}" y1="{TOP + ph}" x2="{LEFT + pw}" y2="{TOP + ph}" stroke="#888"/>',
           f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + ph}" stroke="#888"/>',
           f'<text x="{LEFT + pw / 2:.0f}" y="{H - 8}" text-anchor="middle" font-size="12">evaluations</text>',
           f'<text x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end" font-size="11">{top:.3g}</text>',
           f'<text x="{LEFT - 6}" y="{TOP + ph}" text-anchor="end" font-size="11">0</text>',
           f'<text x="{LEFT + pw}" y="{TOP + ph + 16}" text-anchor="end" font-size="11">{n}</text>']
    for k, (mode, curve) in enumerate(curves.items()):
        pts = " ".join(xy(i, v) for i, v in enumerate(curve))
        out.append(f'<polyline fill="none" stroke-width="2" stroke="{COLORS.get(mode, "#555")}" points="{pts}"/>')
        out.append(f'<text x="{LEFT + pw}" y="{TOP + 14 + 14 * k}" text-anchor="end" font-size="12" '
                   f'fill="{COLORS.get(mode, "#555")}">{mode}</text>')
    out.append("</svg>")
    return "\n".join(out)


def hypervolume_html(result) -> str:
    """The index.html section: the chart and the definition (empty without a curve)."""
    svg = hypervolume_svg(result)
    if not svg:
        return ""
    growth = "; ".join(f"{m}: {len(c) - 1} evaluations, last grew at evaluation {last_growth(c)}"
                       for m, c in _curves(result).items())
    return (f"<h2>Search progress</h2>\n{svg}\n<p class=\"def\">{DEFINITION} {growth}.</p>")
