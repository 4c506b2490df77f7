"""Several values of one parameter: array arguments and parallel calls.

A request lists several values in three shapes: coordinated spans after the
chosen one ("Taylor Swift and Maroon 5", "Santa Barbara and Monterey"), further
spans introduced like the chosen one in another clause ("from San Francisco in
2019 ... in Texas in 2018"), and numbers (listed together, "for 10, 20 and 30
years", or in groups as many as the numeric parameters, "3 and 4, 5 and 12").
An array parameter takes all its values; scalar parameters with several values
make one call per value, values zipped in order and single values repeated."""

from __future__ import annotations

import re

import numpy as np

from examples.systems.tools.cues import Param, number_prior, typed
from examples.systems.tools.text import CONJUNCTIONS, QueryInfo, Span, stem

PARALLEL_CUE = re.compile(r"\b(?:and|also|another|respectively|then|same|each|both|as well as)\b|,", re.I)
MULTI_MARGIN = 3.0  # a further value of a string parameter scores within this of its best
NUMBERISH = re.compile(r"[\d.,$%-]+")


def clean(sp: Span) -> str:
    return sp.text.strip(" .,'\"`")


def siblings(info: QueryInfo, sp: Span, spans: list[Span]) -> list[Span]:
    """Whole chunks coordinated with `sp` ("A, B and C") after it, in order."""
    out, last = [], sp.last
    while True:
        j = last + 1
        while j < len(info.words) and (info.words[j].low in CONJUNCTIONS or info.words[j].low in ("also", "the")):
            j += 1
        gap = info.text[info.words[last].end:info.words[j].start] if j < len(info.words) else ""
        if j >= len(info.words) or info.words[j].stop or (j == last + 1 and "," not in gap and "/" not in gap):
            return out
        if re.search(r"[.;:?!]", gap.replace("..", "")):
            return out
        k = j
        while k + 1 < len(info.words) and info.words[k + 1].chunk == info.words[j].chunk and k - j < 4:
            k += 1
        k = min(k, j + max(0, sp.last - sp.first) + 1)
        nxt = next((s for s in spans if s.first == j and s.last == k), None)
        if nxt is None:
            return out
        out.append(nxt)
        last = k


def _other_clause(info: QueryInfo, a: Span, b: Span) -> bool:
    """Are two spans separated by a conjunction, a comma or a sentence end?"""
    lo, hi = (a, b) if a.start < b.start else (b, a)
    gap = info.text[lo.end:hi.start]
    return bool(re.search(r"[,.;?]|\b(?:and|also|another|or|then|while|whereas)\b", gap, re.I))


def _same_cue(info: QueryInfo, a: Span, b: Span) -> bool:
    """Is a further value introduced like the first one ("in X ... in Y", "for X ... for Y")?"""
    def cue(sp: Span) -> str:
        k = sp.first - 1
        while k >= 0 and info.words[k].low in ("the", "a", "an"):
            k -= 1
        return info.words[k].low if k >= 0 else ""
    return cue(a) == cue(b) != ""


def further_strings(info: QueryInfo, scores: np.ndarray, spans: list[Span], best: int, free, fstems: set
                    ) -> list[Span]:
    """Spans scoring within MULTI_MARGIN of the best one, in another clause, introduced by the
    same word, not numbers and not about the function itself (at most 3)."""
    if not PARALLEL_CUE.search(info.text):
        return []
    more = []
    for i in np.argsort(-scores, kind="stable"):
        if scores[i] < scores[best] - MULTI_MARGIN or len(more) >= 3:
            break
        sp = spans[i]
        if i != best and free(sp.start, sp.end) and all(sp.end <= m.start or sp.start >= m.end for m in more) \
                and _other_clause(info, spans[best], sp) and \
                _same_cue(info, spans[best], sp) and not NUMBERISH.fullmatch(sp.text) and \
                not any(stem(w.low) in fstems for w in info.words[sp.first:sp.last + 1]):
            more.append(sp)
    return more


def grouped(info: QueryInfo, numeric: list[Param], values: dict, free, taken: set) -> bool:
    """Numbers without cue words, a multiple of the numeric parameters ("sides 3 and 4, 5 and
    12"): consecutive groups, one call each, in the parameters' order."""
    scalars = [p for p in numeric if p.kind != "num_list" and p.required]
    nums = [n for n in info.numbers if not n.spelled and free(n.start, n.end)]
    if len(scalars) < 2 or len(scalars) != len([p for p in numeric if p.required]) or \
            len(nums) < 2 * len(scalars) or len(nums) % len(scalars):
        return False
    if any(number_prior(info, p, n) >= 1.0 for p in scalars for n in nums):
        return False
    groups = [nums[i:i + len(scalars)] for i in range(0, len(nums), len(scalars))]
    if any(typed(p, g[j]) is None for g in groups for j, p in enumerate(scalars)):
        return False
    for j, p in enumerate(scalars):
        values[p.name] = [typed(p, g[j]) for g in groups]
    taken.update(id(n) for n in nums)
    return True


def runs(info: QueryInfo) -> list[list]:
    """Numbers listed together ("85, 90, 88 and 91", "[10, 15, 12]"): maximal runs."""
    out, cur = [], []
    for n in info.numbers:
        if cur and re.fullmatch(r"\s*(?:,|,?\s*(?:and|or|&))\s*[$€£]?", info.text[cur[-1].end:n.start]):
            cur.append(n)
        else:
            if cur:
                out.append(cur)
            cur = [n]
    return out + ([cur] if cur else [])


def calls(name: str, params: list[Param], values: dict[str, list]) -> list[dict]:
    """The calls of function `name`: one per value of the parameters with several."""
    args_multi = {}
    for p in params:
        if p.name in values:
            args_multi[p.name] = [values[p.name]] if p.kind in ("str_list", "num_list") else values[p.name]
    n = max((len(v) for v in args_multi.values()), default=1)
    return [{name: {k: (v[i] if len(v) == n else v[min(i, len(v) - 1)] if len(v) > 1 else v[0])
                    for k, v in args_multi.items()}} for i in range(n)]
