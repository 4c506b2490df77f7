"""The figures of a study's front: its points timed paired on the tuning split
where their speedups were modelled (`time_front`), and re-measured on the held-out
split (`eval_front`; the chosen points of all modes in one pass, `replay_together`);
each kept in the study as it is measured, so a resumed run measures only the points
left, and makes the held-out measurer (`HeldOutMeasurer`) only where a held-out
figure is missing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import offered
from autotuner._records import REUSED, TIMED, front, records
from autotuner.explain import is_exact
from autotuner.measure import Measurer
from autotuner.results import FrontPoint
from autotuner.settings import Cost
from autotuner.space import config_key

MAX_TIMING_ROUNDS = 5  # front timing: rounds of timing the untimed points of the front
EXACT = "eval:exact"  # study attr: the held-out exact program's figures (`exact_figures`)


class HeldOutMeasurer:
    """The held-out split's measurer, made on first use: a Measurer, or with `jobs` > 1 a
    ShardedEvaluation of `source` (the program or its spec), timing paired. Making it
    runs the exact program on held-out inputs (live, outside any untimed context: an
    endpoint's requests are sent), which a resumed study whose held-out figures are all
    kept needs not."""

    def __init__(self, program, source, inputs, references, metric, cost: Cost, jobs: int = 1,
                 progress: Callable[[str], None] | None = None):
        self._program, self._source, self._inputs, self._references = program, source, inputs, references
        self._metric, self._cost, self._jobs, self._progress = metric, replace(cost, timing="paired"), jobs, progress
        self.with_references, self.made = references is not None, None

    def __call__(self):
        """The measurer, made now where it was not."""
        if self.made is None and self._jobs > 1 and len(self._inputs) > 1:
            from autotuner.sharded import ShardedEvaluation

            self.made = ShardedEvaluation(self._source, self._inputs, self._references, self._metric,
                                          jobs=self._jobs, cost=self._cost, progress=self._progress)
        elif self.made is None:
            self.made = Measurer(self._program, self._inputs, self._references, self._metric, self._cost,
                                 what="evaluation")
        return self.made

    def close(self) -> None:
        """End the workers of a ShardedEvaluation, where one was made."""
        from autotuner.sharded import ShardedEvaluation

        if isinstance(self.made, ShardedEvaluation):
            self.made.close()


def exact_figures(studies: Iterable, held_out: HeldOutMeasurer) -> dict:
    """The held-out exact program's figures ({"seconds", "money", "scores"}: scores only
    against references): from the measurer where it was made (then kept in each of
    `studies`), else those a study kept; the measurer is made only where none did."""
    studies = list(studies)
    if held_out.made is None:
        kept = next((s.user_attrs[EXACT] for s in studies if EXACT in s.user_attrs), None)
        if kept is not None:
            return kept
    m = held_out()
    figures = {"seconds": m.exact_seconds(), "money": m.exact_money(),
               "scores": [float(v) for v in m.exact_scores] if held_out.with_references else None}
    for s in studies:
        s.set_user_attr(EXACT, figures)
    return figures


def time_front(study, timer: Measurer, program, budget: float, say=None, levels=None, deadline=None) -> int:
    """Time the front's points paired (their speedups were modelled), as the figures
    they are ranked by from then on (`TIMED` study attrs, kept across a resume). With
    `levels`, first the points the levels report (`chosen_at`) until each is timed: a
    level is never chosen on a modelled figure (the cost model's speedup of a dynamic
    point can rank it above a timed static point that is faster). Then the rest of the
    front within the highest level (all of it without levels), while time is left before
    `deadline` (the search's; None: no limit): a point timed slower than modelled may
    leave the front and uncover another, so this goes on until that front is timed
    (MAX_TIMING_ROUNDS rounds at most). A point above every level is not timed: no level
    can choose it, nor a point its timing would uncover (that one loses more still). A
    costly program's front can hold many points at tens of seconds each: those no level
    reports keep their modelled figures (the report says so) once the search's time is spent."""
    def time_levels() -> int:  # each pass times one point at least; a point timed slower may move a level
        n = 0
        while levels and (todo := _untimed(study, budget, levels)):
            n += _time_points(study, timer, program, todo, say)
        return n

    def spent() -> bool:
        return deadline is not None and time.time() >= deadline

    top = max(levels) if levels else float("inf")  # a point above every level: no level can choose it
    timed = time_levels()
    for _ in range(MAX_TIMING_ROUNDS):
        todo = [r for r in _untimed(study, budget) if r.qos_loss <= top + 1e-9]
        for r in todo:
            if spent():
                break
            timed += _time_points(study, timer, program, [r], say)
        if not todo or spent():
            break
    return timed + time_levels()


def _untimed(study, budget: float, levels=None) -> list:
    """The front's points whose speedups are still modelled; with `levels`, only those
    the levels report (`chosen_at`)."""
    fr = front(records(study), budget)
    reported = chosen_at(fr, levels) if levels else {r.number for r in fr}
    return [r for r in fr if r.number in reported and not r.attrs.get("timed")]


def _time_points(study, timer: Measurer, program, rs: list, say) -> int:
    """Time front points `rs` paired, together (the exact program once a block beside all
    of them: `Measurer.timed_figures_together`), each into its `TIMED` study attr; how
    many ran (the exact program is not timed against itself)."""
    from autotuner.workers import build

    figures: dict[int, dict] = {}
    built = []
    for r in rs:
        if all(is_exact(v) for v in r.config.values()):
            figures[r.number] = {"speedup": 1.0, "speedup_low": 1.0, "speedup_high": 1.0,
                                 "seconds": timer.exact_seconds(), "exact_seconds": timer.exact_seconds()}
            continue
        try:
            built.append((r, build(program, r.config)))
        except ApproxError as err:  # it ran untimed: a failure now is the machine's, not the point's
            figures[r.number] = {"speedup": 0.0, "error": err.line()}
    for (r, _), got in zip(built, timer.timed_figures_together([fn for _, fn in built]) if built else []):
        if isinstance(got, Exception):
            line = got.line() if isinstance(got, ApproxError) else f"{type(got).__name__}: {got}"
            got = {"speedup": 0.0, "error": line}
        elif say:
            say(f"timed front point {r.number}: {got['speedup']:.2f}x (modelled {r.speedup:.2f}x)")
        figures[r.number] = got
    for number, f in figures.items():
        study.set_user_attr(f"{TIMED}{number}", f)
    return len(built)


def chosen_at(fr: list, levels) -> set[int]:
    """The trials a level reports: per QoS-loss level, the fastest front point within it
    on the tuning split."""
    out = set()
    for level in levels:
        within = [r for r in fr if r.qos_loss <= level + 1e-9]
        if within:
            out.add(max(within, key=lambda r: r.speedup).number)
    return out


def eval_front(study, fr: list, program, held_out: HeldOutMeasurer | None, mode: str, notes: list,
               levels=None) -> list[FrontPoint]:
    """The front's points with their held-out figures (`held_out`, made only for a figure
    not kept; kept in the study, so a resume does not measure them again); with `levels`,
    only the points chosen at them (`chosen_at`: a large front of a costly program costs
    a held-out pass per point, and only the chosen ones are reported). Those not measured
    yet are replayed here (`replay_together`; a run replays every mode's first, in one
    pass). A point with every knob exact is the exact program (knob 0 is exact): 1.00x and
    no loss, not timed against itself (for a costly program, two exact passes saved per mode)."""
    if held_out is not None:
        replay_together({study: fr}, program, held_out, levels)
    points, figures, exact = [], {}, []
    replayed = chosen_at(fr, levels) if levels is not None else {r.number for r in fr}
    for r in fr:
        p = FrontPoint(mode, r.config, r.qos_loss, r.speedup, seconds_tune=r.attrs.get("seconds"),
                       trial=r.number, money_tune=r.attrs.get("money"))
        if "speedup_low" in r.attrs:
            p.speedup_tune_ci = [r.attrs["speedup_low"], r.attrs["speedup_high"]]
        p.qos_loss_tune_ci = r.loss_interval
        p.speedup_tune_modelled = bool(r.attrs.get("modelled")) and not r.attrs.get("timed")
        p.ir = transformed_ir(program, r.config)
        points.append(p)
        if held_out is None or r.number not in replayed:
            continue
        if all(is_exact(v) for v in r.config.values()):
            exact.append(r.number)  # the exact program, whose figures the evaluation's exact runs give (below)
        else:
            figures[r.number] = study.user_attrs[f"eval:{r.number}"]
    for number in exact:  # after the others: their paired timings ran the exact program (`Measurer.paired`)
        e = exact_figures([study], held_out)
        figures[number] = {"qos_loss": 0.0, "speedup": 1.0, "seconds": e["seconds"], "money": e["money"],
                           "ci": None, "loss_ci": [0.0, 0.0]}
    for p, r in zip(points, fr):
        cached = figures.get(r.number)
        if cached is None:
            continue
        if "error" in cached:
            notes.append(f"{mode} trial {r.number}: held-out evaluation failed: {cached['error']}")
        else:
            p.qos_loss_eval, p.speedup_eval = cached["qos_loss"], cached["speedup"]
            p.seconds_eval, p.money_eval = cached["seconds"], cached["money"]
            p.speedup_eval_ci, p.qos_loss_eval_ci = cached.get("ci"), cached.get("loss_ci")
    return points


def replay_together(fronts: dict, program, held_out: HeldOutMeasurer, levels=None) -> None:
    """The points each study's levels choose (`chosen_at`; all of its front without
    levels) that have no held-out figures yet, replayed in one pass (`replay`): the exact
    program runs once per held-out input beside all of them, and a configuration two
    modes chose is replayed once. `fronts`: study -> its front. Their figures are kept in
    the studies, where `eval_front` reads them."""
    # lead: a trial's names ("study#trial", its config) -> its index in todo; kept: the same -> kept figures
    todo: list = []
    lead: dict[str, int] = {}
    followers: dict[int, list] = {}
    kept: dict[str, dict] = {}
    for study, fr in fronts.items():
        replayed = chosen_at(fr, levels) if levels is not None else {r.number for r in fr}
        for r in fr:
            if r.number not in replayed or all(is_exact(v) for v in r.config.values()):
                continue
            names = [f"{study.study_name}#{r.number}", config_key(r.config)]
            if f"eval:{r.number}" in study.user_attrs:  # kept by an earlier run
                kept.update({k: study.user_attrs[f"eval:{r.number}"] for k in names})
                continue
            source = r.attrs.get(REUSED)  # a copy of another study's trial (`warm_start`)
            i = next((lead[k] for k in (source, *names) if k in lead), None)
            copy = next((kept[k] for k in (source, *names) if k in kept), None)
            if copy is not None:
                study.set_user_attr(f"eval:{r.number}", copy)
            elif i is None:
                lead.update({k: len(todo) for k in names})
                todo.append((study, r.number, r.config))
            else:
                followers.setdefault(i, []).append((study, r.number))
    if todo:
        replay(program, held_out, todo)
    for i, copies in followers.items():
        study, number, _ = todo[i]
        for other, n in copies:
            other.set_user_attr(f"eval:{n}", study.user_attrs[f"eval:{number}"])


def replay(program, held_out: HeldOutMeasurer, points: list) -> None:
    """(study, trial, config) points measured on the held-out split, all in one pass of
    the exact program (`Measurer.measure_together`; a ShardedEvaluation's workers take
    them in turn), each kept in its study as an `eval:` attr (a failure as its error)."""
    from autotuner.sharded import ShardedEvaluation
    from autotuner.workers import build

    def store(i: int, m) -> None:
        study, number, _ = points[i]
        study.set_user_attr(f"eval:{number}", {"error": m} if isinstance(m, str) else m.held_out_figures())

    eval_m = held_out()  # made before the points: its failure is not theirs
    if isinstance(eval_m, ShardedEvaluation):
        eval_m.measure([config for _, _, config in points], store)
        return
    built, failed = [], {}
    for i, (_, _, config) in enumerate(points):
        try:
            built.append((build(program, config), config))
        except ApproxError as err:
            failed[i] = err.line()
    ok = [i for i in range(len(points)) if i not in failed]
    for i, line in failed.items():
        store(i, line)
    eval_m.measure_together(built, lambda j, m: store(ok[j], m))


def transformed_ir(program, config: dict) -> str | None:
    """The approx-free IR of `config`, where the program has IR (an MlirProgram's
    `transformed_ir`, a decorated function's `ir(after=True, config=...)`)."""
    try:
        if offered(program, "transformed_ir"):
            return program.transformed_ir(config)
        if offered(program, "ir"):
            return program.ir(after=True, config=config)
    except (ApproxError, TypeError):
        pass
    return None
