"""Whether the exact program is the most accurate one measured. A speedup means
something only against an exact program that no configuration beats: where a
configuration's QoS is better than the exact program's beyond its 95 % interval
(its QoS-loss interval lies below 0), a user would deploy that configuration, and
every speedup over the exact program is over a weaker program than it.

Judged on the held-out figures where a configuration has them (a front point
replayed held out), on the tuning figures otherwise (every fully measured trial:
the front and the trials off it); a configuration without a loss interval is not
judged (noise could make any loss negative). `approx-tune run`, its report and
bench/results.py read `exact_dominated`."""

from __future__ import annotations

import json
from dataclasses import dataclass

ROUNDING = 1e-9  # a QoS-loss ratio closer to 0 than this is 0


@dataclass(frozen=True)
class Judgement:
    """One measured configuration, with the figures that judge it against the exact program."""

    mode: str
    knobs: dict  # its approximated knobs (the exact ones left out)
    trial: int | None
    split: str  # "held-out" or "tuning": where qos_loss and speedup were measured
    qos_loss: float  # negative: more accurate than the exact program
    qos_loss_ci: list[float] | None
    speedup: float | None
    speedup_ci: list[float] | None
    qos_loss_tune: float  # its tuning figures, which chose it (ranked on these)
    speedup_tune: float

    @property
    def beats_exact(self) -> bool:
        """More accurate than the exact program beyond its interval (the upper end below 0 by
        more than ROUNDING: a configuration whose outputs differ from the exact ones in their
        last bits scores a loss of -1e-15, which beats nothing)."""
        return bool(self.qos_loss_ci) and self.qos_loss_ci[1] < -ROUNDING

    def configuration(self) -> str:
        """Its mode, trial and approximated knobs, as people read them."""
        trial = f" trial {self.trial}" if self.trial is not None else ""
        knobs = ", ".join(f"{k}={_setting(v)}" for k, v in sorted(self.knobs.items())) or "all knobs exact"
        return f"{self.mode}{trial} ({knobs})"

    def figures(self) -> str:
        """Its QoS loss with its interval (a negative loss is a gain) and speedup, and where they were measured."""
        ci = self.qos_loss_ci
        loss = f"QoS loss {100 * self.qos_loss:+.2f} %" + (f" [{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else "")
        speed = "-" if self.speedup is None else f"{self.speedup:.2f}x"
        if self.speedup is not None and self.speedup_ci:
            speed += f" [{self.speedup_ci[0]:.2f}, {self.speedup_ci[1]:.2f}]"
        return f"{loss} (negative: a gain) at {speed} on the {self.split} inputs"

    def warning(self) -> str:
        """The one line a report opens with when this configuration dominates the exact program."""
        return (f"The exact program is not the most accurate: {self.configuration()} beats it beyond its 95 % "
                f"interval, {self.figures()}; the speedups shown are against a weaker program than that "
                "configuration.")


def judged(result) -> list[Judgement]:
    """Every distinct configuration the result measured fully: its front points (held-out
    figures where replayed) and its trials off the front (tuning figures; trials stopped
    after the first slice left out: their figures are of the slice)."""
    out, seen = [], set()
    for p in result.front:
        held = p.qos_loss_eval is not None and p.speedup_eval is not None
        out.append(Judgement(
            p.mode, _approximated(p.knobs), p.trial, "held-out" if held else "tuning",
            p.qos_loss_eval if held else p.qos_loss_tune,
            p.qos_loss_eval_ci if held else getattr(p, "qos_loss_tune_ci", None),
            p.speedup_eval if held else p.speedup_tune, p.speedup_eval_ci if held else p.speedup_tune_ci,
            p.qos_loss_tune, p.speedup_tune))
        if p.trial is not None:
            seen.add((p.mode, p.trial))
    for t in result.all_trials:
        if t.pruned or (t.mode, t.trial) in seen:
            continue
        seen.add((t.mode, t.trial))
        out.append(Judgement(t.mode, _approximated(t.knobs), t.trial, "tuning", t.qos_loss,
                             getattr(t, "qos_loss_ci", None), t.speedup, None, t.qos_loss, t.speedup))
    return out


def most_accurate(result, replayed: bool = False) -> Judgement | None:
    """The configuration with the best tuning QoS (the faster of equals), ranked on the
    tuning figures and judged on its held-out ones where it has them; `replayed`: among
    the front points replayed held out only. None when nothing was measured."""
    pts = [j for j in judged(result) if not replayed or j.split == "held-out"]
    return min(pts, key=lambda j: (j.qos_loss_tune, -j.speedup_tune), default=None)


def exact_dominated(result) -> Judgement | None:
    """The configuration that beats the exact program beyond its interval, or None when
    none does (the exact program is the most accurate measured). Of several, one judged
    held out before one judged on tuning figures, then the most accurate, then the fastest."""
    beats = [j for j in judged(result) if j.beats_exact]
    return min(beats, key=lambda j: (j.split != "held-out", j.qos_loss, -(j.speedup or 0.0)), default=None)


def _approximated(knobs: dict) -> dict:
    """The knobs not at their exact setting (every choice 0)."""
    return {k: v for k, v in (knobs or {}).items() if not _exact(v)}


def _exact(setting) -> bool:
    if not isinstance(setting, dict):
        return False
    if set(setting) == {"knob_val"}:
        return setting["knob_val"] == 0
    choices = [v for k, v in setting.items() if k.endswith("decisions")]
    return bool(choices) and all(c == 0 for v in choices for c in v)


def _setting(v) -> str:
    if isinstance(v, dict) and set(v) == {"knob_val"}:
        return str(v["knob_val"])
    return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)
