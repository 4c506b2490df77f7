"""Per-token early exit for a decoder-only model with trained exits (CALM-style).

The prompt is prefilled through every layer. Each later token runs the layers one
at a time and, at each trained exit depth d (shallowest first), reads the exit's
logits (exit map d, the shared final norm, the shared head); when their top-token
probability is at least `threshold` the token is that exit's argmax and the
remaining layers are skipped, else it goes on to the next exit or the top.

A skipped layer still needs this token's key and value, or every later token
would attend to a hole. As CALM does, the exit's hidden state is copied up: each
skipped layer's K/V projections (its input norm, k_proj, v_proj, the rotary
position) are computed from the state at depth d and appended to its cache, so
later tokens attend to every position in every layer.

Only torch and transformers (a Llama-shaped model: SmolLM2) are used here; it
runs eagerly on whatever device the model is on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from frontends.components.llm.gpu_decode import cache_keyword
from frontends.components.llm.next_token import next_token


@dataclass(frozen=True)
class Decoded:
    """Greedy tokens, their log-probabilities under the logits that chose them, and the
    depth each left the layer stack at (the top for the first: the prefill's)."""

    tokens: list[int]
    logps: list[float]
    depths: list[int]


def greedy(model, ids: torch.Tensor, n: int, threshold: float | None, exits: Sequence[int],
           stop: Callable[[list[int]], bool], cache=None, processors=None) -> Decoded:
    """At most `n` greedy tokens after the prompt `ids` ([1, L]) with the KV cache (an
    empty transformers `DynamicCache`, a new one when None), ending after the first token
    for which `stop(tokens so far)` holds. A token leaves at the first of `exits` (depths
    below the model's own) whose top-token probability is >= `threshold`; None never
    exits (every token from the top, as `generate` gives). With `processors` (transformers'
    logits processors of the call's generation options) every exit's and the top's
    logits are read after them, in float32, as `generate` reads the top's (`next_token`)."""
    from transformers import DynamicCache

    depth = len(model.model.layers)
    checks = sorted(k for k in exits if k < depth) if threshold is not None else []
    cache = DynamicCache(config=model.config) if cache is None else cache
    keyword = cache_keyword(model)
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True, logits_to_keep=1,
                    **{keyword: cache})
        logits, at = out.logits[0, -1], depth
        tokens: list[int] = []
        logps: list[float] = []
        depths: list[int] = []

        def seen() -> torch.Tensor:
            return torch.cat([ids, torch.tensor([tokens], dtype=ids.dtype, device=ids.device)], 1)

        def chosen(raw: torch.Tensor) -> torch.Tensor:  # an exit's logits as its confidence reads them
            return raw if processors is None else processors(seen(), raw.reshape(1, -1).float())[0]

        while True:
            token = next_token(logits, processors, seen)
            tokens.append(token)
            logps.append(float(torch.log_softmax(logits.float(), -1)[token]))
            depths.append(at)
            if len(tokens) >= n or stop(tokens):
                return Decoded(tokens, logps, depths)
            position = ids.shape[1] + len(tokens) - 1
            logits, at = _step(model, token, position, cache, checks, threshold, chosen)


def _step(model, token: int, position: int, cache, checks: list[int], threshold: float | None,
          chosen: Callable[[torch.Tensor], torch.Tensor] = lambda raw: raw):
    """(logits, depth) of one decoded token: layer by layer, leaving at the first
    confident exit of `checks` (its skipped layers' K/V filled), else at the top; an
    exit's confidence is read from `chosen(its logits)`."""
    inner = model.model
    keyword = cache_keyword(inner.layers[0])
    device = inner.embed_tokens.weight.device
    positions = torch.tensor([[position]], device=device)
    hidden = inner.embed_tokens(torch.tensor([[token]], device=device))
    rotary = inner.rotary_emb(hidden, position_ids=positions)
    for i, layer in enumerate(inner.layers):
        hidden = layer(hidden, attention_mask=None, position_ids=positions, use_cache=True,
                       position_embeddings=rotary, **{keyword: cache})
        if i + 1 in checks:
            logits = exit_logits(model, i + 1, hidden)
            if float(torch.softmax(chosen(logits).float(), -1).max()) >= threshold:
                _fill_skipped(inner.layers[i + 1:], hidden, rotary, cache)
                return logits, i + 1
    return model.lm_head(inner.norm(hidden))[0, -1], len(inner.layers)


def exit_logits(model, k: int, hidden: torch.Tensor) -> torch.Tensor:
    """The logits of exit k ([vocab]) from layer k's output `hidden` ([1, 1, width]): the
    exit map, then the final norm and head the top shares (as `examples/train_llm.py`
    trains them)."""
    norm = model.model.norm
    if isinstance(norm, nn.Sequential):  # a `truncated` model: its own exit map, then the shared norm
        norm = norm[-1]
    return model.lm_head(norm(model.exit_maps[str(k)](hidden)))[0, -1]


def _fill_skipped(layers, hidden: torch.Tensor, rotary, cache) -> None:
    """The key and value of this token in each skipped layer, computed from the exit's
    hidden state (copied up, CALM-style) and appended to that layer's cache."""
    from transformers.models.llama.modeling_llama import rotate_half

    cos, sin = (t.unsqueeze(1) for t in rotary)
    for layer in layers:
        attn = layer.self_attn
        x = layer.input_layernorm(hidden)
        shape = (*x.shape[:-1], -1, attn.head_dim)
        key = attn.k_proj(x).view(shape).transpose(1, 2)
        value = attn.v_proj(x).view(shape).transpose(1, 2)
        cache.update(key * cos + rotate_half(key) * sin, value, attn.layer_idx)
