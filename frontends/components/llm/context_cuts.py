"""The cuts of a generate op's contexts before the model reads them (the knobs
that shorten the prompt, whose prefill is most of an LLM answer's time on a CPU):
- `limit_contexts`: the first passages, each cut to its first characters;
- `select_sentences`: of each passage, the sentences sharing most words with the question;
- `truncate_tokens`: the passages together cut to a token budget (the tail goes);
- `compress_tokens`: the passages together brought to a token budget by dropping
  their sentences that share fewest words with the question (wherever they are).
Every cut leaves the contexts as they are when its setting is None (knob 0), and
when they already fit. Token budgets count with `spans(text)` (the character span
of each token): the model's tokenizer where the runtime has it (`AnswerModel.
token_spans`), else words (`word_spans`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

Spans = Callable[[str], Sequence[tuple[int, int]]]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")
_NON_SPACE = re.compile(r"\S+")
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from how in is it its of on or that the this to was were what when "
    "where which who whom whose why with".split())


def word_spans(text: str) -> list[tuple[int, int]]:
    """The character span of each whitespace-separated word: the token count of a
    model whose tokenizer the runtime does not have (SmolLM2's is ~1.3 per word)."""
    return [m.span() for m in _NON_SPACE.finditer(text)]


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def limit_contexts(contexts: Sequence[str], passages: int | None = None, chars: int | None = None) -> list[str]:
    """The first `passages` passages, each cut to its first `chars` characters
    (None = no limit; both None = unchanged)."""
    out = list(contexts) if passages is None else list(contexts[:passages])
    return out if chars is None else [c[:chars] for c in out]


def select_sentences(question: str, contexts: Sequence[str], keep: int | None) -> list[str]:
    """Of each passage, the `keep` sentences that share the most content words with
    the question, in their order (ties: the earlier). Unlike cutting passages to
    their first characters, it does not depend on where in a long passage the
    answer is (None = unchanged)."""
    if keep is None:
        return list(contexts)
    words = _content_words(question)
    out = []
    for c in contexts:
        sents = _SENTENCE_END.split(c)
        if len(sents) <= keep:
            out.append(c)
            continue
        best = sorted(range(len(sents)), key=lambda i: (-len(words & _content_words(sents[i])), i))[:keep]
        out.append(" ".join(sents[i] for i in sorted(best)))
    return out


def truncate_tokens(contexts: Sequence[str], budget: int | None, spans: Spans = word_spans) -> list[str]:
    """The passages in order until `budget` tokens are read: the one that crosses it
    cut after its last token that fits, the later ones dropped (None = unchanged)."""
    if budget is None:
        return list(contexts)
    out, left = [], budget
    for c in contexts:
        if left <= 0:
            break
        tokens = spans(c)
        out.append(c if len(tokens) <= left else c[:tokens[left - 1][1]])
        left -= len(tokens)
    return out


def compress_tokens(question: str, contexts: Sequence[str], budget: int | None,
                    spans: Spans = word_spans) -> list[str]:
    """The passages brought to `budget` tokens by keeping their sentences that share
    the most content words with the question (ties: the earlier passage, then the
    earlier sentence) while they fit, each passage's kept sentences in their order;
    a passage left with none is dropped (None, or contexts that fit: unchanged)."""
    if budget is None:
        return list(contexts)
    sents = [(p, i, s) for p, c in enumerate(contexts) for i, s in enumerate(_SENTENCE_END.split(c))]
    sizes = [len(spans(s)) for _, _, s in sents]
    if sum(sizes) <= budget:
        return list(contexts)
    words = _content_words(question)
    order = sorted(range(len(sents)), key=lambda j: (-len(words & _content_words(sents[j][2])), j))
    kept, left = set(), budget
    for j in order:
        if sizes[j] <= left:
            kept.add(j)
            left -= sizes[j]
    out = []
    for p in range(len(contexts)):
        chosen = [sents[j][2] for j in sorted(kept) if sents[j][0] == p]
        if chosen:
            out.append(" ".join(chosen))
    return out


__all__ = ["word_spans", "limit_contexts", "select_sentences", "truncate_tokens", "compress_tokens"]
