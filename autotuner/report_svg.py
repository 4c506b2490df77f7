"""The Pareto plot as inline SVG, written by hand so the page needs no library
and no network. Every mark carries `data-p` (its index in the tooltip data the
page embeds as JSON); no user text is written into the SVG itself except
through `esc`."""

from __future__ import annotations

import html

from autotuner.report_plot import COLORS, GREY, SHAPES, Axes, Mark, fmt_tick, nice_ticks, staircase
from autotuner.report_summary import MODES, finite

W, H = 560, 380
LEFT, RIGHT, TOP, BOTTOM = 62, 18, 34, 50
BUDGET_COLOR = "#c62828"


def esc(s) -> str:
    return html.escape(str(s), quote=True)


class _Frame:
    """Data -> pixel mapping of one panel."""

    def __init__(self, ax: Axes):
        self.ax = ax
        self.pw, self.ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(self, loss: float) -> float:
        return LEFT + (loss - self.ax.x0) / (self.ax.x1 - self.ax.x0) * self.pw

    def y(self, speed: float) -> float:
        return TOP + (1 - self.ax.yfrac(speed)) * self.ph


def marker(shape: str, x: float, y: float, r: float, attrs: str) -> str:
    if shape == "diamond":
        d = r * 1.3
        return f'<path d="M{x:.1f} {y - d:.1f}L{x + d:.1f} {y:.1f}L{x:.1f} {y + d:.1f}L{x - d:.1f} {y:.1f}Z" {attrs}/>'
    if shape == "triangle":  # off the plotted range
        return f'<path d="M{x:.1f} {y - r:.1f}L{x + r:.1f} {y + r:.1f}L{x - r:.1f} {y + r:.1f}Z" {attrs}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {attrs}/>'


def _grid(f: _Frame) -> list[str]:
    ax, out = f.ax, []
    xt = nice_ticks(ax.x0 * 100, ax.x1 * 100)
    yt = ax.yticks()
    xstep = xt[1] - xt[0] if len(xt) > 1 else 1.0
    ystep = (min(yt) if ax.log else yt[1] - yt[0]) if len(yt) > 1 else 1.0
    bottom, right = TOP + f.ph, LEFT + f.pw
    out.append(f'<rect class="area" x="{LEFT}" y="{TOP}" width="{f.pw}" height="{f.ph}"/>')
    for v in xt:
        px = f.x(v / 100)
        out.append(f'<line class="grid" x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{px:.1f}" y="{bottom + 16}" text-anchor="middle">'
                   f'{fmt_tick(v, xstep)}</text>')
    for v in yt:
        py = f.y(v)
        out.append(f'<line class="grid" x1="{LEFT}" y1="{py:.1f}" x2="{right}" y2="{py:.1f}"/>')
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{py + 4:.1f}" text-anchor="end">{fmt_tick(v, ystep)}</text>')
    out.append(f'<text class="label" x="{LEFT + f.pw / 2:.1f}" y="{H - 10}" text-anchor="middle">QoS loss (%)</text>')
    out.append(f'<text class="label" transform="translate(16 {TOP + f.ph / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">speedup over exact (x{", log scale" if ax.log else ""})</text>')
    return out


def _references(f: _Frame, budget) -> list[str]:
    out = []
    if f.ax.y0 <= 1.0 <= f.ax.y1:
        py = f.y(1.0)
        out.append(f'<line class="exact" x1="{LEFT}" y1="{py:.1f}" x2="{LEFT + f.pw}" y2="{py:.1f}"/>')
        out.append(f'<text class="note" x="{LEFT + f.pw - 4}" y="{py - 4:.1f}" text-anchor="end">exact</text>')
    if finite(budget) and f.ax.x0 <= budget <= f.ax.x1:
        px = f.x(budget)
        out.append(f'<line class="budget" x1="{px:.1f}" y1="{TOP}" x2="{px:.1f}" y2="{TOP + f.ph}"/>')
        out.append(f'<text class="note budget-label" x="{px - 4:.1f}" y="{TOP + f.ph - 6}" text-anchor="end">'
                   f'budget {100 * budget:g} %</text>')
    elif finite(budget) and budget > f.ax.x1:
        out.append(f'<text class="note budget-label" x="{LEFT + f.pw - 4}" y="{TOP + f.ph - 6}" text-anchor="end">'
                   f'budget {100 * budget:g} % \u2192</text>')
    return out


