"""The numbers of the report: speedup within each QoS-loss level, summary.md
and front.json. Kept apart from the HTML so the figures people quote are
computed in one place and tested without a browser."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from autotuner.dominance import exact_dominated

LEVELS = (0.01, 0.03, 0.06, 0.09)
MODES = ("static", "dynamic")
SPLITS = ("tune", "eval")
QOS_LOSS_DEFINITION = (
    "QoS loss = (QoS_exact - QoS_approx) / QoS_exact, so a 3 % loss keeps 97 % of the exact "
    "program's quality; speedup = exact time / approximate time, the two timed side by side (paired) on the "
    "same inputs, with its 95 % interval in brackets."
)
# A loss equal to a level counts as within it, also after float rounding (0.03 stored as 0.030000000000000002).
_EPS = 1e-9


def finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def best_point(front, mode: str, split: str, level: float):
    """The point `mode` reports at `level` (a fraction): the fastest of its front
    points within the level on the tuning split (chosen there: the held-out figures
    never choose, they replay the choice), read on `split`; None when no point
    qualifies or it has no figures on `split`."""
    best = None
    for p in front:
        if p.mode != mode:
            continue
        loss, speed = p.qos_loss_tune, p.speedup_tune
        if finite(loss) and finite(speed) and loss <= level + _EPS and (best is None or speed > best.speedup_tune):
            best = p
    if best is None or not finite(getattr(best, f"speedup_{split}")):
        return None
    return best


def replay_breaks(p, level: float) -> bool:
    """The held-out replay of a point chosen for `level` lies above it (its loss and,
    where known, its interval's lower end)."""
    ci = getattr(p, "qos_loss_eval_ci", None)
    low = ci[0] if ci and finite(ci[0]) else p.qos_loss_eval
    return finite(p.qos_loss_eval) and p.qos_loss_eval > level + _EPS and low > level + _EPS


def best_speedup(front, mode: str, split: str, level: float) -> float | None:
    """Best speedup among `mode`'s front points within `level` on `split`."""
    p = best_point(front, mode, split, level)
    return None if p is None else float(getattr(p, f"speedup_{split}"))


def speedup_table(front) -> dict[str, dict[str, list[float | None]]]:
    """{mode: {split: [best speedup at each of LEVELS]}}."""
    return {m: {s: [best_speedup(front, m, s, lv) for lv in LEVELS] for s in SPLITS} for m in MODES}


def speedup_cells(front) -> dict[str, dict[str, list[str]]]:
    """{mode: {split: [the chosen point's speedup with its interval, as text, at each of
    LEVELS]}}; a held-out cell (the replay of the point chosen on tuning) also gives its
    QoS loss with its interval (over the held-out inputs), and says when it is above the level."""
    def cell(m, s, lv):
        p = best_point(front, m, s, lv)
        if p is None:
            return "-"
        text = fmt_speedup(getattr(p, f"speedup_{s}"), getattr(p, f"speedup_{s}_ci", None))
        if s == "eval" and getattr(p, "qos_loss_eval_ci", None):
            text += f" at {fmt_loss(p.qos_loss_eval, p.qos_loss_eval_ci)} loss"
        if s == "eval" and replay_breaks(p, lv):
            text += " (above the level)"
        return text

    return {m: {s: [cell(m, s, lv) for lv in LEVELS] for s in SPLITS} for m in MODES}


def fmt_speedup(x: float | None, ci=None) -> str:
    if x is None:
        return "-"
    if ci and all(finite(c) for c in ci):
        return f"{x:.2f}x [{ci[0]:.2f}, {ci[1]:.2f}]"
    return f"{x:.2f}x"


def fmt_gap(p) -> str:
    """Held-out speedup relative to the tuning one, as people read it."""
    if not (finite(p.speedup_eval) and finite(p.speedup_tune) and p.speedup_tune > 0):
        return "-"
    return f"{100 * (p.speedup_eval / p.speedup_tune - 1):+.0f} %"


def fmt_loss(x: Any, ci=None) -> str:
    """A QoS loss in percent, with its 95 % interval in brackets when given."""
    if not finite(x):
        return "-"
    if ci and all(finite(c) for c in ci):
        return f"{100 * x:.2f} % [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
    return f"{100 * x:.2f} %"


def fmt_seconds(s: Any) -> str:
    if not finite(s):
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    if s < 120:
        return f"{s:.2f} s"
    return f"{s / 60:.1f} min"


def fmt_setting(setting: Any) -> str:
    """One knob's setting as people read it: `4`, or `thresholds [..] -> decisions [..]`."""
    if isinstance(setting, dict):
        if set(setting) == {"knob_val"}:
            return str(setting["knob_val"])
        if "decisions" in setting or "tree_decisions" in setting:
            pre = "tree_" if "tree_decisions" in setting else ""
            th, de = setting.get(pre + "thresholds", []), setting.get(pre + "decisions", [])
            return f"thresholds {list(th)} -> decisions {list(de)}"
    if isinstance(setting, (dict, list, tuple)):
        return json.dumps(setting, sort_keys=True, default=str)
    return str(setting)


def fmt_knobs(knobs: dict) -> list[tuple[str, str]]:
    return [(str(k), fmt_setting(v)) for k, v in sorted((knobs or {}).items(), key=lambda kv: str(kv[0]))]


def dominated_warning(result) -> str | None:
    """The line a report opens with when a configuration beats the exact program beyond its
    interval (every speedup shown is then over a weaker program than it); None otherwise."""
    dominated = exact_dominated(result)
    return None if dominated is None else dominated.warning()


def summary_markdown(result) -> str:
    """summary.md: speedup over exact at <= 1, 3, 6, 9 % QoS loss, tuning and evaluation;
    opened by the configuration that beats the exact program, where one does."""
    table = speedup_cells(result.front)
    head = ["mode", "split"] + [f"<= {round(lv * 100)} %" for lv in LEVELS]
    warning = dominated_warning(result)
    lines = [
        f"# Tuning summary: {_md(result.program)}",
        "",
        *([f"**Warning:** {_md(warning)}", ""] if warning else []),
        f"- QoS metric: {_md(result.qos_metric)}",
        f"- QoS-loss budget: {fmt_loss(result.budget)}",
        f"- trials: {_md(result.trials)} ({_md(result.failed_trials)} failed"
        + (f", {_md(result.pruned_trials)} stopped after the first slice"
           if getattr(result, "pruned_trials", 0) else "")
        + ")",
        f"- tuning wall time: {fmt_seconds(result.tuning_seconds)}"
        + (f" ({result.tuning_seconds:.0f} s)"
           if finite(result.tuning_seconds) and result.tuning_seconds >= 120 else ""),
        *_optional_lines(result),
        f"- front: {len(result.front)} configurations "
        f"({', '.join(f'{sum(p.mode == m for p in result.front)} {m}' for m in MODES)})",
        "",
        "Speedup over the exact program at each QoS-loss level: the fastest front configuration within the "
        "level on the tuning inputs, and its replay on the held-out inputs (chosen on tuning figures only; "
        "`(above the level)`: the replay's loss and its interval lie above it; `-`: none within the level):",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for m in MODES:
        for s, label in (("tune", "tuning"), ("eval", "evaluation")):
            lines.append("| " + " | ".join([m, label] + table[m][s]) + " |")
    lines += [
        "",
        f"{QOS_LOSS_DEFINITION} Tuning figures are measured on the tuning inputs; evaluation figures "
        "re-measure the same configurations on the held-out evaluation inputs (disjoint from tuning).",
        "",
    ]
    if getattr(result, "timing", None):
        lines += [f"Timing, tuning and held-out alike: {_md(result.timing)}.", ""]
    for sec in sections(result):
        lines += section_markdown(sec)
    fails = failure_lines(result)
    if fails:
        lines += [f"## Failed trials ({len(getattr(result, 'failures', []))}; not on the front)", "",
                  *[f"- {_md(x)}" for x in fails], ""]
    return "\n".join(lines)


@dataclass
class Section:
    """A titled table of the report, rendered as Markdown (summary.md) and HTML alike."""

    title: str
    intro: str
    head: list[str]
    rows: list[list[str]]
    level: int = 2


# what "(modelled)" beside a front point's tuning speedup means (the report's front table, bench/results.md's)
MODELLED_NOTE = ("a tuning speedup marked (modelled) is the cost model's, from the kept calls' times: no level reports "
                 "that point, and it lies above every level or the search's time was spent before it was timed paired")


# what the "(tuning, gold)" column means (the report's front table, bench/results.md's)
GOLD_NOTE = ("The search tuned against the exact program's answers; \"QoS loss (tuning, gold)\" scores the points "
             "the levels choose on the same tuning inputs against their gold answers, as held out (a second proxy, "
             "not what chose them)")


def front_section(result) -> list[Section]:
    """Every front point with its tuning and held-out figures and the gap between them."""
    if not result.front:
        return []
    gold = any(getattr(p, "qos_loss_tune_gold", None) is not None for p in result.front)
    rows = [[str(i + 1), p.mode, fmt_loss(p.qos_loss_tune),
             *([fmt_loss(getattr(p, "qos_loss_tune_gold", None))] if gold else []),
             fmt_speedup(_num(p.speedup_tune), getattr(p, "speedup_tune_ci", None))
             + (" (modelled)" if getattr(p, "speedup_tune_modelled", False) else ""),
             fmt_loss(p.qos_loss_eval, getattr(p, "qos_loss_eval_ci", None)),
             fmt_speedup(_num(p.speedup_eval), getattr(p, "speedup_eval_ci", None)), fmt_gap(p)]
            for i, p in enumerate(result.front)]
    modelled = any(getattr(p, "speedup_tune_modelled", False) for p in result.front)
    return [Section("Front: tuning and held-out figures",
                    "Each front point on the tuning inputs and re-measured on the held-out inputs; the last column "
                    "is how much the held-out speedup differs from the tuning one."
                    + (f" {GOLD_NOTE}." if gold else "")
                    + (f" {MODELLED_NOTE.capitalize()}." if modelled else ""),
                    ["#", "mode", "QoS loss (tuning)", *(["QoS loss (tuning, gold)"] if gold else []),
                     "speedup (tuning)", "QoS loss (held-out)", "speedup (held-out)", "held-out vs tuning speedup"],
                    rows)]


def importance_sections(result) -> list[Section]:
    """Each knob's main effect per mode: which knobs move speedup and loss."""
    imp = getattr(result, "importances", None) or {}
    rows = []
    for mode, tables in imp.items():
        for k in dict.fromkeys([*tables.get("speedup", {}), *tables.get("qos_loss", {})]):
            sp, lo = tables.get("speedup", {}).get(k), tables.get("qos_loss", {}).get(k)
            rows.append([mode, k, "-" if sp is None else f"{100 * sp:.0f} %",
                         "-" if lo is None else f"{100 * lo:.0f} %"])
    if not rows:
        return []
    return [Section("Which knobs matter",
                    "Share of the variation over the study's measured trials that each knob explains (its main "
                    "effect in an additive model fitted on the trials; speedup on a log scale).",
                    ["mode", "knob", "speedup", "QoS loss"], rows)]


def ablation_sections(result) -> list[Section]:
    """Each chosen point with every approximated knob set back to exact in turn."""
    out = []
    for a in getattr(result, "ablations", None) or []:
        rows = [[r["knob"], fmt_setting(r["setting"]),
                 fmt_speedup(r["speedup_without"], r.get("speedup_without_ci")), fmt_loss(r["qos_loss_without"]),
                 "-" if r.get("speedup_share") is None else f"{100 * r['speedup_share']:.0f} %",
                 fmt_loss(r["qos_loss_share"])] for r in a["rows"]]
        where = f"{a['n']} inputs" + (f", {a['inputs']}" if a.get("inputs") else "")
        out.append(Section(
            f"Ablation, {a['label']}: {fmt_speedup(a['speedup'], a.get('speedup_ci'))} at {fmt_loss(a['qos_loss'])}",
            f"Each knob set back to exact, the others kept, measured paired against the exact program ({where}). "
            "Share of the speedup: (ln S - ln S_without) / ln S; of the loss: L - L_without.",
            ["knob", "setting", "speedup without it", "QoS loss without it", "share of speedup", "share of loss"],
            rows, level=3))
    return out


def sections(result) -> list[Section]:
    return front_section(result) + importance_sections(result) + ablation_sections(result)


def section_markdown(sec: Section) -> list[str]:
    return [f"{'#' * sec.level} {_md(sec.title)}", "", _md(sec.intro), "",
            "| " + " | ".join(sec.head) + " |", "|" + "---|" * len(sec.head),
            *("| " + " | ".join(_md(c) for c in row) + " |" for row in sec.rows), ""]


def failure_lines(result, limit: int = 50) -> list[str]:
    """One line per failed trial (mode, trial, knobs, error), the first `limit`,
    then how many more: what went wrong where, for the report's reader."""
    fails = getattr(result, "failures", None) or []
    out = [f"{f.get('mode')} trial {f.get('trial')} ("
           + (", ".join(f"{k}={v}" for k, v in fmt_knobs(f.get("knobs") or {})) or "no knobs")
           + f"): {f.get('error')}" for f in fails[:limit]]
    return out + ([f"... and {len(fails) - limit} more"] if len(fails) > limit else [])


def _optional_lines(result) -> list[str]:
    """Split sizes, sampler and seed, and the endpoint requests, where the result has them."""
    out = []
    n_tune, n_eval = getattr(result, "n_tune", None), getattr(result, "n_eval", None)
    if n_tune is not None:
        out.append(f"- inputs: {_md(n_tune)} tuning, {_md(n_eval if n_eval is not None else '-')} held-out evaluation")
    for key in ("sampler", "seed"):
        if getattr(result, key, None) is not None:
            out.append(f"- {key}: {_md(getattr(result, key))}")
    requests = (getattr(result, "search", None) or {}).get("endpoint_requests")
    if requests:
        out.append(f"- endpoint requests (the tuning process): {_md(requests['sent'])} sent, "
                   f"{_md(requests['kept'])} answered from kept outputs")
    return out


def _md(s: Any) -> str:
    """User text inside Markdown: no table breaks, no raw HTML."""
    return str(s).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def _num(x: Any) -> float | None:
    """JSON has no NaN/inf: write null."""
    return float(x) if finite(x) else None


def front_json(result) -> dict:
    """front.json's object, exactly the documented keys."""
    return {
        "program": result.program,
        "qos_metric": result.qos_metric,
        "budget": result.budget,
        "trials": result.trials,
        "tuning_seconds": result.tuning_seconds,
        "front": [
            {
                "mode": p.mode,
                "knobs": p.knobs,
                "qos_loss_tune": _num(p.qos_loss_tune),
                "speedup_tune": _num(p.speedup_tune),
                "qos_loss_eval": _num(p.qos_loss_eval),
                "speedup_eval": _num(p.speedup_eval),
                "speedup_tune_ci": _interval(getattr(p, "speedup_tune_ci", None)),
                "speedup_tune_modelled": bool(getattr(p, "speedup_tune_modelled", False)),
                "speedup_eval_ci": _interval(getattr(p, "speedup_eval_ci", None)),
                "qos_loss_eval_ci": _interval(getattr(p, "qos_loss_eval_ci", None)),
                "qos_loss_tune_gold": _num(getattr(p, "qos_loss_tune_gold", None)),
            }
            for p in result.front
        ],
        "timing": getattr(result, "timing", None),
        "importances": getattr(result, "importances", None) or {},
        "ablations": getattr(result, "ablations", None) or [],
    }


def _interval(ci) -> list[float | None] | None:
    return None if not ci else [_num(c) for c in ci]
