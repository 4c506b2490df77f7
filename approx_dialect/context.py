"""Parsing, verifying and printing IR with the dialects this toolchain works on.

Parsing records each op's `file:line:col`, so every later error (verifier, pass)
can say where it is. Inherent attributes written in the `{...}` dictionary (the
form upstream MLIR's IRDL-loaded dialects need) are moved into properties, so
both spellings of an ApproxMLIR program are accepted.
"""

from __future__ import annotations

import io
import re
from bisect import bisect_right

from xdsl.context import Context
from xdsl.dialects import affine, arith, builtin, cf, func, llvm, math, memref, scf, tensor
from xdsl.dialects.bufferization import Bufferization
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.dialects.linalg import Linalg
from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

from approx_dialect import Approx, nesting, xdsl_compat
from approx_dialect.component import Component
from approx_dialect.diagnostics import ApproxError
from approx_dialect.pyobj import PyObj
from approx_dialect.symbols import frozen_symbols

_DIALECTS = (
    builtin.Builtin,
    Linalg,
    Bufferization,
    func.Func,
    arith.Arith,
    scf.Scf,
    memref.MemRef,
    math.Math,
    cf.Cf,
    affine.Affine,
    tensor.Tensor,
    llvm.LLVM,
    Approx,
    PyObj,  # opaque Python values of orchestration code (frontends)
    Component,  # model, embedding, retrieval and tool calls of compound AI programs
)


xdsl_compat.install()  # the fixes to xDSL's lexer, symbol lookup, scf syntax and verifier


def make_context(allow_unregistered: bool = False) -> Context:
    """`allow_unregistered`: ops of unknown dialects parse as unregistered ops (mlir-opt's
    --allow-unregistered-dialect)."""
    ctx = Context(allow_unregistered=allow_unregistered)
    for dialect in _DIALECTS:
        ctx.load_dialect(dialect)
    return ctx


