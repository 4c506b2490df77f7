"""Knob configurations: what can be tuned in a program, and setting it.

The search space is read from the program's own annotations, so no separate
configuration file is needed: every `transform`, `decision_tree` and
`decision_tree_multi` annotation is one knob. A configuration maps knob names to
settings and is applied to the annotations before the pipeline runs; this is how
the autotuner, `approx-opt --apply-config` and decorated functions set a program
without editing its source.

Settings (JSON-friendly):
- `{"knob_val": k}`: static: k for every input (on a decision tree: all decisions k);
- `{"thresholds": [...], "decisions": [...]}`: a ladder (decision_tree);
- `{"tree_thresholds": [...], "tree_decisions": [...]}`: a multi-feature tree.
"""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32

from approx_dialect import (
    AnnotationComponentOp,
    AnnotationDecisionTreeOp,
    AnnotationTransformOp,
    symbol_name,
)
from approx_dialect.diagnostics import ApproxError
from approx_dialect.ops import i32_array
from approx_dialect.transform_types import TRANSFORM_TYPES

# Knob values tried for a static `transform` annotation (which declares no list): a column
# of the table of transform types.
DEFAULT_VALUES: dict[str, tuple[int, ...]] = {
    t.name: t.default_values for t in TRANSFORM_TYPES.values() if t.default_values
}


@dataclass(frozen=True)
class KnobSpec:
    """One tunable knob of a program, read from one annotation."""

    name: str
    func_name: str
    transform_type: str
    kind: str  # "static" | "ladder" | "tree"
    values: tuple[int, ...]
    lowers: tuple[int, ...] = ()
    uppers: tuple[int, ...] = ()
    num_thresholds: int = 0
    current: dict = field(default_factory=dict, compare=False)

    def bounds(self, i: int) -> tuple[int, int]:
        """[lower, upper] of threshold (or tree node) i."""
        pick = lambda xs, dflt: xs[i if len(xs) > 1 else 0] if xs else dflt  # noqa: E731
        return pick(self.lowers, -(2**31)), pick(self.uppers, 2**31 - 1)


def knob_annotations(module: ModuleOp):
    """The annotations that are knobs, in module order (one knob each)."""
    kinds = {"approx.util.annotation.transform", "approx.util.annotation.decision_tree",
             "approx.util.annotation.decision_tree_multi", "approx.util.annotation.component"}
    return [op for op in module.ops if op.name in kinds]


def _values_for_static(module: ModuleOp, ann) -> tuple[int, ...]:
    """The knob values a static transform can take, from what the program offers."""
    t = ann.transform_type.data
    fname = symbol_name(ann.func_name.data)
    if t == "func_substitute":
        prefix = f"approx_{fname}_"
        ks = sorted(int(op.sym_name.data[len(prefix):]) for op in module.ops
                    if hasattr(op, "sym_name") and op.sym_name.data.startswith(prefix)
                    and op.sym_name.data[len(prefix):].isdigit())
        return (0, *ks)
    if t == "param":
        for op in module.ops:
            if op.name == "approx.util.annotation.param" and symbol_name(op.func_name.data) == fname:
                return tuple(range(len(op.values) + 1))
    if t == "cascade":
        for op in module.ops:
            if op.name == "approx.util.annotation.cascade" and symbol_name(op.func_name.data) == fname:
                return tuple(range(op.variants.value.data * len(op.threshold_values) + 1))
    if t == "task_skipping":
        from passes.ir_utils import ModuleSymbols, first_in_region
        from passes.transformations.task_skipping import BRANCHING, branches

        func = ModuleSymbols(module).get(fname)
        root = first_in_region(func.body, BRANCHING) if func is not None else None
        return tuple(range(len(branches(root)) + 2)) if root is not None else (0,)
    return DEFAULT_VALUES.get(t, (0, 1))


# Transforms whose knob values are whatever the program offers (variants, branches,
# parameter lists); the others take any knob value.
_PROGRAM_VALUES = ("func_substitute", "param", "cascade", "task_skipping")


def _ladder_values(module: ModuleOp, ann) -> tuple[int, ...]:
    """What a ladder's decisions may take: as ApproxMLIR's tuner reads
    `decision_values`, every integer from its minimum to its maximum (of those the
    transform can take, where the program fixes them)."""
    values = list(ann.decision_values.get_values())
    span = range(min(values), max(values) + 1)
    if ann.transform_type.data in _PROGRAM_VALUES:
        offered = set(_values_for_static(module, ann))
        return tuple(v for v in span if v in offered or v in values)
    return tuple(span)


