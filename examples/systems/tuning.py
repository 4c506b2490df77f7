"""Tune a RAG system end to end: static search, dynamic search started from the
static front, held-out evaluation of both fronts, the report.

- QoS while tuning: agreement with the exact program (SQuAD token F1 between the
  approximate and the exact answer, `common.answer_qos`), so every tuning question
  counts and a loss is never negative (with 16-24 tuning questions, gold-answer QoS
  rewards configurations that are lucky on them: a -25 % loss on tuning became +18 %
  on evaluation; a pass/fail agreement ties configurations that change answers a
  little with those that change none). The held-out evaluation uses the gold
  answers: answer containment, the paper's QoS.
- Knobs of retrieval stages that take under 2 % of the exact program's time are
  fixed at exact (measured first: BM25 scoring, the dense kernel): they cannot pay.
- Three `autotuner.tune` calls on one SQLite study file (re-running resumes, as
  `approx-tune run` does): (1) static mode, until `trials` evaluations or half the
  time budget; (2) dynamic mode, its study seeded with the static front
  configurations with the answer step's cheaper variants applied only where the
  retrieval margin is high, or low (`dynamic_search`), until `trials` evaluations or the
  time budget; (3) both modes, nothing left to search: each front re-measured on
  the held-out questions, the TuningResult. A static configuration is a dynamic
  one with equal decisions, so the static front joins the dynamic front
  (`merge_static_front`): dynamic >= static by construction, better where a
  decision pays.
- The time budget stops a search between trials: `SystemProgram.build` raises `TimeUp`
  (a KeyboardInterrupt, which the tuner treats as Ctrl-C: finished trials are kept).
"""

from __future__ import annotations

import importlib
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from autotuner import TuningResult
from examples.systems.dynamic_search import merge_static_front, seed_dynamic

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = {"rag_bm25": "examples.systems.rag_bm25:system", "rag_dense": "examples.systems.rag_dense:system",
           "rag_bm25_llm": "examples.systems.rag_bm25:llm_system",
           "rag_dense_llm": "examples.systems.rag_dense:llm_system",
           "agent_llm": "examples.systems.agent_llm:system"}  # name -> the function that builds it
BUDGET = 0.2  # tuning: share of answers that may differ from the exact program's
SAMPLER = "predictive"  # the default: additive models of loss and time, in both modes (thresholds on a grid)
REPEATS = 1  # timed passes per measurement: one pass over the questions takes seconds (CPU clock: steady)


def clock() -> str:
    """What speedups are ratios of: thread CPU time on the CPU (torch runs on one thread in
    the calling thread); wall time where the LLM runs on a GPU (its kernels' time is not
    this thread's CPU time)."""
    from examples.systems.common import device

    return "wall" if device().startswith("cuda") else "cpu"


@dataclass
class SystemRun:
    name: str
    result: TuningResult
    qos_exact: float | None  # the exact program's QoS (answer containment) on the evaluation questions
    wall_seconds: float  # everything: loading, both searches, evaluation, report
    out_dir: Path
    report: Path | None = None
    trials_per_mode: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)  # knobs fixed at exact -> time share of their stage


def load_system(name: str):
    if name not in SYSTEMS:
        from approx_dialect.diagnostics import ApproxError

        raise ApproxError(f"unknown system '{name}' (systems: {', '.join(SYSTEMS)})", where="examples.systems")
    module, function = SYSTEMS[name].split(":")
    program = getattr(importlib.import_module(module), function)()
    program.spec = SYSTEMS[name]  # worker processes build it again from its name (`autotuner.tune`)
    return program


def evaluated_trials(storage: str, study_name: str) -> int:
    """Trials of a study that were measured (0 when the study does not exist)."""
    from autotuner import trial_counts

    return trial_counts(storage, study_name)["evaluated"]


def record_how_to_verify(result, program: str, metric: str, held_out: dict) -> None:
    """What `approx-tune verify --out DIR` needs to rebuild and re-time the front."""
    result.program_spec, result.metric_spec, result.held_out = program, metric, held_out


