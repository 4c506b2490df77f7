"""approx-opt as a user runs it: listing passes, pipelines, and one-line errors."""

from __future__ import annotations

import pytest

from passes import ALL_PASSES, summary
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_list_passes_names_every_pass_with_its_summary(cli):
    proc = cli("--list-passes")
    assert proc.returncode == 0
    assert "approx-pipeline" in proc.stdout
    for name, cls in ALL_PASSES.items():
        assert f"{name}" in proc.stdout
        assert summary(cls) in proc.stdout


def test_every_pass_has_summary_and_description():
    from passes import description

    for cls in ALL_PASSES.values():
        assert summary(cls) and description(cls), cls.name


PROGRAM = module(STATE_OF_N, SUM_LOOP, decision_tree("sum", "loop_perforate", "state", [5], [0, 2], state_indices=(1,)))


def test_pipeline_leaves_no_approx_op(cli, tmp_path):
    src = tmp_path / "p.mlir"
    src.write_text(PROGRAM)
    out = tmp_path / "out.mlir"
    proc = cli(str(src), "-p", "approx-pipeline", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "approx." not in text
    assert "scf.index_switch" in text


def test_stdin_and_generic_output(cli):
    proc = cli("-", "-p", "emit-approx", "--print-op-generic", stdin=PROGRAM)
    assert proc.returncode == 0, proc.stderr
    assert '"approx.knob"' in proc.stdout and '"func.func"' in proc.stdout


def test_print_no_properties_puts_inherent_attributes_in_the_dictionary(cli):
    proc = cli("-", "-p", "emit-approx", "--print-op-generic", "--print-no-properties", stdin=PROGRAM)
    assert proc.returncode == 0
    assert "<{" not in proc.stdout and "{id = 0 : i32" in proc.stdout


def test_split_input_file_processes_each_chunk(cli):
    text = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b() {\n  return\n}\n"
    proc = cli("-", "--split-input-file", stdin=text)
    assert proc.returncode == 0
    assert proc.stdout.count("// -----") == 1
    assert "@a" in proc.stdout and "@b" in proc.stdout


def test_split_input_file_reports_lines_of_the_whole_file(cli):
    text = ("func.func @a() {\n  return\n}\n// -----\n\n"
            "\"approx.transform\"() <{transform_type = \"x\", knob_val = 1 : i32}> : () -> ()\n")
    proc = cli("-", "--split-input-file", stdin=text)
    assert_one_line_error(proc, "<stdin>:6:1: error:", "unknown transform_type 'x'")


@pytest.mark.parametrize(
    "args, stdin, fragments",
    [
        (("-p", "emit-approx,no-such-pass"), PROGRAM, ("unknown pass 'no-such-pass'",)),
        (("-p", "emit-approx{bogus=1}"), PROGRAM, ("bad options for pass 'emit-approx'",)),
        (("-p", "emit-approx{"), PROGRAM, ("bad pass pipeline",)),
        (("-p", "approx-pipeline{x=1}"), PROGRAM, ("'approx-pipeline' takes no options",)),
        ((), "func.func @f( {", ("<stdin>:1:", "error:")),
        ((), "\"approx.knob\"() : () -> ()", ("<stdin>:1:1: error:", "'approx.knob' op")),
        (("/no/such/file.mlir",), None, ("/no/such/file.mlir: error: cannot read input",)),
    ],
)
def test_errors_are_one_line_with_exit_code_1(cli, args, stdin, fragments):
    assert_one_line_error(cli(*args, stdin=stdin), *fragments)


def test_pass_error_points_at_the_annotation(cli):
    text = module(SUM_LOOP, '"approx.util.annotation.transform"() '
                            '<{func_name = "sum", transform_type = "task_skipping", knob_val = 1 : i32}> : () -> ()')
    line = text.splitlines().index(next(ln for ln in text.splitlines() if "task_skipping" in ln)) + 1
    proc = cli("-", "-p", "approx-pipeline", stdin=text)
    assert_one_line_error(proc, f"<stdin>:{line}:", "task_skipping: no scf.if or scf.index_switch")


def test_func_substitute_without_replacement_is_a_clear_error(cli):
    text = module(
        SUM_LOOP,
        '"approx.util.annotation.convert_to_call"() <{func_name = "sum"}> : () -> ()',
        '"approx.util.annotation.transform"() '
        '<{func_name = "sum", transform_type = "func_substitute", knob_val = 2 : i32}> : () -> ()',
    )
    assert_one_line_error(cli("-", "-p", "approx-pipeline", stdin=text), "needs a function 'approx_sum_2'")


def test_finalize_before_lowering_names_the_missing_pass(cli):
    proc = cli("-", "-p", "emit-approx,emit-management,finalize-approx", stdin=PROGRAM)
    assert_one_line_error(proc, "'approx.decide' is still present; run config-approx")


def test_input_sources_come_from_the_entry_point_group():
    """approx-opt imports no frontend: `--from-python` is the frontends' entry point,
    and a source nobody registered is a one-line error."""
    from approx_dialect.diagnostics import ApproxError
    from approx_opt.sources import source
    from frontends.cli import python_input

    assert source("python") is python_input
    with pytest.raises(ApproxError) as err:
        source("fortran")
    assert err.value.line() == ("<command line>: error: no input source 'fortran' is installed (entry point group "
                                "'approx_opt.sources'; pip install -e . registers the frontends' one)")


def test_stock_xdsl_opt_loads_the_dialect_and_passes(tmp_path):
    """The xdsl.universe entry point: xdsl-opt knows approx ops and passes."""
    import subprocess
    import sys
    from pathlib import Path

    from approx_opt.universe import APPROX_UNIVERSE
    from passes import ALL_PASSES, APPROX_PIPELINE_NAME

    assert set(APPROX_UNIVERSE.all_passes) == {*ALL_PASSES, APPROX_PIPELINE_NAME}
    src = tmp_path / "p.mlir"
    src.write_text(PROGRAM.replace("-> (f64)", "-> f64"))  # upstream's bare result type
    xdsl_opt = Path(sys.executable).parent / "xdsl-opt"
    proc = subprocess.run([str(xdsl_opt), str(src), "-p", "emit-approx"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"approx.knob"' in proc.stdout
    proc = subprocess.run([str(xdsl_opt), str(src), "-p", APPROX_PIPELINE_NAME], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "approx." not in proc.stdout and "scf.index_switch" in proc.stdout


def test_emit_irdl_prints_every_op(cli):
    from approx_dialect import Approx

    proc = cli("--emit-irdl")
    assert proc.returncode == 0
    for op in Approx.operations:
        assert "irdl.operation @" + op.name.split(".", 1)[1] in proc.stdout