def panel(title: str, marks: list[Mark], first_index: int, ax: Axes, budget, empty_note: str,
          steps: bool) -> str:
    """One plot panel; marks get data-p = first_index + their position."""
    f = _Frame(ax)
    out = [f'<svg class="plot" viewBox="0 0 {W} {H}" role="img" aria-label="{esc(title)}" '
           f'xmlns="http://www.w3.org/2000/svg">',
           f'<text class="title" x="{LEFT}" y="{TOP - 12}">{esc(title)}</text>']
    out += _grid(f)
    out += _references(f, budget)
    if steps:
        for mode in MODES:
            line = staircase(marks, mode)
            if len(line) > 1:
                pts = " ".join(f"{f.x(min(max(x, ax.x0), ax.x1)):.1f},{f.y(min(max(y, ax.y0), ax.y1)):.1f}"
                               for x, y in line)
                out.append(f'<polyline class="step" stroke="{COLORS[mode]}" points="{pts}"/>')
    # Draw order: dominated trials, other trials, then the front on top.
    order = sorted(range(len(marks)), key=lambda i: (marks[i].front is not None, not marks[i].dominated))
    for i in order:
        m = marks[i]
        x, y, off = ax.clamp(m)
        px, py = f.x(x), f.y(y)
        data = f'data-p="{first_index + i}"'
        if m.front is not None:
            data += f' data-f="{m.front}" tabindex="0"'
            shape = "triangle" if off else SHAPES.get(m.mode, "circle")
            attrs = f'class="pt front" fill="{COLORS.get(m.mode, "#555")}" {data}'
            out.append(marker(shape, px, py, 5.5, attrs))
        elif m.dominated:
            out.append(marker("triangle" if off else "circle", px, py, 3.2, f'class="pt dom" fill="{GREY}" {data}'))
        else:
            shape = "triangle" if off else SHAPES.get(m.mode, "circle")
            out.append(marker(shape, px, py, 3.6, f'class="pt trial" stroke="{COLORS.get(m.mode, "#555")}" {data}'))
    if not marks:
        out.append(f'<text class="note" x="{LEFT + f.pw / 2:.1f}" y="{TOP + f.ph / 2:.1f}" '
                   f'text-anchor="middle">{esc(empty_note)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def legend(modes: list[str], has_dominated: bool, other_modes: list[str]) -> str:
    """The key, as HTML with tiny SVG swatches."""
    def sw(inner: str) -> str:
        return f'<svg class="sw" viewBox="0 0 20 14" aria-hidden="true">{inner}</svg>'

    items = []
    for mode in modes:
        shape = marker(SHAPES[mode], 10, 7, 5, f'fill="{COLORS[mode]}" stroke="#fff"')
        items.append(sw(shape) + f"{mode} front")
    for mode in other_modes:
        items.append(sw(marker(SHAPES[mode], 10, 7, 3.6, f'fill="#fff" stroke="{COLORS[mode]}" stroke-width="1.5"'))
                     + f"non-dominated {mode} trial not on the front")
    if has_dominated:
        items.append(sw(marker("circle", 10, 7, 3.4, f'fill="{GREY}"')) + "dominated trial")
    items.append(sw(f'<line x1="10" y1="0" x2="10" y2="14" stroke="{BUDGET_COLOR}" stroke-width="2" '
                    f'stroke-dasharray="3 2"/>') + "QoS-loss budget")
    items.append(sw(marker("triangle", 10, 7, 4.5, f'fill="{GREY}"')) + "outside the plotted range (on its border)")
    return '<ul class="legend">' + "".join(f"<li>{it}</li>" for it in items) + "</ul>"
