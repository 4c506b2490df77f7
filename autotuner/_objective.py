"""The Optuna objective: suggest a configuration, skip it if it was measured
already, evaluate it in stages, record what was measured.

Staged evaluation: a configuration first runs on a slice of the tuning inputs and
goes on to the full split only if it might still reach the front: its slice loss is
within the budget (with a margin), no front point beats it by a margin, and no
configuration measured on the same slice (`FIRST_STAGE`, the user attr every staged
trial carries; a slice of at least `PEER_MIN_INPUTS`) is at least as accurate there and
a quarter faster. The last is the
one that cuts a costly program's search: slices of the same inputs compare without
sampling noise between them, so one cheap configuration that answers the slice as
well stops the costlier ones after the slice. Optuna cannot
prune multi-objective trials, so a pruned trial is COMPLETE with its slice
figures, the user attr `pruned` (and `prune_reason`), and a positive constraint
value (infeasible), which samplers rank below every feasible trial. A
configuration that does not build or run is a FAIL trial with the user attr
`error`; one interrupted `MAX_ATTEMPTS` times fails too.
"""

from __future__ import annotations

from collections.abc import Callable

import optuna
from optuna.trial import TrialState

from approx_dialect.diagnostics import ApproxError
from autotuner._records import CONSTRAINT, Record, counts, front, records
from autotuner._sampling import worker_id
from autotuner.space import SearchSpace, config_key

MAX_ATTEMPTS = 3  # runs of one configuration cut short before it counts as failed
FIRST_STAGE = "first_stage"  # user attr: {"n", "qos_loss", "speedup"} of a staged trial's slice
PEER_MIN_INPUTS = 10  # slices compared with each other hold at least this many inputs (fewer: a coin toss)


class TrialFailed(Exception):
    """A configuration that does not build or run (caught by `optimize`)."""


