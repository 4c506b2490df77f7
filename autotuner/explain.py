"""Which knobs matter: how much of the speedup and of the QoS loss each knob
accounts for.

- `importances(study)`: each knob's main effect over the study's measured trials,
  one table for the speedup and one for the QoS loss: each knob's share of the
  variation in an additive model fitted on the trials (fANOVA's first-order
  effects without its random forest: ~1 ms a study and no scikit-learn to import,
  where Optuna's fANOVA took ~0.3 s and 1-2 s of import in every run); the
  parameters of a decision tree (`knob.t0`, `knob.d1`, ...) add up to their knob.
- `ablate(...)`: for one configuration, each approximated knob set back to exact
  in turn, the rest kept, measured paired against the exact program like any
  configuration. A knob's share of the speedup is ln(S) - ln(S without it) over
  ln(S) (shares of a product add up when knobs are independent); its share of the
  loss is L - (L without it). `ablate_chosen(result, levels)`: that for the point each
  level chooses, on the held-out inputs the result records (`approx-tune run --ablate`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from autotuner.measure import Measurer
from autotuner.settings import Cost

MIN_TRIALS = 4  # fewer measured trials than this: importances say nothing
MAX_GROUPS = 8  # a numeric parameter with more distinct values (a decision tree's thresholds): grouped by quartile


def knob_of(param: str, knobs: list[str]) -> str:
    """The knob an Optuna parameter belongs to (`k` or `k.t0`, `k.d1`, `k.n0.t`)."""
    for k in sorted(knobs, key=len, reverse=True):
        if param == k or param.startswith(k + "."):
            return k
    return param


def main_effects(columns: dict[str, list], y: np.ndarray) -> dict[str, float]:
    """{parameter: its share of the variation of y}, normalised to sum to 1 ({} where
    nothing varies): an additive model (one effect per value of each parameter, least
    squares with a little ridge) fitted on the trials, each parameter's share the
    variance of its effects over the trials. Fitted jointly, a parameter whose values
    happen to fall with another's good ones is not credited with that one's effect.
    A parameter a trial lacks groups as its own value; a numeric one with more than
    MAX_GROUPS distinct values is grouped by quartile."""
    if float(np.ptp(y)) <= 0:
        return {}
    blocks = {name: _groups(values) for name, values in columns.items()}
    width = sum(len(g) for g in blocks.values())
    x = np.zeros((len(y), width))
    at, spans = 0, {}
    for name, groups in blocks.items():
        for j, ix in enumerate(groups):
            x[ix, at + j] = 1.0
        spans[name] = (at, at + len(groups))
        at += len(groups)
    centred = y - y.mean()
    coef = np.linalg.solve(x.T @ x + 1e-3 * len(y) * np.eye(width), x.T @ centred)
    raw = {name: float(np.var(x[:, a:b] @ coef[a:b])) for name, (a, b) in spans.items()}
    norm = sum(raw.values())
    return {k: v / norm for k, v in raw.items()} if norm > 0 else {}


def _groups(values: list) -> list[np.ndarray]:
    present = [v for v in values if v is not None]
    if len(set(present)) > MAX_GROUPS and all(isinstance(v, (int, float)) for v in present):
        edges = np.quantile(np.asarray(present, dtype=float), [0.25, 0.5, 0.75])
        keys = [None if v is None else int(np.searchsorted(edges, float(v), side="right")) for v in values]
    else:
        keys = [None if v is None else repr(v) for v in values]
    index: dict = {}
    for i, k in enumerate(keys):
        index.setdefault(k, []).append(i)
    return [np.asarray(ix) for ix in index.values()]


def importances(study: optuna.Study, knobs: list[str]) -> dict[str, dict[str, float]]:
    """{"speedup": {knob: share}, "qos_loss": {knob: share}} (shares sum to 1; the
    speedup on a log scale), or {} when the study has too few distinct measured trials
    or one value only."""
    trials = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
              if "duplicate_of" not in t.user_attrs and not t.user_attrs.get("pruned") and t.params]
    if len(trials) < MIN_TRIALS:
        return {}
    names = sorted({p for t in trials for p in t.params})
    columns = {p: [t.params.get(p) for t in trials] for p in names}
    out = {}
    for i, name in ((1, "speedup"), (0, "qos_loss")):
        y = np.asarray([math.log(max(t.values[i], 1e-9)) if i == 1 else t.values[i] for t in trials], dtype=float)
        raw = main_effects(columns, y)
        if not raw:
            continue
        shares: dict[str, float] = {}
        for param, v in raw.items():
            k = knob_of(param, knobs)
            shares[k] = shares.get(k, 0.0) + v
        out[name] = dict(sorted(shares.items(), key=lambda kv: -kv[1]))
    return out


def exact_setting(setting: dict) -> dict:
    """A knob's setting with every choice at 0 (exact), keeping its thresholds."""
    if set(setting) == {"knob_val"}:
        return {"knob_val": 0}
    return {k: [0] * len(v) if k.endswith("decisions") else v for k, v in setting.items()}


