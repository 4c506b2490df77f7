"""The dynamic search of a system, started from its static one: the dynamic study's
first configurations (`dynamic_seeds`, queued by `seed_dynamic`) and the dynamic front
that takes in the static front (`merge_static_front`: a static configuration is a
dynamic one with equal decisions, so dynamic >= static by construction)."""

from __future__ import annotations

import dataclasses


def dynamic_seeds(space, static_configs: list[dict], states: list[int]) -> list[dict]:
    """The dynamic study's first configurations: each static front configuration with
    a ladder's variant k (for k = 0 variant 1) applied only where the state is high (a
    RAG system: retrieval is surer): [0, k, k] and [0, 0, k] with thresholds at the
    tertiles of the tuning questions' states, [0, 0, k] switching at the median; then
    only where it is low, [k, 0, 0] switching at the median (which side pays is the
    program's: the agent's short tool outputs may need no summary); where the states
    fall into groups, [k, 0, 0] and [0, 0, k] switching between them (`widest_gaps`).
    Least approximate configurations first (the tight QoS levels need them; `limit` in
    `seed_dynamic` may cut the list). (The static front itself joins the dynamic front in
    `merge_static_front`, measured once.)"""
    ladders = [d for d in space.dims if d.dynamic and d.fixed is None]
    out = []
    qs = sorted(states) or [0]

    def quantile(q: float) -> int:
        return qs[min(len(qs) - 1, int(q * len(qs)))]

    def ladder(d, ts, decisions) -> dict:
        return {"thresholds": sorted(min(max(t, lo), hi) for t, (lo, hi) in zip(ts, d.bounds)),
                "decisions": decisions}

    for cfg in static_configs:
        # every ladder as its static value for all questions, then one ladder at a time switched
        uniform = {**cfg, **{d.name: ladder(d, [quantile((i + 1) / (len(d.bounds) + 1)) for i in range(len(d.bounds))],
                                            [cfg[d.name]["knob_val"]] * (len(d.bounds) + 1)) for d in ladders}}
        for d in ladders:
            n = len(d.bounds)
            k = cfg[d.name]["knob_val"] or 1
            tertiles = [quantile((i + 1) / (n + 1)) for i in range(n)]
            median = [quantile((i + 1) / (2 * n)) for i in range(n)]  # the last one at the median
            above = [quantile((n + i) / (2 * n)) for i in range(n)]  # the first one at the median
            cuts = [(tertiles, [0] + [k] * n), (tertiles, [0] * n + [k]), (median, [0] * n + [k]),
                    (above, [k] + [0] * n)]
            gaps = widest_gaps(qs, n)
            if gaps:  # the states fall into groups (the agent: one-sentence kernel results, retrieved paragraphs)
                cuts += [(gaps, [k] + [0] * n), (gaps, [0] * n + [k])]
            for ts, decisions in cuts:
                out.append({**uniform, d.name: ladder(d, ts, decisions)})
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


def merge_static_front(result, program) -> None:
    """A static configuration is a dynamic one whose decisions are all equal, so the
    dynamic front is the Pareto front (on the tuning split) of the dynamic trials and
    the static front's configurations, these with the figures measured in the static
    study (one program, measured once: timing noise does not rank it twice)."""
    from autotuner import pareto_indices

    ladders = [s for s in program.knobs() if s.kind == "ladder"]
    static = [p for p in result.front if p.mode == "static"]
    pool = [p for p in result.front if p.mode == "dynamic"]
    for p in static:
        knobs = dict(p.knobs)
        for spec in ladders:
            k = knobs[spec.name]["knob_val"]
            knobs[spec.name] = {"thresholds": list(spec.current["thresholds"]),
                                "decisions": [k] * (spec.num_thresholds + 1)}
        pool.append(dataclasses.replace(p, mode="dynamic", knobs=knobs, trial=None,
                                        ir=program.ir(after=True, config=knobs)))
    keep = [pool[i] for i in pareto_indices([(p.qos_loss_tune, p.speedup_tune) for p in pool])]
    result.front = static + keep
    on_front = {p.trial for p in keep}
    for t in result.all_trials:
        if t.mode == "dynamic":
            t.dominated = t.trial not in on_front
    n = sum(p.trial is None for p in keep)
    result.notes.append(f"dynamic front: the dynamic trials and the static front's configurations (decisions all "
                        f"equal, figures from the static study); {n} of {len(keep)} come from the static front")


def seed_dynamic(program, storage: str, base: str, budget: float, narrow: dict, fix: dict, states: list[int],
                 limit: int) -> int:
    """Queue the dynamic study's first trials (at most `limit`); returns how many."""
    from autotuner import SearchSpace, enqueue, front_of

    space = SearchSpace.from_program(program, "dynamic").narrow(dict(narrow)).fix(dict(fix))
    static = front_of(storage, f"{base}/static", budget)  # least approximate first
    return enqueue(storage, f"{base}/dynamic", space, dynamic_seeds(space, static, states), limit)
