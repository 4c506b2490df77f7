"""The enumerable landscapes of `bench/tuning_bench.py`: every configuration of a
small knob space measured once (real runs, thread CPU time), stored as JSON under
`bench/landscapes/`, then replayed by the searches (each search sees the same
real measurements, and 10 seeds of each run in seconds).

- `dots`: three sums of exp(a) * b under independent loop perforation knobs
  (5 x 5 x 5 = 125 configurations; effects nearly add up).
- `ladder`: the same kind of sum over inputs of five sizes under a decision-tree
  ladder on the size class (one threshold in 1..4, two decisions in {0, 2, 4, 8}),
  next to a static perforation knob (4 x 16 x 4 = 256 configurations). The
  threshold matters only when the two decisions differ: knobs interact.
- `rag_bm25`: the RAG-BM25 system (examples/systems/rag/bm25.py) on 8 SQuAD
  tuning questions, five static knobs: the answer step's variant (4), top-k (3),
  sentences per passage (3), precision (2), answer tokens (3) = 216 configurations,
  each measured once (a pass over the questions takes seconds).

- `rag_bm25_llm`: the reference front of RAG-BM25-LLM, the SmolLM2 answers' reduced space:
  precision (2 where the machine offers two), passages (3), answer tokens (3), layers (3),
  one prompt cut (2) = 108 configurations on 16 tuning questions, gold containment, each
  timed paired with the exact program (`--jobs 16` on the device machine's cores: 11 min).

`python bench/tuning_landscapes.py record NAME` measures one landscape (minutes)
and rewrites its file; nothing else in the benchmark re-measures.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autotuner import SearchSpace, config_key  # noqa: E402
from bench.dots_kernel import DOT_BODY  # noqa: E402
from passes.knobs import KnobSpec  # noqa: E402

DIR = Path(__file__).resolve().parent / "landscapes"
NAMES = ("dots", "ladder", "rag_bm25", "rag_bm25_llm")


@dataclasses.dataclass
class Landscape:
    """A recorded landscape: the searched space and config key -> (QoS loss, speedup)."""

    name: str
    description: str
    budget: float
    mode: str
    specs: list[KnobSpec]
    narrow: dict
    fix: dict
    tree_features: dict
    table: dict[str, tuple[float, float]]

    def space(self) -> SearchSpace:
        return SearchSpace.from_specs(self.specs, self.mode, self.tree_features).narrow(
            json.loads(json.dumps(self.narrow))).fix(dict(self.fix))

    def to_json(self) -> str:
        d = dataclasses.asdict(self)
        d["table"] = {k: [round(v[0], 6), round(v[1], 5)] for k, v in self.table.items()}
        return json.dumps(d, indent=0, sort_keys=True) + "\n"

    @classmethod
    def load(cls, name: str) -> "Landscape":
        d = json.loads((DIR / f"{name}.json").read_text())
        specs = [KnobSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in s.items()}) for s in d["specs"]]
        d["table"] = {k: tuple(v) for k, v in d["table"].items()}
        return cls(**{**d, "specs": specs})


def configurations(space: SearchSpace) -> list[dict]:
    """Every configuration of a space whose free parameters are all finite (a ladder's
    thresholds enumerated within their bounds; equal decisions keep their thresholds:
    distinct configurations that happen to behave alike)."""
    import optuna

    grids = {}
    for d in space.free():
        if not d.dynamic:
            grids[d.name] = list(d.values)
            continue
        for key, lo, hi in space._threshold_params(d):
            grids[key] = list(range(lo, hi + 1))
        for key in space._decision_params(d):
            grids[key] = list(d.values)
    out, seen = [], set()
    for combo in itertools.product(*grids.values()):
        params = dict(zip(grids, combo))
        trial = optuna.trial.FixedTrial(params)
        cfg = space.suggest(trial)
        if config_key(cfg) not in seen:
            seen.add(config_key(cfg))
            out.append(cfg)
    return out


def measure_every(program, space: SearchSpace, inputs, references, metric, clock: str = "cpu",
                  repeats: int = 5, rounds: int = 3, seed: int = 0) -> dict[str, tuple[float, float]]:
    """Every configuration measured `rounds` times, in a new random order each round
    (load changes of a shared machine then hit configurations alike): key -> (QoS
    loss, median speedup over the rounds)."""
    from autotuner import Cost, Measurer

    m = Measurer(program, inputs, references, metric, Cost(clock=clock, timing="paired", repeats=repeats))
    configs = configurations(space)
    built = {config_key(c): program.build(c) for c in configs}
    losses, speedups = {}, {k: [] for k in built}
    rng = np.random.default_rng(seed)
    for r in range(rounds):
        t0 = time.perf_counter()
        for i in rng.permutation(len(configs)):
            c = configs[i]
            got = m.measure(built[config_key(c)], c)
            losses[config_key(c)] = got.qos_loss
            speedups[config_key(c)].append(got.speedup)
        print(f"round {r + 1}/{rounds}: {len(configs)} configurations, {time.perf_counter() - t0:.0f} s",
              file=sys.stderr)
    return {k: (losses[k], statistics.median(v)) for k, v in speedups.items()}


# ---------------------------------------------------------------- dots (independent knobs)

def record_dots() -> Landscape:
    from approx_opt.program import MlirProgram
    from bench.dots_kernel import kernel_inputs, kernel_text

    n, count = 40_000, 6
    program = MlirProgram(kernel_text(3), "main", "three_dots.mlir")
    space = SearchSpace.from_program(program, "static")
    table = measure_every(program, space, kernel_inputs(count, n), None, "rel_l2")
    return Landscape("dots", f"three sums of exp(a)*b (n = {n}, {n // 2}, {n // 4}; {count} inputs), each under "
                     "its own loop perforation knob (0, 2, 3, 4, 8); QoS = 1 - relative L2 error vs exact",
                     0.05, "static", program.knobs(), {}, {}, {}, table)


# ---------------------------------------------------------------- ladder (interacting knobs)

LADDER_SIZES = (2_000, 4_000, 8_000, 16_000, 32_000)  # size class 0..4 = the ladder's state


def ladder_text() -> str:
    """`@main(a1, b1, n1, cls, a2, b2, n2)`: a sum under a ladder on the size class
    `cls` (perforation decided per input) and a second sum under a static knob."""
    return f"""module {{
  "approx.util.annotation.decision_tree"() <{{func_name = "per_size", transform_type = "loop_perforate_rescale",
    state_indices = array<i64: 3>, state_function = "size_class", num_thresholds = 1 : i32,
    thresholds_uppers = array<i32: 4>, thresholds_lowers = array<i32: 1>, decision_values = array<i32: 0, 2, 4, 8>,
    thresholds = array<i32: 2>, decisions = array<i32: 0, 0>}}> : () -> ()
  "approx.util.annotation.transform"() <{{func_name = "fixed", transform_type = "loop_perforate_rescale",
    knob_val = 0 : i32}}> : () -> ()
  func.func @size_class(%c: i32) -> i32 {{
    return %c : i32
  }}
  func.func @per_size(%a: memref<?xf64>, %b: memref<?xf64>, %n: index, %c: i32) -> f64 {{{DOT_BODY}
  func.func @fixed(%a: memref<?xf64>, %b: memref<?xf64>, %n: index) -> f64 {{{DOT_BODY}
  func.func @main(%a1: memref<?xf64>, %b1: memref<?xf64>, %n1: index, %c: i32,
                  %a2: memref<?xf64>, %b2: memref<?xf64>, %n2: index) -> (f64, f64) {{
    %r1 = func.call @per_size(%a1, %b1, %n1, %c) : (memref<?xf64>, memref<?xf64>, index, i32) -> f64
    %r2 = func.call @fixed(%a2, %b2, %n2) : (memref<?xf64>, memref<?xf64>, index) -> f64
    return %r1, %r2 : f64, f64
  }}
}}
"""


def ladder_inputs(per_class: int = 2, n2: int = 8_000, seed: int = 0) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(per_class):
        for cls, n in enumerate(LADDER_SIZES):
            out.append((0.5 * rng.standard_normal(n), 1.0 + 4.0 * rng.standard_normal(n), n, np.int32(cls),
                        0.5 * rng.standard_normal(n2), 1.0 + 4.0 * rng.standard_normal(n2), n2))
    return out


def record_ladder() -> Landscape:
    from approx_opt.program import MlirProgram

    program = MlirProgram(ladder_text(), "main", "ladder.mlir")
    narrow = {"fixed": [0, 2, 4, 8]}
    space = SearchSpace.from_program(program, "dynamic").narrow(narrow)
    table = measure_every(program, space, ladder_inputs(), None, "rel_l2")
    return Landscape("ladder", f"a sum over inputs of sizes {', '.join(map(str, LADDER_SIZES))} under a ladder on "
                     "the size class (threshold 1..4, decisions 0, 2, 4, 8: perforation) and a second sum under a "
                     "static perforation knob (0, 2, 4, 8); QoS = 1 - relative L2 error vs exact",
                     0.05, "dynamic", program.knobs(), narrow, {}, program.tree_features(), table)


# ---------------------------------------------------------------- rag_bm25 (compound system)

RAG_KNOBS = {"read": None, "bm25": None, "answer.sentences": None, "answer.precision": [0, 1],
             "answer.max_new_tokens": None}


def record_rag() -> Landscape:
    from examples.systems.common import METRIC, question_sets
    from examples.systems.rag import bm25 as rag_bm25

    program = rag_bm25.system()
    (questions, _), _ = question_sets(8, 0)
    fix = {s.name: 0 for s in program.knobs() if s.name not in RAG_KNOBS}
    narrow = {k: v for k, v in RAG_KNOBS.items() if v is not None}
    space = SearchSpace.from_program(program, "static").narrow(narrow).fix(fix)
    table = measure_every(program, space, questions, None, METRIC, repeats=1, rounds=1)  # seconds per run
    return Landscape("rag_bm25", "RAG-BM25 (examples/systems/rag/bm25.py) on 8 SQuAD tuning questions: the answer "
                     "step's variant, top-k, sentences per passage, precision, answer tokens (other knobs exact); "
                     "QoS = token F1 to the exact program's answer", 0.2, "static", program.knobs(), narrow, fix,
                     {}, table)


# ---------------------------------------------------------------- rag_bm25_llm (SmolLM2 answers)

# the reduced space of the LLM system: precision x passages x answer tokens x layers x one prompt cut
RAG_LLM_KNOBS = {"answer.precision": None, "answer.passages": None, "answer.max_new_tokens": None,
                 "answer.layers": None, "prompt": [0, 1]}
RAG_LLM_QUESTIONS = 16


def _rag_llm_space():
    from examples.systems.registry import SYSTEMS

    program = SYSTEMS["rag_bm25_llm"].build()
    fix = {s.name: 0 for s in program.knobs() if s.name not in RAG_LLM_KNOBS}
    narrow = {k: v for k, v in RAG_LLM_KNOBS.items() if v is not None}
    return program, SearchSpace.from_program(program, "static").narrow(narrow).fix(fix), narrow, fix


def _measure_rag_llm_slice(keys: list[str]) -> dict[str, tuple[float, float]]:
    """One worker process: the configurations `keys` of the reduced space, each timed
    paired with the exact program on the tuning questions (thread CPU time)."""
    from autotuner import Cost, Measurer
    from examples.systems.common import question_sets
    from examples.systems.registry import SYSTEMS

    program, space, _, _ = _rag_llm_space()
    (questions, answers), _ = question_sets(RAG_LLM_QUESTIONS, 0)
    metric = SYSTEMS["rag_bm25_llm"].resolve(SYSTEMS["rag_bm25_llm"].metric)
    m = Measurer(program, questions, answers, metric, Cost(clock="cpu", timing="paired", repeats=1))
    out = {}
    for key in keys:
        config = json.loads(key)
        got = m.measure(program.build(config), config)
        out[key] = (got.qos_loss, got.speedup)
        print(f"  {len(out)}/{len(keys)} {key}: loss {got.qos_loss:.3f}, {got.speedup:.2f}x", file=sys.stderr,
              flush=True)
    return out


def record_rag_llm(jobs: int = 1) -> Landscape:
    """Every configuration of the reduced space, shared among `jobs` worker processes
    (each times its own configurations paired with the exact program: a machine with many
    cores records it in minutes)."""
    import multiprocessing

    program, space, narrow, fix = _rag_llm_space()
    keys = [config_key(c) for c in configurations(space)]
    print(f"rag_bm25_llm: {len(keys)} configurations, {RAG_LLM_QUESTIONS} questions, {jobs} processes",
          file=sys.stderr, flush=True)
    slices = [keys[i::jobs] for i in range(jobs)]
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        table = {k: v for part in pool.map(_measure_rag_llm_slice, slices) for k, v in part.items()}
    return Landscape("rag_bm25_llm", f"RAG-BM25-LLM (examples/systems/rag/bm25.py, SmolLM2 answers) on "
                     f"{RAG_LLM_QUESTIONS} SQuAD tuning questions: precision, passages, answer tokens, layers, "
                     "one prompt cut (other knobs exact); QoS = gold answer containment", 0.06, "static",
                     program.knobs(), narrow, fix, {}, table)


RECORDERS = {"dots": record_dots, "ladder": record_ladder, "rag_bm25": record_rag, "rag_bm25_llm": record_rag_llm}


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["record"])
    ap.add_argument("name", choices=list(RECORDERS), help="the landscape to measure and rewrite")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (rag_bm25_llm)")
    args = ap.parse_args(argv)
    name = args.name
    t0 = time.perf_counter()
    land = RECORDERS[name](args.jobs) if name == "rag_bm25_llm" else RECORDERS[name]()
    DIR.mkdir(exist_ok=True)
    (DIR / f"{land.name}.json").write_text(land.to_json())
    print(f"{land.name}: {len(land.table)} configurations recorded in {time.perf_counter() - t0:.0f} s "
          f"-> {DIR / (land.name + '.json')}")


if __name__ == "__main__":
    main(sys.argv[1:])
