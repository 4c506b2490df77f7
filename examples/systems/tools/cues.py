"""What the words of a request say about a parameter's value, without a model:
the cue prior of the argument filler, and typed values (numbers, options, flags).

A candidate scores higher when the parameter's name or description words stand
just before it ("a base of 10"), when it follows `name=` ("a=1"), when it
follows "from"/"to" for origins/destinations, and, for names and places, when
it is capitalised or quoted; lower when its words are the function's own
subject ("quadratic equation" is not the value of `a`) or the parameter's name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from examples.systems.tools.text import (
    BOUNDARY,
    Number,
    QueryInfo,
    Span,
    cue_words,
    default_of,
    mentions,
    name_words,
    options,
    stem,
)

GENERIC = frozenset({"include", "is", "use", "show", "get", "with", "flag", "enable", "whether", "return",
                     "boolean", "true", "false", "default", "value", "detail", "info", "information", "data"})
FROM_WORDS = frozenset({"start", "origin", "from", "departure", "source", "begin", "initial", "depart"})
TO_WORDS = frozenset({"end", "destination", "to", "arrival", "target", "final", "dest"})
PLACE_WORDS = frozenset({"location", "city", "place", "country", "region", "area", "state", "town", "venue",
                         "destination", "origin", "address", "loc"})
NAME_WORDS = frozenset({"name", "title", "artist", "author", "company", "player", "team", "person", "id",
                        "symbol", "brand", "movie", "book", "song", "band", "species", "gene", "event"})
NUMERIC, TEXT = ("int", "float", "num_list"), ("string", "str_list")


@dataclass
class Param:
    name: str
    prop: dict
    required: bool
    kind: str  # int, float, bool, string, options, num_list, str_list, other
    options: list = field(default_factory=list)
    cues: set = field(default_factory=set)

    def question(self) -> str:
        """What the reader is asked about this parameter."""
        desc = self.prop.get("description", "").strip().rstrip(".")
        words = " ".join(name_words(self.name))
        return f"What is the {words} ({desc})?" if desc else f"What is the {words}?"


def params_of(function: dict) -> list[Param]:
    props = function.get("parameters", {}).get("properties", {})
    required = set(function.get("parameters", {}).get("required", []))
    out = []
    for name, prop in props.items():
        t, opts = prop.get("type", "string"), options(prop)
        item = prop.get("items", {}).get("type", "string")
        kind = ("options" if opts else "string") if t == "string" else \
            {"integer": "int", "float": "float", "boolean": "bool"}.get(t) or \
            (("num_list" if item in ("integer", "float") else "str_list") if t in ("array", "tuple") else "other")
        out.append(Param(name, prop, name in required, kind, opts, cue_words(name, prop)))
    return out


def prior(info: QueryInfo, p: Param, first: int, last: int, start: int) -> float:
    """How much the words around a candidate (word indices first..last) say it is p's value."""
    before = [stem(w.low) for w in info.words[max(0, first - 4):first]]
    after = [stem(w.low) for w in info.words[last + 1:last + 3]]
    score = 0.0
    for dist, w in enumerate(reversed(before)):
        if w in p.cues:
            score += 1.5 / (1 + 0.5 * dist)
    score += 0.5 * sum(w in p.cues for w in after)
    if re.search(r"(?<![A-Za-z0-9])" + re.escape(p.name) + r"\s*(?:=|:|is|of)\s*[\$']?$", info.text[:start], re.I):
        score += 4.0
    names = set(name_words(p.name))
    prev = info.words[first - 1].low if first > 0 else ""
    if names & FROM_WORDS:
        score += 1.5 if prev == "from" else -1.0 if prev == "to" else 0.0
    if names & TO_WORDS:
        score += 1.5 if prev == "to" else -1.0 if prev == "from" else 0.0
    return score


def number_prior(info: QueryInfo, p: Param, n: Number) -> float:
    return prior(info, p, max(n.word, 0), max(n.word, 0), n.start)


def string_prior(info: QueryInfo, p: Param, sp: Span, function_stems: set) -> float:
    score = prior(info, p, sp.first, sp.last, sp.start)
    words = info.words[sp.first:sp.last + 1]
    stems = [stem(w.low) for w in words]
    score -= 1.0 * sum(s in function_stems for s in stems) + 1.0 * sum(s in p.cues for s in stems)
    caps = all(w.text[:1].isupper() or w.text[:1].isdigit() for w in words) and sp.first > 0
    names = set(name_words(p.name))
    if names & (PLACE_WORDS | NAME_WORDS):
        score += 1.0 if caps or sp.quoted else -0.5
        prev = info.words[sp.first - 1].low if sp.first > 0 else ""
        if names & PLACE_WORDS and prev in ("in", "at", "near", "around", "from", "to"):
            score += 0.5
    score += 1.0 if sp.quoted else 0.0
    return score - 0.15 * len(words)


def typed(p: Param, n: Number) -> int | float | None:
    """The number as p's type (a percentage is a fraction for a float); None when it cannot be."""
    kind = p.kind if p.kind != "num_list" else p.prop.get("items", {}).get("type", "float")
    v = n.value / 100 if n.percent and kind in ("float",) else n.value
    if kind in ("int", "integer"):
        return int(v) if float(v).is_integer() else None
    return float(v)


def bool_value(info: QueryInfo, p: Param) -> bool | None:
    """True when the flag's own words occur in the request ("include human impact"), else None."""
    key = [w for w in name_words(p.name) if w not in GENERIC and w not in BOUNDARY]
    if key and all(stem(w) in {stem(x.low) for x in info.words} for w in key):
        return True
    return None


def option_value(info: QueryInfo, p: Param):
    """The longest option named in the request; for a required parameter without one, the
    described default (or the first option); else None."""
    found = [(mentions(info, str(o)), o) for o in p.options]
    found = [(m[1] - m[0], o) for m, o in found if m]
    if found:
        return max(found, key=lambda x: x[0])[1]
    if not p.required:
        return None
    d = default_of(p.prop)
    return d if d in p.options else p.options[0]
