"""The decorator's settings (`DecisionTree`, `SafetyContract`, `StaticTransform`,
`Param`, `Cascade`, `Memoize`, gathered in a `KnobConfig`), its error, and
`Decorated`: what the lowering reads of a decorated function. Below the lowering
and the decorator (`frontends.knob`), which both read them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from approx_dialect.diagnostics import ApproxError
from approx_dialect.transform_types import TRANSFORM_TYPES, known_transform_names
from frontends.source import FunctionSource
from passes.knobs import DEFAULT_VALUES


class KnobError(ApproxError, ValueError):
    """A wrong decorator argument (a ValueError too, as ApproxMLIR raises)."""

    def __init__(self, message: str):
        super().__init__(message, where="<decorator>")


def _check_type(transform_type: str) -> None:
    if transform_type not in TRANSFORM_TYPES:
        raise KnobError(f"transform_type must be one of {known_transform_names()}, got {transform_type!r}")


@dataclass
class DecisionTree:
    """Dynamic approximation: `state_function(args at state_indices) -> int` picks
    `decisions[#{t in thresholds : state >= t}]` on every call. The threshold bounds
    (what the tuner may try) default to ApproxMLIR's [0] / [100], widened to
    contain the given thresholds; `decision_values` (what the tuner may pick)
    defaults to 0, the decisions, the keys of `approx_kernels` and the
    transformation's usual values (`passes.knobs.DEFAULT_VALUES`)."""

    state_function: Callable
    state_indices: list[int]
    thresholds: list[int]
    decisions: list[int]
    transform_type: str
    approx_kernels: dict[int, Callable] = field(default_factory=dict)
    thresholds_lower: list[int] | None = None
    thresholds_upper: list[int] | None = None
    decision_values: list[int] = field(default_factory=list)

    def __post_init__(self):
        if len(self.decisions) != len(self.thresholds) + 1:
            raise KnobError(f"decisions length ({len(self.decisions)}) must be thresholds length + 1 "
                            f"({len(self.thresholds) + 1})")
        _check_type(self.transform_type)
        if self.transform_type == "func_substitute":
            for k in self.decisions:
                if k and k not in self.approx_kernels:
                    raise KnobError(f"func_substitute requires approx_kernels[{k}] for decision value {k}")
        if self.decision_values and len(self.decision_values) < len(self.decisions) and \
                not set(self.decisions) <= set(self.decision_values):
            raise KnobError("decision_values must contain every decision")

    def bounds(self) -> tuple[list[int], list[int], list[int]]:
        """(lowers, uppers, decision_values) as the annotation carries them."""
        lo = list(self.thresholds_lower) if self.thresholds_lower is not None else [min([0, *self.thresholds])]
        hi = list(self.thresholds_upper) if self.thresholds_upper is not None else [max([100, *self.thresholds])]
        defaults = () if self.transform_type == "func_substitute" else DEFAULT_VALUES.get(self.transform_type, ())
        values = list(self.decision_values) or sorted({0, *self.decisions, *self.approx_kernels, *defaults})
        return lo, hi, values


@dataclass
class SafetyContract:
    """Try-check-recover: `checker(results..., inputs...) -> bool` validates the
    (approximate) result; when it says False, `recover(inputs...)` computes it."""

    checker: Callable
    recover: Callable


@dataclass
class StaticTransform:
    """A fixed knob value (0 = exact) of one transformation; for func_substitute,
    `approx_kernel` is `approx_<f>_<knob_val>` (`approx_kernels` gives several)."""

    transform_type: str
    knob_val: int
    approx_kernel: Callable | None = None
    approx_kernels: dict[int, Callable] = field(default_factory=dict)

    def __post_init__(self):
        _check_type(self.transform_type)
        if self.knob_val < 0:
            raise KnobError(f"knob_val must be >= 0 (0 is exact), got {self.knob_val}")
        if self.transform_type == "func_substitute" and self.knob_val > 0:
            if self.approx_kernel is None and self.knob_val not in self.approx_kernels:
                raise KnobError(f"func_substitute with knob_val={self.knob_val} requires approx_kernel")

    def kernels(self) -> dict[int, Callable]:
        out = dict(self.approx_kernels)
        if self.approx_kernel is not None:
            out[self.knob_val or 1] = self.approx_kernel
        return out


@dataclass
class Param:
    """A tunable argument (top-k, max tokens, ...): knob k >= 1 replaces argument
    `arg` (name or index, annotated int or float) by `values[k-1]`; 0 keeps it."""

    arg: str | int
    values: list
    name: str | None = None
    knob_val: int = 0

    def __post_init__(self):
        if not self.values:
            raise KnobError(f"Param {self.arg!r} needs at least one value")


@dataclass
class Cascade:
    """Cheap variants first: knob k in 1..V*T starts at variant (k-1)//T + 1 and keeps
    its result when `confidence(result, inputs...) >= thresholds[(k-1) % T]`, else
    escalates, ending at the exact function; 0 runs the exact function."""

    variants: list[Callable]
    confidence: Callable
    thresholds: list[int]
    knob_val: int = 0

    def __post_init__(self):
        if not self.variants or not self.thresholds:
            raise KnobError("Cascade needs at least one variant and one threshold")


@dataclass
class Memoize:
    """Reuse results for inputs equal after dropping `knob_val` low mantissa bits
    (kernels with scalar inputs and results and a pure body; 0 = exact)."""

    knob_val: int = 0


@dataclass
class KnobConfig:
    """Everything the decorator was given."""

    decision_tree: DecisionTree | None = None
    safety_contract: SafetyContract | None = None
    static_transform: StaticTransform | None = None
    params: list[Param] = field(default_factory=list)
    cascade: Cascade | None = None
    memoize: Memoize | None = None
    lowering: str = "auto"

    def is_empty(self) -> bool:
        return not (self.decision_tree or self.safety_contract or self.static_transform or self.params
                    or self.cascade or self.memoize)


class Decorated:
    """A function decorated with `@Knob` (`frontends.decorated.KnobFunction`), as the
    lowering sees it: a callee it lowers into the same module, with its settings."""

    python: Callable
    """The undecorated function."""
    knob_config: KnobConfig

    @property
    def source(self) -> FunctionSource:
        raise NotImplementedError

    @property
    def kind(self) -> str:
        """"kernel" or "python" (orchestration)."""
        raise NotImplementedError

    def arg_types(self, key: tuple = ()) -> list:
        """The IR types of the parameters (for a kernel: arrays typed by `key`)."""
        raise NotImplementedError
