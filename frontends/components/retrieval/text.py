"""Text preprocessing for BM25, in three levels (the `preprocess` knob).

Level 0 (exact): lowercase, split on anything that is not a letter or digit
(punctuation removed), drop English stopwords, light suffix stemming.
Level 1: as 0 without stemming. Level 2: as 1 keeping stopwords.
Documents and queries must share a level (the index is built per level).
"""

from __future__ import annotations

import re
from functools import lru_cache

from approx_dialect.diagnostics import ApproxError

LEVELS = (0, 1, 2)
LEVEL_NAMES = {0: "full (stopwords, stemming)", 1: "no stemming", 2: "no stemming, stopwords kept"}

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom whose why will
with would you your yours yourself yourselves s t
""".split())

_WORD = re.compile(r"[^\W_]+")
_VOWEL = re.compile(r"[aeiouy]")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light suffix stripper (plural, -ing, -ed, -ly), for recall, not linguistics:
    'countries' -> 'country', 'played' -> 'play', 'running' -> 'run'."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= 3 and _VOWEL.search(base):
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running -> run
            return base
    if word.endswith("ly") and len(word) >= 6:
        return word[:-2]
    return word


def tokenize(text: str, level: int = 0) -> list[str]:
    """The terms of `text` at a preprocessing level (see the module docstring)."""
    if level not in LEVELS:
        raise ApproxError(f"preprocessing level must be one of {list(LEVELS)}, got {level!r}", where="retrieval.text")
    words = _WORD.findall(text.lower())
    if level == 2:
        return words
    words = [w for w in words if w not in STOPWORDS]
    return words if level == 1 else [stem(w) for w in words]
