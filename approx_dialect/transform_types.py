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
    default_values: tuple[int, ...] = ()
    """The knob values a static `transform` annotation (which lists none) is tuned over;
    empty where the program offers them (variants, branches, parameter lists)."""


TRANSFORM_TYPES: dict[str, TransformType] = {
    t.name: t
    for t in (
        TransformType(
            "loop_perforate",
            "multiplies the step of the first `scf.for` in the knob by k",
            "k >= 2 runs iterations 0, k, 2k, ...; 0 and 1 run every iteration",
            "an `scf.for` inside the knob body",
            "k <= 1",
            default_values=(0, 2, 3, 4, 8),
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
        TransformType(
            "precision_reduce",
            "computes every f64 op of the knob's region (arith, math, `scf.for`/`scf.if` "
            "carrying f64, linalg/tensor ops on tensors of f64) in a narrower float type, "
            "with `arith.truncf` where f64 values enter the region (arguments, memref "
            "loads) and `arith.extf` where they leave it (yield, stores); signature unchanged",
            "1 computes in f32, 2 in f16 (each op rounded to that type); 0 is exact",
            "f64 floating-point ops in the knob's function",
            default_values=(0, 1, 2),
        ),
        TransformType(
            "loop_truncate",
            "early exit: sets the upper bound of the first `scf.for` in the knob to "
            "lb + ceil(n/k) * step (n = its trip count, computed at run time)",
            "k >= 2 runs only the first ceil(n/k) iterations; 0 and 1 run every iteration",
            "an `scf.for` inside the knob body",
            "k <= 1",
            default_values=(0, 2, 3, 4, 8),
        ),
        TransformType(
            "loop_perforate_modulo",
            "splits the first `scf.for` in the knob into blocks of k iterations and "
            "drops the last iteration of each block",
            "k >= 2 skips iteration i (counted from 0) when i mod k == k-1, keeping "
            "(k-1)/k of the work; 0 and 1 run every iteration",
            "an `scf.for` inside the knob body",
            "k <= 1",
            default_values=(0, 2, 3, 4, 8),
        ),
        TransformType(
            "loop_perforate_rescale",
            "`loop_perforate` (step times k), then every floating-point sum iter_arg of "
            "that loop becomes init + (result - init) * n / kept (n = full trip count, "
            "kept = iterations run, both at run time)",
            "k >= 2 runs iterations 0, k, 2k, ... and extrapolates the sums; 0 and 1 are exact",
            "an `scf.for` inside the knob body; sums are iter_args whose yielded value is "
            "`arith.addf` of the iter_arg (used nowhere else) and another value",
            "k <= 1",
            default_values=(0, 2, 3, 4, 8),
        ),
        TransformType(
            "loop_perforate_modulo_rescale",
            "`loop_perforate_modulo`, then the sums extrapolated as in `loop_perforate_rescale`",
            "k >= 2 skips iteration i when i mod k == k-1 and extrapolates the sums; 0 and 1 "
            "are exact",
            "as `loop_perforate_rescale`",
            "k <= 1",
            default_values=(0, 2, 3, 4, 8),
        ),
        TransformType(
            "cascade",
            "replaces the knob body by the cascade approx_<f>_s, ..., approx_<f>_V, exact "
            "body: a variant's result is kept when confidence(results, args) >= t, else the "
            "next one runs (nested `scf.if`)",
            "with V variants and T thresholds: k in 1..V*T starts at variant s = (k-1) // T + 1 "
            "and accepts with t = thresholds[(k-1) % T]; 0 runs the exact body",
            "an `approx.util.annotation.cascade` on f naming V, the thresholds and "
            "`confidence : (results of f, args of f) -> i32`, and functions approx_<f>_1.."
            "approx_<f>_V with the type of f",
        ),
        TransformType(
            "memoize",
            "puts the knob body behind a direct-mapped table of 1024 entries "
            "(`memref.global` keys, values, valid flags) keyed by its quantised scalar "
            "inputs: a hit returns the stored results, a miss runs the body and "
            "overwrites the slot of its hash",
            "k in 1..52 clears the min(k, mantissa bits) low mantissa bits of each float "
            "input before comparing, so inputs agreeing to a relative 2^(k-52) (f64), "
            "2^(k-23) (f32) share a key; integer/index inputs are compared exactly; 0 "
            "builds no table (definition shared with `frontends.memo.QuantizedMemo`)",
            "scalar (int/index/float) arguments and results, and a pure body: no "
            "`memref.store`/`copy` and no call to an external declaration, in the body "
            "or in the functions it calls",
            default_values=(0, 16, 28, 34, 40, 46),
        ),
        TransformType(
            "param",
            "replaces every `approx.param` in the knob (from an "
            "`approx.util.annotation.param` or written in the IR) by an `arith.constant`",
            "k in 1..len(values) uses values[k-1]; 0 keeps the original operand",
            "an `approx.util.annotation.param {func_name, arg_index, name, values}` on f "
            "(or `approx.param` ops in the knob); values are `array<i64>` for "
            "integer/index operands, `array<f64>` for float ones",
        ),
    )
}


def known_transform_names() -> str:
    return ", ".join(sorted(TRANSFORM_TYPES))
