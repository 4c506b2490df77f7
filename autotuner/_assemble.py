"""The `TuningResult` of a run's studies: each mode's front with its held-out
figures (`autotuner._front_figures`), every trial, importances and what a person
needs to trust the search; saved beside the study, which names the file."""

from __future__ import annotations

import logging

from optuna.trial import TrialState

from approx_opt.program import offered
from autotuner import strategy
from autotuner._front_figures import HeldOutMeasurer, eval_front, exact_figures, replay_together, transformed_ir
from autotuner._records import TIMED, counts, front, hypervolume_of_study, records
from autotuner.explain import importances
from autotuner.measure import TIMING
from autotuner.metrics import get_metric
from autotuner.results import RESULT_FILE_ATTR, TrialPoint, TuningResult
from autotuner.settings import Cost, Search
from autotuner.storage import safe_url

log = logging.getLogger(__name__)


def assemble_result(program, spec, studies, names, eval_m: HeldOutMeasurer | None, tune_m, spaces, notes, out,
                    budget, search: Search, tune_in, eval_in, total_seconds, storage, cost: Cost, metric, plan=None,
                    eval_levels=None, kept: str | None = None) -> TuningResult:
    """The TuningResult of the searches: fronts (held-out figures kept in the studies,
    or measured by `eval_m`), every trial, importances; saved beside the study."""
    result = TuningResult(program.name, get_metric(metric).name, float(budget), 0, 0, total_seconds, seed=search.seed,
                          sampler=search.sampler, n_tune=len(tune_in), n_eval=len(eval_in), study_names=names,
                          storage=safe_url(storage), notes=notes, program_spec=spec, clock=cost.clock,
                          knob_space={m: s.describe() for m, s in spaces.items()},
                          timing=TIMING if cost.objective == "time" else None,
                          metric_spec=metric if isinstance(metric, str) else None)
    fronts = {m: front(records(study), budget) for m, study in studies.items()}
    if eval_m is not None:  # every mode's chosen points in one held-out pass (a configuration two chose, once)
        replay_together({studies[m]: fr for m, fr in fronts.items()}, program, eval_m, eval_levels)
    for m, study in studies.items():
        c = counts(study)
        result.trials += c["evaluated"]
        result.failed_trials += c["failed"]
        result.pruned_trials += c["pruned"]
        result.failures += [{"mode": m, "trial": t.number, "knobs": t.user_attrs.get("config", {}),
                             "error": t.user_attrs["error"]}
                            for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,))
                            if "error" in t.user_attrs and "duplicate_of" not in t.user_attrs]
        result.hypervolume[m] = hypervolume_of_study(study, budget)
        recs, fr = records(study), fronts[m]
        on_front = {r.number for r in fr}
        result.all_trials += [TrialPoint(m, r.config, r.qos_loss, r.speedup, r.number not in on_front, r.number,
                                         r.feasible(budget), r.pruned, r.loss_interval)
                              for r in recs if not r.duplicate]
        result.front += eval_front(study, fr, program, eval_m, m, notes, eval_levels)
        result.importances[m] = importances(study, [k.name for k in program.knobs()])
    # after the evaluation, whose timings ran the exact program
    exact_eval = exact_figures(studies.values(), eval_m) if eval_m is not None else None
    if exact_eval is not None and eval_m.with_references:
        result.exact_scores_eval = exact_eval["scores"]
    if plan is not None and {"static", "dynamic"} <= set(studies):
        strategy.merge_static_front(result, program, ir=lambda c: transformed_ir(program, c))
    if cost.objective == "time":  # after the evaluation: the exact passes timed beside its points
        result.exact_seconds_tune = tune_m.exact_seconds() if tune_m else None
        result.exact_seconds_eval = exact_eval["seconds"] if exact_eval is not None else None
    result.search = _search_facts(result, studies, cost.timing, kept, plan, program)
    for note in notes:
        log.info("%s: %s", program.name, note)
    path = result.save(out / "result.json").resolve()
    for study in studies.values():
        study.set_user_attr(RESULT_FILE_ATTR, str(path))
    return result


def _search_facts(result, studies, timing: str, kept: str | None, plan, program) -> dict:
    """What a person needs to trust the search: configurations measured per mode (and
    stopped after the first stage, and scored from kept outputs by the sweep), how they
    were timed, the front points timed paired, what the kept outputs held, and the
    strategy's plan."""
    facts = {"timing": timing, "configurations": {}, "stopped_at_first_stage": {}, "front_timed": {},
             "scored_from_kept": {}}
    for m, study in studies.items():
        facts["scored_from_kept"][m] = counts(study)["scored"]
        facts["configurations"][m] = sum(1 for t in result.all_trials if t.mode == m)
        facts["stopped_at_first_stage"][m] = sum(1 for t in result.all_trials if t.mode == m and t.pruned)
        facts["front_timed"][m] = sum(1 for k in study.user_attrs if k.startswith(TIMED))
    reuse_counts = offered(program, "reuse_counts")
    reuse = reuse_counts() if reuse_counts else None
    if kept is not None:
        from frontends.components.kept import KeptOutputs

        facts["kept_outputs"] = {"file": kept, "calls": len(KeptOutputs(kept)),
                                 **({"read_here": reuse["reused"], "run_here": reuse["run"]} if reuse else {})}
    if reuse and "requests_sent" in reuse:  # endpoint components: requests sent by this process, and not sent
        facts["endpoint_requests"] = {"sent": reuse["requests_sent"], "kept": reuse["requests_kept"]}
    if plan is not None:
        facts["fixed"] = plan["negligible"]
    return facts
