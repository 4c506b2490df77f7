"""What the Pareto plot shows, independent of how it is drawn: the marks of the
tuning panel (every trial + the front) and of the evaluation panel (the front
re-measured on held-out inputs), their shared axis ranges and ticks. The HTML
(inline SVG) and the PNG/SVG (matplotlib) draw the same figure from this."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from autotuner.report_summary import finite, fmt_knobs, fmt_loss

COLORS = {"static": "#1f6fb4", "dynamic": "#d4590b"}
GREY = "#a8a8a8"
# Marker per mode: circle / diamond, so the fronts differ without colour too.
SHAPES = {"static": "circle", "dynamic": "diamond"}


@dataclass
class Mark:
    loss: float  # fraction, as measured
    speedup: float
    mode: str
    front: int | None  # index into result.front, None for a plain trial
    dominated: bool
    title: str
    lines: list[str] = field(default_factory=list)  # tooltip lines: figures, then knobs


LOG_RATIO = 4.0  # a speedup range wider than this factor is drawn on a log axis


@dataclass
class Axes:
    x0: float  # QoS loss range, fractions
    x1: float
    y0: float  # speedup range
    y1: float
    log: bool = False  # speedup on a log scale (a wide range: 0.5x to 14x)

    def yfrac(self, speed: float) -> float:
        """Where `speed` lies between y0 (0) and y1 (1)."""
        if self.log:
            return (math.log(speed) - math.log(self.y0)) / (math.log(self.y1) - math.log(self.y0))
        return (speed - self.y0) / (self.y1 - self.y0)

    def yticks(self) -> list[float]:
        if not self.log:
            return nice_ticks(self.y0, self.y1)
        ticks = [m * 10 ** e for e in range(-3, 4) for m in (1, 2, 5) if self.y0 <= m * 10 ** e <= self.y1]
        return ticks if len(ticks) >= 2 else nice_ticks(self.y0, self.y1)

    def clamp(self, m: Mark) -> tuple[float, float, bool]:
        """Where the mark is drawn, and whether it lies outside the range (drawn on its border)."""
        x, y = min(max(m.loss, self.x0), self.x1), min(max(m.speedup, self.y0), self.y1)
        return x, y, (x != m.loss or y != m.speedup)


def _knob_lines(knobs: dict) -> list[str]:
    kv = fmt_knobs(knobs)
    return [f"{k} = {v}" for k, v in kv] if kv else ["(all knobs as annotated)"]


def front_marks(result, split: str) -> list[Mark]:
    """The front on one split ("tune" or "eval"); points without figures on it are left out."""
    marks = []
    for i, p in enumerate(result.front):
        loss, speed = getattr(p, f"qos_loss_{split}"), getattr(p, f"speedup_{split}")
        if not (finite(loss) and finite(speed)):
            continue
        other = "eval" if split == "tune" else "tune"
        o_loss, o_speed = getattr(p, f"qos_loss_{other}"), getattr(p, f"speedup_{other}")
        split_name = {"tune": "tuning", "eval": "evaluation"}
        lines = [f"{split_name[split]}: QoS loss {fmt_loss(loss)}, speedup {speed:.2f}x"]
        if finite(o_loss) and finite(o_speed):
            lines.append(f"{split_name[other]}: QoS loss {fmt_loss(o_loss)}, speedup {o_speed:.2f}x")
        title = f"#{i + 1} {p.mode} front" + (f" (trial {p.trial})" if p.trial is not None else "")
        marks.append(Mark(float(loss), float(speed), p.mode, i, False, title, lines + _knob_lines(p.knobs)))
    return marks


def trial_marks(result) -> list[Mark]:
    """Every finished trial with finite figures (tuning split)."""
    marks = []
    for t in result.all_trials:
        if not (finite(t.qos_loss) and finite(t.speedup)):
            continue
        state = "dominated" if t.dominated else "non-dominated"
        if not getattr(t, "feasible", True):
            state += ", over budget"
        if getattr(t, "pruned", False):
            state += ", stopped after the first slice"
        num = getattr(t, "trial", None)
        title = f"{t.mode} trial" + (f" {num}" if num is not None else "") + f" ({state})"
        lines = [f"tuning: QoS loss {fmt_loss(t.qos_loss)}, speedup {t.speedup:.2f}x"]
        marks.append(Mark(float(t.qos_loss), float(t.speedup), t.mode, None, bool(t.dominated), title,
                          lines + _knob_lines(t.knobs)))
    return marks


def axes_for(result, panels: list[list[Mark]], with_budget: bool = True, every_trial: bool = True) -> Axes:
    """Ranges of a panel. `every_trial`: every mark inside (and the budget,
    `with_budget`), so no trial is hidden on a border; else (the zoom) x ends a little
    past the largest front loss, so the front fills the panel, and marks beyond are
    drawn on the border, their tooltips keeping the real figures. Speedups spanning
    more than LOG_RATIO are drawn on a log axis."""
    every = [m for marks in panels for m in marks]
    budget = result.budget if finite(result.budget) and with_budget else 0.0
    shown = every if every_trial else [m for m in every if m.front is not None or not m.dominated]
    x_hi = max([budget] + [m.loss for m in shown])
    x_hi = max(x_hi * 1.06 if every_trial else x_hi * 1.12, 0.01 if with_budget else 1e-4)
    x_lo = min([0.0] + [m.loss for m in shown])
    x_lo = x_lo * 1.06 if every_trial else max(x_lo * 1.12, -x_hi)
    x_lo -= 0.03 * (x_hi - x_lo)  # room for the exact configuration's marker at loss 0
    inside = [m.speedup for m in every if m.loss <= x_hi and m.speedup > 0] or [1.0]
    y_lo, y_hi = min(inside + [1.0]), max(inside + [1.0])
    if y_hi / y_lo > LOG_RATIO:
        return Axes(x_lo, x_hi, y_lo / 1.15, y_hi * 1.15, log=True)
    pad = (y_hi - y_lo) * 0.08 or 0.1
    return Axes(x_lo, x_hi, max(0.0, y_lo - pad), y_hi + pad)


def nice_ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About n round tick values covering [lo, hi]."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks, k = [], 0
    while first + k * step <= hi + 1e-9 * step:
        ticks.append(round(first + k * step, 12))
        k += 1
    return ticks


def fmt_tick(v: float, step: float) -> str:
    """Enough decimals to tell ticks `step` apart (2.5, not 2)."""
    digits = next((d for d in range(7) if abs(round(step, d) - step) <= 1e-9 * max(1.0, abs(step))), 6)
    return f"{v:.{digits}f}"


def figure(result) -> tuple[list[Mark], list[Mark], Axes, Axes | None]:
    """(tuning panel marks, evaluation panel marks, shared axes over every mark and the budget,
    axes zoomed to the front where the front fills less than half of those)."""
    front_tune = front_marks(result, "tune")
    on_front = {(m.mode, m.loss, m.speedup) for m in front_tune}
    # A non-dominated trial is drawn as its front point; keep only those the front lacks.
    trials = [m for m in trial_marks(result) if m.dominated or (m.mode, m.loss, m.speedup) not in on_front]
    tune = trials + front_tune
    ev = front_marks(result, "eval")
    full = axes_for(result, [tune, ev])
    zoom = axes_for(result, [tune, ev], with_budget=False, every_trial=False)
    return tune, ev, full, (zoom if zoom.x1 < 0.5 * full.x1 else None)


def staircase(marks: list[Mark], mode: str) -> list[tuple[float, float]]:
    """The attainment line of one mode's front: best speedup for each loss."""
    pts = sorted((m.loss, m.speedup) for m in marks if m.front is not None and m.mode == mode)
    out: list[tuple[float, float]] = []
    for x, y in pts:
        if out:
            out.append((x, out[-1][1]))
        out.append((x, y))
    return out
