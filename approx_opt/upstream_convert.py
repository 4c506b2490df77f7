"""Building xDSL ops from upstream MLIR's parse of one input (`upstream_import`
decides when to try it and falls back to xDSL's parser): the same ops, operands,
properties and attributes (in the same dictionary order), `file:line:col`
locations and SSA name hints that xDSL's `LocatingParser` gives.

What upstream does not expose is read from the op's own text by `op_text`: SSA
names (`%acc`), and for ops in the generic form (`"name"(...) <{...}>`) the
attribute dictionaries in source order (upstream sorts them, and does not show
the properties of the `approx` ops it does not know); xDSL's parser reads their
values here. Ops in a custom form take their attributes from upstream (printed,
then parsed by xDSL, cached); only ops whose xDSL parser is known to give the
same properties in the same order are accepted (`CUSTOM_FORM_OPS`), and at most
one discardable attribute (its order is lost). Whatever cannot be built exactly
raises `op_text.Unsupported` (or xDSL's ParseError), never a wrong module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, cast

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.utils.mlir_lexer import MLIRTokenKind

from approx_opt.op_text import (
    SourceText,
    Unsupported,
    block_arg_name,
    generic_dicts,
    op_name_end,
    result_names,
)

# Ops accepted in their custom (pretty) form: for each, xDSL's parser sets the
# properties upstream reports, in the op definition's order, plus the defaults
# it fills in (which upstream materializes too). Checked by
# tests/test_upstream_import.py against xDSL's parser.
CUSTOM_FORM_OPS = frozenset(
    {
        "builtin.module", "func.func", "func.return", "func.call",
        "arith.constant",
        "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.negf",
        "arith.maximumf", "arith.minimumf",
        "arith.addi", "arith.subi", "arith.muli",
        "arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
        "arith.andi", "arith.ori", "arith.xori",
        "arith.cmpi", "arith.cmpf", "arith.select",
        "arith.index_cast", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
        "arith.extf", "arith.truncf", "arith.extsi", "arith.extui",
        "scf.for", "scf.yield", "scf.if",
        "memref.load", "memref.store", "memref.dim",
        "math.sqrt", "math.exp", "math.log", "math.absf", "math.powf",
    }
)

# Terminators that the custom-form parsers of these ops add where the text has
# none (upstream and xDSL alike).
_IMPLICIT_TERMINATORS = {"scf.for": "scf.yield", "scf.if": "scf.yield"}

_PLAIN_STRING_RE = re.compile(r'"[^"\\\n]*"')
_new_loc = FileLineColLoc.__new__
_set = object.__setattr__
_CACHE_LIMIT = 50_000  # spellings a cache holds before it is cleared


def convert_module(up_op, ctx: Context, text: str, filename: str, line_offset: int,
                   attr_cache: dict[str, Attribute], type_cache: dict[str, Attribute]) -> ModuleOp:
    """The xDSL module of upstream's parse `up_op` of `text` (call it inside upstream's
    Context). `attr_cache` and `type_cache` map spellings to what xDSL read from them;
    they are filled here and may be shared across inputs."""
    return _Conversion(ctx, text, filename, line_offset, attr_cache, type_cache).module(up_op)


class _Conversion:
    """One input's conversion: upstream ops -> xDSL ops, with the tables that hold
    only while it runs."""

    def __init__(self, ctx: Context, text: str, filename: str, line_offset: int,
                 attr_cache: dict[str, Attribute], type_cache: dict[str, Attribute]):
        self.attr_cache, self.type_cache = attr_cache, type_cache  # spelling -> what xDSL read, across inputs
        self.ctx = ctx
        self.src = SourceText(text, line_offset)
        self.file = StringAttr(filename)
        self.values: dict = {}  # upstream Value -> SSAValue
        self.types: dict = {}  # upstream Type -> xDSL type (upstream uniques them)
        self.attrs: dict = {}  # upstream Attribute -> xDSL attribute
        self.blocks: dict = {}  # upstream Block -> Block (regions of several blocks)
        self.op_types: dict[str, tuple] = {}
        self.ints: dict[int, IntAttr] = {}

    # -- structure ---------------------------------------------------------

    def module(self, up_op) -> ModuleOp:
        if str(up_op.location) == 'loc("-":0:0)':
            # No single top-level module in the text: xDSL wraps the ops in one.
            (region,) = up_op.regions
            (block,) = region.blocks
            ops = self.ops(block.operations, None)
            if not ops:
                raise Unsupported("no ops (xDSL's parser rejects an empty input)")
            return ModuleOp(ops)
        module = self.op(up_op, None)
        if not isinstance(module, ModuleOp):
            raise Unsupported(f"top-level op is {module.name}")
        return module

    def ops(self, up_ops: Iterable, parent: tuple[str, str] | None) -> list[Operation]:
        return [self.op(o.operation, parent) for o in up_ops]

    def region(self, up_region, parent: tuple[str, str]) -> Region:
        up_blocks = list(up_region.blocks)
        blocks = []
        for up_block in up_blocks:
            up_args = list(up_block.arguments)
            block = Block(arg_types=[self.type(a.type) for a in up_args])
            for up_arg, arg in zip(up_args, block.args):
                self.values[up_arg] = arg
                hint = block_arg_name(self.src, str(up_arg.location))
                if hint is not None:
                    arg.name_hint = hint
            blocks.append(block)
        if len(up_blocks) > 1:
            self.blocks.update(zip(up_blocks, blocks))
        for up_block, block in zip(up_blocks, blocks):
            block.add_ops(self.ops(up_block.operations, parent))
        return Region(blocks)

    def op(self, o, parent: tuple[str, str] | None) -> Operation:
        """The xDSL op of upstream op `o`; `parent` is the (name, location) of the
        op whose region holds it."""
        name = o.name
        info = self.op_types.get(name)
        if info is None:
            op_type = self.ctx.get_optional_op(name)
            if op_type is None or not issubclass(op_type, IRDLOperation):
                raise Unsupported(f"op '{name}' is not an xDSL op of this toolchain")
            info = (op_type, op_type.get_irdl_definition().properties)
            self.op_types[name] = info
        op_type, prop_defs = info

        loc = str(o.location)
        src = self.src
        line, line_start, off = src.offset(loc, name)
        found = op_name_end(src.text, off, name)
        if found is None:
            if parent is not None and loc == parent[1] and parent[0] in _IMPLICIT_TERMINATORS:
                if name == _IMPLICIT_TERMINATORS[parent[0]] and not len(o.operands):
                    # Added by the parser of a custom-form op, as xDSL's does:
                    # it gets no location there.
                    return op_type.create()
            raise Unsupported(f"op '{name}' is not where upstream locates it ({src.where(off)})")
        name_end, generic = found

        values = self.values
        try:
            operands = [values[v] for v in o.operands]
        except KeyError:
            raise Unsupported(f"op '{name}' uses a value defined after it") from None
        up_results = o.results
        result_types = [self.type(r.type) for r in up_results]
        up_regions = o.regions
        regions = [self.region(r, (name, loc)) for r in up_regions] if len(up_regions) else []
        up_successors = o.successors
        successors = [self.blocks[b] for b in up_successors] if len(up_successors) else []

        if generic:
            properties, attributes = self.generic_dicts(o, name_end, prop_defs, len(regions) > 0)
        else:
            properties, attributes = self.custom_dicts(o, name, prop_defs)

        start = off
        groups = None
        if len(up_results):
            start, groups = result_names(src, line_start, off, name)

        op = op_type.create(
            operands=operands,
            result_types=result_types,
            properties=properties,
            attributes=attributes,
            location=self.location(line, start - line_start + 1),
            successors=successors,
            regions=regions,
        )
        if groups is not None:
            results = op.results
            i = 0
            for hint, n in groups:
                if hint is not None:
                    for r in results[i : i + n]:
                        r.name_hint = hint
                i += n
            if i != len(results):
                raise Unsupported(f"op '{name}' binds {i} names to {len(results)} results")
            for up_r, r in zip(up_results, results):
                values[up_r] = r
        return op

    # -- attributes ----------------------------------------------------------

    def generic_dicts(self, o, pos: int, prop_defs, has_regions: bool):
        """Properties and attributes of a generic-form op, read from the op's text
        (exact values, source order) as xDSL's generic parser reads them."""
        properties, attributes = generic_dicts(self.src, pos, o.name, has_regions, self.source_attr)
        if attributes is None:
            # The attribute dictionary follows the regions: take it from upstream.
            rest = [(k, a) for k, a in o.attributes.items() if k not in properties]
            if rest and o.context.is_registered_operation(o.name):
                raise Unsupported(f"generic op '{o.name}' with regions has attributes")
            if len(rest) > 1:
                raise Unsupported(f"op '{o.name}' has several attributes (order unknown)")
            attributes = {k: self.attr(a) for k, a in rest}
        for prop_name in prop_defs:
            if prop_name in attributes and prop_name not in properties:
                properties[prop_name] = attributes.pop(prop_name)
        return properties, attributes

    def source_attr(self, spelling: str) -> Attribute:
        """An attribute as xDSL parses it from its source spelling."""
        spelling = spelling.strip()
        attr = self.attr_cache.get(spelling)
        if attr is None:
            if _PLAIN_STRING_RE.fullmatch(spelling):
                attr = StringAttr(spelling[1:-1])
            else:
                attr = _parse(self.ctx, spelling, "attribute")
            _remember(self.attr_cache, spelling, attr)
        return attr

    def custom_dicts(self, o, name: str, prop_defs):
        if name not in CUSTOM_FORM_OPS:
            raise Unsupported(f"op '{name}' in custom form is not known to the fast path")
        up_attrs = o.attributes
        if not len(up_attrs):
            return {}, {}
        found: dict[str, Attribute] = {}
        attributes: dict[str, Attribute] = {}
        for key, up_attr in up_attrs.items():
            if key in prop_defs:
                found[key] = self.attr(up_attr)
            else:
                attributes[key] = self.attr(up_attr)
        if len(attributes) > 1:
            raise Unsupported(f"op '{name}' has several attributes (order unknown)")
        properties = {k: found[k] for k in prop_defs if k in found}
        return properties, attributes

    def attr(self, up_attr) -> Attribute:
        attr = self.attrs.get(up_attr)
        if attr is None:
            attr = self.attrs[up_attr] = self.from_text(up_attr, "attribute", self.attr_cache)
        return attr

    def type(self, up_type) -> Attribute:
        attr = self.types.get(up_type)
        if attr is None:
            attr = self.types[up_type] = self.from_text(up_type, "type", self.type_cache)
        return attr

    def from_text(self, up_obj, kind: str, cache: dict[str, Attribute]) -> Attribute:
        """Upstream attribute or type `up_obj` (`kind`), as xDSL parses upstream's
        spelling of it."""
        key = str(up_obj)
        attr = cache.get(key)
        if attr is None:
            if "\\" in key:  # upstream prints non-ASCII strings as bytes
                raise Unsupported(f"{kind} {key[:60]} has escapes")
            attr = _parse(self.ctx, key, kind)
            _reject_dictionaries(attr, key)
            _remember(cache, key, attr)
        return attr

    # -- locations -----------------------------------------------------------

    def location(self, line: int, col: int) -> FileLineColLoc:
        # What LocatingParser builds with FileLineColLoc.new, less re-verifying
        # parameters that are right by construction.
        loc = _new_loc(FileLineColLoc)
        _set(loc, "filename", self.file)
        _set(loc, "line", self.int(line + self.src.line_offset))
        _set(loc, "column", self.int(col))
        return loc

    def int(self, n: int) -> IntAttr:
        attr = self.ints.get(n)
        if attr is None:
            attr = self.ints[n] = IntAttr(n)
        return attr


