"""`approx-tune run`'s work, from its parsed options to the saved `TuningResult`:
the command's parser, what it prints and `tune_command(argv)` (the same work for a
program that runs that command itself) are `autotuner.cli`'s."""

from __future__ import annotations

import sys
from pathlib import Path

from approx_dialect.diagnostics import ApproxError

WHERE = "<approx-tune>"


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise ApproxError(f"{what} takes KNOB=VALUES, got {item!r}", where=WHERE)
        out[name] = value
    return out


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(v) for v in text.replace(":", ",").split(",") if v.strip()]
    except ValueError:
        raise ApproxError(f"{what}: expected integers, got {text!r}", where=WHERE) from None


def _load_fn(spec: str, what: str):
    from autotuner.loading import load_object

    fn = load_object(spec, what)
    if not callable(fn):
        raise ApproxError(f"{what} {spec} is not callable", where=WHERE)
    return fn


def metric_of(name: str):
    """A builtin metric's name, or the metric `pkg.module:attr` names."""
    if ":" in name:
        from autotuner.loading import load_object

        return load_object(name, "QoS metric")
    return name


def _safe(name: str) -> str:
    from autotuner.study import _safe_name

    return _safe_name(name)


def run_parsed(a):
    """`approx-tune run` up to what it prints, from its parsed options `a`: (the result,
    its folder)."""
    from autotuner.explain import ablate_chosen
    from autotuner.loading import load_inputs, load_split
    from autotuner.settings import Cost, HeldOut, Search, Storage
    from autotuner.study import tune

    if a.n_tune is not None and a.n_tune < 1:
        raise ApproxError(f"--n-tune must be a positive number of inputs, got {a.n_tune}", where=WHERE)
    narrow = {k: {"values": _ints(v, f"--narrow {k}")} for k, v in _pairs(a.narrow, "--narrow").items()}
    for k, v in _pairs(a.narrow_thresholds, "--narrow-thresholds").items():
        bounds = _ints(v, f"--narrow-thresholds {k}")
        if len(bounds) != 2:
            raise ApproxError(f"--narrow-thresholds {k}: expected LO:HI, got {v!r}", where=WHERE)
        narrow.setdefault(k, {})["thresholds"] = bounds
    fix = {k: _ints(v, f"--fix {k}")[0] for k, v in _pairs(a.fix, "--fix").items()}
    search = Search(n_trials=a.trials, mode=a.mode, sampler=a.sampler, seed=a.seed, patience=a.patience,
                    timeout=a.timeout, stage_fraction=a.stage_fraction, narrow=narrow, fix=fix, jobs=a.jobs,
                    sweep=a.sweep, tuning_qos=a.tuning_qos, n_kept=a.n_tune if a.tuning_qos == "kept" else None)
    levels, ablate = _fractions(a.eval_levels, "--eval-levels"), _fractions(a.ablate, "--ablate")
    if a.kept_from and a.tuning_qos != "kept":
        raise ApproxError("--kept-from gives the candidates of --tuning-qos kept", where=WHERE)
    sizes, eval_in, eval_ref = None, None, None
    if a.n_tune is not None:
        sizes = {"n_tune": a.n_tune, "seed": a.seed, "n_eval": a.n_eval}
        (inputs, refs), (eval_in, eval_ref) = load_split(a.inputs, sizes)
        recorded = {"inputs": a.inputs, "kwargs": sizes, "split": True}
    else:
        bad = next((f for f, v in (("--n-eval", a.n_eval), ("--kept-from", a.kept_from)) if v is not None), None)
        if bad:
            raise ApproxError(f"{bad} needs --n-tune (the sizes of a split generator)", where=WHERE)
        inputs, refs = load_inputs(a.inputs)
        recorded = {"inputs": a.inputs, "kwargs": {}, "eval_ratio": a.eval_ratio, "seed": a.seed}
    if a.kept_from:
        inputs, refs = load_inputs(a.kept_from, sizes)
    out = Path(a.out) if a.out else None
    progress = sys.stderr.isatty() if a.progress is None else a.progress
    cost = Cost(objective=a.objective, money=_load_fn(a.money, "money cost function") if a.money else None,
                clock=a.clock, repeats=a.repeats)
    storage = Storage(url=a.storage, study_name=a.study_name, out_dir=out, warm_start=a.warm_start)
    held_out = HeldOut(ratio=a.eval_ratio, inputs=eval_in, references=eval_ref, levels=levels)
    result = tune(a.program, inputs, refs, metric=metric_of(a.metric), budget=a.budget, search=search, cost=cost,
                  held_out=held_out, storage=storage, progress=progress)
    out = out or Path("approx-tune") / _safe(result.program)
    result.metric_spec = a.metric
    result.held_out = recorded
    if ablate:
        ablate_chosen(result, ablate, a.n_tune or result.n_tune,
                      progress=(lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else None)
    result.save(out / "result.json")
    return result, out


def _fractions(text: str | None, what: str) -> list[float] | None:
    if text is None:
        return None
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ApproxError(f"{what}: expected QoS-loss fractions (0.03 = 3 % loss), got {text!r}", where=WHERE) from None
    if not values or not all(0 <= v <= 1 for v in values):
        raise ApproxError(f"{what}: expected QoS-loss fractions in [0, 1] (0.03 = 3 % loss), got {text!r}",
                          where=WHERE)
    return values