def is_exact(setting: dict) -> bool:
    return exact_setting(setting) == setting


def ablate(program, config: dict, measurer: Measurer, label: str = "") -> dict[str, Any]:
    """The configuration measured whole and with each approximated knob set back to
    exact (paired timing, on the measurer's inputs)."""
    from autotuner.workers import build

    whole = measurer.measure(build(program, config), config)
    log_s = math.log(whole.speedup) if whole.speedup > 0 and whole.speedup != 1 else None
    rows = []
    for knob in sorted(k for k, v in config.items() if not is_exact(v)):
        cfg = {**config, knob: exact_setting(config[knob])}
        m = measurer.measure(build(program, cfg), cfg)
        rows.append({
            "knob": knob, "setting": config[knob],
            "speedup_without": m.speedup, "speedup_without_ci": [m.speedup_low, m.speedup_high],
            "qos_loss_without": m.qos_loss,
            "speedup_share": (log_s - math.log(max(m.speedup, 1e-9))) / log_s if log_s else None,
            "qos_loss_share": whole.qos_loss - m.qos_loss,
        })
    return {"label": label, "knobs": config, "n": whole.n, "speedup": whole.speedup,
            "speedup_ci": [whole.speedup_low, whole.speedup_high], "qos_loss": whole.qos_loss, "rows": rows}


def ablate_levels(result, program, measurer: Measurer, levels=(0.03, 0.06, 0.09), split: str = "tune",
                  progress=None) -> list[dict[str, Any]]:
    """`ablate` for the fastest front point of each mode within each QoS-loss level
    (a configuration chosen at several levels is measured once)."""
    out, seen = [], {}
    for mode in ("static", "dynamic"):
        for level in levels:
            p = result.best_within(level + 1e-9, mode, split=split)
            if p is None or all(is_exact(v) for v in p.knobs.values()):
                continue
            key = repr(sorted(p.knobs.items()))
            if key in seen:
                seen[key]["label"] += f", {mode} <= {round(100 * level)} %"
                continue
            if progress:
                progress(f"[ablation] {mode} <= {round(100 * level)} %")
            row = ablate(program, p.knobs, measurer, f"{mode}, QoS loss up to {round(100 * level)} %")
            seen[key] = row
            out.append(row)
    return out


def ablate_chosen(result, levels, n: int | None = None, progress=None) -> None:
    """`ablate_levels` on the first `n` held-out inputs (None: all), with the program,
    metric and inputs rebuilt from what the result records (as `approx-tune verify`
    rebuilds them), into `result.ablations` (the report shows them). Where they cannot
    be measured (e.g. the exact program scores 0 on so few inputs: no loss to share
    out), a note says why instead."""
    from approx_dialect.diagnostics import ApproxError
    from autotuner.verify import held_out_inputs, load_metric, load_program

    try:
        inputs, references = held_out_inputs(result)
        inputs, references = inputs[:n], None if references is None else references[:n]
        program = load_program(result)
        measurer = Measurer(program, inputs, references, load_metric(result),
                            Cost(clock=result.clock or "cpu", timing="paired", repeats=1), what="evaluation")
        rows = ablate_levels(result, program, measurer, levels, progress=progress)
    except ApproxError as err:
        result.notes.append(f"ablation not measured: {err.message}")
        return
    for r in rows:
        r["inputs"] = f"the first {len(inputs)} held-out inputs"
    result.ablations = rows