def knob_specs(module: ModuleOp) -> list[KnobSpec]:
    """Every knob of the program, in source order, with a unique name
    (`func` or `func#2` for a second annotation on the same function; a
    component knob is `<component>.<parameter>`)."""
    specs: list[KnobSpec] = []
    seen: dict[str, int] = {}
    for ann in knob_annotations(module):
        fname = symbol_name(ann.func_name.data)
        if isinstance(ann, AnnotationComponentOp):
            if ann.decided is not None:
                continue  # set per input by its function's decision tree (that knob)
            specs.append(KnobSpec(ann.knob_name(), fname, ann.transform_type.data, "static", ann.knob_values(),
                                  current={"knob_val": ann.knob_val.value.data}))
            continue
        seen[fname] = seen.get(fname, 0) + 1
        name = fname if seen[fname] == 1 else f"{fname}#{seen[fname]}"
        t = ann.transform_type.data
        if isinstance(ann, AnnotationTransformOp):
            specs.append(KnobSpec(name, fname, t, "static", _values_for_static(module, ann),
                                  current={"knob_val": ann.knob_val.value.data}))
        elif isinstance(ann, AnnotationDecisionTreeOp):
            specs.append(KnobSpec(
                name, fname, t, "ladder", _ladder_values(module, ann),
                tuple(ann.thresholds_lowers.get_values()), tuple(ann.thresholds_uppers.get_values()),
                ann.num_thresholds.value.data,
                current={"thresholds": list(ann.thresholds.get_values()),
                         "decisions": list(ann.decisions.get_values())},
            ))
        else:
            specs.append(KnobSpec(
                name, fname, t, "tree", tuple(ann.decision_values.get_values()),
                tuple(ann.thresholds_lowers.get_values()), tuple(ann.thresholds_uppers.get_values()),
                len(ann.tree_thresholds),
                current={"tree_thresholds": list(ann.tree_thresholds.get_values()),
                         "tree_decisions": list(ann.tree_decisions.get_values())},
            ))
    return specs


def _i32s(spec: KnobSpec, values, what: str) -> list[int]:
    """A JSON list of i32 integers (numpy integers welcome; no bools, floats or strings)."""
    if not isinstance(values, (list, tuple)):
        raise ApproxError(f"knob '{spec.name}': {what}s must be a list of integers, got {values!r}"[:300],
                          where="<config>")
    out = []
    for v in values:
        try:
            if isinstance(v, bool):
                raise TypeError
            out.append(operator.index(v))
        except TypeError:
            raise ApproxError(f"knob '{spec.name}': {what} {v!r} is not an integer"[:300], where="<config>") from None
        if not -(2**31) <= out[-1] < 2**31:
            raise ApproxError(f"knob '{spec.name}': {what} {v} does not fit in i32", where="<config>")
    return out


def _check_values(spec: KnobSpec, values, what: str) -> list[int]:
    values = _i32s(spec, values, what)
    bad = [v for v in values if v not in spec.values]
    if bad:
        raise ApproxError(f"knob '{spec.name}': {what} {bad[0]} is not among its values {list(spec.values)}",
                          where="<config>")
    return values


def apply_config(module: ModuleOp, config: dict[str, dict]) -> ModuleOp:
    """Set the annotations of `module` (in place) to `config`; unknown knobs and
    values outside a knob's range are errors."""
    specs = {s.name: s for s in knob_specs(module)}
    listed = [a for a in knob_annotations(module)
              if not (isinstance(a, AnnotationComponentOp) and a.decided is not None)]
    anns = dict(zip([s.name for s in knob_specs(module)], listed))
    for name, setting in config.items():
        if name not in specs:
            raise ApproxError(f"unknown knob '{name}' (knobs: {', '.join(specs) or 'none'})", where="<config>")
        spec, ann = specs[name], anns[name]
        if not isinstance(setting, dict):
            raise ApproxError(f"knob '{name}': setting must be an object, got {setting!r}", where="<config>")
        if "knob_val" in setting:
            (k,) = _check_values(spec, [setting["knob_val"]], "knob value")
            if spec.kind == "static":
                ann.properties["knob_val"] = IntegerAttr(k, i32)
            elif spec.kind == "ladder":
                ann.properties["decisions"] = i32_array([k] * (spec.num_thresholds + 1))
            else:
                ann.properties["tree_decisions"] = i32_array([k] * spec.num_thresholds)
        elif spec.kind == "ladder" and {"thresholds", "decisions"} <= set(setting):
            thresholds = _i32s(spec, setting["thresholds"], "threshold")
            decisions = _check_values(spec, setting["decisions"], "decision")
            ann.properties["thresholds"] = i32_array(thresholds)
            ann.properties["num_thresholds"] = IntegerAttr(len(thresholds), i32)
            ann.properties["decisions"] = i32_array(decisions)
        elif spec.kind == "tree" and {"tree_thresholds", "tree_decisions"} <= set(setting):
            ann.properties["tree_thresholds"] = i32_array(_i32s(spec, setting["tree_thresholds"], "threshold"))
            ann.properties["tree_decisions"] = i32_array(_check_values(spec, setting["tree_decisions"], "decision"))
        else:
            raise ApproxError(f"knob '{name}' ({spec.kind}): setting {setting!r} has none of the expected keys",
                              where="<config>")
    from approx_dialect.context import verify_module

    verify_module(module)  # thresholds outside bounds, unsorted, ... are reported here
    return module


def load_config(path: str | Path) -> dict[str, dict]:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise ApproxError(f"cannot read configuration: {err.strerror}", where=str(path)) from None
    except json.JSONDecodeError as err:
        raise ApproxError(f"configuration is not JSON: {err.msg}", where=f"{path}:{err.lineno}:{err.colno}") from None
    if isinstance(data, dict) and isinstance(data.get("knobs"), dict):
        data = data["knobs"]  # a front.json entry or a saved trial
    if not isinstance(data, dict):
        raise ApproxError("configuration must be a JSON object of knob settings", where=str(path))
    return data
