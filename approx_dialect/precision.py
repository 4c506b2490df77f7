"""The compute precisions a component op's `precision` attribute may take: one
table of (IR type, backend name), read by the dialect's verifier, the frontend's
declarations, the runtime, the docs and every error message that lists them, so
a new precision is one row here. `int8` (IR `i8`) is weight-only: the weights
stored as int8 with one scale per output channel, the activations in float;
`int4` (IR `i4`) is weight-only too, 4-bit blocks with a scale each, and exists only
as an inference engine's build (torch has no int4 kernels here); only providers
listing a value in their `precisions` build it (`variants.Variants`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IntegerType, i8
from xdsl.ir import Attribute

from approx_dialect.diagnostics import ApproxError


@dataclass(frozen=True)
class Precision:
    ir: str  # how the IR prints the type
    attr: Attribute  # the xDSL type attribute
    backend: str  # torch's dtype name (`getattr(torch, backend)`; int8, int4: of the weights)


PRECISIONS: tuple[Precision, ...] = (
    Precision("f32", Float32Type(), "float32"),
    Precision("bf16", BFloat16Type(), "bfloat16"),
    Precision("f16", Float16Type(), "float16"),
    Precision("i8", i8, "int8"),
    Precision("i4", IntegerType(4), "int4"),
)
FLOATS = frozenset({"float32", "bfloat16", "float16"})  # the precisions a model cast to that dtype computes in


def ir_names() -> str:
    """'f32, bf16 or f16': the IR types, for messages and docs."""
    names = [p.ir for p in PRECISIONS]
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def backend_names() -> str:
    """'float32, bfloat16 or float16': the backend names, for messages and docs."""
    names = [p.backend for p in PRECISIONS]
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def is_precision(attr: Attribute) -> bool:
    return any(attr == p.attr for p in PRECISIONS)


def backend_of(attr: Attribute) -> str:
    """The backend name of an IR precision type (an ApproxError for another attribute)."""
    for p in PRECISIONS:
        if attr == p.attr:
            return p.backend
    raise ApproxError(f"precision must be {ir_names()}, got {attr}")


def attr_of(backend: str, where: str = "<component>") -> Attribute:
    """The IR type of a backend precision name (an ApproxError for an unknown one)."""
    check_backend(backend, where)
    return next(p.attr for p in PRECISIONS if p.backend == backend)


def check_backend(backend: str, where: str) -> str:
    if not any(p.backend == backend for p in PRECISIONS):
        raise ApproxError(f"precision must be {backend_names()}, got {backend!r}", where=where)
    return backend
