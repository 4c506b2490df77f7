"""Argument filling: from a user request and one function description to the
calls (one, or several for a parallel request).

Each parameter gets candidate values from the request (tools/text.py: numbers
for numeric parameters, word spans for strings, the options its description
lists for enumerations, cue words for booleans). Candidates are scored by the
cue prior (tools/cues.py) plus, when a reader is given, the reader's span
log-probability for the parameter's question (tools/reader.py). Assignment is
exclusive (one span feeds one parameter): required strings first (a number
inside a name, "Maroon 5", is no number argument), then numbers (best pairs
first), then optional strings, flags and options, each optional one only on
evidence. Several values of one parameter: tools/multi.py."""

from __future__ import annotations

import numpy as np

from examples.systems.tools.cues import (
    NUMERIC,
    TEXT,
    Param,
    bool_value,
    number_prior,
    option_value,
    params_of,
    string_prior,
    typed,
)
from examples.systems.tools.multi import NUMBERISH, calls, clean, further_strings, grouped, runs, siblings
from examples.systems.tools.text import QueryInfo, analyse, content_stems

READER_WEIGHT = 2.0  # reader log-probabilities are divided by this before adding the cue prior
OPTIONAL_PROB = 0.5  # reader confidence that admits an optional string parameter
ALL_KINDS = NUMERIC + TEXT


def fill(query: str, function: dict, reader=None, reader_kinds: tuple = ALL_KINDS) -> list[dict]:
    """The calls of `function` for `query`. `reader` (a scorer with `score(questions,
    context, spans)`, or None: the cue prior alone) is asked about the parameters of
    the kinds in `reader_kinds`."""
    scored: dict[str, np.ndarray] = {}
    if reader is not None:
        names, questions, spans = reader_questions(query, function, reader_kinds)
        if names:
            scored = dict(zip(names, reader.score(questions, query, spans)))
    return fill_scored(query, function, scored)


def _candidates(query: str, function: dict):
    """(analysis, parameters, function stems, numeric parameters, candidates, cue-prior scores)."""
    info = analyse(query)
    params = params_of(function)
    fstems = content_stems(function.get("name", "")) | content_stems(function.get("description", ""))
    numeric = [p for p in params if p.kind in NUMERIC]
    cand: dict[str, list] = {}
    scores: dict[str, np.ndarray] = {}
    rank = {id(n): j for j, n in enumerate(info.numbers)}
    for p in params:
        if p.kind in NUMERIC:  # cue words, and a little for the parameters' order ("36 and 48")
            cand[p.name] = [n for n in info.numbers if typed(p, n) is not None]
            order = numeric.index(p)
            scores[p.name] = np.array([number_prior(info, p, n) + (0.5 if rank[id(n)] == order else 0.2 if
                                                                   abs(rank[id(n)] - order) == 1 else 0.0)
                                       for n in cand[p.name]], dtype=float)
        elif p.kind in TEXT:
            cand[p.name] = info.spans
            scores[p.name] = np.array([string_prior(info, p, sp, fstems) for sp in info.spans], dtype=float)
    return info, params, fstems, numeric, cand, scores


def reader_questions(query: str, function: dict, kinds: tuple = ALL_KINDS):
    """What the reader is asked, in one batch: (parameter names, their questions, the
    character spans of each one's candidates), for parameters of `kinds` with candidates."""
    _, params, _, _, cand, _ = _candidates(query, function)
    asked = [p for p in params if p.kind in kinds and cand.get(p.name)]
    return ([p.name for p in asked], [p.question() for p in asked],
            [[(c.start, c.end) for c in cand[p.name]] for p in asked])


