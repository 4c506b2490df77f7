"""The search space, read from the program's knobs (`Program.knobs()`), so no
separate configuration file is needed.

Static mode collapses every knob to one value (`{"knob_val": k}`, a categorical
over the knob's values; a decision tree then decides k for every input). Dynamic
mode tunes decision trees: a ladder's thresholds (integers within
[thresholds_lowers, thresholds_uppers], sorted after sampling) and its decisions
(categoricals over decision_values); a multi-feature tree's inner-node thresholds
and leaf decisions. A user narrows any knob (`narrow`) or fixes it (`fix`).
Optuna parameter names: `knob` (static), `knob.t0`, `knob.d0` (ladder),
`knob.n3.t`, `knob.n3.d` (tree node 3).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from typing import Any

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import offered
from passes.knobs import KnobSpec

WHERE = "<search space>"


def config_key(config: dict) -> str:
    """One string per configuration (knob -> setting), the same whatever the key order:
    what tells a repeat from a new configuration."""
    return json.dumps(config, sort_keys=True)


@dataclass(frozen=True)
class Dim:
    """One knob as searched: its allowed values, threshold bounds, or a fixed setting."""

    spec: KnobSpec
    values: tuple[int, ...]
    dynamic: bool  # thresholds and decisions tuned (ladder / tree in dynamic mode)
    bounds: tuple[tuple[int, int], ...] = ()  # per threshold (ladder) / per inner node (tree)
    tree_features: tuple[int, ...] = ()  # tree structure (-1 = leaf)
    fixed: dict | None = None

    @property
    def name(self) -> str:
        return self.spec.name


def _log_scale(lo: int, hi: int) -> bool:
    return lo >= 1 and hi >= 100 * lo


@dataclass
class SearchSpace:
    dims: list[Dim]
    mode: str
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_program(cls, program, mode: str = "static") -> "SearchSpace":
        trees = offered(program, "tree_features")
        return cls.from_specs(program.knobs(), mode, trees() if trees else {})

    @classmethod
    def from_specs(cls, specs: list[KnobSpec], mode: str = "static",
                   tree_features: dict[str, list[int]] | None = None) -> "SearchSpace":
        if mode not in ("static", "dynamic"):
            raise ApproxError(f"mode must be 'static' or 'dynamic', got {mode!r}", where=WHERE)
        dims, notes = [], []
        for spec in specs:
            if not spec.values:
                raise ApproxError(f"knob '{spec.name}' has no values to search", where=WHERE)
            if mode == "static" or spec.kind == "static":
                dims.append(Dim(spec, tuple(spec.values), False))
            elif spec.kind == "ladder":
                bounds = tuple(spec.bounds(i) for i in range(spec.num_thresholds))
                dims.append(Dim(spec, tuple(spec.values), True, bounds))
            else:
                feats = tuple((tree_features or {}).get(spec.name, ()))
                if len(feats) != spec.num_thresholds:
                    notes.append(f"knob '{spec.name}': tree structure unknown, searched as one value")
                    dims.append(Dim(spec, tuple(spec.values), False))
                    continue
                bounds = tuple(spec.bounds(f) if f >= 0 else (0, 0) for f in feats)
                dims.append(Dim(spec, tuple(spec.values), True, bounds, feats))
        return cls(dims, mode, notes)

    # ------------------------------------------------------------ narrowing

    def _dim(self, name: str) -> tuple[int, Dim]:
        for i, d in enumerate(self.dims):
            if d.name == name:
                return i, d
        raise ApproxError(f"unknown knob '{name}' (knobs: {', '.join(d.name for d in self.dims) or 'none'})",
                          where=WHERE)

    def narrow(self, ranges: dict[str, Any]) -> "SearchSpace":
        """Restrict knobs: `{name: [values]}` or `{name: {"values": [...],
        "thresholds": [lo, hi]}}`. A range left empty is an error."""
        for name, rng in ranges.items():
            i, d = self._dim(name)
            if not isinstance(rng, dict):
                rng = {"values": rng}
            values = d.values
            if rng.get("values") is not None:
                want = [int(v) for v in rng["values"]]
                bad = [v for v in want if v not in d.spec.values]
                if bad or not want:
                    raise ApproxError(f"knob '{name}': cannot narrow to {want}: "
                                      f"{'value ' + str(bad[0]) + ' is not' if bad else 'no value is'} "
                                      f"among its values {list(d.spec.values)}", where=WHERE)
                values = tuple(v for v in d.values if v in want)
                if not values:
                    raise ApproxError(f"knob '{name}': narrowing to {want} leaves no value "
                                      f"(already narrowed to {list(d.values)})", where=WHERE)
            bounds = d.bounds
            if rng.get("thresholds") is not None:
                lo, hi = (int(x) for x in rng["thresholds"])
                new = tuple((max(a, lo), min(b, hi)) if f >= 0 else (a, b) for (a, b), f in
                            zip(d.bounds, d.tree_features or [0] * len(d.bounds)))
                if not d.dynamic or any(a > b for a, b in new):
                    why = "it has no thresholds in this mode" if not d.dynamic else \
                        f"the range is empty within its bounds {list(d.bounds)}"
                    raise ApproxError(f"knob '{name}': cannot narrow thresholds to [{lo}, {hi}]: {why}",
                                      where=WHERE)
                bounds = new
            self.dims[i] = replace(d, values=values, bounds=bounds)
        return self

    def fix(self, settings: dict[str, Any]) -> "SearchSpace":
        """Fix knobs: `{name: k}` (knob value) or `{name: setting}` (as in a configuration)."""
        for name, setting in settings.items():
            i, d = self._dim(name)
            if not isinstance(setting, dict):
                setting = {"knob_val": setting}
            vals = [setting["knob_val"]] if "knob_val" in setting else \
                list(setting.get("decisions", setting.get("tree_decisions", [])))
            if not vals or any(not isinstance(v, int) or v not in d.spec.values for v in vals):
                raise ApproxError(f"knob '{name}': cannot fix to {json.dumps(setting)}: values must be "
                                  f"among {list(d.spec.values)}", where=WHERE)
            self.dims[i] = replace(d, fixed=dict(setting))
        return self

    # ------------------------------------------------------------ sampling

    def free(self) -> list[Dim]:
        return [d for d in self.dims if d.fixed is None and (d.dynamic or len(d.values) > 1)]

    def suggest(self, trial) -> dict[str, dict]:
        """Ask an Optuna trial for every free parameter; the configuration."""
        for d in self.free():
            if not d.dynamic:
                trial.suggest_categorical(d.name, list(d.values))
                continue
            for key, lo, hi in self._threshold_params(d):
                trial.suggest_int(key, lo, hi, log=_log_scale(lo, hi))
            for key in self._decision_params(d):
                trial.suggest_categorical(key, list(d.values))
        return self.config_of(trial.params)

    def _threshold_params(self, d: Dim):
        if d.tree_features:
            return [(f"{d.name}.n{i}.t", lo, hi) for i, ((lo, hi), f) in
                    enumerate(zip(d.bounds, d.tree_features)) if f >= 0]
        return [(f"{d.name}.t{i}", lo, hi) for i, (lo, hi) in enumerate(d.bounds)]

    def _decision_params(self, d: Dim) -> list[str]:
        if d.tree_features:
            return [f"{d.name}.n{i}.d" for i, f in enumerate(d.tree_features) if f < 0]
        return [f"{d.name}.d{i}" for i in range(len(d.bounds) + 1)]

    def config_of(self, params: dict[str, Any]) -> dict[str, dict]:
        """The configuration (knob -> setting) of a trial's parameters."""
        config: dict[str, dict] = {}
        for d in self.dims:
            if d.fixed is not None:
                config[d.name] = copy.deepcopy(d.fixed)
            elif not d.dynamic:
                config[d.name] = {"knob_val": int(params.get(d.name, d.values[0]))}
            elif d.tree_features:
                ts = [int(params.get(f"{d.name}.n{i}.t", 0)) if f >= 0 else 0
                      for i, f in enumerate(d.tree_features)]
                ds = [int(params.get(f"{d.name}.n{i}.d", d.values[0])) if f < 0 else 0
                      for i, f in enumerate(d.tree_features)]
                config[d.name] = {"tree_thresholds": ts, "tree_decisions": ds}
            else:
                ts = sorted(int(params[k]) for k, _, _ in self._threshold_params(d))
                for i, (lo, hi) in enumerate(d.bounds):  # per-threshold bounds: keep each in its own
                    ts[i] = max(min(max(ts[i], lo), hi), ts[i - 1] if i else lo)
                ds = [int(params.get(k, d.values[0])) for k in self._decision_params(d)]
                config[d.name] = {"thresholds": ts, "decisions": ds}
        return config

    def params_of(self, config: dict[str, dict]) -> dict[str, Any]:
        """Optuna parameters giving `config` (for enqueue_trial)."""
        params: dict[str, Any] = {}
        for d in self.free():
            s = config[d.name]
            if not d.dynamic:
                params[d.name] = s["knob_val"]
            elif d.tree_features:
                for i, f in enumerate(d.tree_features):
                    key = f"{d.name}.n{i}.t" if f >= 0 else f"{d.name}.n{i}.d"
                    params[key] = s["tree_thresholds"][i] if f >= 0 else s["tree_decisions"][i]
            else:
                params.update({k: t for (k, _, _), t in zip(self._threshold_params(d), s["thresholds"])})
                params.update(dict(zip(self._decision_params(d), s["decisions"])))
        return params

    def _setting(self, d: Dim, value: int) -> dict:
        if not d.dynamic:
            return {"knob_val": value}
        mids = [min(max(t, lo), hi) for t, (lo, hi) in
                zip(_current_thresholds(d), d.bounds)]
        if d.tree_features:
            return {"tree_thresholds": [t if f >= 0 else 0 for t, f in zip(mids, d.tree_features)],
                    "tree_decisions": [value if f < 0 else 0 for f in d.tree_features]}
        return {"thresholds": sorted(mids), "decisions": [value] * (len(d.bounds) + 1)}

    def seeds(self) -> list[dict[str, dict]]:
        """Configurations to try first: the exact one (each knob at its least
        approximate value, 0 where allowed), then each knob alone at its middle value
        (values run from least to most approximate): each knob's effect measured
        alone, where an extreme value would mostly exceed the QoS budget and teach
        little (`bench/tuning_bench.py`: better fronts early for NSGA-II and TPE; the
        predictive sampler takes the exact one and measures each knob alone itself)."""
        base = {d.name: (copy.deepcopy(d.fixed) if d.fixed is not None else self._setting(d, min(d.values)))
                for d in self.dims}
        out = [base]
        for d in self.free():
            if max(d.values) != min(d.values):
                vals = sorted(d.values)
                out.append({**base, d.name: self._setting(d, vals[len(vals) // 2])})
        return out

    def lift(self, config: dict[str, dict]) -> dict[str, dict] | None:
        """The configuration of this space that behaves as `config` (a static one in
        dynamic mode: every decision its value; a ladder with equal decisions in static
        mode: that value), or None when `config` is not one of this space (other knobs,
        values outside it, a fixed knob set otherwise)."""
        if set(config) != {d.name for d in self.dims}:
            return None
        out = {}
        for d in self.dims:
            s = dict(config[d.name])
            if "knob_val" not in s:
                decisions = s.get("decisions", s.get("tree_decisions", []))
                if not d.dynamic and len(set(decisions)) == 1:
                    s = {"knob_val": decisions[0]}
            elif d.dynamic:
                s = self._setting(d, s["knob_val"])
            if d.fixed is not None and s != d.fixed:
                return None
            values = [s["knob_val"]] if "knob_val" in s else s.get("decisions", s.get("tree_decisions"))
            if d.fixed is None and (not values or any(v not in d.values for v in values)):
                return None
            if d.dynamic and d.fixed is None and not d.tree_features and (
                    len(s.get("thresholds", [])) != len(d.bounds) or
                    any(not lo <= t <= hi for t, (lo, hi) in zip(s["thresholds"], d.bounds))):
                return None
            out[d.name] = s
        return out

    def size(self) -> int | None:
        """Number of distinct configurations, or None when thresholds are searched."""
        n = 1
        for d in self.free():
            if d.dynamic:
                return None
            n *= len(d.values)
        return n

    def describe(self) -> dict[str, Any]:
        """Knob name -> what is searched (for the result and resume checks)."""
        out = {}
        for d in self.dims:
            item: dict[str, Any] = {"transform": d.spec.transform_type, "kind": d.spec.kind}
            if d.fixed is not None:
                item["fixed"] = d.fixed
            else:
                item["values"] = list(d.values)
                if d.dynamic:
                    item["thresholds"] = [list(b) for b in d.bounds]
            out[d.name] = item
        return {"mode": self.mode, "knobs": out}


def _current_thresholds(d: Dim) -> list[int]:
    cur = d.spec.current
    ts = list(cur.get("tree_thresholds" if d.tree_features else "thresholds", []))
    if len(ts) != len(d.bounds):
        ts = [(lo + hi) // 2 for lo, hi in d.bounds]
    return ts
