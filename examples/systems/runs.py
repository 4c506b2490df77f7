"""What the tuning driver (`tuning.tune_system`) uses besides the registry: the
run's record (`SystemRun`), the levels and the sampler, the tuning inputs the exact
program gets right (`exact_right`), the ablations of the chosen points and what
`approx-tune verify` needs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from autotuner import TuningResult

SAMPLER = "predictive"  # the default: additive models of loss and time, in both modes (thresholds on a grid)
REPORTED_LEVELS = (1, 3, 6, 9)  # percent QoS loss: the levels a row and the report give


@dataclass
class SystemRun:
    """One system's tuning run: its result and what its bench row reads besides."""

    name: str
    result: TuningResult
    qos_exact: float | None  # the exact program's QoS (answer containment) on the evaluation questions
    wall_seconds: float  # everything: loading, both searches, evaluation, report
    out_dir: Path
    report: Path | None = None
    trials_per_mode: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)  # knobs fixed at exact -> time share of their stage
    extra: dict = field(default_factory=dict)  # the system's own row details (tools: QoS by BFCL category)


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


def qos_note(result) -> str | None:
    """What the search's QoS was (the result's note that says it), for a results row."""
    return next((n for n in result.notes if n.startswith("QoS:")), None)


def gold_on_tuning(result, program, inputs: list, references: list, score) -> None:
    """Where the search tuned against the exact program's answers ("agreement"): each
    point a reported level chooses, scored on the same tuning inputs against their gold
    references as well (`FrontPoint.qos_loss_tune_gold`), so that the report shows both
    proxies. The program's untimed context reads the answers the search kept (no model
    runs again where it keeps them)."""
    import contextlib

    from approx_opt.program import exact_config, offered

    untimed = offered(program, "untimed") or contextlib.nullcontext

    def qos(config: dict) -> float:
        run = program.build(config)
        with untimed():  # an input is a tuple of arguments or the one argument (as the tuner calls it)
            outputs = [run(*x) if isinstance(x, tuple) else run(x) for x in inputs]
        return sum(score(o, r) for o, r in zip(outputs, references)) / max(len(inputs), 1)

    exact = qos(exact_config(program))
    if exact <= 0:  # the exact program answers none of them: no loss is defined
        return
    for p in {id(p): p for lv in REPORTED_LEVELS for mode in ("static", "dynamic")
              if (p := result.chosen(lv / 100, mode))}.values():
        p.qos_loss_tune_gold = (exact - qos(p.knobs)) / exact


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
