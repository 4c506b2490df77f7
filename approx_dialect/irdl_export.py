"""Export the `approx` dialect as IRDL from the xDSL op definitions, so upstream MLIR
(`irdl.load_dialects`) verifies the same ops without a second, hand-kept definition.

xDSL's `pyrdl_to_irdl.dialect_to_irdl` exports operands and results only (always as
`irdl.any`); `op_def_to_irdl` here is its version plus constraints, attributes
(properties become `irdl.attributes`: IRDL-loaded dialects have no properties) and regions.

What upstream IRDL (torch-mlir wheel) cannot express, checked by experiment:
- parameters of builtin attributes: `irdl.parametric` needs an IRDL-defined base, so
  `IntegerAttr` of i32 is only `irdl.base "#builtin.integer"` and `array<i32>` only
  `irdl.base "#builtin.dense_array"`; `irdl.c_pred` is accepted but not checked;
- optional attributes and variadic/optional regions (no syntax for them);
- op names with '.' (`approx.util.annotation.knob`): the `irdl.operation` verifier wants
  `[a-z0-9_]`, so `load_upstream` parses placeholder names and renames them before loading;
- traits: without IsTerminator on `approx.yield` every knob/decide/try body is "a block
  with no terminator", so `load_upstream` attaches the traits the bindings offer
  (`ir.IsTerminatorTrait` etc.) after loading; HasParent and the custom `verify_` rules
  (ladder, transform_type names, yield types, function lookups) stay xDSL-only.
"""

from __future__ import annotations

from typing import Any, cast

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import builtin
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, SymbolRefAttr, i32
from xdsl.dialects.irdl import irdl
from xdsl.dialects.irdl.pyrdl_to_irdl import depython_name
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AllOf,
    AnyOf,
    AttrConstraint,
    BaseAttr,
    EqAttrConstraint,
    IRDLOperation,
    OptionalDef,
    ParamAttrConstraint,
    SingleBlockRegionDef,
    VariadicDef,
)
from xdsl.irdl.constraints import AnyAttr, AttrSetConstraint, RangeConstraint
from xdsl.traits import IsolatedFromAbove, IsTerminator, NoTerminator

from approx_dialect import Approx
from approx_dialect.component import Component
from approx_dialect.pyobj import PyObj

DIALECTS = (Approx, PyObj, Component)
"""What `emit_irdl` and `load_upstream` export by default: the approx dialect, the
Python objects of orchestration code and the component ops of compound AI programs."""
_EXPORTED_TYPES = {t for d in DIALECTS for t in d.attributes}

# xDSL's builtin attribute names differ from upstream's (e.g. "array" vs "dense_array").
_UPSTREAM_BASE: dict[type[Attribute], str] = {
    builtin.IntegerAttr: "#builtin.integer",
    builtin.FloatAttr: "#builtin.float",
    builtin.StringAttr: "#builtin.string",
    builtin.DenseArrayBase: "#builtin.dense_array",
    builtin.ArrayAttr: "#builtin.array",
    builtin.DictionaryAttr: "#builtin.dictionary",
    builtin.SymbolRefAttr: "#builtin.symbol_ref",
    builtin.UnitAttr: "#builtin.unit",
    builtin.IntegerType: "!builtin.integer",
    builtin.IndexType: "!builtin.index",
}


def _base_name(cls: type[Attribute]) -> str | None:
    if cls in _UPSTREAM_BASE:
        return _UPSTREAM_BASE[cls]
    if "." not in cls.name:  # another builtin we have no upstream name for
        return None
    return ("!" if issubclass(cls, TypeAttribute) else "#") + cls.name


def constraint_to_irdl(builder: Builder, constr: AttrConstraint) -> SSAValue:
    """The tightest constraint upstream checks; anything unknown becomes `irdl.any`."""
    if isinstance(constr, EqAttrConstraint):
        op = irdl.IsOp(constr.attr)
    elif isinstance(constr, BaseAttr | ParamAttrConstraint):
        # parameters are dropped: `irdl.parametric` cannot name a builtin base.
        cls = constr.attr if isinstance(constr, BaseAttr) else constr.base_attr
        name = _base_name(cls)
        if cls in _EXPORTED_TYPES:  # defined in the same IRDL module: by symbol, as upstream wants
            dialect, short = Dialect.split_name(cls.name)
            op = irdl.BaseOp(SymbolRefAttr(dialect, [short]))
        else:
            op = irdl.BaseOp(name) if name else irdl.AnyOp()
    elif isinstance(constr, AttrSetConstraint):
        args = [builder.insert(irdl.IsOp(a)).output for a in sorted(constr.values, key=str)]
        op = irdl.AnyOfOp(args)
    elif isinstance(constr, AnyOf | AllOf):
        args = [constraint_to_irdl(builder, c) for c in constr.attr_constrs]
        op = (irdl.AnyOfOp if isinstance(constr, AnyOf) else irdl.AllOfOp)(args)
    else:
        op = irdl.AnyOp()
    return builder.insert(op).output


def _element_constr(rc: RangeConstraint) -> AttrConstraint:
    """The per-value constraint of an operand/result (`RangeOf`, maybe length-wrapped)."""
    rc = getattr(rc, "constraint", rc)
    return getattr(rc, "constr", AnyAttr())


