"""Runs the FileCheck-style .mlir tests in tests/filecheck through lit."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent / "filecheck"


def test_lit_suite_passes():
    tests = sorted(HERE.glob("*.mlir"))
    assert len(tests) >= 6, "every pass has a FileCheck test"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "lit"), "-q", "-j", "2", str(HERE)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
