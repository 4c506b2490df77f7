"""approx-opt on generated component programs and decorated sources that call
components, at a small fixed-seed size (`make fuzz` runs thousands: bench/fuzz.py
--components / --sources): each input ends in output (exit 0; a valid one must) or
one error line that says where (exit 1); no traceback, no internal error, no hang."""

from __future__ import annotations

import json

from hypothesis import given

from tests.fuzz.components import component_cases, component_programs
from tests.fuzz.inputs import Case
from tests.fuzz.oracle import run_in_process, run_in_subprocess
from tests.fuzz.pycomponents import component_source_cases, component_sources
from tests.fuzz.test_fuzz_cli import check, fuzz_settings


@fuzz_settings(60)
@given(component_cases())
def test_component_programs_valid_and_mutated(case):
    """Component ops with their knobs (param, substitutes, precision, memoize, skips with
    fallbacks, cascades, decided knobs), valid or with hostile attributes, operands,
    labels and annotations, under the pipeline, with a configuration now and then."""
    check(case)


@fuzz_settings(15)
@given(component_programs())
def test_valid_component_programs_give_output(program):
    out = run_in_process(Case("component:valid", program.text.encode(), expect="output", located=True))
    assert out.problem is None and out.rc == 0, f"{out.stderr}\n{program.text}"


@fuzz_settings(30)
@given(component_source_cases())
def test_decorated_sources_calling_components(case):
    """Loops, branches, calls and component calls lowered by `--from-python`: a valid
    module gives output; a wrong declaration, call or setting is one error at its line."""
    check(case)


@fuzz_settings(10)
@given(component_sources(mistakes=False))
def test_valid_decorated_sources_give_output(program):
    if not program.valid:  # components sharing a label: not sure to be valid
        return
    out = run_in_process(Case("source:valid", program.text.encode(), python=True, expect="output", located=True))
    assert out.problem is None and out.rc == 0, f"{out.stderr}\n{program.text}"


@fuzz_settings(2)
@given(component_source_cases())
def test_decorated_sources_as_a_command(case):
    check(case, run_in_subprocess)


def test_errors_without_a_place_are_findings():
    """The oracle's location check: an error line must say where it is."""
    from tests.fuzz.oracle import judge

    case = Case("component:x", b"", located=True)
    assert judge(1, "", "error: something\n", 0.1, case=case).problem.startswith("error line without a location")
    assert judge(1, "", "<decorator>: error: x\n", 0.1, case=case).problem is not None
    for line in ("/tmp/a/input.mlir:4:3: error: x", "m.py:12: error: x", "<config>: error: x", "mod:f:3:3: error: x"):
        assert judge(1, "", line + "\n", 0.1, case=case).problem is None, line


def test_fuzz_size_splits_over_the_groups(tmp_path):
    """`bench/fuzz.py --size N`: half earlier kinds, a quarter of each new group; a tiny run end to end."""
    from bench import fuzz

    assert fuzz.split(100_000) == {"mixed": 50_000, "components": 25_000, "sources": 25_000}
    assert sum(fuzz.split(10_001).values()) == 10_001
    out = tmp_path / "summary.json"
    rc = fuzz.main(["--inputs", "0", "--components", "4", "--sources", "3", "--workers", "1", "--sample", "1",
                    "--json", str(out), "--findings-dir", str(tmp_path / "findings")])
    summary = json.loads(out.read_text())
    assert rc == 0 and summary["findings"] == 0
    assert {g: s["inputs"] for g, s in summary["groups"].items()} == {"components": 4, "sources": 3}
