"""The fixes to xDSL (`approx_dialect/xdsl_compat.py`): each stock behaviour is still
wrong and the patched one right. An xDSL upgrade that fixes one fails its test here
(drop that patch), and one that changes what a patch replaces fails too."""

from __future__ import annotations

import importlib.metadata
import time
from contextlib import contextmanager

import pytest
from xdsl.dialects import scf
from xdsl.traits import IsolatedFromAbove, SymbolTable
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from approx_dialect import xdsl_compat
from approx_dialect.context import parse_module, print_module
from approx_dialect.diagnostics import ApproxError
from approx_dialect.symbols import frozen_symbols

STOCK = xdsl_compat.STOCK


@contextmanager
def stock(owner, attr: str, value):
    """xDSL's own `owner.attr` for the duration (the patches are global)."""
    patched = owner.__dict__[attr]
    setattr(owner, attr, value)
    try:
        yield
    finally:
        setattr(owner, attr, patched)


def test_written_for_the_installed_xdsl():
    assert importlib.metadata.version("xdsl") == xdsl_compat.XDSL_VERSION, (
        "xDSL was upgraded: run this file, drop the patches it shows unnecessary, then update XDSL_VERSION")


def test_string_literals_lex_in_linear_time():
    assert STOCK["string_regex"].pattern == r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'  # backtracks
    for text in ['"abc"', r'"a\"b"', r'"\C3\A9"', '"a\nb"', '"unterminated', r'"\q"', '""']:
        stock_match, ours = STOCK["string_regex"].match(text), xdsl_compat.STRING_REGEX.match(text)
        assert (stock_match and stock_match.group()) == (ours and ours.group()), text
    t0 = time.thread_time()  # this thread's CPU time: what the match costs, however busy the machine
    assert xdsl_compat.STRING_REGEX.match('"' + "a\\" * 50_000) is None
    assert time.thread_time() - t0 < 0.5  # linear in the input: milliseconds


def test_escaped_utf8_is_a_string_literal():
    def kind(text):
        return MLIRLexer(Input(text, "<test>")).lex().kind

    # xDSL prints "é" as "\C3\A9"; read back, it must be a string again (invalid UTF-8 stays bytes)
    assert kind(r'"\C3\A9"') is MLIRTokenKind.STRING_LIT and kind(r'"\FF"') is MLIRTokenKind.BYTES_LIT
    with stock(MLIRLexer, "_lex_string_literal", STOCK["lex_string_literal"]):
        assert kind(r'"\C3\A9"') is MLIRTokenKind.BYTES_LIT


def test_float_literals_too_large_for_f64_are_errors():
    text = "func.func @f() -> f64 {\n  %c = arith.constant 1.0e400 : f64\n  return %c : f64\n}"
    with pytest.raises(ApproxError, match="too large for any float type"):
        parse_module(text)
    with stock(MLIRTokenKind, "get_float_value", STOCK["get_float_value"]):
        parse_module(text)  # stock xDSL reads it as inf


BARE_IF = """func.func @f(%c: i1, %x: f32) -> f32 {
  %r = scf.if %c -> f32 {
    scf.yield %x : f32
  } else {
    scf.yield %x : f32
  }
  return %r : f32
}"""


def test_scf_if_reads_a_bare_result_type():
    assert "scf.if" in print_module(parse_module(BARE_IF))
    with stock(scf.IfOp, "parse", STOCK["scf_if_parse"]):
        with pytest.raises(ApproxError):
            parse_module(BARE_IF)


def test_symbol_lookup_in_a_frozen_module_is_xdsls_answer():
    module = parse_module("func.func @g() {\n  return\n}\nfunc.func @f() {\n  func.call @g() : () -> ()\n  return\n}")
    f = list(module.ops)[1]
    call = next(iter(f.body.block.ops))
    with frozen_symbols(module):
        assert SymbolTable.lookup_symbol(call, "g") is STOCK["lookup_symbol"](call, "g") is list(module.ops)[0]
        assert SymbolTable.lookup_symbol(call, "nope") is None
    assert STOCK["lookup_symbol"].__module__ == "xdsl.traits"


def test_isolated_from_above_rejects_what_xdsl_rejects():
    bad = """func.func @f(%x: i32) {
  "builtin.module"() ({
    func.func @g() -> i32 {
      return %x : i32
    }
  }) : () -> ()
  return
}"""
    good = bad.replace("%x : i32\n    }", "%y : i32\n    }")
    good = good.replace("func.func @g() -> i32", "func.func @g(%y: i32) -> i32")
    parse_module(good)
    with pytest.raises(ApproxError, match="IsolatedFromAbove"):
        parse_module(bad)
    with stock(IsolatedFromAbove, "verify", STOCK["isolated_verify"]):
        parse_module(good)
        with pytest.raises(ApproxError, match="IsolatedFromAbove"):
            parse_module(bad)
