"""What the search scores on the tuning inputs (`Search(tuning_qos=)`,
`approx-tune run --tuning-qos`, `settings.TUNING_QOS`); the held-out evaluation scores
against the references in every mode, so the figures reported mean the same thing.

- "gold": against the references, as held out: a gain counts as it does held out,
  and the tuning ranking is the one reported.
- "agreement": against the exact program's outputs (the metric gets the exact output
  as its reference): every input counts, not only those the exact program gets right,
  and a configuration that changes outputs a little ranks between one that changes
  none and one that changes many. Where the inputs have references, each point a
  reported level chooses is also scored against them on the tuning inputs
  (`FrontPoint.qos_loss_tune_gold`), so that the report shows both proxies.
- "kept": only on tuning inputs the exact program gets right (scores 1), against
  their references: a loss is an output lost and none gained by luck offsets it (on a
  few dozen tuning inputs, gains offset losses and the search picks configurations
  lucky on them). The inputs are tried in the order given (`exact_right`), at most
  `Search.n_kept` kept; the choice is kept in `kept.json` beside the study, so a
  resumed run does not run the exact program on every candidate again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import exact_config, offered
from autotuner.metrics import get_metric
from autotuner.settings import TUNING_QOS, Search

WHERE = "<approx-tune>"


@dataclass
class Tuning:
    """The search's tuning inputs and references (None: the exact outputs), what the
    result's notes say of them, and the references the search does not see
    ("agreement": scored on the chosen points afterwards, `finish`)."""

    mode: str
    inputs: list
    references: list | None
    note: str
    gold: list | None = None

    def finish(self, result, program, metric, levels, path: Path) -> None:
        """Where the search tuned against the exact outputs of inputs with references:
        the points chosen at `levels` scored against those too (`gold_on_tuning`), and
        the result saved again at `path`."""
        if self.mode == "agreement" and self.gold is not None:
            gold_on_tuning(result, program, self.inputs, self.gold, get_metric(metric).fn, levels)
            result.save(path)


def tuning_inputs(search: Search, program, spec: str | None, inputs: list, references: list | None, metric,
                  jobs: int, out: Path, held_out_references: bool, log=None) -> Tuning:
    """What the search tunes on in its `tuning_qos`, from the tuning split `inputs` (and
    its `references`); `jobs` worker processes (rebuilding the program from `spec`) find
    the "kept" inputs."""
    mode = search.tuning_qos or ("gold" if references is not None else "agreement")
    name = get_metric(metric).name
    held = f"the held-out evaluation against the references ({name})" if held_out_references else \
        f"the held-out evaluation against the exact outputs too ({name})"
    if mode != "agreement" and references is None:
        raise ApproxError(f"tuning QoS '{mode}' scores against references, and the inputs give none (give "
                          "references, or tune on agreement with the exact outputs)", where=WHERE)
    if mode == "gold":
        return Tuning(mode, inputs, references, f"QoS: tuning against the references, as {held}")
    if mode == "agreement":
        return Tuning(mode, inputs, None, f"QoS: tuning against the exact program's outputs (every input counts); "
                      f"{held}", gold=references)
    kept_in, kept_ref, tried = exact_right(program, inputs, references, get_metric(metric).fn, search.n_kept, log=log,
                                           jobs=jobs, spec=spec, keep=out / "kept.json")
    if not kept_in:
        others = ", ".join(q for q in TUNING_QOS if q != "kept")
        raise ApproxError(f"the exact program gets none of {tried} tuning inputs right: nothing to tune against "
                          f"(try another tuning QoS: {others})", where=WHERE)
    return Tuning(mode, kept_in, kept_ref, f"QoS: tuning on {len(kept_in)} inputs the exact program gets right "
                  f"(found among {tried} tried), against their references: a loss is an output lost, never offset "
                  f"by one gained; {held} on all its inputs")


def gold_on_tuning(result, program, inputs: list, references: list, score, levels) -> None:
    """Each point chosen at `levels` (QoS-loss fractions), scored on the tuning inputs
    against their references as well (`FrontPoint.qos_loss_tune_gold`). The program's
    untimed context reads the outputs the search kept (no model runs again where it
    keeps them)."""
    untimed = offered(program, "untimed") or contextlib.nullcontext

    def qos(config: dict) -> float:
        run = program.build(config)
        with untimed():
            outputs = [_call(run, x) for x in inputs]
        return sum(score(o, r) for o, r in zip(outputs, references)) / max(len(inputs), 1)

    exact = qos(exact_config(program))
    if exact <= 0:  # the exact program gets none of them right: no loss is defined
        return
    for p in {id(p): p for lv in levels for mode in ("static", "dynamic")
              if (p := result.chosen(lv, mode))}.values():
        p.qos_loss_tune_gold = (exact - qos(p.knobs)) / exact


def exact_right(program, inputs: list, references: list, score, n: int | None = None, log=None, jobs: int = 1,
                spec: str | None = None, keep: Path | None = None) -> tuple[list, list, int]:
    """(inputs, references, tried): the first `n` (None: all) of `inputs`, in their
    order, whose exact output scores 1 (`score(output, reference)`), and how many were
    run to find them. `jobs` > 1 with a `spec` (default: the program's own): every
    input's exact output comes from that many worker processes (`exact_outputs`), the
    same inputs chosen. `keep`: a file where the choice is kept for the same inputs
    (a resumed search reads it back instead of running the exact program again)."""
    digest = hashlib.sha1(repr(list(inputs)).encode()).hexdigest()
    kept = json.loads(keep.read_text()) if keep is not None and keep.is_file() else None
    if kept is not None and kept.get("n") == n and kept.get("inputs") == digest:
        return [inputs[i] for i in kept["chosen"]], [references[i] for i in kept["chosen"]], kept["tried"]
    spec = spec or offered(program, "spec")
    if jobs > 1 and spec:
        answer = exact_outputs(spec, list(inputs), jobs).__getitem__
    else:
        exact = program.build(exact_config(program))
        answer = lambda i: _call(exact, inputs[i])  # noqa: E731
    chosen, tried = [], 0
    for i in range(len(inputs)):
        if len(chosen) == n:
            break
        tried += 1
        if score(answer(i), references[i]) >= 1.0:
            chosen.append(i)
        if log is not None:
            log(f"tuning inputs the exact program gets right: {len(chosen)}{'' if n is None else f'/{n}'} "
                f"of {tried} tried")
    if keep is not None:
        keep.write_text(json.dumps({"n": n, "inputs": digest, "chosen": chosen, "tried": tried}))
    return [inputs[i] for i in chosen], [references[i] for i in chosen], tried


def _call(run, x):
    """An input is a tuple of arguments or the one argument (as the tuner calls it)."""
    return run(*x) if isinstance(x, tuple) else run(x)


_EXACT = None  # a worker process's exact program (`exact_outputs`)


def _load_exact(spec: str) -> None:
    global _EXACT
    from autotuner.loading import load_program

    program = load_program(spec)
    _EXACT = program.build(exact_config(program))


def _run_exact(x):
    return _call(_EXACT, x)


def exact_outputs(spec: str, inputs: list, jobs: int) -> list:
    """The exact program's output for each input, from `jobs` spawned worker processes
    that each build the program from `spec` (a costly program's sequential pass, e.g.
    the search for tuning inputs it gets right, in 1/jobs of the time)."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(min(jobs, len(inputs)) or 1, initializer=_load_exact,
                                      initargs=(spec,)) as pool:
        return pool.map(_run_exact, inputs, chunksize=max(1, -(-len(inputs) // jobs)))