def _parse(ctx: Context, spelling: str, kind: str) -> Attribute:
    """`spelling` parsed whole by xDSL as an attribute or a type (`kind`)."""
    p = Parser(ctx, spelling)
    attr = p.parse_type() if kind == "type" else p.parse_attribute()
    if p._current_token.kind != MLIRTokenKind.EOF:
        raise Unsupported(f"{kind} {spelling[:60]} not read whole")
    return attr


def _remember(cache: dict[str, Attribute], key: str, attr: Attribute) -> None:
    if len(cache) > _CACHE_LIMIT:
        cache.clear()
    cache[key] = attr


def _reject_dictionaries(attr: Attribute, key: str) -> None:
    """Upstream sorts dictionary attributes; xDSL keeps the source order."""
    if "{" not in key:
        return
    from xdsl.dialects.builtin import DictionaryAttr
    from xdsl.ir import ParametrizedAttribute

    stack = [attr]
    while stack:
        a = stack.pop()
        if isinstance(a, DictionaryAttr):
            if len(a.data) > 1:
                raise Unsupported(f"attribute {key[:60]} holds a dictionary (order unknown)")
            stack.extend(a.data.values())
        elif isinstance(a, ParametrizedAttribute):
            stack.extend(a.parameters)
        elif isinstance(getattr(a, "data", None), tuple):
            stack.extend(x for x in cast(Any, a).data if isinstance(x, Attribute))
