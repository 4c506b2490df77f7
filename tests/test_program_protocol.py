"""What the tuner may ask of a program is declared once (`approx_opt.program`: the
hooks of `PlainProgram` and `CostlyProgram`) and asked for only through `offered`,
which refuses a name declared in neither: a misspelt hook fails at once instead of
reading as absent and turning a feature off."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from approx_opt.program import OPTIONAL, CostlyProgram, MlirProgram, PlainProgram, Program, offered

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("approx_dialect", "passes", "approx_opt", "frontends", "autotuner", "examples", "bench")


def offered_names(path: Path) -> list[tuple[int, str | None]]:
    """(line, hook name) of each `offered(program, name)` call in the file; None where
    the name is not a string literal (which no scan could check)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "offered":
            name = node.args[1] if len(node.args) > 1 else None
            found.append((node.lineno, name.value if isinstance(name, ast.Constant) else None))
    return found


def test_every_hook_asked_for_anywhere_is_declared_in_the_protocols():
    asked = {(f"{p.relative_to(ROOT)}:{line}", name) for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
             for line, name in offered_names(p)}
    assert len(asked) >= 10  # the scan finds the tuner's calls
    bad = [f"{where}: {name!r}" for where, name in sorted(asked) if name not in OPTIONAL]
    assert not bad, "\n".join(bad)


def test_the_scan_sees_a_misspelt_or_computed_name(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from approx_opt.program import offered\nx = offered(p, 'untimd')\ny = offered(p, name)\n")
    assert offered_names(probe) == [(2, "untimd"), (3, None)]


def test_an_unknown_hook_is_an_error_even_where_the_program_has_it():
    program = MlirProgram.from_file(ROOT / "examples/mlir/adaptive_sum.mlir", "mean")
    program.untimd = lambda: None
    with pytest.raises(KeyError, match="'untimd' is not a hook"):
        offered(program, "untimd")
    with pytest.raises(KeyError, match="'knobs' is not a hook"):  # required, not optional: called directly
        offered(program, "knobs")


def test_a_hook_reads_as_the_program_offers_it():
    class Offers:
        name, text, untimed = "p", "func.func @main", "not callable"

        def knobs(self):
            return []

        def build(self, config):
            return lambda: None

        def reuse_counts(self):
            return {"reused": 0, "run": 0}

    p = Offers()
    assert offered(p, "text") == "func.func @main" and offered(p, "spec") is None  # attributes: as they are
    assert offered(p, "reuse_counts")() == {"reused": 0, "run": 0}
    assert offered(p, "untimed") is None and offered(p, "kept_only") is None  # a method hook must be callable


def test_the_protocols_declare_each_hook_once_with_what_the_tuner_does_with_it():
    plain = {n for n in vars(PlainProgram) if n in OPTIONAL}
    costly = {n for n in vars(CostlyProgram) if n in OPTIONAL}
    assert plain | costly == set(OPTIONAL) and not plain & costly
    assert not set(OPTIONAL) & {"name", "knobs", "build"}  # `Program`'s, which every program has
    assert {"untimed", "kept_only", "keep_outputs", "reuse_counts", "profile"} <= costly
    assert {"spec", "kind", "text", "entry"} <= plain and not any(OPTIONAL[n] for n in ("spec", "kind", "text"))
    for protocol in (PlainProgram, CostlyProgram):
        assert Program in protocol.__mro__
        for name in set(vars(protocol)) & set(OPTIONAL):
            member = vars(protocol)[name]
            doc = (member.fget if isinstance(member, property) else member).__doc__
            assert doc and "\n" not in doc.strip(), f"{protocol.__name__}.{name}: one line of docstring"
