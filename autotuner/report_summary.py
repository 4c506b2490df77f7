"""The numbers of the report: speedup within each QoS-loss level, summary.md
and front.json. Kept apart from the HTML so the figures people quote are
computed in one place and tested without a browser."""

from __future__ import annotations

import json
import math
from typing import Any

LEVELS = (0.01, 0.03, 0.06, 0.09)
MODES = ("static", "dynamic")
SPLITS = ("tune", "eval")
QOS_LOSS_DEFINITION = (
    "QoS loss = (QoS_exact - QoS_approx) / QoS_exact, so a 3 % loss keeps 97 % of the exact "
    "program's quality; speedup = exact time / approximate time, both measured in the same run."
)
# A loss equal to a level counts as within it, also after float rounding (0.03 stored as 0.030000000000000002).
_EPS = 1e-9


def finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def best_speedup(front, mode: str, split: str, level: float) -> float | None:
    """Best speedup among `mode`'s front points whose QoS loss on `split` is
    within `level` (a fraction); None when no point qualifies."""
    best = None
    for p in front:
        if p.mode != mode:
            continue
        loss, speed = getattr(p, f"qos_loss_{split}"), getattr(p, f"speedup_{split}")
        if finite(loss) and finite(speed) and loss <= level + _EPS and (best is None or speed > best):
            best = float(speed)
    return best


def speedup_table(front) -> dict[str, dict[str, list[float | None]]]:
    """{mode: {split: [best speedup at each of LEVELS]}}."""
    return {m: {s: [best_speedup(front, m, s, lv) for lv in LEVELS] for s in SPLITS} for m in MODES}


def fmt_speedup(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def fmt_loss(x: Any) -> str:
    return f"{100 * x:.2f} %" if finite(x) else "-"


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


def summary_markdown(result) -> str:
    """summary.md: speedup over exact at <= 1, 3, 6, 9 % QoS loss, tuning and evaluation."""
    table = speedup_table(result.front)
    head = ["mode", "split"] + [f"<= {round(lv * 100)} %" for lv in LEVELS]
    lines = [
        f"# Tuning summary: {_md(result.program)}",
        "",
        f"- QoS metric: {_md(result.qos_metric)}",
        f"- QoS-loss budget: {fmt_loss(result.budget)}",
        f"- trials: {_md(result.trials)} ({_md(result.failed_trials)} failed"
        + (f", {_md(result.pruned_trials)} stopped after the first slice" if getattr(result, "pruned_trials", 0) else "")
        + ")",
        f"- tuning wall time: {fmt_seconds(result.tuning_seconds)}"
        + (f" ({result.tuning_seconds:.0f} s)" if finite(result.tuning_seconds) and result.tuning_seconds >= 120 else ""),
        *_optional_lines(result),
        f"- front: {len(result.front)} configurations "
        f"({', '.join(f'{sum(p.mode == m for p in result.front)} {m}' for m in MODES)})",
        "",
        "Speedup over the exact program, best front configuration within each QoS-loss level "
        "(`-`: no front configuration within that level):",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for m in MODES:
        for s, label in (("tune", "tuning"), ("eval", "evaluation")):
            lines.append("| " + " | ".join([m, label] + [fmt_speedup(x) for x in table[m][s]]) + " |")
    lines += [
        "",
        f"{QOS_LOSS_DEFINITION} Tuning figures are measured on the tuning inputs; evaluation figures "
        "re-measure the same configurations on the held-out evaluation inputs (disjoint from tuning).",
        "",
    ]
    fails = failure_lines(result)
    if fails:
        lines += [f"## Failed trials ({len(getattr(result, 'failures', []))}; not on the front)", "",
                  *[f"- {_md(x)}" for x in fails], ""]
    return "\n".join(lines)


def failure_lines(result, limit: int = 50) -> list[str]:
    """One line per failed trial (mode, trial, knobs, error), the first `limit`,
    then how many more: what went wrong where, for the report's reader."""
    fails = getattr(result, "failures", None) or []
    out = [f"{f.get('mode')} trial {f.get('trial')} ("
           + (", ".join(f"{k}={v}" for k, v in fmt_knobs(f.get("knobs") or {})) or "no knobs")
           + f"): {f.get('error')}" for f in fails[:limit]]
    return out + ([f"... and {len(fails) - limit} more"] if len(fails) > limit else [])


def _optional_lines(result) -> list[str]:
    """Split sizes, sampler and seed, where the result has them."""
    out = []
    n_tune, n_eval = getattr(result, "n_tune", None), getattr(result, "n_eval", None)
    if n_tune is not None:
        out.append(f"- inputs: {_md(n_tune)} tuning, {_md(n_eval if n_eval is not None else '-')} held-out evaluation")
    for key in ("sampler", "seed"):
        if getattr(result, key, None) is not None:
            out.append(f"- {key}: {_md(getattr(result, key))}")
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
            }
            for p in result.front
        ],
    }
