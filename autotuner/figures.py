"""What one configuration's measurement is: per-input QoS scores and paired timing
(`Figures`, which shards of the inputs join), and the QoS loss and speedup with
their intervals made from them (`Measurement`, `summarise`). Kept apart from the
running (`autotuner.measure`), which produces them, so the sharded evaluation joins
figures without a Measurer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from approx_dialect.diagnostics import ApproxError
from autotuner.intervals import bootstrap_loss, bootstrap_ratio, ratio

WHERE = "<measure>"


@dataclass
class PairedTiming:
    """Exact and approximate seconds per timed block (one pass of the block), side by side."""

    exact: np.ndarray
    approx: np.ndarray
    rounds: int
    scale: float = 1.0  # whole pass / timed slice (exact warm-up times): seconds are per whole pass
    timed: int = 0  # inputs timed

    @property
    def speedup(self) -> float:
        return ratio(float(self.exact.sum()), float(self.approx.sum()))

    def interval(self, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
        """Bootstrap interval of the speedup over the timed blocks (deterministic: seeded)."""
        return bootstrap_ratio(self.exact, self.approx, level, seed)

    @property
    def exact_seconds(self) -> float:  # one exact pass over the inputs (estimated from the slice)
        return self.scale * float(self.exact.sum()) / self.rounds

    @property
    def approx_seconds(self) -> float:
        return self.scale * float(self.approx.sum()) / self.rounds

    @staticmethod
    def join(parts: "Sequence[PairedTiming]") -> "PairedTiming":
        """The timing of disjoint input shards as one: each shard's blocks as seconds of
        one pass (its rounds and scale divided out), side by side."""
        exact = np.concatenate([p.exact * (p.scale / p.rounds) for p in parts])
        approx = np.concatenate([p.approx * (p.scale / p.rounds) for p in parts])
        return PairedTiming(exact, approx, 1, 1.0, sum(p.timed for p in parts))


@dataclass
class Measurement:
    qos_loss: float
    speedup: float
    seconds: float  # time of one approximate pass (NaN for the money objective)
    qos: float  # mean per-input quality
    n: int  # inputs measured
    loss_stderr: float = 0.0  # standard error of the per-input losses
    money: float | None = None
    speedup_low: float | None = None  # 95 % interval of the paired speedup
    speedup_high: float | None = None
    exact_seconds: float | None = None  # one exact pass, timed alongside
    loss_low: float | None = None  # 95 % bootstrap interval of the QoS loss over the inputs
    loss_high: float | None = None
    modelled: bool = False  # the speedup is the cost model's (kept calls' seconds), not a paired timing

    @property
    def loss_interval(self) -> list[float] | None:
        return None if self.loss_low is None else [self.loss_low, self.loss_high]

    @property
    def speedup_interval(self) -> tuple[float, float] | None:
        return None if self.speedup_low is None else (self.speedup_low, self.speedup_high)

    def held_out_figures(self) -> dict:
        """The figures a front point keeps of its held-out measurement (JSON: in the
        study, so a resume does not measure it again; in `approx-tune verify`'s rows)."""
        return {"qos_loss": self.qos_loss, "speedup": self.speedup,
                "seconds": None if self.seconds != self.seconds else self.seconds, "money": self.money,
                "ci": None if self.speedup_low is None else [self.speedup_low, self.speedup_high],
                "loss_ci": self.loss_interval}


@dataclass
class Figures:
    """One configuration's raw figures on some inputs: per-input QoS scores, money, and
    the paired timing (None for the money objective). Figures of disjoint shards of
    the inputs join into those of all of them (`autotuner.sharded`)."""

    scores: np.ndarray
    money: float | None
    timing: PairedTiming | None
    modelled: tuple[float, float] | None = None  # (exact, approximate) modelled seconds, where not timed


def qos_of(exact_scores: np.ndarray, scores: np.ndarray, with_references: bool) -> tuple[float, float, float]:
    """(QoS loss, mean quality, standard error of the loss) of per-input `scores`
    beside the exact program's on the same inputs (see the module docstring)."""
    n = len(scores)
    qos_exact = float(exact_scores.mean()) if with_references else 1.0
    if qos_exact <= 0:  # a slice where the exact program scores 0: compare scores directly
        qos_exact = 1.0
    per_input = (exact_scores - scores) / qos_exact if with_references else 1.0 - scores
    loss = (qos_exact - float(scores.mean())) / qos_exact if with_references else float(per_input.mean())
    se = float(per_input.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    return loss, float(scores.mean()), se


def summarise(figures: Figures, exact_scores: np.ndarray, with_references: bool, objective: str = "time",
              exact_money: float | None = None) -> Measurement:
    """The Measurement of a configuration's figures (QoS loss and its bootstrap interval,
    speedup and its interval, or the money ratio)."""
    scores, n = figures.scores, len(figures.scores)
    loss, quality, se = qos_of(exact_scores, scores, with_references)
    loss_low, loss_high = bootstrap_loss(exact_scores, scores, with_references)
    if objective != "money" and figures.timing is None and figures.modelled is not None:
        exact_s, approx_s = figures.modelled
        return Measurement(loss, ratio(exact_s, approx_s), approx_s, quality, n, se, figures.money,
                           exact_seconds=exact_s, loss_low=loss_low, loss_high=loss_high, modelled=True)
    if objective == "money" or figures.timing is None:
        return Measurement(loss, ratio(exact_money or 0.0, figures.money or 0.0), float("nan"), quality, n, se,
                           figures.money, loss_low=loss_low, loss_high=loss_high)
    timing = figures.timing
    low, high = timing.interval()
    return Measurement(loss, timing.speedup, timing.approx_seconds, quality, n, se, figures.money, low, high,
                       timing.exact_seconds, loss_low, loss_high)


def check_exact_qos(exact_scores: np.ndarray, with_references: bool, what: str, metric: str) -> None:
    """A QoS loss is relative to the exact program's QoS against the ground truth: it must not be 0."""
    if with_references and exact_scores.mean() <= 0:
        raise ApproxError(f"the exact program scores QoS 0 against the ground truth on the {what} split "
                          f"(metric {metric}): a QoS loss cannot be defined", where=WHERE)
