"""docs/components.md's per-CPU engine table is the one bench/engine_table.py makes from
the probes kept in bench/: a probe added or re-run without the page rewritten fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script():
    spec = importlib.util.spec_from_file_location("engine_table", ROOT / "bench" / "engine_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_holds_the_table_the_probes_make():
    script = load_script()
    assert script.main(["--check"]) == 0


def test_every_probe_kept_is_a_line_naming_its_machine_and_file():
    script = load_script()
    lines = script.table().splitlines()[2:]
    assert len(lines) == len(script.probes()) >= 2
    for line, path in zip(lines, script.probes()):
        assert f"`bench/{path.name}`" in line and ("AMD" in line or "Intel" in line)
