"""The approx transformations on component ops (`approx_dialect.component`).

Each `approx.util.annotation.component` knob rewrites the attribute `parameter`
of every op labelled `component` in the module, with the meaning its
transform_type has elsewhere (knob 0 changes nothing: exact):
- `param`: parameter = values[k-1] (top-k, max new tokens, passages, sentences,
  characters, dimensions, preprocessing level);
- `func_substitute`: the provider (model, encoder, retriever, tools, router)
  becomes the cheaper values[k-1];
- `precision_reduce`: precision = values[k-1] (a type of `approx_dialect.precision`);
- `memoize`: cache = values[k-1] (the call's results are kept for that many inputs);
- `task_skipping`: k = 1 drops the op; its result is its declared fallback, a
  `component.fallback` returning the op's operand `input` passed through or the
  constant of `values`, shaped as the op's result (without either: None, a
  `pyobj.const unit` the program reads as "step skipped"); the parameter only
  names the knob; skips apply first, so the other knobs of a skipped label have
  nothing left to rewrite;
- `cascade` (parameter `model`): k in 1..V*T starts at the cheaper model
  values[(k-1) // T], keeps its answer when `component.confidence` >=
  thresholds[(k-1) % T], else asks the next one, ending at the op itself (an
  `scf.if` chain: the escalation is in the IR); an op that already calls one of
  the cheaper models is left as it is. Which models are asked, in which order, is
  `approx_dialect.cascade.escalation`, as for `ModelCascade` (llm/escalation.py,
  which says how the two differ).
A `decided` knob is set per input instead: each case of its function's decision
tree (same transform_type) rewrites the component ops of its own copy of the body.
The annotations are erased once applied.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, ModuleOp, UnitAttr, f64
from xdsl.ir import Block, Operation, Region

from approx_dialect import TransformOp, symbol_name
from approx_dialect.cascade import escalation
from approx_dialect.component import ComponentOp, ConfidenceOp, FallbackOp, GenerateOp
from approx_dialect.component_knobs import AnnotationComponentOp
from approx_dialect.diagnostics import ApproxError
from approx_dialect.pyobj import ConstOp
from passes.ir_utils import parent_func


def targets(module: ModuleOp, ann: AnnotationComponentOp, skipped: frozenset[str] | set[str] = frozenset()
            ) -> list[ComponentOp]:
    """The ops the knob rewrites; an error when the parameter is not theirs. `skipped`:
    labels whose calls an earlier knob dropped (a skip without a fallback leaves a
    `pyobj.const`, which names no label)."""
    label, parameter = ann.component.data, ann.parameter.data
    ops = [op for op in module.walk() if isinstance(op, ComponentOp) and op.component.data == label]
    if not ops and (label in skipped
                    or any(isinstance(op, FallbackOp) and op.component.data == label for op in module.walk())):
        return []  # the label's calls were skipped: nothing left to rewrite
    if not ops:
        raise ApproxError(f"knob '{ann.knob_name()}': no component op labelled '{label}' in the module", ann)
    for op in ops:
        defs = op.get_irdl_definition().properties
        if ann.transform_type.data == "task_skipping":
            continue  # drops the whole op: the parameter only names the knob
        if parameter not in defs or parameter == "component":
            names = ", ".join(n for n in defs if n != "component")
            raise ApproxError(f"knob '{ann.knob_name()}': {op.name} has no parameter '{parameter}' "
                              f"(it has {names})", ann)
        if ann.transform_type.data == "cascade" and not isinstance(op, GenerateOp):
            raise ApproxError(f"knob '{ann.knob_name()}': cascade applies to component.generate, not {op.name}", ann)
    return ops


def _skip(op: ComponentOp, ann: AnnotationComponentOp) -> None:
    """op -> its fallback: operand `input` passed through, the constant of `values`, or None."""
    values = list(ann.values.data)
    if ann.input is not None:
        i = ann.input.value.data
        if i >= len(op.operands):
            raise ApproxError(f"knob '{ann.knob_name()}': fallback input {i} is out of range ({op.name} "
                              f"labelled '{op.component.data}' has {len(op.operands)} inputs)", ann)
        new: Operation = FallbackOp([op.operands[i]], op.component.data, op.name,
                                    outputs=op.properties.get("outputs"))
    elif values:
        new = FallbackOp([], op.component.data, op.name, values[0], outputs=op.properties.get("outputs"))
    else:
        new = ConstOp(UnitAttr())
    new.location = op.location
    op.parent_block().insert_op_before(new, op)
    for r in op.results:
        r.replace_all_uses_with(new.results[0])
    op.detach()
    op.erase()


def _cascade(op: GenerateOp, models: list, threshold: float) -> None:
    """op -> ask models[0], keep its answer when confident, else the next ... else op."""
    block = op.parent_block()
    answer = op.answer

    def chain(j: int) -> tuple[list[Operation], object]:
        if j == len(models):
            exact = op.clone()
            return [exact], exact.answer
        cheap = op.clone()
        cheap.properties["model"] = models[j]
        conf = ConfidenceOp(cheap.answer)
        limit = arith.ConstantOp(FloatAttr(threshold, f64))
        ok = arith.CmpfOp(conf.confidence, limit.result, "oge")
        keep = Block()
        keep.add_op(scf.YieldOp(cheap.answer))
        ops, value = chain(j + 1)
        escalate = Block()
        escalate.add_ops([*ops, scf.YieldOp(value)])
        branch = scf.IfOp(ok.result, [answer.type], Region(keep), Region(escalate))
        return [cheap, conf, limit, ok, branch], branch.results[0]

    ops, value = chain(0)
    for new in ops:
        block.insert_op_before(new, op)
    answer.replace_all_uses_with(value)
    op.detach()
    op.erase()


def apply(module: ModuleOp, ann: AnnotationComponentOp, k: int | None = None, region=None,
          skipped: set[str] | None = None) -> None:
    """Rewrite the ops of `ann` (those in `region` only, when given) at knob value k
    (default: the annotation's); a skip adds its label to `skipped`."""
    k = ann.knob_val.value.data if k is None else k
    ttype = ann.transform_type.data
    ops = targets(module, ann, skipped if skipped is not None else frozenset())
    if region is not None:
        ops = [op for op in ops if region.is_ancestor(op)]
    if k == 0:
        return
    values = list(ann.values.data)
    for op in ops:
        if ttype == "task_skipping":
            _skip(op, ann)
            if skipped is not None:
                skipped.add(ann.component.data)
        elif ttype == "cascade":
            if op.properties["model"] in values:
                continue  # already a cheaper model: nothing to escalate from
            _cascade(op, *escalation(k, values, [t.value.data for t in ann.thresholds.data]))
        else:
            op.properties[ann.parameter.data] = values[k - 1]


def decided_by(transform: TransformOp) -> list[AnnotationComponentOp]:
    """The decided component knobs that `transform` (one case of a decision tree) sets:
    those of its function with its transform_type. A static knob value of that type
    (not in a case of a decision) sets none."""
    if not isinstance(transform.parent_op(), scf.IndexSwitchOp):
        return []
    func, module = parent_func(transform), transform.get_toplevel_object()
    if func is None or not isinstance(module, ModuleOp):
        return []
    return [op for op in module.ops if isinstance(op, AnnotationComponentOp) and op.decided is not None
            and symbol_name(op.func_name.data) == func.sym_name.data
            and op.transform_type.data == transform.transform_type.data]


def apply_decided(transform: TransformOp, anns: list[AnnotationComponentOp]) -> None:
    """One case of a decision: its knob value on the component ops of its own region."""
    region, k = transform.parent_region(), transform.knob_val.value.data
    for ann in anns:
        if k not in ann.knob_values():
            raise ApproxError(f"knob '{ann.knob_name()}': the decision chose {k}, outside "
                              f"0..{max(ann.knob_values())}", transform)
        apply(transform.get_toplevel_object(), ann, k, region)


def apply_all(module: ModuleOp) -> None:
    """Apply (static ones) and erase every component knob of `module`."""
    skipped: set[str] = set()
    anns = [op for op in module.ops if isinstance(op, AnnotationComponentOp)]
    # skips first, wherever they stand in the module: the other knobs of a skipped label have nothing left to
    # rewrite (a cascade applied before the skip would test the confidence of the skipped call's fallback)
    for ann in sorted(anns, key=lambda a: a.transform_type.data != "task_skipping"):
        if ann.decided is None:
            apply(module, ann, skipped=skipped)
        ann.detach()
        ann.erase()
