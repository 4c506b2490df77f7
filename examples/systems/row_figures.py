"""What a results row says of a tuning result: the held-out speedup at each QoS-loss
level and the point chosen for it, the most accurate configuration measured (and the
levels against it where it beats the exact program), each front point's tuning and
held-out figures side by side. `bench/systems_bench.py` and the demo read them."""

from __future__ import annotations


def held_out_speedup(result, percent: int, mode: str) -> float:
    """Held-out speedup of the fastest front point within `percent` % QoS loss; 1.0
    (the exact program) when none is."""
    p = result.best_within(percent / 100 + 1e-9, mode=mode, split="eval")
    return max(1.0, float(p.speedup_eval)) if p is not None else 1.0


def level_points(result, levels) -> dict:
    """{mode: {percent: the chosen front point}}: the fastest front point within each
    held-out QoS-loss level, with what rebuilding and re-timing it needs (its
    configuration, the JSON `program.build` takes) and its figures; None where the
    exact program is the best (no approximation within the level)."""
    out = {}
    for mode in ("static", "dynamic"):
        out[mode] = {}
        for percent in levels:
            p = result.best_within(percent / 100 + 1e-9, mode=mode, split="eval")
            if p is None or p.speedup_eval is None or p.speedup_eval <= 1.0:
                out[mode][str(percent)] = None
                continue
            out[mode][str(percent)] = {
                "knobs": p.knobs, "speedup": p.speedup_eval, "speedup_ci": p.speedup_eval_ci,
                "qos_loss": p.qos_loss_eval, "qos_loss_ci": p.qos_loss_eval_ci,
                "speedup_tune": p.speedup_tune, "speedup_tune_ci": p.speedup_tune_ci,
                "qos_loss_tune": p.qos_loss_tune, "trial": p.trial}
    return out


def most_accurate(result, levels) -> dict | None:
    """The front point with the best held-out QoS, and where it beats the exact program
    beyond its interval (its loss's upper bound below 0: the exact program is not what
    a user would deploy), the speedup at each level against it: the fastest point
    whose held-out QoS is within the level of that point's QoS, its speedup over that
    point (the ratio of the two paired speedups over the exact program). None without
    held-out figures."""
    pts = [p for p in result.front if p.qos_loss_eval is not None and p.speedup_eval is not None]
    if not pts:
        return None
    best = min(pts, key=lambda p: (p.qos_loss_eval, -p.speedup_eval))
    ci = best.qos_loss_eval_ci
    out = {"mode": best.mode, "knobs": {k: v for k, v in best.knobs.items() if v != {"knob_val": 0}},
           "qos_loss": best.qos_loss_eval, "qos_loss_ci": ci, "speedup": best.speedup_eval,
           "beats_exact": bool(ci and ci[1] < 0)}
    if out["beats_exact"]:
        keep = 1.0 - best.qos_loss_eval  # its QoS / the exact program's
        out["levels"] = {}
        for mode in ("static", "dynamic"):
            out["levels"][mode] = {}
            for percent in levels:
                ok = [p for p in pts if p.mode in (mode, best.mode) and
                      1.0 - (1.0 - p.qos_loss_eval) / keep <= percent / 100 + 1e-9]
                fastest = max(ok, key=lambda p: p.speedup_eval, default=best)
                out["levels"][mode][str(percent)] = max(1.0, fastest.speedup_eval / best.speedup_eval)
    return out


def front_gaps(result) -> list[dict]:
    """Each front point's tuning and held-out figures side by side (the gap a user sees)."""
    keys = ("qos_loss_tune", "speedup_tune", "speedup_tune_ci", "qos_loss_eval", "qos_loss_eval_ci", "speedup_eval",
            "speedup_eval_ci")
    return [{"mode": p.mode, "trial": p.trial, "knobs": {k: v for k, v in p.knobs.items() if v != {"knob_val": 0}},
             **{k: getattr(p, k) for k in keys}} for p in result.front]


def levels_text(best: dict) -> str:
    """The speedups against the most accurate point at each level, as people read them:
    "static 2.00x at <= 3 %, ...; dynamic ..." (empty without levels)."""
    return "; ".join(f"{mode} " + ", ".join(f"{x:.2f}x at <= {lv} %" for lv, x in levels.items())
                     for mode, levels in (best.get("levels") or {}).items())
