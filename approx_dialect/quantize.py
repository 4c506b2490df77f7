"""The one definition of a `memoize` knob value, shared by JIT kernels (the IR that
`passes/transformations/memoize.py` emits) and Python components
(`frontends/memo.py`), so the same k means the same reuse on both sides.

Quantisation with knob k >= 1: the `min(k, mantissa bits)` low mantissa bits of each
float input are cleared (its IEEE bit pattern ANDed with a mask; sign and exponent
are always kept), so two inputs of one binade share a key when they agree to within
a relative 2^(k-52) (f64), 2^(k-23) (f32), 2^(k-10) (f16), 2^(k-7) (bf16); inputs in
the same bucket are [m, m + 2^(e-52+k)) for |x| = m in binade 2^e. Integer, index and
boolean inputs are compared exactly (they are counts, ids, modes: no quantisation).
k = 0 means no table at all (exact).

Key word of an input: its (quantised) pattern as 64 bits (integers sign-extended,
floats zero-extended, index as i64). Table slot of a key (direct-mapped,
`capacity` a power of two): FNV-1a-style mixing of the words, then Fibonacci
hashing of the mixed value, whose top log2(capacity) bits are the slot.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable

MEMO_CAPACITY = 1024
"""Entries of a JIT memo table (direct-mapped: a new entry overwrites its slot)."""
MAX_DROP_BITS = 52
"""Largest knob value of `memoize`: all f64 mantissa bits (clamped per float type)."""
MANTISSA_BITS = {64: 52, 32: 23, 16: 10}
"""Explicit mantissa bits of IEEE f64/f32/f16 by width (bf16, IR only, has 7)."""

MASK64 = (1 << 64) - 1
HASH_SEED = 0xCBF29CE484222325
HASH_PRIME = 0x100000001B3
HASH_SHIFT = 33
HASH_GOLDEN = 0x9E3779B97F4A7C15


def signed64(x: int) -> int:
    """An unsigned 64-bit constant as the i64 MLIR writes it."""
    x &= MASK64
    return x - (1 << 64) if x >> 63 else x


def dropped_bits(k: int, mantissa: int) -> int:
    """Low bits cleared from a float with `mantissa` explicit mantissa bits."""
    return max(0, min(k, mantissa))


_FLOAT_FORMATS = {64: ("<d", "<Q"), 32: ("<f", "<I"), 16: ("<e", "<H")}


def float_word(x: float, k: int, width: int = 64) -> int:
    """Key word of a float of `width` bits (f64, f32, f16)."""
    fmt, ifmt = _FLOAT_FORMATS[width]
    (bits,) = struct.unpack(ifmt, struct.pack(fmt, x))
    return bits & ~((1 << dropped_bits(k, MANTISSA_BITS[width])) - 1)


def int_word(x: int, width: int = 64) -> int:
    """Key word of an integer (never quantised): two's complement, sign-extended
    to 64 bits (Python's & on negatives does that); i1 / bool is 0 or 1."""
    return int(bool(x)) if width == 1 else x & MASK64


def text_word(data: str | bytes) -> int:
    """Python-only keys (prompts, ids): a stable 64-bit digest, never quantised."""
    raw = data.encode() if isinstance(data, str) else data
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little")


def mix64(words: Iterable[int]) -> int:
    """The 64-bit hash of a key's words (FNV-1a-style, then a Fibonacci multiply)."""
    h = HASH_SEED
    for w in words:
        h = ((h ^ (w & MASK64)) * HASH_PRIME) & MASK64
    h ^= h >> HASH_SHIFT
    return (h * HASH_GOLDEN) & MASK64


def slot_of(words: Iterable[int], capacity: int = MEMO_CAPACITY) -> int:
    """Direct-mapped slot of a key: the top log2(capacity) bits of `mix64`; the IR
    computes the same with i64 arithmetic."""
    bits = slot_bits(capacity)
    return mix64(words) >> (64 - bits) if bits else 0


def slot_bits(capacity: int) -> int:
    if capacity < 1 or capacity & (capacity - 1):
        raise ValueError(f"memo capacity must be a power of two, got {capacity}")
    return capacity.bit_length() - 1
