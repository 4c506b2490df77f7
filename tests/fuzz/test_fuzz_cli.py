"""approx-opt on a few hundred fuzzed inputs (fixed seed: .mlir files, pipelines,
configurations, Python functions for the decorator): every one ends in output
(exit 0) or one clear error line (exit 1); no traceback, no internal error, no
hang over 5 s. `make fuzz` (bench/fuzz.py) runs the same at 10,000 inputs."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.gen_module import generate
from tests.fuzz.generated_kernels import generated_cases
from tests.fuzz.inputs import (
    Case,
    config_cases,
    deep_cases,
    mlir_cases,
    pipeline_cases,
    python_cases,
    size_cases,
    split_cases,
)
from tests.fuzz.oracle import run_in_process, run_in_subprocess


def fuzz_settings(n: int):
    return settings(max_examples=n, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check(case: Case, run=run_in_process) -> None:
    outcome = run(case)
    assert outcome.problem is None, f"{outcome.problem}\nstderr: {outcome.stderr[:1000]}\n{case.describe()}"


@fuzz_settings(160)
@given(mlir_cases())
def test_mutated_mlir_files(case):
    check(case)


@fuzz_settings(60)
@given(pipeline_cases())
def test_pipeline_strings_and_pass_options(case):
    check(case)


@fuzz_settings(60)
@given(config_cases())
def test_apply_config_json(case):
    check(case)


@fuzz_settings(25)
@given(generated_cases())
def test_generated_annotated_kernels(case):
    check(case)


@fuzz_settings(40)
@given(python_cases())
def test_python_functions_through_the_decorator_lowering(case):
    """`approx-opt --from-python MODULE:f` on generated functions: unsupported syntax,
    wrong annotations and decorator settings are one located error."""
    check(case)


HOSTILE = [
    Case("large", generate(40).replace("knob_val = 3", "knob_val = 99999999999").encode()),  # upstream parse path
    Case("deep", b"module {\n" * 3000 + b"}\n" * 3000),
    Case("bytes", b'\xff\xfe"approx.knob"() <{id = 0 : i32}> ({\n'),
    Case("unterminated", b'"approx.util.annotation.transform"() <{func_name = "' + b"a" * 200 + b"\n"),
    Case("config", generate(2).encode(), config='{"k0": {"thresholds": 5, "decisions": "x"}}'),
]


@pytest.mark.parametrize("case", HOSTILE, ids=[c.kind for c in HOSTILE])
def test_hostile_inputs_as_a_command(case):
    """The real command: its exit code and stderr, and no hang (a sample; bench/fuzz.py runs more)."""
    check(case, run_in_subprocess)


@fuzz_settings(3)
@given(st.one_of(mlir_cases(), pipeline_cases()))
def test_in_process_and_command_agree(case):
    """main() in-process and the real command give the same exit code and stderr."""
    a, b = run_in_process(case), run_in_subprocess(case)
    same_files = lambda o: re.sub(r"\S*/(input\.mlir|config\.json)", r"\1", o.stderr.strip())  # noqa: E731
    assert (a.rc, same_files(a)) == (b.rc, same_files(b)), case.describe()


@fuzz_settings(30)
@given(split_cases())
def test_split_input_file_chunks(case):
    """Chunks between `// -----` lines (and look-alikes that are not markers): the good
    chunks' output, one located error per bad chunk."""
    check(case)


@fuzz_settings(30)
@given(size_cases())
def test_the_same_answer_below_and_above_the_upstream_parsers_size(case):
    """Inputs with upstream-only syntax (`-> f32` result types, ApproxMLIR's attribute
    layout), run as they are and padded past 20,000 characters: the same output or error."""
    check(case)


@fuzz_settings(3)
@given(deep_cases())
def test_deeply_nested_valid_programs_give_output(case):
    check(case)