def _variadicity(d) -> irdl.VariadicityAttr:
    if isinstance(d, OptionalDef):
        return irdl.VariadicityAttr.OPTIONAL
    if isinstance(d, VariadicDef):
        return irdl.VariadicityAttr.VARIADIC
    return irdl.VariadicityAttr.SINGLE


def op_def_to_irdl(op: type[IRDLOperation]) -> irdl.OperationOp:
    """`pyrdl_to_irdl.op_def_to_irdl` plus constraints, attributes and regions."""
    op_def = op.get_irdl_definition()
    builder = Builder(InsertPoint.at_end(block := Block()))

    for defs, ir_op in ((op_def.operands, irdl.OperandsOp), (op_def.results, irdl.ResultsOp)):
        if defs:
            values = [constraint_to_irdl(builder, _element_constr(d.constr)) for _, d in defs]
            var = irdl.VariadicityArrayAttr(ArrayAttr(_variadicity(d) for _, d in defs))
            names = ArrayAttr(StringAttr(depython_name(n)) for n, _ in defs)
            builder.insert(ir_op(values, var, names))

    # Properties and attributes both live in the attr-dict upstream; optional ones
    # are left out (IRDL has no optional attributes), so they stay unchecked there.
    attrs = {**op_def.properties, **op_def.attributes}
    required = {n: d for n, d in attrs.items() if not isinstance(d, OptionalDef)}
    if required:
        builder.insert(
            irdl.AttributesOp.get(
                {n: constraint_to_irdl(builder, d.constr) for n, d in required.items()}
            )
        )

    regions: list[SSAValue] = []
    for name, rdef in op_def.regions:
        if isinstance(rdef, VariadicDef):
            raise NotImplementedError(f"{op_def.name}: IRDL has no variadic region '{name}'")
        single = isinstance(rdef, SingleBlockRegionDef)
        size = {"number_of_blocks": IntegerAttr(1, i32)} if single else {}
        # RegionOp(...) forgets its result type in xDSL 0.74, hence create().
        region = irdl.RegionOp.create(properties=size, result_types=[irdl.RegionType()])
        regions.append(builder.insert(region).output)
    if regions:
        builder.insert(irdl.RegionsOp(regions, ArrayAttr(StringAttr(n) for n, _ in op_def.regions)))

    return irdl.OperationOp(Dialect.split_name(op_def.name)[1], Region([block]))


def dialect_to_irdl_module(*dialects: Dialect) -> ModuleOp:
    """A module holding one `irdl.dialect` per dialect (default: DIALECTS) with every op of it."""
    return ModuleOp([irdl.DialectOp(d.name, Region([Block([*map(type_to_irdl, d.attributes),
                                                            *map(op_def_to_irdl, d.operations)])]))
                     for d in dialects or DIALECTS])


def type_to_irdl(attr: type[Attribute]) -> irdl.TypeOp:
    """A parameterless type (`!pyobj.obj`); types with parameters are not exported."""
    if not issubclass(attr, TypeAttribute) or cast(Any, attr).get_irdl_definition().parameters:
        raise NotImplementedError(f"{attr.name}: only parameterless types are exported to IRDL")
    return irdl.TypeOp(Dialect.split_name(attr.name)[1], Region([Block()]))


def emit_irdl(*dialects: Dialect) -> str:
    """The IRDL text, with the true op names (see `load_upstream` for upstream)."""
    return str(dialect_to_irdl_module(*dialects)) + "\n"


def load_upstream(context=None, *dialects: Dialect):
    """Register `dialects` (default: DIALECTS) in an upstream (torch_mlir) context via `irdl.load_dialects`,
    plus the traits IRDL has no syntax for.

    Upstream's IRDL verifier rejects '.' in op names, so ops are parsed under
    placeholder names and renamed before loading. Returns the IRDL module: keep it
    alive as long as the context.
    """
    from torch_mlir import ir
    from torch_mlir.dialects import irdl as up_irdl

    dialects = dialects or DIALECTS
    module = dialect_to_irdl_module(*dialects)
    real: dict[str, str] = {}
    for op in module.walk():
        if isinstance(op, irdl.OperationOp) and "." in op.sym_name.data:
            placeholder = f"dotted_name_{len(real)}"
            real[placeholder] = op.sym_name.data
            op.sym_name = StringAttr(placeholder)
    up = ir.Module.parse(str(module), context=context)
    for dialect_op in up.body.operations:
        for op in dialect_op.regions[0].blocks[0].operations:
            name = ir.StringAttr(op.attributes["sym_name"]).value
            if name in real:
                op.attributes["sym_name"] = ir.StringAttr.get(real[name], context=context)
    up_irdl.load_dialects(up)
    traits = {
        IsTerminator: ir.IsTerminatorTrait,
        NoTerminator: ir.NoTerminatorTrait,
        IsolatedFromAbove: ir.IsIsolatedFromAboveTrait,
    }
    for op in [op for d in dialects for op in d.operations]:
        for xdsl_trait, up_trait in traits.items():
            if op.has_trait(xdsl_trait):
                up_trait.attach(op.name, context=context)
    return up
