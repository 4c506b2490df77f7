"""The finished trials of a study as the tuner reads them: records, the front,
counts of evaluations, and the front's hypervolume after each evaluation
(`autotuner.stored` reads them from a study by name).

What the trials mean: a pruned trial (staged evaluation) is COMPLETE with its
slice figures and the user attr `pruned`; a configuration proposed again ends
PRUNED with `duplicate_of` and is not an evaluation; a trial copied from another
study carries `reused_from` (`REUSED`) and is not an evaluation either; a FAIL
trial with the user attr `error` did not build or run, one without it was
interrupted (Ctrl-C, a killed worker) and is neither counted nor seeded from; a trial with
`scored` was scored from kept outputs by the strategy's sweep (no run: counted apart
from the evaluations, as `scored`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotuner.pareto import hypervolume_curve, pareto_indices

CONSTRAINT = "qos_loss_over_budget"
TIMED = "timed:"  # study attr prefix: a modelled trial's paired timing, by trial number
REUSED = "reused_from"  # user attr of a trial copied from another study (`autotuner.warm_start`)


@dataclass
class Record:
    """A finished trial as the tuner sees it."""

    number: int
    config: dict
    qos_loss: float
    speedup: float
    pruned: bool
    duplicate: bool
    attrs: dict = field(default_factory=dict)

    def feasible(self, budget: float) -> bool:
        return self.qos_loss <= budget + 1e-12

    @property
    def loss_interval(self) -> list[float] | None:
        """The 95 % interval of its QoS loss over the inputs it ran on, where recorded."""
        low, high = self.attrs.get("loss_low"), self.attrs.get("loss_high")
        return None if low is None or high is None else [float(low), float(high)]


def interrupted(t: FrozenTrial) -> bool:
    return t.state == TrialState.FAIL and "error" not in t.user_attrs


def records(study: optuna.Study, trials: list[FrozenTrial] | None = None) -> list[Record]:
    """The finished trials; a trial whose speedup was modelled and later timed paired
    (`TIMED` study attrs) has the timed speedup, the modelled one in `speedup_modelled`."""
    out = []
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    timed = {k[len(TIMED):]: v for k, v in study.user_attrs.items() if k.startswith(TIMED)}
    for t in (t for t in trials if t.state == TrialState.COMPLETE):
        if "config" not in t.user_attrs:
            continue
        r = Record(t.number, t.user_attrs["config"], float(t.values[0]), float(t.values[1]),
                   bool(t.user_attrs.get("pruned")), "duplicate_of" in t.user_attrs, dict(t.user_attrs))
        figures = timed.get(str(t.number))
        if figures is not None:
            r.attrs.update({k: v for k, v in figures.items() if k != "speedup"}, timed=True,
                           speedup_modelled=r.speedup)
            r.speedup = float(figures["speedup"])
        out.append(r)
    return out


def measured_within(recs: list[Record], budget: float) -> list[Record]:
    """The fully measured, distinct trials within the budget."""
    return [r for r in recs if not r.pruned and not r.duplicate and r.feasible(budget)]


def front(recs: list[Record], budget: float) -> list[Record]:
    """Nondominated among fully measured, distinct, feasible trials."""
    cands = measured_within(recs, budget)
    return [cands[i] for i in pareto_indices([(r.qos_loss, r.speedup) for r in cands])]


def counts(study: optuna.Study) -> dict[str, int]:
    """evaluated (measured: complete, pruned or failed), pruned, failed, running, waiting, total,
    and reused (measurements copied from another study, not evaluations of this one)."""
    return tally(study.get_trials(deepcopy=False))


def tally(trials: Sequence[FrozenTrial]) -> dict[str, int]:
    c = dict(evaluated=0, pruned=0, failed=0, running=0, total=0, duplicates=0, waiting=0, reused=0, scored=0)
    for t in trials:
        c["total"] += 1
        if t.state == TrialState.RUNNING:
            c["running"] += 1
        elif t.state == TrialState.WAITING:
            c["waiting"] += 1
        elif t.state in (TrialState.FAIL, TrialState.PRUNED) and "duplicate_of" in t.user_attrs:
            c["duplicates"] += 1
        elif t.state == TrialState.FAIL and not interrupted(t):
            c["failed"] += 1
            c["evaluated"] += 1
        elif t.state == TrialState.COMPLETE:
            if "duplicate_of" in t.user_attrs:
                c["duplicates"] += 1
            elif REUSED in t.user_attrs:
                c["reused"] += 1
            elif t.user_attrs.get("scored"):  # from kept outputs, no model run: not one of `n_trials`
                c["scored"] += 1
            else:
                c["evaluated"] += 1
                c["pruned"] += bool(t.user_attrs.get("pruned"))
    return c


def hypervolume_of_study(study: optuna.Study, budget: float) -> list[float]:
    """Hypervolume of the study's front after 0, 1, 2, ... evaluations (trial order;
    reused measurements and configurations scored from kept outputs count from the start;
    pruned trials and failures add nothing)."""
    start, points = [], []
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.COMPLETE and "duplicate_of" not in t.user_attrs:
            p = None if t.user_attrs.get("pruned") else (float(t.values[0]), float(t.values[1]))
            (start if REUSED in t.user_attrs or t.user_attrs.get("scored") else points).append(p)
        elif t.state == TrialState.FAIL and not interrupted(t) and "duplicate_of" not in t.user_attrs:
            points.append(None)
    return hypervolume_curve(points, budget, [p for p in start if p is not None])


def stalled(curve: Sequence[float], patience: int) -> bool:
    """The hypervolume has not grown over the last `patience` evaluations (and is not
    0: a search that has found nothing within the budget yet has not converged)."""
    return 0 < patience < len(curve) and 0 < curve[-1] <= curve[-1 - patience] * (1 + 1e-12)
