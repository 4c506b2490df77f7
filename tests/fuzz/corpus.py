"""Seed inputs for fuzzing approx-opt: every FileCheck test (split at `// -----`,
comments dropped), the examples, and a generated module that mixes every
management op. Mutations start from real programs, so they reach the passes and
not only the parser."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Transform names the passes know, plus ones they must reject.
KNOWN_TRANSFORMS = (
    "loop_perforate", "func_substitute", "task_skipping", "precision_reduce", "loop_truncate",
    "loop_perforate_modulo", "loop_perforate_rescale", "loop_perforate_modulo_rescale",
    "cascade", "memoize", "param",
)
UNKNOWN_TRANSFORMS = ("loop_unroll", "", "LOOP_PERFORATE", "loop_perforate ", "é", "a\\22b")

ANNOTATIONS = (
    "knob", "convert_to_call", "transform", "try", "decision_tree", "decision_tree_multi",
    "cascade", "param",
)


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")) + "\n"


@lru_cache(maxsize=1)
def seeds() -> tuple[tuple[str, str], ...]:
    """(name, text) of every seed program."""
    from bench.gen_module import generate

    out: list[tuple[str, str]] = []
    files = sorted((ROOT / "tests" / "filecheck").glob("*.mlir")) + sorted((ROOT / "examples" / "mlir").glob("*.mlir"))
    for path in files:
        for i, chunk in enumerate(path.read_text().split("// -----")):
            body = _strip_comments(chunk)
            if body.strip():
                out.append((f"{path.stem}#{i}", body))
    out.append(("gen_module(3)", generate(3)))
    return tuple(out)


def function_names(text: str) -> list[str]:
    return re.findall(r"func\.func\s+(?:private\s+)?@([\w$.]+)", text)


@lru_cache(maxsize=1)
def token_pool() -> tuple[str, ...]:
    """Distinct tokens of the whole corpus, for token replacement and insertion."""
    pool: set[str] = set()
    for _, text in seeds():
        pool.update(TOKEN.findall(text))
    return tuple(sorted(pool))


#: MLIR-ish tokens: strings, SSA names / symbols / block labels, numbers, words, punctuation.
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[%@^#!][\w$.-]*|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?|[A-Za-z_][\w.$]*|->|\S')
