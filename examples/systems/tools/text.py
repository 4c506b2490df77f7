"""Query analysis for the tool-calling agent: words, numbers and candidate
argument spans of a BFCL question, and what a parameter's schema says about
its values (type, allowed options, cue words). Pure text processing, no model,
so both the reader-based and the regex-only argument fillers share it.

Candidate spans: a question is cut into chunks at punctuation and at function
words ("from", "in", "and", "the", ...); any run of up to MAX_SPAN_WORDS words
inside one chunk, or one quoted string, is a candidate value of a string
parameter; numbers (digits, "$1,000", "5%", "10cm", "five") are the candidates
of numeric parameters."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_SPAN_WORDS = 5

# words that end a chunk (a value never contains them); the verbs are those of BFCL requests
BOUNDARY = frozenset("""
a an the and or but nor of in on at to from for with within without by about into onto over under between
among through during before after above below up down near around via per than as is are was were be been
being am do does did has have had will would shall should can could may might must this that these those it
its their there here what which who whom whose when where why how much many me my i you your we our us he she
him her they them please find get give tell show calculate compute determine estimate predict provide fetch
retrieve identify list search look lookup check want need like would let know also then same another each
all any some other using use used if not only just right now next last using respectively both either
""".split())
CONJUNCTIONS = frozenset({"and", "or", "&", "vs", "versus", "plus"})
NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
                "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "dozen": 12, "single": 1,
                "twice": 2, "thrice": 3, "double": 2, "triple": 3, "half": 0.5}
_WORD = re.compile(r"[A-Za-z0-9$€£%°²³.\-+/^*=#@:&_']+")
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])[-−]?[$€£]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:e-?\d+)?")
_QUOTED = re.compile(r"""(?:'([^']{1,60})'|"([^"]{1,60})"|`([^`]{1,60})`|‘([^’]{1,60})’|“([^”]{1,60})”)""")
_STRIP = " \t\n.,;:!?()[]{}\"'`’‘“”"


@dataclass(frozen=True)
class Word:
    text: str  # as written, outer punctuation stripped
    low: str
    start: int
    end: int
    stop: bool  # a boundary word
    chunk: int  # chunk index (-1 for boundary words)


@dataclass(frozen=True)
class Number:
    value: float
    start: int
    end: int
    is_int: bool
    percent: bool
    word: int  # index of the word holding it
    spelled: bool = False  # "five"


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str
    first: int  # first word index
    last: int  # last word index
    quoted: bool = False


@dataclass
class QueryInfo:
    text: str
    words: list[Word]
    numbers: list[Number]
    spans: list[Span]


def name_words(name: str) -> list[str]:
    """`get_stockPrice.v2` -> ['get', 'stock', 'price', 'v2']."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", name.lower()) if w]


def stem(w: str) -> str:
    """A crude stem (plural 's', '-ing', '-ed'), enough to match 'stops' with 'stop'."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            return w[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return w


def content_stems(text: str) -> set[str]:
    return {stem(w) for w in name_words(text) if w not in BOUNDARY and len(w) > 1}


def _parse_number(raw: str) -> tuple[float, bool, bool] | None:
    s = raw.replace("−", "-").replace(",", "").lstrip("$€£")
    neg = s.startswith("-")
    s = s.lstrip("-").lstrip("$€£")
    try:
        v = float(s)
    except ValueError:
        return None
    v = -v if neg else v
    return v, "." not in s and "e" not in s, False


def analyse(text: str) -> QueryInfo:
    """Words, numbers and candidate spans of a question. Not cached: the autotuner times
    several passes over the same requests, and a cache would time only the first."""
    words: list[Word] = []
    chunk, open_chunk, last_end = 0, False, 0
    for m in _WORD.finditer(text):
        raw = m.group(0)
        core = raw.strip(_STRIP)
        if not core:
            continue
        start = m.start() + len(raw) - len(raw.lstrip(_STRIP))
        end = start + len(core)
        if _breaks(text[last_end:start], words[-1].text if words else ""):
            open_chunk = False
        low = core.lower()
        if low in BOUNDARY:
            open_chunk = False
            words.append(Word(core, low, start, end, True, -1))
        else:
            if not open_chunk:
                chunk, open_chunk = chunk + 1, True
            words.append(Word(core, low, start, end, False, chunk))
        last_end = end
    numbers = _numbers(text, words)
    spans = _spans(text, words)
    return QueryInfo(text, words, numbers, spans)


_ABBREV = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]?$|^(?:Inc|Corp|Co|Ltd|St|Dr|Mr|Mrs|Ms|Jr|Sr|vs|etc|No)$")