class LocatingParser(Parser):
    """xDSL's parser, but every op gets the FileLineColLoc of its first token.

    Line numbers come from one table of line starts (xDSL's Span.get_location
    recounts newlines from the top of the file for every op)."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._line_offset = line_offset
        self._file = StringAttr(name)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._first_forward_use: dict[str, Span] = {}

    def resolve_operand(self, operand, type):
        if operand.operand_name not in self.ssa_values:
            self._first_forward_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_module(self, allow_implicit_module: bool = True):
        """As xDSL's, but a value that is never defined is reported where it is first
        used (xDSL reports all of them at the end of the input). An input with no
        ops (empty, or comments only) is an empty module, as in mlir-opt."""
        if self._current_token.kind == MLIRTokenKind.EOF:
            return ModuleOp([])
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError:
            if not self.forward_ssa_references:
                raise
            uses = [self._first_forward_use[n] for n in self.forward_ssa_references if n in self._first_forward_use]
            if not uses:
                raise
            first = min(uses, key=lambda span: span.start)
            raise ParseError(first, f"use of undefined value '{first.text}'") from None

    def parse_operation(self) -> Operation:
        first = self._current_token.span
        start = first.start
        try:
            op = super().parse_operation()
        except VerifyException as err:  # xDSL checks some attributes while parsing (an integer outside its type)
            raise ParseError(first, _first_line(err)) from None
        except OverflowError as err:  # e.g. a hex float literal too wide for its type
            raise ParseError(first, f"number out of range in this op: {_first_line(err)}") from None
        except (ValueError, IndexError, KeyError, TypeError, AttributeError) as err:
            # xDSL's custom op parsers (linalg, ...) fail this way on malformed text
            raise ParseError(first, f"cannot parse this op: {type(err).__name__}: {_first_line(err)}") from None
        if isinstance(op.location, UnknownLoc):
            line = bisect_right(self._line_starts, start)
            col = start - self._line_starts[line - 1] + 1
            op.location = FileLineColLoc.new(
                (self._file, IntAttr(line + self._line_offset), IntAttr(col))
            )
        return op


@nesting.deep_retry
def parse_module(
    text: str, filename: str = "<stdin>", ctx: Context | None = None, line_offset: int = 0
) -> ModuleOp:
    """Parse with xDSL's parser and verify; raises ApproxError with `file:line:col` on
    any problem. (`approx_opt.parsing.parse_module` gives the same, faster on large
    inputs.)"""
    if nesting.in_deep_mode():
        nesting.check_nesting(text, filename, line_offset)
    ctx = ctx or make_context()
    parser = None
    try:
        parser = LocatingParser(ctx, text, filename, line_offset)  # lexes the first token: may raise
        module = parser.parse_module()
    except ParseError as err:
        where = err.span.get_location()
        raise ApproxError(err.msg, where=f"{where.file}:{where.line + line_offset}:{where.col}") from None
    except VerifyException as err:  # raised while parsing outside any op (attribute aliases)
        where = parser._current_token.span.get_location()
        raise ApproxError(_first_line(err), where=f"{where.file}:{where.line + line_offset}:{where.col}") from None
    move_inherent_attributes_to_properties(module)
    verify_module(module)
    return module


def move_inherent_attributes_to_properties(module: ModuleOp) -> None:
    for op in nesting.walk(module):
        if not isinstance(op, IRDLOperation) or not op.attributes:
            continue
        prop_names = op.get_irdl_definition().properties
        for name in [n for n in op.attributes if n in prop_names and n not in op.properties]:
            op.properties[name] = op.attributes.pop(name)


@nesting.deep_retry
def verify_module(module: ModuleOp) -> None:
    """Verify every op, innermost first; the first failure becomes an ApproxError
    pointing at the op that failed."""
    with frozen_symbols(module):
        for op in nesting.post_order(module):
            try:
                op.verify(verify_nested_ops=False)
            except VerifyException as err:
                raise ApproxError(f"'{op.name}' op {_first_line(err)}", op) from None
            except RecursionError:
                raise
            except Exception as err:  # xDSL raises a few non-VerifyException errors
                raise ApproxError(f"'{op.name}' op does not verify: {_first_line(err)}", op) from None
        check_defined_before_use(module)


def check_defined_before_use(module: ModuleOp) -> None:
    """Every operand is defined before its use, in its block or one that encloses it (MLIR's
    dominance within a block; xDSL does not check it, and passes that erase ops then fail on
    uses they cannot see). A value from another block of the same region (a CFG) is left to
    upstream MLIR; the module's own body is a graph region, where order is free."""
    position: dict[int, int] = {}
    for op in nesting.walk(module):
        for region in op.regions:
            for block in region.blocks:
                for i, inner in enumerate(block.ops):
                    position[id(inner)] = i
    for op in nesting.walk(module):
        for index, operand in enumerate(op.operands):
            owner = operand.owner
            if not isinstance(owner, Operation) or owner.parent is None:
                continue
            home = owner.parent
            if isinstance(home.parent_op(), ModuleOp):
                continue
            user, regions = op, []
            while user is not None and user.parent is not home:
                if user.parent is not None:
                    regions.append(user.parent.parent)
                user = user.parent_op()
            if user is None:
                if home.parent not in regions:
                    raise ApproxError(f"'{op.name}' op operand #{index} is defined in a region that does not "
                                      f"enclose this use ('{owner.name}')", op)
            elif position[id(owner)] >= position[id(user)]:
                raise ApproxError(f"'{op.name}' op operand #{index} is used before it is defined "
                                  f"('{owner.name}' comes later in the block)", op)




def _first_line(err: Exception) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@nesting.deep_retry
def print_module(module: Operation, generic: bool = False, props_as_attrs: bool = False) -> str:
    out = io.StringIO()
    Printer(
        stream=out,
        print_generic_format=generic,
        print_properties_as_attributes=props_as_attrs,
    ).print_op(module)
    out.write("\n")
    return out.getvalue()
