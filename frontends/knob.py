"""The decorator: ApproxMLIR's Python names (`Knob`, `DecisionTree`, `SafetyContract`,
`StaticTransform`, same fields and defaults), so programs written for its runtime
move over unchanged, plus the transformations added here (`Param`, `Cascade`,
`Memoize`; any transform_type of docs/transformations.md works in StaticTransform
and DecisionTree).

    @Knob(decision_tree=DecisionTree(state_function=size, state_indices=[1],
          thresholds=[1000], decisions=[0, 2], transform_type="loop_perforate"))
    def mean(x: np.ndarray, n: int) -> float: ...

The decorated function is a `frontends.decorated.KnobFunction`: called like the
plain function, compiled once per configuration (and per array dtype/rank for
kernels), tunable from outside with `set_config` / `build(config)`. The settings
are defined in `frontends.knob_config` (the lowering reads them too); the package
`frontends` exports them with the decorator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from frontends.decorated import KnobFunction
from frontends.knob_config import (
    Cascade,
    DecisionTree,
    KnobConfig,
    KnobError,
    Memoize,
    Param,
    SafetyContract,
    StaticTransform,
)

__all__ = ["Knob", "get_config"]


def Knob(  # noqa: N802 - ApproxMLIR's name
    decision_tree: DecisionTree | Callable | None = None,
    safety_contract: SafetyContract | None = None,
    static_transform: StaticTransform | None = None,
    *,
    param: Param | list[Param] | None = None,
    cascade: Cascade | None = None,
    memoize: Memoize | None = None,
    lowering: str = "auto",
) -> Any:
    """Decorator factory: `@Knob(...)` (or bare `@Knob`) turns a function into a
    KnobFunction. `lowering`: "auto" (a kernel when every parameter is annotated
    int / float / bool / np.ndarray, else orchestration), "kernel" or "python"."""
    if callable(decision_tree) and not isinstance(decision_tree, DecisionTree):
        return Knob()(decision_tree)  # bare @Knob
    if decision_tree is not None and static_transform is not None:
        raise KnobError("Cannot specify both decision_tree and static_transform")
    if lowering not in ("auto", "kernel", "python"):
        raise KnobError(f"lowering must be 'auto', 'kernel' or 'python', got {lowering!r}")
    for given, cls, what in ((decision_tree, DecisionTree, "decision_tree"),
                             (safety_contract, SafetyContract, "safety_contract"),
                             (static_transform, StaticTransform, "static_transform"),
                             (cascade, Cascade, "cascade"), (memoize, Memoize, "memoize")):
        if given is not None and not isinstance(given, cls):
            raise KnobError(f"{what} must be a {cls.__name__}, got {type(given).__name__}")
    params = [] if param is None else list(param) if isinstance(param, (list, tuple)) else [param]
    config = KnobConfig(decision_tree, safety_contract, static_transform, params, cascade, memoize, lowering)

    def decorate(fn: Callable):
        return KnobFunction(fn, config)

    return decorate


def get_config(fn) -> dict | None:
    """ApproxMLIR's accessor: the decorator's three settings, or None if undecorated."""
    cfg = getattr(fn, "knob_config", None)
    if not isinstance(cfg, KnobConfig):
        return None
    return {"decision_tree": cfg.decision_tree, "safety_contract": cfg.safety_contract,
            "static_transform": cfg.static_transform}