def explain_levels(result, program, inputs, references, metric, levels, clock: str = "cpu") -> None:
    """Ablations of the chosen points (each knob set back to exact, paired timing) on
    `inputs`, into `result.ablations` (the report shows them)."""
    import sys

    from approx_dialect.diagnostics import ApproxError
    from autotuner import Measurer, ablate_levels

    try:
        m = Measurer(program, inputs, references, metric, 1, what="evaluation", clock=clock)
        rows = ablate_levels(result, program, m, [lv / 100 for lv in levels],
                             progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    except ApproxError as err:  # e.g. the exact program scores 0 on a tiny slice: no loss to share out
        result.notes.append(f"ablation not measured: {err.message}")
        return
    for r in rows:
        r["inputs"] = f"the first {len(inputs)} held-out inputs"
    result.ablations = rows


def search_static_then_dynamic(program, inputs, references, *, name: str, trials: int, seconds: float | None,
                               seed_dynamic, spec: str | None = None, jobs: int = 1,
                               **tune_kwargs) -> dict[str, int]:
    """The two searches of a system on one study file: static, then dynamic after
    `seed_dynamic()` queued its first trials; each until `trials` evaluations or its
    half of `seconds` (`program.deadline`, and DEADLINE_ENV for `jobs` > 1 worker
    processes, which build the program from `spec`: the program raises `TimeUp`
    between trials, which keeps the finished ones; `seconds=0`: no search, the study
    as it is). Returns the evaluated trials per mode."""
    import os

    from autotuner import tune
    from examples.systems.program import DEADLINE_ENV, TimeUp

    if jobs > 1 and spec is None:
        from approx_dialect.diagnostics import ApproxError

        raise ApproxError(f"--jobs {jobs} needs a system the workers can build by name ({', '.join(SYSTEMS)})",
                          where="examples.systems")
    t0, w0 = time.perf_counter(), time.time()
    limits = (None, None) if seconds is None else (seconds / 2, seconds)
    for mode, limit in zip(("static", "dynamic"), limits):
        if limit is not None and limit <= 0:  # no time: a resumed study only finishes its evaluation
            continue
        if mode == "dynamic":
            seed_dynamic()
        program.deadline = None if limit is None else t0 + limit
        if jobs > 1 and limit is not None:
            os.environ[DEADLINE_ENV] = repr(w0 + limit)  # the spawned workers inherit it
        try:
            tune(spec if jobs > 1 else program, inputs, references, mode=mode, n_trials=trials, evaluate=False,
                 study_name=name, jobs=jobs, **tune_kwargs)
        except TimeUp:
            pass
        finally:
            program.deadline = None
            os.environ.pop(DEADLINE_ENV, None)
    return {m: evaluated_trials(tune_kwargs["storage"], f"{name}/{m}") for m in ("static", "dynamic")}


TUNING_QOS = {  # the search's QoS -> what the result's notes say of it
    "agreement": "QoS: tuning compares each answer with the exact program's answer (SQuAD token F1, every "
                 "question counts); the held-out evaluation with the gold answers (answer containment, the "
                 "paper's QoS)",
    "gold": "QoS: tuning and held-out evaluation both against the gold answers (answer containment, the "
            "paper's QoS)",
    "kept": "QoS: tuning on questions the exact program answers right (gold answer contained), against "
            "the gold answers: a loss is an answer lost, never offset by one gained; the held-out "
            "evaluation with the gold answers on all its questions (answer containment, the paper's QoS)"}
KEPT_CANDIDATES = 4  # "kept" tuning: at most this many x n_tune tuning questions are tried


def default_tuning_qos(name: str) -> str:
    """The search's QoS when none is asked for: "kept" for the LLM systems, "agreement" else."""
    return "kept" if name.endswith("_llm") else "agreement"


def qos_note(result) -> str | None:
    """What the search's QoS was (the result's note that says it), for a results row."""
    return next((n for n in result.notes if n.startswith("QoS:")), None)


def exact_right(program, inputs: list, references: list, score, n: int, seed: int = 0,
                log=None, shuffle: bool = True, jobs: int = 1, keep: Path | None = None) -> tuple[list, list, int]:
    """(inputs, references, tried): the first `n` of `inputs` (`shuffle`: in a seeded
    order, the inputs may come grouped, e.g. by article) whose exact output scores 1
    (`score(output, reference)`), and how many were run to find them. Tuning on
    them, a configuration's loss counts the answers it loses and none it gains by
    luck (with a few dozen tuning inputs, gains offset losses and the search picks
    configurations lucky on them). `jobs` > 1 (a program with a `spec`): every input's
    exact output comes from that many worker processes (`exact_outputs`), the same
    inputs chosen. `keep`: a file where the choice is kept (a resumed search reads it
    back instead of running the exact program on every candidate again)."""
    import numpy as np

    kept = json.loads(keep.read_text()) if keep is not None and keep.is_file() else None
    if kept is not None and kept["n"] == n and kept["seed"] == seed and kept["candidates"] == len(inputs):
        return [inputs[i] for i in kept["chosen"]], [references[i] for i in kept["chosen"]], kept["tried"]
    order = list(np.random.default_rng([seed, 1]).permutation(len(inputs))) if shuffle else list(range(len(inputs)))
    spec = getattr(program, "spec", None)
    if jobs > 1 and spec:
        outputs = dict(zip(order, exact_outputs(spec, [inputs[i] for i in order], jobs)))
        answer = outputs.__getitem__
    else:
        exact = program.exact()
        answer = lambda i: exact(inputs[i])  # noqa: E731
    chosen, tried = [], 0
    for i in order:
        if len(chosen) == n:
            break
        tried += 1
        if score(answer(i), references[i]) >= 1.0:
            chosen.append(int(i))
        if log is not None:
            log(f"tuning inputs the exact program gets right: {len(chosen)}/{n} of {tried} tried")
    if keep is not None:
        keep.write_text(json.dumps({"n": n, "seed": seed, "candidates": len(inputs), "chosen": chosen,
                                    "tried": tried}))
    return [inputs[i] for i in chosen], [references[i] for i in chosen], tried


_EXACT = None  # a worker process's exact program (`exact_outputs`)


def _load_exact(spec: str) -> None:
    global _EXACT
    from autotuner import load_program

    _EXACT = load_program(spec).exact()


def _run_exact(x):
    return _EXACT(x)


def exact_outputs(spec: str, inputs: list, jobs: int) -> list:
    """The exact program's output for each input, from `jobs` spawned worker processes
    that each build the program from `spec` (a costly program's sequential pass, e.g.
    the search for tuning questions the exact program gets right, in 1/jobs of the time)."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(min(jobs, len(inputs)) or 1, initializer=_load_exact,
                                      initargs=(spec,)) as pool:
        return pool.map(_run_exact, inputs, chunksize=max(1, -(-len(inputs) // jobs)))


def fixed_knobs(program, questions, path: Path) -> dict[str, float]:
    """The program's negligible knobs (`negligible_knobs`: name -> measured time share),
    kept in `path`: a resumed study keeps the search space it started with (a share
    measured again could fall on the other side of the threshold)."""
    if path.is_file():
        return json.loads(path.read_text())
    negligible = program.negligible_knobs(questions)
    path.write_text(json.dumps(negligible, indent=1))
    return negligible


def tune_system(name: str, n_tune: int = 20, trials: int = 30, seconds: float | None = None,
                out_dir: str | Path | None = None, seed: int = 0, budget: float = BUDGET,
                sampler: str = SAMPLER, report: bool = True, fresh: bool = True, evaluate: bool = True,
                progress: bool = False, program=None, eval_repeats: int = REPEATS,
                ablate_levels: tuple = (), n_eval: int | None = None, jobs: int = 1,
                tuning_qos: str | None = None, screen: bool = False) -> SystemRun:
    """Tune system `name` (or `program`, a RagSystem) on `n_tune` tuning questions
    (evaluation: 5x as many, other articles; or the first `n_eval` of them), `trials`
    evaluations per mode, at most about `seconds` of search, `jobs` worker processes
    (each builds the system `name`; 1: this process runs `program`; the held-out
    questions are shared among as many workers, `autotuner.sharded`); `evaluate=False`
    skips the held-out evaluation (paired timing, `eval_repeats` rounds at most).
    `ablate_levels` (percent QoS-loss levels): ablate the chosen point of each on the
    first `n_tune` held-out questions. `tuning_qos` (TUNING_QOS; default: "kept" for the
    LLM systems, "agreement" for the others): agreement with the exact answers suits the
    extractive readers, whose spans are stable; a generated answer changes its wording
    under almost any approximation, so for the LLM systems agreement rejects settings
    that keep the gold answers, and "kept" tunes against the gold answers on questions
    the exact program gets right ("gold": on all tuning questions). `screen`: the static
    search starts with each knob alone at its gentlest step (`SearchSpace.screening`),
    for a search of a few trials (the demo)."""
    import sys

    from autotuner import tune
    from examples.systems.common import METRIC, NARROW

    start = time.perf_counter()
    out = Path(out_dir) if out_dir is not None else ROOT / "reports" / name
    if fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    program = program if program is not None else load_system(name)
    question_sets = importlib.import_module(program.inputs_module).question_sets
    tuning_qos = tuning_qos or default_tuning_qos(name)
    if tuning_qos not in TUNING_QOS:
        from approx_dialect.diagnostics import ApproxError

        raise ApproxError(f"unknown tuning QoS '{tuning_qos}' (one of: {', '.join(TUNING_QOS)})",
                          where="examples.systems")
    (tune_q, tune_a), (eval_q, eval_a) = question_sets(n_tune, seed, n_eval)
    tried = None
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731  progress, beside the output
    if tuning_qos == "kept":  # the held-out split stays that of (n_tune, seed, n_eval): `approx-tune verify` finds it
        (cand_q, cand_a), _ = question_sets(KEPT_CANDIDATES * n_tune, seed, 0)
        tune_q, tune_a, tried = exact_right(program, cand_q, cand_a, METRIC.fn, n_tune, seed,
                                            log=say if progress else None, jobs=jobs, keep=out / "kept.json")
        if not tune_q:
            from approx_dialect.diagnostics import ApproxError

            raise ApproxError(f"the exact program answers none of {tried} tuning questions right: nothing to "
                              "tune against (try --llm-tuning-qos agreement)", where="examples.systems")
    tune_ref = None if tuning_qos == "agreement" else tune_a
    # the dynamic seeds' thresholds split the states of questions as they come, not only of those kept
    state_q = cand_q[:len(tune_q)] if tried else tune_q
    negligible = fixed_knobs(program, tune_q[:8], out / "fixed.json")
    fix = {k: 0 for k in negligible}
    narrow = {k: v for k, v in NARROW.items() if k in {s.name for s in program.knobs()}}
    storage = f"sqlite:///{(out / 'study.db').resolve()}"
    common = dict(metric=METRIC, budget=budget, sampler=sampler, seed=seed, storage=storage,
                  out_dir=out, eval_inputs=eval_q, eval_references=eval_a, repeats=REPEATS, clock=clock(),
                  narrow=narrow, fix=fix, progress=progress)
    if screen:
        from autotuner import SearchSpace, enqueue

        space = SearchSpace.from_program(program, "static").narrow(dict(narrow)).fix(dict(fix))
        enqueue(storage, f"{name}/static", space, space.screening(first=program.screen_first))
    done = search_static_then_dynamic(
        program, tune_q, tune_ref, name=name, trials=trials, seconds=seconds, spec=SYSTEMS.get(name), jobs=jobs,
        seed_dynamic=lambda: seed_dynamic(program, storage, name, budget, narrow, fix, program.states(state_q),
                                          limit=max(2, trials // 2)),  # at most half the trials
        **common)
    result = tune(program, tune_q, tune_ref, mode="both", n_trials=max(1, min(done.values())), evaluate=evaluate,
                  study_name=name, jobs=jobs if getattr(program, "spec", None) else 1,
                  **{**common, "repeats": eval_repeats})
    merge_static_front(result, program)
    scores = result.exact_scores_eval  # the held-out evaluation's exact run (in this process or its workers)
    qos_exact = sum(scores) / len(scores) if evaluate and scores else None
    result.notes += [
        TUNING_QOS[tuning_qos] + (f" ({len(tune_q)} tuning questions, found among {tried} tried)" if tried else ""),
        "fixed at exact (their stage takes under 2 % of the exact program's time): "
        + (", ".join(f"{k} ({100 * v:.2f} %)" for k, v in negligible.items()) or "none")]
    record_how_to_verify(result, SYSTEMS.get(name, ""), "examples.systems.common:METRIC",
                         {"inputs": f"{program.inputs_module}:held_out_questions",
                          "kwargs": {"n_tune": n_tune, "seed": seed, "n_eval": n_eval}})
    if ablate_levels and evaluate:
        explain_levels(result, program, eval_q[:n_tune], eval_a[:n_tune], METRIC, ablate_levels)
    result.save(out / "result.json")
    run = SystemRun(name, result, qos_exact, 0.0, out, trials_per_mode=done, fixed=negligible)
    if report:
        from autotuner.report import write_report

        run.report = write_report(result, out)
    run.wall_seconds = time.perf_counter() - start
    return run
