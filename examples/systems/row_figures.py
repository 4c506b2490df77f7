"""What a results row says of a tuning result: the held-out speedup at each QoS-loss
level and the point chosen for it (chosen on the tuning figures, replayed held out:
never picked by its held-out figures; a replay whose held-out loss interval lies
above the level breaks it, and the row says so), the most accurate configuration measured (and the
levels against it where it beats the exact program), each front point's tuning and
held-out figures side by side. `bench/systems_bench.py` and the demo read them."""

from __future__ import annotations


def chosen_point(result, percent: int, mode: str):
    """The front point of `mode` a level reports: the fastest within `percent` % QoS loss
    on the tuning split (`TuningResult.chosen`); None when only the exact program is."""
    p = result.chosen(percent / 100 + 1e-9, mode=mode)
    if p is None or p.speedup_eval is None or all(v == {"knob_val": 0} for v in p.knobs.values()):
        return None
    return p


def meets_level(p, percent: int) -> bool:
    """The replay keeps the level: its held-out loss is within it, or its interval reaches it."""
    ci = p.qos_loss_eval_ci
    return p.qos_loss_eval <= percent / 100 + 1e-9 or (ci is not None and ci[0] <= percent / 100 + 1e-9)


def held_out_speedup(result, percent: int, mode: str) -> float:
    """The held-out speedup of the point chosen on tuning figures for `percent` % QoS
    loss (its replay, whatever it gives); 1.0 (the exact program) when none is chosen."""
    p = chosen_point(result, percent, mode)
    return float(p.speedup_eval) if p is not None else 1.0


def level_points(result, levels) -> dict:
    """{mode: {percent: the chosen front point}}: the point chosen on tuning figures
    for each QoS-loss level, with what rebuilding and re-timing it needs (its
    configuration, the JSON `program.build` takes), its tuning figures and its held-out
    replay, and whether the replay keeps the level; None where the exact program is
    the choice (no approximation within the level on the tuning split)."""
    out = {}
    for mode in ("static", "dynamic"):
        out[mode] = {}
        for percent in levels:
            p = chosen_point(result, percent, mode)
            if p is None:
                out[mode][str(percent)] = None
                continue
            out[mode][str(percent)] = {
                "knobs": p.knobs, "speedup": p.speedup_eval, "speedup_ci": p.speedup_eval_ci,
                "qos_loss": p.qos_loss_eval, "qos_loss_ci": p.qos_loss_eval_ci,
                "speedup_tune": p.speedup_tune, "speedup_tune_ci": p.speedup_tune_ci,
                "qos_loss_tune": p.qos_loss_tune, "trial": p.trial, "chosen_on": "tuning",
                "meets_level": meets_level(p, percent)}
    return out


def broken_levels(points: dict) -> list[str]:
    """The (mode, level) pairs whose replay breaks the level, as "static <= 6 %"."""
    return [f"{mode} <= {lv} %" for mode, levels in points.items() for lv, p in levels.items()
            if p is not None and not p["meets_level"]]


def most_accurate(result, levels) -> dict | None:
    """The front point with the best tuning QoS among those replayed held out, judged by
    `autotuner.most_accurate` (it beats the exact program where its held-out loss's upper
    bound is below 0: the exact program is not what a user would deploy), and then the
    speedup at each level against it: the fastest point whose tuning QoS is within the
    level of that point's, its speedup over that point (the ratio of the two paired
    held-out speedups over the exact program). None without held-out figures."""
    from autotuner import most_accurate as best_of

    best = best_of(result, replayed=True)
    if best is None:
        return None
    out = {"mode": best.mode, "knobs": best.knobs, "qos_loss": best.qos_loss, "qos_loss_ci": best.qos_loss_ci,
           "speedup": best.speedup, "beats_exact": best.beats_exact}
    if out["beats_exact"]:
        pts = [p for p in result.front if p.qos_loss_eval is not None and p.speedup_eval is not None]
        keep = 1.0 - best.qos_loss_tune  # its tuning QoS / the exact program's: the levels are chosen on tuning
        out["levels"] = {}
        for mode in ("static", "dynamic"):
            out["levels"][mode] = {}
            for percent in levels:
                ok = [p for p in pts if p.mode in (mode, best.mode) and
                      1.0 - (1.0 - p.qos_loss_tune) / max(keep, 1e-9) <= percent / 100 + 1e-9]
                fastest = max(ok, key=lambda p: p.speedup_tune, default=None)
                out["levels"][mode][str(percent)] = (1.0 if fastest is None else
                                                     max(1.0, fastest.speedup_eval / best.speedup))
    return out


def front_gaps(result) -> list[dict]:
    """Each front point's tuning and held-out figures side by side (the gap a user sees)."""
    keys = ("qos_loss_tune", "speedup_tune", "speedup_tune_ci", "qos_loss_eval", "qos_loss_eval_ci", "speedup_eval",
            "speedup_eval_ci", "speedup_tune_modelled", "qos_loss_tune_gold")
    return [{"mode": p.mode, "trial": p.trial, "knobs": {k: v for k, v in p.knobs.items() if v != {"knob_val": 0}},
             **{k: getattr(p, k) for k in keys}} for p in result.front]


def levels_text(best: dict) -> str:
    """The speedups against the most accurate point at each level, as people read them:
    "static 2.00x at <= 3 %, ...; dynamic ..." (empty without levels)."""
    return "; ".join(f"{mode} " + ", ".join(f"{x:.2f}x at <= {lv} %" for lv, x in levels.items())
                     for mode, levels in (best.get("levels") or {}).items())
