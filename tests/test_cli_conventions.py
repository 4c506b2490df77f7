"""approx-opt follows mlir-opt's conventions: verification after every pass,
--split-input-file, --version, unregistered dialects, generic passes, empty input."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import i32
from xdsl.passes import ModulePass

import passes
from approx_opt.main import main, split_chunks
from passes import GENERIC_PASSES, summary
from tests.programs import SUM_LOOP, module


def run(capsys, *argv: str, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        import io

        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@dataclass(frozen=True)
class BreakTypesPass(ModulePass):
    """Test fixture: a pass that breaks the IR (gives every arith.addf an i32 result)."""

    name = "break-types"

    def apply(self, ctx, op) -> None:
        for add in [o for o in op.walk() if isinstance(o, arith.AddfOp)]:
            add.result._type = i32  # deliberately invalid IR


def test_a_pass_that_breaks_the_ir_is_named(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(passes.ALL_PASSES, BreakTypesPass.name, BreakTypesPass)
    src = tmp_path / "s.mlir"
    src.write_text(module(SUM_LOOP))
    code, _, err = run(capsys, str(src), "-p", "break-types,cse")
    assert code == 1 and "after pass 'break-types'" in err and err.startswith(f"{src}:"), err
    code, _, err = run(capsys, str(src), "-p", "break-types,cse", "--no-verify-each")
    assert code == 1 and "after break-types,cse" in err, err  # only the result is verified


SPLIT = """func.func @a() -> i32 {
  %c = arith.constant 1 : i32
  return %c : i32
}
// -----
// a line mentioning // ----- is not a marker
func.func @b() -> i32 {
  return %nope : i32
}
// -----
func.func @c() -> i32 {
  %c = arith.constant 3 : i32
  return %c : i32
}
// -----
func.func @d() -> i32 {
  %c = arith.constant 3 : i64
  return %c : i32
}
"""


def test_split_input_file_processes_every_chunk(capsys, monkeypatch):
    code, out, err = run(capsys, "-", "--split-input-file", stdin=SPLIT, monkeypatch=monkeypatch)
    assert code == 1
    assert "@a" in out and "@c" in out and "@b" not in out and out.count("// -----") == 1
    assert err.splitlines() == [
        "<stdin>:8:10: error: use of undefined value '%nope'",
        "<stdin>:18:10: error: operand is used with type i32, but has been previously used or defined with type i64",
    ]


def test_split_only_on_a_marker_line():
    text = "a // ----- b\n  // -----  \nc\n// -----x\n// -----"
    assert split_chunks(text) == [("a // ----- b\n", 0), ("c\n// -----x\n", 2), ("", 5)]


def test_list_passes_prints_whole_summaries(capsys):
    code, out, _ = run(capsys, "--list-passes")
    assert code == 0
    one_line = " ".join(out.split())
    for cls in [*passes.ALL_PASSES.values(), *GENERIC_PASSES.values()]:
        assert " ".join(summary(cls).split()) in one_line
    # pre-emit-transform's first sentence spans two lines of its docstring
    assert "and a wrapper `f` that calls it." in out


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.startswith("approx-opt ")


CSE_INPUT = """func.func @f(%x: i32) -> i32 {
  %a = arith.addi %x, %x : i32
  %b = arith.addi %x, %x : i32
  %dead = arith.muli %x, %x : i32
  %u = "foo.bar"(%a) : (i32) -> i32
  return %b : i32
}
"""


def test_unregistered_dialects_and_generic_passes(capsys, monkeypatch):
    code, _, err = run(capsys, "-", stdin=CSE_INPUT, monkeypatch=monkeypatch)
    assert code == 1 and "<stdin>:5:" in err and "foo.bar" in err
    code, out, err = run(capsys, "-", "-p", "cse,canonicalize,dce", "--allow-unregistered-dialect",
                         stdin=CSE_INPUT, monkeypatch=monkeypatch)
    assert code == 0, err
    assert out.count("arith.addi") == 1 and "arith.muli" not in out and '"foo.bar"' in out


@pytest.mark.parametrize("text", ["", "\n\n", "// nothing but a comment\n"])
def test_an_empty_file_is_an_empty_module(capsys, monkeypatch, text):
    code, out, _ = run(capsys, "-", "-p", "approx-pipeline", stdin=text, monkeypatch=monkeypatch)
    assert code == 0 and out == "builtin.module {\n}\n"


def test_a_float_too_large_for_f64_is_an_error(capsys, monkeypatch):
    text = "func.func @f() -> f64 {\n  %c = arith.constant 1.0e400 : f64\n  return %c : f64\n}\n"
    code, _, err = run(capsys, "-", stdin=text, monkeypatch=monkeypatch)
    assert code == 1 and err == "<stdin>:2:23: error: floating point value 1.0e400 is too large for any float type\n"
    code, out, _ = run(capsys, "-", stdin=text.replace("1.0e400", "-1.5e308"), monkeypatch=monkeypatch)
    assert code == 0 and "-1.500000e+308" in out


def test_invalid_utf8_gets_the_same_answer_from_stdin_and_from_a_file(tmp_path):
    import subprocess
    import sys

    data = b"func.func @f() {\n  return\n}\n// \xff\xfe\n"
    src = tmp_path / "bad.mlir"
    src.write_bytes(data)
    cmd = [sys.executable, "-m", "approx_opt.main"]
    from_file = subprocess.run([*cmd, str(src)], capture_output=True, timeout=60)
    from_stdin = subprocess.run([*cmd, "-"], input=data, capture_output=True, timeout=60)
    assert from_file.returncode == from_stdin.returncode == 1
    assert from_file.stderr.decode() == f"{src}: error: input is not UTF-8 text\n"
    assert from_stdin.stderr.decode() == "<stdin>: error: input is not UTF-8 text\n"


def test_an_unexpected_exception_is_one_line_and_debug_shows_it(capsys, monkeypatch):
    def broken(args):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("approx_opt.main.process", broken)
    code, out, err = run(capsys)
    assert (code, out, err) == (1, "", "error: internal error: RuntimeError: boom (rerun with --debug)\n")
    with pytest.raises(RuntimeError, match="boom"):
        main(["--debug"])
