"""pareto.png and pareto.svg for papers and slides: the same two panels as the
page (tuning: every trial and the front; evaluation: the front re-measured),
drawn with matplotlib's Agg backend (no display needed)."""

from __future__ import annotations

from pathlib import Path

from autotuner.report_plot import COLORS, GREY, SHAPES, Axes, Mark, figure, staircase
from autotuner.report_summary import MODES, finite

_MPL_MARKER = {"circle": "o", "diamond": "D"}


def _name(mode: str) -> str:
    return mode if mode in MODES else "other"  # no user text in legend labels (mathtext, "_" prefixes)


def _draw(axis, marks: list[Mark], ax: Axes, budget, title: str, steps: bool) -> None:
    axis.set_title(title, fontsize=10, loc="left", parse_math=False)
    if steps:
        for mode in MODES:
            line = staircase(marks, mode)
            if len(line) > 1:
                axis.plot([x * 100 for x, _ in line], [y for _, y in line], color=COLORS[mode], alpha=0.5, lw=1.2,
                          zorder=2)
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for m in marks:
        x, y, off = ax.clamp(m)
        kind = "front" if m.front is not None else ("dom" if m.dominated else "trial")
        groups.setdefault((kind, m.mode, off), []).append((x * 100, y))
    labelled: set[str] = set()
    for (kind, mode, off), pts in sorted(groups.items(), key=lambda kv: ("dom", "trial", "front").index(kv[0][0])):
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        mk = "^" if off else _MPL_MARKER[SHAPES.get(mode, "circle")]
        color = COLORS.get(mode, "#555")
        if kind == "front":
            label = f"{_name(mode)} front"
            style = dict(s=46, c=color, edgecolors="white", linewidths=0.8, zorder=4)
        elif kind == "dom":
            label, mk = "dominated trial", ("^" if off else "o")
            style = dict(s=12, c=GREY, alpha=0.7, linewidths=0, zorder=3)
        else:
            label = f"non-dominated {_name(mode)} trial not on the front"
            style = dict(s=16, facecolors="white", edgecolors=color, linewidths=1.0, zorder=3)
        if off:
            label = "outside the plotted range (on its border)"
        axis.scatter(xs, ys, marker=mk, label=None if label in labelled else label, **style)
        labelled.add(label)
    if finite(budget) and budget <= ax.x1:
        axis.axvline(budget * 100, color="#c62828", ls="--", lw=1.3, label=f"budget {100 * budget:g} %", zorder=1)
    elif finite(budget):
        axis.annotate(f"budget {100 * budget:g} % \u2192", (0.99, 0.02), xycoords="axes fraction", ha="right",
                      va="bottom", color="#c62828", fontsize=8.5)
    axis.axhline(1.0, color="#777", ls=":", lw=1, zorder=1)
    axis.set_xlim(ax.x0 * 100, ax.x1 * 100)
    if ax.log:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        axis.set_yscale("log")
        axis.set_yticks(ax.yticks())
        axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.yaxis.set_minor_formatter(NullFormatter())
    axis.set_ylim(ax.y0, ax.y1)
    axis.set_xlabel("QoS loss (%)")
    axis.grid(True, color="#eee", lw=0.8, zorder=0)
    axis.set_axisbelow(True)


def write_images(result, out_dir: Path) -> list[Path]:
    """pareto.png (150 dpi) and pareto.svg; returns the paths written."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    tune, ev, full, zoom = figure(result)
    ax = zoom or full  # for a paper the front matters; a budget far off is written at the edge
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, sharey=True)
    _draw(left, tune, ax, result.budget, "tuning inputs: every trial and the front", steps=True)
    _draw(right, ev, ax, result.budget, "held-out evaluation inputs: the front", steps=False)
    left.set_ylabel("speedup over exact (x)")
    fig.suptitle(f"{result.program} ({result.qos_metric})", fontsize=11, parse_math=False)
    handles, labels = left.get_legend_handles_labels()
    h2, l2 = right.get_legend_handles_labels()
    for h, lab in zip(h2, l2):
        if lab not in labels:
            handles.append(h)
            labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5), fontsize=8.5, frameon=False)
    paths = [out_dir / "pareto.png", out_dir / "pareto.svg"]
    fig.savefig(paths[0], dpi=150)
    fig.savefig(paths[1], metadata={"Date": None})
    return paths
