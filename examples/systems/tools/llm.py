"""SmolLM2 writing BFCL calls: the prompt it is trained and asked with, the
training targets, and the reader-based filler as an answer model (the cheap
stage of the LLM agent's cascade).

The LLM reads the request and function schemas (one line per parameter: type,
optional/default, options) and writes the calls in the Python syntax BFCL models
write, on one line (`[f(a=1, b='x'), f(a=2, b='y')]`), which
`frontends.components.tools.parse_calls` reads. Both answer models of the
agent's `component.generate` op take (request, [function]) and answer with an
`Answer` whose text is such a call list, so a cascade can put either first."""

from __future__ import annotations

import json
from collections.abc import Sequence

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.base import Answer, AnswerModel
from frontends.components.tools.bfcl import format_calls, parse_calls
from frontends.components.variants import Variants

INSTRUCTION = ("Write the function calls that do what the request asks, as a Python list of calls with "
               "keyword arguments, on one line.")
DEFAULT_MAX_NEW_TOKENS = 160  # the longest development target (parallel calls) takes 130 tokens


def _type_of(prop: dict) -> str:
    kind = prop.get("type", "any")
    if kind in ("array", "tuple") and isinstance(prop.get("items"), dict):
        return f"{kind} of {prop['items'].get('type', 'any')}"
    if kind == "dict" and isinstance(prop.get("properties"), dict):
        return "dict with " + ", ".join(f"{k}: {_type_of(v)}" for k, v in prop["properties"].items())
    return kind


def schema_text(function: dict) -> str:
    """The function as the prompt shows it: name and description, then one line per parameter."""
    params = function.get("parameters", {})
    required = set(params.get("required", ()))
    lines = [f"{function['name']}: {' '.join(function.get('description', '').split())}"]
    for name, prop in params.get("properties", {}).items():
        notes = [_type_of(prop)]
        if name not in required:
            notes.append("optional" + (f", default {json.dumps(prop['default'])}" if "default" in prop else ""))
        if prop.get("enum"):
            notes.append("one of " + ", ".join(json.dumps(v) for v in prop["enum"]))
        lines.append(f"- {name} ({'; '.join(notes)}): {' '.join(str(prop.get('description', '')).split())}")
    return "\n".join(lines)


def tools_prompt(request: str, functions: Sequence[dict]) -> str:
    """The user turn: instruction, the candidate functions, the request."""
    body = "\n\n".join(schema_text(f) for f in functions)
    return f"{INSTRUCTION}\n\nFunctions:\n{body}\n\nRequest: {' '.join(request.split())}\nCalls:"


def _first_value(possible):
    """One value of BFCL's possible answers: the first that is not '' (''
    means the argument may be left out; None: leave it out); dicts value by value."""
    if isinstance(possible, list):
        for v in possible:
            if v != "":
                return _pick(v)
        return None
    return _pick(possible)


def _pick(value):
    if isinstance(value, dict):
        out = {k: _first_value(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None}
    return value


def target_calls(item) -> list[dict]:
    """The calls a model is trained to write for a BFCL item: each ground-truth
    call with the first possible value of each argument (optional ones left out
    where BFCL allows it); an ApproxError when BFCL's checker rejects them."""
    calls = []
    for call in item.ground_truth:
        for name, args in call.items():
            values = {k: _first_value(v) for k, v in args.items()}
            calls.append({name: {k: v for k, v in values.items() if v is not None}})
    result = item.check(calls)
    if not result:
        raise ApproxError(f"target calls fail BFCL's check: {result.error}", where=item.id)
    return calls


def calls_of(answer) -> list[dict]:
    """The calls of an answer's text; [] where the text is no call list (BFCL counts it wrong)."""
    if answer is None:
        return []
    try:
        return parse_calls(answer.text)
    except ApproxError:
        return []


class ReaderFiller(Variants, AnswerModel):
    """The extractive reader and cue words filling the arguments of the routed
    function (`contexts[0]`), as an answer model: text = the calls in BFCL's
    syntax, confidence = the reader's (the smallest, over the asked parameters,
    probability of the best candidate)."""

    supports = frozenset({"precision"})

    def __init__(self, scorer):
        from examples.systems.tools.reader import ArgumentReader

        self.scorer, self.reader = scorer, ArgumentReader(scorer)
        self.name = f"filler_{self.reader.name}"
        # the reader's one forward pass, then fixed rules: its calls may be kept, and so may those of
        # a model verifying them (`verifier.Verified` is deterministic where both of its models are)
        self.deterministic = bool(scorer.reader.deterministic)
        self.precisions = frozenset(scorer.precisions)  # its variants are the reader's

    def build_variant(self, precision: str, layers: int | None) -> "ReaderFiller":
        return ReaderFiller(self.scorer.variant(precision))

    def _answer(self, question: str, contexts: list, max_new_tokens: int | None) -> Answer:
        from examples.systems.tools.fill import fill_scored
        from examples.systems.tools.reader import READER_GROUPS

        function = contexts[0]
        scores = self.reader.answer((question, function), READER_GROUPS)
        calls = fill_scored(question, function, scores.scores)
        return Answer(format_calls(calls), min(1.0, scores.confidence), 0, 0.0, self.name)
