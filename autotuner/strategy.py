"""The search strategy for a program of component calls (an LLM, a retrieval, a
tool), which `tune()` runs on any such program:

1. **Where the time goes.** The exact program's component calls are profiled on a
   few tuning inputs (`Program.profile`: seconds per label), which orders the screen.
   A program that knows which of its knobs cannot pay says so (`negligible_knobs`: e.g.
   a retrieval's scoring stages under `NEGLIGIBLE` of the time, `negligible_of`), and
   those are fixed at exact. A knob is not fixed for its own component's share alone:
   it may change what a costly component reads (a retrieval's top-k, the LLM's
   prompt). Kept in `strategy.json` beside the study, so a resumed study keeps the
   space it started with.
2. **A screen.** The static study starts with each knob alone: the program's own
   knobs first (they decide which components run), then the knobs of the components
   that take the time (a knob is `<label>.<setting>`). Where the study's trials afford
   the whole screen, the program's own knobs come at every value first (each value a
   route: a search that runs out of time early has tried them all); where they do not,
   every knob at its gentlest step first (a precision knob at each value the machine's
   probe kept), then its other values. With stages, a
   configuration stops after the first slice when one measured on the same slice
   answers it as well, faster.
3. **Dynamic from static.** The dynamic study starts from the static front: each front
   configuration as it is, and with a ladder's cheaper value applied only where the
   decision's state is high, or low, or across the widest gaps between groups of
   states (`dynamic_seeds`; states from the program's `states(inputs)`, else thresholds
   spread over the ladder's range).
   Then the **sweep** (`sweep_configs`, run by `autotuner._sweep`): around each front
   configuration, every ladder cut at the midpoints between groups of the tuning inputs'
   states, with every mix of the values that configuration was already measured at; a
   program that keeps its components' outputs scores each of these from kept outputs
   alone (no model runs), so hundreds or thousands of dynamic configurations cost seconds.
4. **One front.** A static configuration is a dynamic one whose decisions are all
   equal: the dynamic front is the Pareto front of the dynamic trials and the static
   front (`merge_static_front`), so dynamic >= static by construction.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from pathlib import Path

from approx_opt.program import offered
from autotuner.pareto import pareto_indices
from autotuner.space import config_key

NEGLIGIBLE = 0.02  # share of the exact program's time under which a component's knobs are fixed
PROFILE_INPUTS = 8  # tuning inputs the profile runs on
STRATEGY_FILE = "strategy.json"
PRECISION = "precision_reduce"  # a precision knob's transform: each of its values a gentlest step of the screen


def applies(program) -> bool:
    """Whether `program` is one of component calls, whose search this strategy is for."""
    return offered(program, "profile") is not None and any(
        "." in k.name for k in program.knobs())


def time_shares(program, inputs, out: Path) -> dict:
    """{"shares": {label: share of the exact time}, "negligible": {knob: share}}, measured
    once on the first PROFILE_INPUTS inputs and kept in `out`/STRATEGY_FILE."""
    path = out / STRATEGY_FILE
    if path.is_file():
        return json.loads(path.read_text())
    sample = list(inputs[:PROFILE_INPUTS])
    shares = {label: v["share"] for label, v in program.profile(sample).items()}
    own = offered(program, "negligible_knobs")
    negligible = dict(own(sample)) if own else {}
    plan = {"shares": shares, "negligible": negligible}
    path.write_text(json.dumps(plan, indent=1))
    return plan


def negligible_of(program, shares: dict[str, float], share: float = NEGLIGIBLE) -> dict[str, float]:
    """The knobs (`<label>.<setting>`) of components whose calls took under `share` of
    the exact program's time (`shares`: label -> share, from `profile`), with that share;
    a component not called on the profiled inputs is not among them (nothing measured)."""
    return {k.name: shares[k.name.split(".")[0]] for k in program.knobs()
            if "." in k.name and shares.get(k.name.split(".")[0], share) < share}


def screen(space, shares: dict[str, float], slots: int | None = None) -> list[dict]:
    """Each free static knob alone; the program's own knobs (no component label: they
    decide which components run, e.g. a cheaper model for some inputs) first, then the
    knobs of the components with the largest time share. Where the whole screen fits
    in the `slots` the study gives it (None: it does), the program's own knobs come at
    every value first: each value is another route, and one route can remove a whole
    component's time, so a search that runs out of time after a dozen configurations
    (an LLM pass each) has tried every route. Where it does not fit (a small trial
    budget), every knob at its gentlest step first, then at its other values: each knob
    is looked at once. Every value of a precision knob is a gentlest step: a program offers
    those its machine's probe found faster than the exact value and answering as it does
    (`machine.paying_values`), and which of them is fastest is the machine's (bfloat16 or
    int8, by CPU). A cheap configuration measured early stops the costly ones that answer
    no better after the first stage (`autotuner._objective`)."""
    base = space.seeds()[0]
    ranked = sorted((d for d in space.free() if not d.dynamic),
                    key=lambda d: ("." in d.name, -shares.get(d.name.split(".")[0], 0.0)))
    steps = {d.name: sorted(v for v in d.values if v != base[d.name].get("knob_val")) for d in ranked}
    fits = slots is None or sum(map(len, steps.values())) <= slots
    components = any("." in d.name for d in ranked)  # else no knob is a component's: none is a route
    own = [d for d in ranked if fits and components and "." not in d.name]
    rest = [d for d in ranked if d not in own]
    gentle = {d.name: len(steps[d.name]) if d.spec.transform_type == PRECISION else 1 for d in rest}
    out = [{**base, d.name: {"knob_val": v}} for d in own for v in steps[d.name]]
    out += [{**base, d.name: {"knob_val": v}} for d in rest for v in steps[d.name][:gentle[d.name]]]
    out += [{**base, d.name: {"knob_val": v}} for d in rest for v in steps[d.name][gentle[d.name]:]]
    return out


def widest_gaps(states: list[int], n: int) -> list[int]:
    """n thresholds between groups of `states` (sorted): the midpoints of the n widest
    gaps between consecutive distinct states, where each is at least twice the median
    gap; [] where the states have no such groups (evenly spread, or too few)."""
    distinct = sorted(set(states))
    widths = [(b - a, a, b) for a, b in zip(distinct, distinct[1:])]
    if len(widths) < n:
        return []
    median = sorted(w for w, _, _ in widths)[len(widths) // 2]
    widest = sorted(widths, reverse=True)[:n]
    if widest[-1][0] < 2 * median:
        return []
    return sorted((a + b + 1) // 2 for _, a, b in widest)


def dynamic_seeds(space, static_configs: list[dict], states: list[int] | None) -> list[dict]:
    """The dynamic study's first configurations: each static front configuration (least
    approximate first; itself measured in the static study) with one ladder at a time at a
    cheaper value k (for a static 0: value 1) applied only where the state is high
    ([0, k, k], [0, 0, k] at the tertiles, [0, 0, k] at the median), only where it is
    low ([k, 0, 0] at the median), and, where the states fall into groups, on either
    side of the widest gaps. `states`: the tuning inputs' decision states (None:
    thresholds spread over each ladder's range)."""
    ladders = ladders_of(space)
    out = []

    def points(d) -> list[int]:
        if states:
            return sorted(states)
        lo, hi = d.bounds[0][0], d.bounds[-1][1]
        return [lo + (hi - lo) * i // 8 for i in range(9)]

    def ladder(d, ts, decisions) -> dict:
        return {"thresholds": sorted(min(max(t, lo), hi) for t, (lo, hi) in zip(ts, d.bounds)),
                "decisions": decisions}

    for cfg in static_configs:
        def value(d):
            s = cfg[d.name]
            return s["knob_val"] if "knob_val" in s else s["decisions"][0]

        def quantile(d, q: float) -> int:
            qs = points(d)
            return qs[min(len(qs) - 1, int(q * len(qs)))]

        # every ladder as its static value (measured in the static study), then one at a time switched
        uniform = {**cfg, **{d.name: ladder(d, [quantile(d, (i + 1) / (len(d.bounds) + 1))
                                                for i in range(len(d.bounds))],
                                            [value(d)] * (len(d.bounds) + 1)) for d in ladders}}
        for d in ladders:
            n, k = len(d.bounds), value(d) or 1
            tertiles = [quantile(d, (i + 1) / (n + 1)) for i in range(n)]
            median = [quantile(d, (i + 1) / (2 * n)) for i in range(n)]  # the last one at the median
            above = [quantile(d, (n + i) / (2 * n)) for i in range(n)]  # the first one at the median
            cuts = [(tertiles, [0] + [k] * n), (tertiles, [0] * n + [k]), (median, [0] * n + [k]),
                    (above, [k] + [0] * n)]
            gaps = widest_gaps(points(d), n)
            if gaps:
                cuts += [(gaps, [k] + [0] * n), (gaps, [0] * n + [k])]
            out += [{**uniform, d.name: ladder(d, ts, decisions)} for ts, decisions in cuts]
    return out


SWEEP_CUTS = 8  # threshold positions per ladder the sweep tries


def sweep_cuts(d, states: list[int] | None, n: int = SWEEP_CUTS) -> list[int]:
    """Up to n threshold positions for ladder `d`: midpoints between consecutive distinct
    states of the tuning inputs (each cell then holds inputs), evenly spread over them;
    without states, evenly over the ladder's range."""
    lo, hi = d.bounds[0][0], d.bounds[-1][1]
    if states:
        distinct = sorted(set(states))
        mids = [(a + b + 1) // 2 for a, b in zip(distinct, distinct[1:])]
    else:
        mids = [lo + (hi - lo) * i // (n + 1) for i in range(1, n + 1)]
    mids = sorted({min(max(t, lo), hi) for t in mids})
    if len(mids) <= n:
        return mids
    return sorted({mids[round(i * (len(mids) - 1) / (n - 1))] for i in range(n)})


def sweep_configs(base: dict, d, values: list[int], states: list[int] | None, seed: int = 0) -> list[dict]:
    """`base` with ladder `d` cut at every choice of its thresholds among `sweep_cuts`
    and every mix of `values` as its decisions (all equal left out: a static
    configuration), in a seeded random order."""
    cuts = sweep_cuts(d, states)
    n = len(d.bounds)
    out = [{**base, d.name: {"thresholds": list(ts), "decisions": list(ds)}}
           for ts in itertools.combinations(cuts, n)
           for ds in itertools.product(sorted(values), repeat=n + 1) if len(set(ds)) > 1]
    random.Random(seed).shuffle(out)
    return out


def ladders_of(space) -> list:
    """The ladders the dynamic seeds and the sweep cut: dynamic, free, one state each
    (not multi-feature trees)."""
    return [d for d in space.dims if d.dynamic and d.fixed is None and not d.tree_features]


def states_of(program, inputs) -> list[int] | None:
    """The tuning inputs' decision states, where the program says them (`states`)."""
    states = offered(program, "states")
    return list(states(list(inputs))) if states else None


def merge_static_front(result, program, ir=None) -> None:
    """A static configuration is a dynamic one whose decisions are all equal, so the
    dynamic front is the Pareto front (on the tuning split) of the dynamic trials and
    the static front's configurations, these with the figures measured in the static
    study (one program, measured once: timing noise does not rank it twice). `ir`:
    config -> its transformed IR."""
    ladders = [s for s in program.knobs() if s.kind == "ladder"]
    static = [p for p in result.front if p.mode == "static"]
    pool = [p for p in result.front if p.mode == "dynamic"]
    have = {config_key(p.knobs) for p in pool}  # a static trial the dynamic study copied is there already
    for p in static:
        knobs = dict(p.knobs)
        for spec in ladders:
            k = knobs[spec.name]["knob_val"]
            knobs[spec.name] = {"thresholds": list(spec.current["thresholds"]),
                                "decisions": [k] * (spec.num_thresholds + 1)}
        if config_key(knobs) in have:
            continue
        pool.append(dataclasses.replace(p, mode="dynamic", knobs=knobs, trial=None,
                                        ir=ir(knobs) if ir is not None else None))
    keep = [pool[i] for i in pareto_indices([(p.qos_loss_tune, p.speedup_tune) for p in pool])]
    result.front = static + keep
    on_front = {p.trial for p in keep}
    for t in result.all_trials:
        if t.mode == "dynamic":
            t.dominated = t.trial not in on_front
    n = sum(p.trial is None for p in keep)
    result.notes.append(f"dynamic front: the dynamic trials and the static front's configurations (decisions all "
                        f"equal, figures from the static study); {n} of {len(keep)} come from the static front")
