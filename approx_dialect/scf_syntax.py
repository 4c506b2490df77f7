"""`scf.for` and `scf.if` result types as upstream MLIR reads them.

Upstream accepts `-> f32` as well as `-> (f32)` after `iter_args(...)` and after
an `scf.if` condition (a function result type list: one bare type, or a list in
parentheses); xDSL 0.74 demands the parentheses. ApproxMLIR's own inputs use the
bare form, and the fast path through upstream's parser accepts it, so without
this the answer depended on the input's size. Installed on xDSL's op classes by
`approx_dialect.xdsl_compat` (stock `xdsl-opt` with our plugin gets it too)."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType, i1
from xdsl.ir import Attribute, Region
from xdsl.parser import Parser
from xdsl.traits import SingleBlockImplicitTerminator, ensure_terminator


def parse_result_types(parser: Parser) -> list[Attribute]:
    """After `->`: `(t1, t2, ...)`, `()` or one bare type."""
    types = parser.parse_optional_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    return types if types is not None else [parser.parse_type()]


def parse_if(cls, parser: Parser) -> scf.IfOp:
    cond = parser.parse_operand(i1)
    return_types = parse_result_types(parser) if parser.parse_optional_punctuation("->") else []
    then_region = cls.parse_region_with_yield(parser)
    else_region = cls.parse_region_with_yield(parser) if parser.parse_optional_keyword("else") else Region()
    attr_dict = parser.parse_optional_attr_dict()
    return cls(cond, return_types, then_region, else_region, attr_dict)


def parse_for(cls, parser: Parser) -> scf.ForOp:
    indvar = parser.parse_argument(expect_type=False)
    parser.parse_punctuation("=")
    lb = parser.parse_unresolved_operand()
    parser.parse_keyword("to")
    ub = parser.parse_unresolved_operand()
    parser.parse_keyword("step")
    step = parser.parse_unresolved_operand()

    pos = parser.pos
    iter_args: list[Parser.UnresolvedArgument] = []
    inits = []
    types: list[Attribute] = []
    if parser.parse_optional_keyword("iter_args"):

        def assignment():
            arg = parser.parse_argument(expect_type=False)
            parser.parse_punctuation("=")
            return arg, parser.parse_unresolved_operand()

        for arg, init in parser.parse_comma_separated_list(Parser.Delimiter.PAREN, assignment):
            iter_args.append(arg)
            inits.append(init)
        parser.parse_punctuation("->")
        types = parse_result_types(parser)
    init_values = parser.resolve_operands(inits, types, pos)
    block_args = [arg.resolve(t) for arg, t in zip(iter_args, types)]
    indvar_type = parser.parse_type() if parser.parse_optional_punctuation(":") else IndexType()
    bounds = [parser.resolve_operand(x, indvar_type) for x in (lb, ub, step)]
    body = parser.parse_region((indvar.resolve(indvar_type), *block_args))
    attrs = parser.parse_optional_attr_dict()

    for_op = cls(*bounds, init_values, body)
    for_op.attributes |= attrs
    if not block_args:
        for trait in for_op.get_traits_of_type(SingleBlockImplicitTerminator):
            ensure_terminator(for_op, trait)
    return for_op
