"""Every change this toolchain makes to xDSL's own classes, in one place.

They were written for xDSL `XDSL_VERSION` (pyproject pins it) and each fixes a
behaviour of that version; `install()` applies them all (idempotent; called by
`approx_dialect.context` and by the `xdsl-opt` plugin). `tests/test_xdsl_compat.py`
shows each stock behaviour still wrong and the patched one right, so an xDSL
upgrade that fixes one (or changes what a patch replaces) fails there: drop or
rewrite that patch.

- lexer, string literals: xDSL lexes them with `"(?:[^"...]+|\\...)*"`, which
  backtracks exponentially on an unterminated string (40 characters after a lone
  `"` take minutes); the same language matched possessively.
- lexer, non-ASCII strings: xDSL prints every non-ASCII character as `\\XX` bytes
  but reads such a literal back as bytes, so "é" did not round-trip; as in
  upstream MLIR, bytes that are valid UTF-8 are a string.
- lexer, float literals: xDSL reads a decimal literal too large for f64
  (`1.0e400`) as inf; upstream MLIR rejects it (infinity is spelled in hex).
- `SymbolTable.lookup_symbol`: xDSL scans the module on every lookup (quadratic
  verification); inside `symbols.frozen_symbols(module)` it is one dict access.
- `scf.if` / `scf.for` parsing: upstream reads `-> f32` as well as `-> (f32)`
  (`scf_syntax`).
- `IsolatedFromAbove.verify`: linear in the depth instead of quadratic (`nesting`).
"""

from __future__ import annotations

import re
from math import isinf

from xdsl.dialects import scf
from xdsl.traits import IsolatedFromAbove, SymbolTable
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from approx_dialect import nesting, scf_syntax, symbols

XDSL_VERSION = "0.74.0"

# what each patch replaces, as xDSL XDSL_VERSION has it (the test compares)
STOCK = {
    "string_regex": MLIRLexer._unescaped_characters_regex,
    "lex_string_literal": MLIRLexer._lex_string_literal,
    "get_float_value": MLIRTokenKind.get_float_value,
    "lookup_symbol": SymbolTable.lookup_symbol,
    "scf_if_parse": scf.IfOp.parse,
    "scf_for_parse": scf.ForOp.parse,
    "isolated_verify": IsolatedFromAbove.verify,
}

STRING_REGEX = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


def _lex_utf8_string_literal(self, start_pos):
    token = STOCK["lex_string_literal"](self, start_pos)
    if token.kind is MLIRTokenKind.BYTES_LIT:
        try:
            token.span.bytes_contents.decode("utf-8")
        except UnicodeDecodeError:
            return token
        return Token(MLIRTokenKind.STRING_LIT, token.span)
    return token


def _finite_float_value(self, span):
    value = STOCK["get_float_value"](self, span)
    if isinf(value) and not span.text.lower().startswith(("0x", "-0x")):
        raise ParseError(span, f"floating point value {span.text} is too large for any float type")
    return value


def _lookup_symbol(op, name):
    return symbols.lookup_symbol(op, name, STOCK["lookup_symbol"])


_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    MLIRLexer._unescaped_characters_regex = STRING_REGEX
    MLIRLexer._lex_string_literal = _lex_utf8_string_literal
    MLIRTokenKind.get_float_value = _finite_float_value
    SymbolTable.lookup_symbol = staticmethod(_lookup_symbol)  # type: ignore[method-assign]
    scf.IfOp.parse = classmethod(scf_syntax.parse_if)  # type: ignore[method-assign, assignment]
    scf.ForOp.parse = classmethod(scf_syntax.parse_for)  # type: ignore[method-assign, assignment]
    IsolatedFromAbove.verify = nesting.verify_isolated_from_above  # type: ignore[method-assign]
    _installed = True
