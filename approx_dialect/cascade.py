"""`approx.util.annotation.cascade`: declares a model cascade around a function f, the
generalisation of `try` to a chain of cheaper variants with confidence-based
escalation (DESIGN.md, "Where we go past it"). It says *what* the cascade is:

    "approx.util.annotation.cascade"() <{func_name = "f", confidence = "conf",
        variants = 2 : i32, thresholds = array<i32: 500, 900>}> : () -> ()

- variants `approx_f_1` (cheapest) .. `approx_f_V`, each with the type of f; the
  exact f ends the chain;
- `confidence(results of f..., arguments of f...) -> i32` scores a variant's result
  (the same operands as a `try` checker); a result is accepted when its score is
  >= the threshold in use, else the next variant runs;
- `thresholds`: the T thresholds the knob can choose from.

*Which* cascade runs is a knob like any other: `transform_type = "cascade"` in an
`approx.util.annotation.transform` or `decision_tree` on f (required; the cascade
is declared for it). Knob k = 0 runs f exactly; k in 1..V*T starts at variant
((k-1) // T) + 1 and accepts with thresholds[(k-1) % T]. transform-approx lowers
it to nested `scf.if` and erases this annotation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, cast

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i32
from xdsl.irdl import irdl_op_definition, prop_def
from xdsl.utils.exceptions import VerifyException

from approx_dialect.annotations import AnnotationOp, require_func, symbol_name
from approx_dialect.ops import I32Array, i32_array

CASCADE = "cascade"
T = TypeVar("T")
U = TypeVar("U")


def decode(k: int, variants: int, n_thresholds: int) -> tuple[int, int] | None:
    """Knob -> (first variant 1..V, threshold index 0..T-1); None for k = 0 (exact).
    The one definition: the pass and the Python components both read knobs with it."""
    if k == 0:
        return None
    return (k - 1) // n_thresholds + 1, (k - 1) % n_thresholds


def escalation(k: int, cheaper: Sequence[T], thresholds: Sequence[U]) -> tuple[list[T], U] | None:
    """Knob -> (the cheaper stages asked before the exact one, in order, and the
    acceptance threshold); None for k = 0 (the exact one alone). What every cascade
    runs, so they cannot drift apart: the function cascade (stages are variant
    numbers), the component op's (cheaper models) and `ModelCascade`."""
    decoded = decode(k, len(cheaper), len(thresholds))
    if decoded is None:
        return None
    start, t_index = decoded
    return list(cheaper[start - 1:]), thresholds[t_index]


def variant_name(func_name: str, j: int) -> str:
    return f"approx_{symbol_name(func_name)}_{j}"


def _signature(func) -> str:
    t = func.function_type
    return f"({', '.join(map(str, t.inputs.data))}) -> ({', '.join(map(str, t.outputs.data))})"


@irdl_op_definition
class AnnotationCascadeOp(AnnotationOp):
    name = "approx.util.annotation.cascade"
    confidence = prop_def(StringAttr)
    variants = prop_def(IntegerAttr.constr(i32))
    thresholds = prop_def(I32Array)

    def __init__(self, func_name: str, confidence: str, variants: int, thresholds: list[int]):
        super().__init__(
            properties={
                "func_name": StringAttr(func_name),
                "confidence": StringAttr(confidence),
                "variants": IntegerAttr(variants, i32),
                "thresholds": i32_array(thresholds),
            }
        )

    @property
    def threshold_values(self) -> list[int]:
        return list(self.thresholds.get_values())

    def verify_(self) -> None:
        func = require_func(self, self.func_name.data, "function")
        fname = func.sym_name.data
        n_variants = self.variants.value.data
        if n_variants < 1:
            raise VerifyException(f"cascade of '{fname}' needs variants >= 1, got {n_variants}")
        if not self.threshold_values:
            raise VerifyException(f"cascade of '{fname}' needs at least one threshold")
        ins, outs = func.function_type.inputs.data, func.function_type.outputs.data
        conf = require_func(self, self.confidence.data, "confidence function")
        want = (tuple(outs) + tuple(ins), (i32,))
        if (tuple(conf.function_type.inputs.data), tuple(conf.function_type.outputs.data)) != want:
            raise VerifyException(
                f"confidence function '{conf.sym_name.data}' must have type "
                f"({', '.join(map(str, want[0]))}) -> (i32) (the results of '{fname}', then its "
                f"arguments), has {_signature(conf)}"
            )
        for j in range(1, n_variants + 1):
            variant = require_func(self, variant_name(fname, j), "cascade variant")
            if variant.function_type != func.function_type:
                raise VerifyException(
                    f"cascade variant '{variant.sym_name.data}' has type {_signature(variant)} "
                    f"but '{fname}' has {_signature(func)}"
                )
        module = cast(ModuleOp, self.parent_op())
        if any(isinstance(o, AnnotationCascadeOp) and o is not self and symbol_name(o.func_name.data) == fname
               for o in module.ops):
            raise VerifyException(f"'{fname}' has more than one approx.util.annotation.cascade")
        if not _selected(module, func):
            raise VerifyException(
                f"the cascade of '{fname}' is never selected: add an approx.util.annotation.transform "
                f"or decision_tree on '{fname}' with transform_type = \"{CASCADE}\""
            )


def _selected(module, func) -> bool:
    """Some annotation, decide or transform (at any stage of the pipeline) picks a
    cascade knob for this function."""
    fname = func.sym_name.data

    def picks_cascade(op) -> bool:
        tt = op.properties.get("transform_type")
        return isinstance(tt, StringAttr) and tt.data == CASCADE

    for op in module.ops:
        name = op.properties.get("func_name")
        if picks_cascade(op) and isinstance(name, StringAttr) and symbol_name(name.data) == fname:
            return True
    return any(picks_cascade(op) for op in func.walk())