def _breaks(gap: str, previous: str) -> bool:
    """Does the text between two words end a chunk (punctuation, quotes, a sentence end)?"""
    if any(c in gap for c in ",;:!?()[]\"“”'`‘’"):
        return True
    return "." in gap and not _ABBREV.match(previous)


def _word_at(words: list[Word], pos: int) -> int:
    for i, w in enumerate(words):
        if w.start <= pos < w.end:
            return i
    return -1


def _numbers(text: str, words: list[Word]) -> list[Number]:
    out = []
    for m in _NUMBER.finditer(text):
        parsed = _parse_number(m.group(0).rstrip(","))
        if parsed is None:
            continue
        v, is_int, _ = parsed
        end = m.start() + len(m.group(0).rstrip(","))
        after = text[end:end + 8].lstrip()
        mult = re.match(r"(million|billion|thousand)\b", after, re.I) or \
            (re.match(r"([MBK])\b", text[end:end + 2]) if m.group(0).lstrip("-−")[:1] in "$€£" else None)
        if mult:
            v *= {"million": 1e6, "billion": 1e9, "thousand": 1e3, "m": 1e6, "b": 1e9, "k": 1e3}[mult.group(1).lower()]
            is_int = float(v).is_integer()
        percent = text[end:end + 1] == "%" or text[end:end + 9].lstrip().lower().startswith("percent")
        out.append(Number(v, m.start(), end, is_int, percent, _word_at(words, m.start())))
    for i, w in enumerate(words):
        if w.low in NUMBER_WORDS and not any(n.word == i for n in out):
            v = NUMBER_WORDS[w.low]
            out.append(Number(float(v), w.start, w.end, float(v).is_integer(), False, i, True))
    return sorted(out, key=lambda n: n.start)


def _spans(text: str, words: list[Word]) -> list[Span]:
    spans: dict[tuple[int, int], Span] = {}
    for m in _QUOTED.finditer(text):
        g = next(i for i in range(1, 6) if m.group(i) is not None)
        s, e = m.start(g), m.end(g)
        inside = [i for i, w in enumerate(words) if w.start >= s and w.end <= e] or [_word_at(words, s)]
        spans[(s, e)] = Span(s, e, text[s:e].strip(), inside[0], inside[-1], True)
    i = 0
    while i < len(words):
        if words[i].stop:
            i += 1
            continue
        j = i
        while j + 1 < len(words) and words[j + 1].chunk == words[i].chunk:
            j += 1
        for a in range(i, j + 1):
            for b in range(a, min(j, a + MAX_SPAN_WORDS - 1) + 1):
                s, e = words[a].start, words[b].end
                spans.setdefault((s, e), Span(s, e, text[s:e], a, b))
        i = j + 1
    return sorted(spans.values(), key=lambda sp: (sp.start, sp.end))


# ---------------------------------------------------------------- what a parameter's schema says

_OPTION = re.compile(r"""['"‘“]([^'"’”]{1,40})['"’”]""")


def options(prop: dict) -> list:
    """Allowed values: the schema's enum, else the quoted options its description lists
    ("Allowed values: 'copper', 'aluminum'", "'real' for ... 'all' for ...")."""
    if prop.get("enum"):
        return list(prop["enum"])
    desc = prop.get("description", "")
    if prop.get("type") != "string" or not re.search(r"allowed|options?|choices?|one of|either|can be|"
                                                      r"possible|values?|e\.g|such as|or\b", desc, re.I):
        return []
    found = [o.strip() for o in _OPTION.findall(desc)]
    return [o for o in dict.fromkeys(found) if o and len(o.split()) <= 4]


def default_of(prop: dict):
    """The default the description names ("Default is 'cm'", "default: 10"), or None."""
    if "default" in prop:
        return prop["default"]
    m = re.search(r"default(?:s)?(?: value)?(?: is| to| of|:)?\s*['\"]?([\w .\-]+?)['\"]?(?:[.,;)]|$| if)",
                  prop.get("description", ""), re.I)
    return m.group(1).strip() if m else None


def cue_words(name: str, prop: dict) -> set[str]:
    """Content stems of the parameter's name and description (what the question says near its value)."""
    return content_stems(name) | content_stems(prop.get("description", ""))


def mentions(info: QueryInfo, phrase: str) -> tuple[int, int] | None:
    """Where `phrase` occurs in the question as whole words (case-insensitive), or None."""
    if not phrase.strip():
        return None
    m = re.search(r"(?<![A-Za-z0-9])" + re.escape(phrase.strip().lower()) + r"(?![A-Za-z0-9])", info.text.lower())
    if m is None and "_" in phrase:
        return mentions(info, phrase.replace("_", " "))
    return (m.start(), m.end()) if m else None
