"""Generation options (`base.GENERATION`) on transformers models.

transformers' `GenerationConfig` takes every option by its name, so a model that
decodes with `generate` passes the op's options on whole. The decoding loops
written here (`CausalLM`'s, the per-token exit, the compiled GPU decode) choose
each token from the logits after the processors that `generate` builds from the
same config, so they pick the tokens `generate` picks; with no option they build
none and run as before (knob 0 exact). Which options a transformers model
supports follows from the declaration: the declared ones `GenerationConfig` knows.
"""

from __future__ import annotations

from functools import cache

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import GENERATION


@cache
def transformers_options() -> frozenset[str]:
    """The declared generation options transformers' `GenerationConfig` knows by name."""
    from transformers import GenerationConfig

    known = GenerationConfig().to_dict()
    return frozenset(o for o in GENERATION if o in known)


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

