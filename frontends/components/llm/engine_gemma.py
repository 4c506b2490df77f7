"""What onnxruntime-genai's model builder (0.18) needs to build Gemma 3 (`gemma3_text`) as
eager torch float32 runs it, applied in this process for the length of one build.

Its Gemma3 builder reads the transformers 4 config (`rope_theta`, `rope_local_base_freq`, a
flat `rope_parameters`); transformers 5 nests both thetas under `rope_parameters` by layer
type, where the builder fails (KeyError 'rope_type'). The config is given the old form.
Three choices of the builder would change the answers, and are set back to torch's:
- the embedding scale: it rounds sqrt(hidden) to 2 decimals (25.3 for 25.298...); torch
  multiplies by float32(sqrt(640));
- the sliding window: its GroupQueryAttention's `local_window_size` counts the keys a query
  sees, itself included (512 matched torch on a 544-token prompt to 4e-5 in the logits; the
  builder's 511 differed by 0.06);
- its windowed KV cache for the local layers (`windowed_kv_cache=false`, `BUILD_OPTIONS`):
  it needs a cache of at least the window, which a decode of prompt + 16 tokens never has."""

from __future__ import annotations

import contextlib

import numpy as np

MODEL_TYPE = "gemma3_text"
BUILD_OPTIONS = ("windowed_kv_cache=false",)  # the builder's --extra_options a Gemma 3 build adds
FIXES = "gemma3-builder-fixes-1"  # names these fixes in the build's cache key: other fixes, another build


def is_gemma3(config) -> bool:
    return getattr(config, "model_type", None) == MODEL_TYPE


def key_names(config) -> tuple[str, ...]:
    """What the build cache key adds for `config`'s model: the fixes' name for Gemma 3."""
    return (FIXES,) if is_gemma3(config) else ()


@contextlib.contextmanager
def builder_fixes(config):
    """The builder's Gemma3Model built as torch runs `config` (the transformers config of the
    model being built) while the block runs; nothing changes for other models."""
    if not is_gemma3(config):
        yield
        return
    import onnxruntime_genai.models  # noqa: F401  (puts the builder's folder on sys.path, as its CLI does)
    from builders import gemma as builders_gemma

    cls = builders_gemma.Gemma3Model
    original = cls.__init__
    thetas = {kind: p["rope_theta"] for kind, p in config.rope_parameters.items()}
    window, hidden = int(config.sliding_window), int(config.hidden_size)

    def init(self, cfg, *args, **kwargs):
        if isinstance(getattr(cfg, "rope_parameters", None), dict) and "full_attention" in cfg.rope_parameters:
            cfg.rope_theta = thetas["full_attention"]
            cfg.rope_local_base_freq = thetas["sliding_attention"]
            cfg.rope_parameters = {"rope_type": "default", "rope_theta": cfg.rope_theta}
        original(self, cfg, *args, **kwargs)
        self.embed_attrs["scale"] = float(np.float32(hidden ** 0.5))
        self.window_size = window

    cls.__init__ = init
    try:
        yield
    finally:
        cls.__init__ = original