def fill_scored(query: str, function: dict, reader_scores: dict[str, np.ndarray]) -> list[dict]:
    """The calls, from the cue prior plus the reader's span log-probabilities of the
    parameters in `reader_scores` (empty: the cue prior alone)."""
    info, params, fstems, numeric, cand, scores = _candidates(query, function)
    asked = [p for p in params if p.name in reader_scores]
    for p in asked:
        r = reader_scores[p.name]
        scores[p.name] = scores[p.name] + np.where(np.isfinite(r), r, -50.0) / READER_WEIGHT
    values: dict[str, list] = {}
    used: list[tuple[int, int]] = []
    best_of: dict[str, int] = {}

    def free(a: int, b: int) -> bool:
        return all(b <= s or a >= e for s, e in used)

    def choose_string(p: Param) -> None:
        s, c = scores[p.name], cand[p.name]
        order = [i for i in np.argsort(-s, kind="stable") if free(c[i].start, c[i].end)
                 and (p.required or not NUMBERISH.fullmatch(c[i].text))]
        if not order or (not p.required and not _admit(s, order, p in asked)):
            return
        best = c[order[0]]
        values[p.name] = [clean(best)]
        used.append((best.start, best.end))
        for sib in siblings(info, best, info.spans):
            if free(sib.start, sib.end):
                values[p.name].append(clean(sib))
                used.append((sib.start, sib.end))
        if p.required:
            best_of[p.name] = order[0]

    for p in params:
        if p.kind in TEXT and p.required:
            choose_string(p)
    _choose_numbers(info, numeric, cand, scores, values, free)
    for p in params:  # further values of a scalar string in another clause: parallel calls
        if p.kind == "string" and p.name in best_of and len(values[p.name]) == 1:
            more = further_strings(info, scores[p.name], cand[p.name], best_of[p.name], free, fstems)
            used.extend((sp.start, sp.end) for sp in more)
            if more:
                values[p.name] = [clean(x) for x in sorted([cand[p.name][best_of[p.name]], *more],
                                                           key=lambda x: x.start)]
    for p in params:
        if p.kind in TEXT and not p.required:
            choose_string(p)
        elif p.kind == "bool":
            v = bool_value(info, p)
            if v is not None or p.required:
                values[p.name] = [bool(v)]
        elif p.kind == "options":
            v = option_value(info, p)
            if v is not None:
                values[p.name] = [v]
    return calls(function["name"], params, values)


def _choose_numbers(info: QueryInfo, numeric: list[Param], cand: dict, scores: dict, values: dict, free) -> None:
    """Exclusive best (parameter, number) pairs (optional parameters only with cue words,
    spelled numbers last); a list parameter takes the run its number is in; a further
    number joins the parameter it fits best when its cue words say so or it is listed
    next to a number already taken ("for 10, 20 and 30 years")."""
    taken: set[int] = set()
    if grouped(info, numeric, values, free, taken):
        return
    pairs = sorted(((scores[p.name][i] + (0.0 if p.required else -2.0) - (1.0 if cand[p.name][i].spelled else 0.0),
                     pi, i) for pi, p in enumerate(numeric) for i in range(len(cand[p.name]))), key=lambda x: -x[0])
    run_of = {id(n): r for r in runs(info) for n in r}
    for _, pi, i in pairs:
        p, n = numeric[pi], cand[numeric[pi].name][i]
        if p.name in values or id(n) in taken or not free(n.start, n.end):
            continue
        if not p.required and number_prior(info, p, n) < 1.0:
            continue
        if p.kind == "num_list":
            run = [m for m in run_of[id(n)] if id(m) not in taken and typed(p, m) is not None]
            values[p.name] = [typed(p, m) for m in run]
            taken.update(id(m) for m in run)
        else:
            values[p.name] = [typed(p, n)]
            taken.add(id(n))
    scalars = [p for p in numeric if p.kind != "num_list" and p.name in values]
    for n in info.numbers:
        if id(n) in taken or not free(n.start, n.end) or n.spelled:
            continue
        fits = [(scores[p.name][cand[p.name].index(n)], p) for p in scalars if n in cand[p.name]]
        if not fits:
            continue
        _, p = max(fits, key=lambda x: x[0])
        if number_prior(info, p, n) >= 1.0 or any(id(m) in taken for m in run_of.get(id(n), [])):
            values[p.name].append(typed(p, n))
            taken.add(id(n))


def _admit(s: np.ndarray, order: list, with_reader: bool) -> bool:
    """An optional string parameter is filled only on evidence: with the reader, its best
    candidate's probability among the 20 best; without, a strong cue prior."""
    if with_reader:
        top = s[order[: min(len(order), 20)]]
        prob = float(1.0 / np.exp(top - top.max()).sum())
        return prob >= OPTIONAL_PROB and s[order[0]] > -2.0
    return s[order[0]] >= 2.0