class Objective:
    """Optuna objective: suggest a configuration, evaluate it (staged), record it.

    `evaluate(config, n=None)` -> `autotuner.measure.Measurement` on the first n
    tuning inputs (all when None)."""

    def __init__(self, space: SearchSpace, evaluate: Callable, budget: float, slice_n: int | None = None,
                 prune_slack: float = 0.5, dominance_margin: float = 0.25, worker: str | None = None,
                 n_trials: int | None = None):
        self.space, self.evaluate, self.budget, self.n_trials = space, evaluate, budget, n_trials
        self.slice_n, self.prune_slack, self.dominance_margin = slice_n, prune_slack, dominance_margin
        self.worker = worker or worker_id()
    def __call__(self, trial: optuna.Trial):
        if self.n_trials and self._surplus(trial):
            trial.set_user_attr("surplus", True)  # ends PRUNED: neither counted nor queued again
            raise optuna.TrialPruned("the study has its evaluations, or queued re-runs for the rest")
        first = min((t.number for t in trial.study.get_trials(deepcopy=False)
                     if t.user_attrs.get("rerun_of", -1) == trial.user_attrs.get("rerun_of")), default=trial.number)
        if first < trial.number:  # two runs queued one re-run at the same moment: the first of them runs it
            trial.set_user_attr("duplicate_of", first)
            raise optuna.TrialPruned(f"a re-run queued twice: trial {first} runs it")
        config = self.space.suggest(trial)
        key = config_key(config)
        trial.set_user_attr("config", config)
        trial.set_user_attr("key", key)
        trial.set_user_attr("worker", self.worker)
        if trial.user_attrs.get("attempt", 1) > MAX_ATTEMPTS:  # e.g. a configuration that kills its worker
            msg = f"interrupted {MAX_ATTEMPTS} times (its worker process died or was stopped each time)"
            trial.set_user_attr("error", msg)
            raise TrialFailed(msg)
        trials = trial.study.get_trials(deepcopy=False)
        done = records(trial.study, trials)
        for r in done:
            if r.attrs.get("key") == key and not r.duplicate:
                trial.set_user_attr("duplicate_of", r.number)
                raise optuna.TrialPruned(f"configuration measured by trial {r.number}")
        for t in (t for t in trials if t.state == TrialState.FAIL):
            if t.user_attrs.get("key") == key and "error" in t.user_attrs and "duplicate_of" not in t.user_attrs:
                trial.set_user_attr("duplicate_of", t.number)
                trial.set_user_attr("error", t.user_attrs["error"])
                raise TrialFailed(t.user_attrs["error"])
        try:
            if self.slice_n:
                m = self.evaluate(config, n=self.slice_n)
                trial.set_user_attr(FIRST_STAGE, {"n": m.n, "qos_loss": float(m.qos_loss),
                                                  "speedup": float(m.speedup)})
                reason = self._prune_reason(m, done)
                if reason:
                    trial.set_user_attr("pruned", True)
                    trial.set_user_attr("prune_reason", reason)
                    self._record(trial, m)
                    return self._finish(trial, m.qos_loss, m.speedup, True)
            m = self.evaluate(config)
        except KeyboardInterrupt:
            raise  # the trial ends FAIL without an `error`: interrupted, not counted
        except Exception as err:
            msg = err.line() if isinstance(err, ApproxError) else f"{type(err).__name__}: {err}"
            trial.set_user_attr("error", msg.splitlines()[0][:500] if msg else type(err).__name__)
            raise TrialFailed(msg) from None
        self._record(trial, m)
        return self._finish(trial, m.qos_loss, m.speedup, False)

    def _surplus(self, trial: optuna.Trial) -> bool:
        """A new sampled trial beyond `n_trials` evaluations, counting running ones and
        queued re-runs of interrupted ones (several workers, or a worker that started
        while a dead one's trial was being queued again, would overshoot)."""
        if "fixed_params" in trial.study._storage.get_trial(trial._trial_id).system_attrs:
            return False  # a seed or a re-run: it is one of the evaluations
        c = counts(trial.study)
        return c["evaluated"] + c["running"] - 1 + c["waiting"] >= self.n_trials

    def _record(self, trial, m) -> None:
        trial.set_user_attr("n", m.n)
        trial.set_user_attr("qos", m.qos)
        if m.seconds == m.seconds:  # not NaN
            trial.set_user_attr("seconds", m.seconds)
        if m.money is not None:
            trial.set_user_attr("money", m.money)
        if getattr(m, "loss_low", None) is not None:  # whether it beats the exact program beyond noise
            trial.set_user_attr("loss_low", m.loss_low)
            trial.set_user_attr("loss_high", m.loss_high)
        if getattr(m, "modelled", False):  # its speedup is the cost model's until the front is timed
            trial.set_user_attr("modelled", True)
        if m.speedup_low is not None:
            trial.set_user_attr("speedup_low", m.speedup_low)
            trial.set_user_attr("speedup_high", m.speedup_high)
            trial.set_user_attr("exact_seconds", m.exact_seconds)

    def _finish(self, trial, loss: float, speedup: float, pruned: bool):
        over = loss - self.budget
        trial.set_constraint(CONSTRAINT, max(over, 1e-3) if pruned else over)
        return float(loss), float(min(speedup, 1e9))

    def _prune_reason(self, m, done: list[Record]) -> str | None:
        """Why a configuration measured on the slice cannot reach the front, or None."""
        margin = max(self.prune_slack * self.budget, 2 * m.loss_stderr, 0.01)
        if m.qos_loss > self.budget + margin:
            return f"slice QoS loss {m.qos_loss:.4f} > budget {self.budget} + margin {margin:.4f}"
        for r in front(done, self.budget):
            if r.qos_loss <= m.qos_loss - margin and r.speedup >= m.speedup * (1 + self.dominance_margin):
                return f"dominated on the slice by trial {r.number}"
        for r in done:
            peer = r.attrs.get(FIRST_STAGE)
            if (peer and peer["n"] == m.n >= PEER_MIN_INPUTS and not r.duplicate
                    and peer["qos_loss"] <= m.qos_loss + 1e-12
                    and peer["speedup"] >= m.speedup * (1 + self.dominance_margin)):
                return (f"trial {r.number} is as accurate on the same {m.n} inputs and "
                        f"{peer['speedup'] / m.speedup:.2f}x as fast")
        return None
