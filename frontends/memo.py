"""`QuantizedMemo`: the Python side of the `memoize` transformation, for components
that run as Python (LLM calls, retrieval, tools) rather than as JIT kernels.

Same definition of a knob value as the IR (`approx_dialect/quantize.py`):
`quantize_bits` = k clears the k low mantissa bits of float arguments (Python floats
are f64; numpy float32/float16 use their own mantissa), integers and booleans are
compared exactly, strings/bytes/None exactly too (Python-only keys, e.g. prompts);
k = 0 never stores anything (exact).

Table: direct-mapped, like the JIT table (not LRU): `capacity` slots (a power of
two), a key lives in slot `quantize.slot_of(words)` and a miss overwrites whatever
was there. For float/int arguments the slot is the one the JIT kernel computes, so
a Python component and a memoized kernel given the same call stream hit and miss
on the same calls. The stored result is that of the first call of a key.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from approx_dialect.quantize import (
    MAX_DROP_BITS,
    MEMO_CAPACITY,
    float_word,
    int_word,
    mix64,
    slot_bits,
    slot_of,
    text_word,
)

_NP_FLOAT_WIDTH = {np.dtype(np.float64): 64, np.dtype(np.float32): 32, np.dtype(np.float16): 16}


def key_part(value: Any, k: int) -> tuple[Any, int]:
    """(what is compared, the 64-bit word the slot is hashed from) of one argument;
    tuples/lists give a tuple of parts."""
    if isinstance(value, (bool, np.bool_)):
        return ("b", bool(value)), int_word(int(value), 1)
    if isinstance(value, np.floating):
        width = _NP_FLOAT_WIDTH.get(value.dtype)
        if width is None:
            raise TypeError(f"QuantizedMemo: unsupported float type {value.dtype}")
        w = float_word(float(value), k, width)
        return ("f", width, w), w
    if isinstance(value, float):
        w = float_word(value, k)
        return ("f", 64, w), w
    if isinstance(value, (int, np.integer)):
        return ("i", int(value)), int_word(int(value))
    if isinstance(value, (str, bytes)):
        return ("s", value), text_word(value)
    if value is None:
        return ("n",), 0
    if isinstance(value, (tuple, list)):
        parts = [key_part(v, k) for v in value]
        return ("t", tuple(p for p, _ in parts)), mix64(w for _, w in parts)
    raise TypeError(
        f"QuantizedMemo: cannot key an argument of type {type(value).__name__} "
        "(int, float, bool, str, bytes, None or tuples of them)"
    )


class QuantizedMemo:
    """A bounded memo table keyed by quantised arguments (direct-mapped).

    `memo(fn)` returns a memoized `fn`; `lookup`/`store` are the two halves for
    callers that manage the call themselves. `hits` and `misses` count lookups."""

    def __init__(self, quantize_bits: int, capacity: int = MEMO_CAPACITY):
        if not 0 <= quantize_bits <= MAX_DROP_BITS:
            raise ValueError(
                f"quantize_bits must be in 0..{MAX_DROP_BITS} (0 = no reuse), got {quantize_bits}"
            )
        slot_bits(capacity)  # a power of two, or ValueError
        self.quantize_bits = quantize_bits
        self.capacity = capacity
        self._slots: list[tuple[Any, Any] | None] = [None] * capacity
        self.hits = 0
        self.misses = 0

    def key(self, args: tuple) -> tuple[tuple, int]:
        """(key, slot) of a call's positional arguments."""
        parts = [key_part(a, self.quantize_bits) for a in args]
        return tuple(p for p, _ in parts), slot_of((w for _, w in parts), self.capacity)

    def _probe(self, args: tuple) -> tuple[tuple, int, bool, Any]:
        key, slot = self.key(args)
        entry = self._slots[slot]
        hit = entry is not None and entry[0] == key
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        return key, slot, hit, entry[1] if hit else None

    def lookup(self, *args) -> tuple[bool, Any]:
        """(True, stored result) when an earlier call's arguments quantise to the
        same key and its slot was not overwritten since; else (False, None)."""
        if self.quantize_bits == 0:
            self.misses += 1
            return False, None
        _, _, hit, value = self._probe(args)
        return hit, value

    def store(self, args: tuple, result: Any) -> None:
        """Put `result` in the slot of `args`' key, evicting what was there."""
        if self.quantize_bits:
            key, slot = self.key(args)
            self._slots[slot] = (key, result)

    def __call__(self, fn: Callable) -> Callable:
        """`fn` memoized through this table (positional arguments only)."""

        @functools.wraps(fn)
        def memoized(*args):
            if self.quantize_bits == 0:
                self.misses += 1
                return fn(*args)
            key, slot, hit, value = self._probe(args)
            if not hit:
                value = fn(*args)
                self._slots[slot] = (key, value)
            return value

        memoized.memo = self
        return memoized

    def __len__(self) -> int:
        return sum(e is not None for e in self._slots)

    def clear(self) -> None:
        self._slots = [None] * self.capacity
        self.hits = self.misses = 0
