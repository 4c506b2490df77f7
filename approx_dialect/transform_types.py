"""The table of known `transform_type`s: one place that the verifiers, the passes
and the documentation read, so a new transformation is added in exactly one row.

Every transformation is exact at knob value 0 (house rule 3).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TransformType:
    """One row of the table in docs/transformations.md (generated from here)."""

    name: str
    summary: str
    """What it rewrites."""
    knob: str
    """What knob value k means."""
    needs: str
    """What it needs from the program."""
    exact: str = "k = 0"
    """When it is exact."""


TRANSFORM_TYPES: dict[str, TransformType] = {
    t.name: t
    for t in (
        TransformType(
            "loop_perforate",
            "multiplies the step of the first `scf.for` in the knob by k",
            "k >= 2 runs iterations 0, k, 2k, ...; 0 and 1 run every iteration",
            "an `scf.for` inside the knob body",
            "k <= 1",
        ),
        TransformType(
            "func_substitute",
            "replaces the call to the exact body with a call to `approx_<f>_<k>`",
            "k >= 1 calls `@approx_<f>_<k>`; 0 keeps the exact function",
            "a `convert_to_call` annotation on f and a function `approx_<f>_<k>` "
            "with the signature of f for every k used",
        ),
        TransformType(
            "task_skipping",
            "of the first `scf.if`/`scf.index_switch` chain in the knob, keeps one branch",
            "k in 1..n keeps branch k (1-based, as ApproxMLIR); k = n+1 skips every "
            "branch; 0 keeps the chain unchanged (ApproxMLIR skips all at 0; here 0 is "
            "exact everywhere)",
            "an `scf.if` chain or `scf.index_switch` whose branches return nothing",
        ),
    )
}


def known_transform_names() -> str:
    return ", ".join(sorted(TRANSFORM_TYPES))


def markdown_table() -> str:
    """docs/transformations.md; a test keeps the file equal to this."""
    rows = [
        "# Transformations",
        "",
        "Generated from `approx_dialect/transform_types.py` by "
        "`python -m approx_dialect > docs/transformations.md`.",
        "Every transformation is exact at knob value 0.",
        "",
        "| transform_type | what it rewrites | knob k | exact when | what it needs from the program |",
        "|---|---|---|---|---|",
    ]
    for t in TRANSFORM_TYPES.values():
        rows.append(f"| `{t.name}` | {t.summary} | {t.knob} | {t.exact} | {t.needs} |")
    return "\n".join(rows) + "\n"

