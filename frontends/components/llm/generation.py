"""Generation options (`base.GENERATION`) on transformers models.

transformers' `GenerationConfig` takes every option by its name, so a model that
decodes with `generate` passes the op's options on whole. The decoding loops
written here (`CausalLM`'s, the per-token exit, the compiled GPU decode) choose
each token by `next_token.next_token`, the argmax of the logits after the processors
that `generate` builds from the same config, so they pick the tokens `generate` picks;
with no option they build none and take the plain argmax (knob 0 exact). Which options
a transformers model supports follows from the declaration: the declared ones
`GenerationConfig` knows, less those a greedy decoding cannot honour (sampling and
beams, `base.NOT_GREEDY`: every loop here and `generate` with `do_sample=False` are
greedy), which a declaration is refused for.
"""

from __future__ import annotations

from functools import cache

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import GENERATION, NOT_GREEDY


@cache
def transformers_options() -> frozenset[str]:
    """The declared generation options transformers' `GenerationConfig` knows by name and
    a greedy decoding honours (no sampling or search option: `NOT_GREEDY`)."""
    from transformers import GenerationConfig

    known = GenerationConfig().to_dict()
    return frozenset(o for o in GENERATION if o in known and o not in NOT_GREEDY)


def processors(model, options: dict, prompt_tokens: int, device=None):
    """The logits processors transformers' greedy `generate` applies for `options` (a
    `LogitsProcessorList`, called as `processors(ids so far, float32 logits [1, vocab])`),
    or None when the options ask for none."""
    options = {k: v for k, v in options.items() if k != "max_new_tokens"}
    if not options:
        return None
    from transformers import GenerationConfig

    build = getattr(model, "_get_logits_processor", None)  # what `generate` itself calls; no public twin
    if build is None:
        raise ApproxError(f"this transformers version builds no logits processors for {sorted(options)}",
                          where=type(model).__name__)
    config = GenerationConfig(do_sample=False, num_beams=1, **options)
    built = build(generation_config=config, input_ids_seq_length=prompt_tokens, device=device or model.device)
    return built if len(built) else None

