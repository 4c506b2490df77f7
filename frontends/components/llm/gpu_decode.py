"""Greedy decoding on a GPU with a static KV cache and a compiled decode step.

On a GPU a small model's time goes to decode, and there to launching many small
kernels per token (eager `generate`: ~30 ms per token for SmolLM2-135M on an H100,
while reading its weights once takes well under 1 ms). So the exact path on CUDA
prefills eagerly into a `StaticCache`, then runs each decode step as one captured
CUDA graph (`torch.compile(mode="reduce-overhead", fullgraph=True)`): the same
arithmetic, so the same greedy tokens as the eager path, at a fraction of the
launches. The step is compiled once per model (a variant: once per precision and
depth), on its first call, outside timed passes when the caller warms it up; the
cache is sized once (`max_len`) and reset per question, and positions are slices of
one device tensor, so nothing is recompiled per question.

Only torch and transformers are imported here (and `next_token`, which imports nothing):
the module runs where the rest of the toolchain does not (a GPU machine without MLIR's
bindings).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch

from frontends.components.llm.next_token import next_token


def cache_keyword(model) -> str:
    """The forward argument that takes the KV cache (transformers renamed it)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


class CompiledGreedy:
    """`decoder(ids, n, stop, processors)` -> (new token ids, their log-probabilities):
    greedy decoding of at most `n` tokens after the prompt `ids` ([1, L] on the model's
    device), ending after the first token for which `stop(tokens so far)` is true (None:
    never); with `processors` (transformers' logits processors of the call's generation
    options) each token is chosen from the float32 logits after them, as `generate` does
    (`next_token`)."""

    def __init__(self, model, max_len: int = 2048):
        from transformers import StaticCache

        self.model, self.max_len = model, max_len
        self.cache = StaticCache(config=model.config, max_cache_len=max_len)
        self.cache_kw = cache_keyword(model)
        self.positions = torch.arange(max_len, device=model.device)
        self.step = torch.compile(self._step, mode="reduce-overhead", fullgraph=True)
        self._static = False

    def _step(self, token: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=token, position_ids=position.view(1, 1), cache_position=position,
                         use_cache=True, **{self.cache_kw: self.cache})
        return out.logits[:, -1, :]

    def _mark_static(self) -> None:
        """After the first prefill filled the cache's tensors: their addresses are fixed,
        so the captured graph reads and writes them in place."""
        for layer in getattr(self.cache, "layers", []):
            for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
                if isinstance(t, torch.Tensor):
                    torch._dynamo.mark_static_address(t)
        self._static = True

    @torch.inference_mode()
    def __call__(self, ids: torch.Tensor, n: int, stop: Callable[[list[int]], bool] | None = None, processors=None):
        length = ids.shape[1]
        if length + n > self.max_len:
            raise ValueError(f"prompt of {length} tokens + {n} new tokens exceeds the static cache of {self.max_len}")
        self.cache.reset()
        out = self.model(input_ids=ids, cache_position=self.positions[:length], use_cache=True, logits_to_keep=1,
                         **{self.cache_kw: self.cache})
        if not self._static:
            self._mark_static()
        logits = out.logits[:, -1, :]
        tokens: list[int] = []
        logps: list[float] = []
        seen = ids
        for i in range(n):
            token = next_token(logits, processors, seen)  # processors: outside the captured graph
            tokens.append(token)
            logps.append(float(torch.log_softmax(logits.float(), -1)[0, token]))
            if (stop is not None and stop(tokens)) or i == n - 1:
                break
            fed = torch.tensor([[token]], dtype=ids.dtype, device=ids.device)
            if processors is not None:
                seen = torch.cat([seen, fed], 1)
            torch.compiler.cudagraph_mark_step_begin()
            logits = self.step(fed, self.positions[length + i:length + i + 1]).clone()
        return tokens, logps


def eager_greedy(model, ids: torch.Tensor, n: int) -> list[int]:
    """`n` greedy tokens after `ids` by transformers' eager `generate` (the reference the
    compiled path must match; end of sequence ignored)."""
    from transformers import GenerationConfig

    config = GenerationConfig(max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1, use_cache=True,
                              eos_token_id=None, pad_token_id=0)
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=config)
    return out[0, ids.shape[1]:].tolist()


def smollm2_shape(seed: int = 0, dtype=torch.float32, device: str = "cuda"):
    """A model of SmolLM2-135M's shape with random weights (a speed or exactness probe on
    a machine without the weights: the same kernels run, at the same cost)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                         rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True, hidden_act="silu")
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
