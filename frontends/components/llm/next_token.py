"""The token a decoding loop writes next: the argmax of the logits after the logits
processors of the call's generation options (`generation.processors`; None: the logits as
they are), as transformers' greedy `generate` chooses it. Every loop written here
(`causal`, `gpu_decode`, `token_exit`, `engine_decode`) chooses through it, so an option a
model claims reaches each of its loops alike; sampling and search options reach none (a
greedy model does not claim them: `base.NOT_GREEDY`).

No imports: it takes torch tensors and numpy arrays alike, and runs where the rest of the
toolchain does not (`gpu_decode`)."""

from __future__ import annotations


def next_token(logits, processors=None, seen=None) -> int:
    """The index of the largest of `logits` ([vocab] or [1, vocab], torch or numpy; ties: the
    first) after `processors(ids so far [1, L], float32 logits [1, vocab])`; `seen` is those
    ids, or a function giving them (called only when there are processors)."""
    if processors is not None:
        logits = processors(seen() if callable(seen) else seen, logits.reshape(1, -1).float())
    return int(logits.argmax())
