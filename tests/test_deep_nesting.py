"""Deeply nested input: 1,000 levels work from the Python API and the CLI; past
MAX_NESTING a located one-line error, never a RecursionError."""

from __future__ import annotations

import pytest

from approx_dialect.context import parse_module, print_module
from approx_dialect.diagnostics import ApproxError
from approx_dialect.nesting import MAX_NESTING, check_nesting, post_order, walk
from approx_opt.driver import run_pipeline


def nested_ifs(levels: int) -> str:
    return "func.func @f(%c: i1) {\n" + "scf.if %c {\n" * levels + "}\n" * levels + "return\n}\n"


def test_a_thousand_levels_parse_run_and_print():
    text = nested_ifs(1000)
    module = parse_module(text)
    assert len(walk(module)) == 2 * 1000 + 3  # module, func, 1000 ifs with their yields, return
    out = run_pipeline(text, "approx-pipeline")
    assert out.count("scf.if") == 1000
    assert print_module(parse_module(out)) == out


def test_past_the_limit_a_located_error(capsys):

    text = "// header\n" + nested_ifs(MAX_NESTING + 5)
    with pytest.raises(ApproxError) as info:
        parse_module(text, "deep.mlir")
    # the func's `{` is level 1, so the if on line MAX_NESTING + 2 opens level MAX_NESTING + 1
    assert str(info.value) == (f"deep.mlir:{MAX_NESTING + 2}:11: error: input nests too deeply "
                               f"(more than {MAX_NESTING} levels)")


def test_nesting_check_skips_strings_and_comments():
    check_nesting('"{{{{" // ((((\n{}', "x.mlir", limit=1)
    with pytest.raises(ApproxError, match="x.mlir:2:2: error: input nests too deeply"):
        check_nesting('"{{{{" // ((((\n{(}', "x.mlir", limit=1)


def test_post_order_puts_children_first():
    module = parse_module(nested_ifs(3))
    names = [op.name for op in post_order(module)]
    assert names[-2:] == ["func.func", "builtin.module"] and names.index("func.return") < names.index("func.func")
