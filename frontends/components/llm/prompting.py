"""Prompt-level calls (a `component.generate` op with a `template`): the prompt a
model completes, and the named fields read back from what it wrote.

Why here, once: every backend (local causal LMs, SmolLM2, an OpenAI-compatible
endpoint) gets the same filled-in prompt and is read back the same way, so a
substitute or cascade of models changes the model, never the format."""

from __future__ import annotations

from collections.abc import Sequence


def first_line(text: str) -> str:
    """Generated text up to its first line break, stripped: the answer of a
    generative model (what follows is the model continuing the prompt's pattern)."""
    return text.strip().split("\n", 1)[0].strip()


def show(value) -> str:
    """An input as prompt text: a list or tuple as numbered passages `[1] ...`, one a
    line (whitespace inside each normalised); anything else as `str`."""
    if isinstance(value, list | tuple):
        return "\n".join(f"[{i + 1}] {' '.join(str(v).split())}" for i, v in enumerate(value))
    return str(value)


def fill(template: str, values: dict, outputs: Sequence[str]) -> str:
    """The template with its `{name}` fields filled in; with more than one output, a
    last line asks for one `name: value` line per output."""
    prompt = template.format(**{k: show(v) for k, v in values.items()})
    if len(outputs) > 1:
        prompt += "\n\nReply with one line per field: " + "; ".join(f"{o}: ..." for o in outputs)
    return prompt


def read_fields(text: str, outputs: Sequence[str]) -> dict[str, str]:
    """The outputs of what the model wrote: one output is its first line (a leading
    `name:` dropped); several are read from `name: value` lines (the first line naming
    each; a field no line names is empty, so the program goes on and the metric
    sees a wrong answer)."""
    if len(outputs) == 1:
        line = first_line(text)
        head, sep, rest = line.partition(":")
        return {outputs[0]: rest.strip() if sep and head.strip().lower() == outputs[0].lower() else line}
    found: dict[str, str] = {}
    for line in text.splitlines():
        head, sep, rest = line.partition(":")
        name = head.strip().strip("*-` ").lower()
        if sep and name in outputs and name not in found:
            found[name] = rest.strip()
    return {o: found.get(o, "") for o in outputs}
