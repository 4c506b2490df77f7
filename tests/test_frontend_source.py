"""The decorator compiles the function that was defined: its source is taken when
the decorator runs and checked against the function's code; kernel integers that
do not fit their type are errors."""

from __future__ import annotations

import importlib
import sys

import pytest

from approx_dialect.diagnostics import ApproxError

KERNEL = '''from frontends import Knob, StaticTransform


@Knob(static_transform=StaticTransform("loop_perforate", 0))
def total(n: int) -> float:
    s = 0.0
    for i in range(n):
        s += 1.0 * SCALE
    return s
'''


@pytest.fixture
def module_file(tmp_path, monkeypatch):
    """Write `text` as a module of its own and import it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made = []

    def write(name: str, text: str):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        made.append(name)
        importlib.invalidate_caches()
        return importlib.import_module(name), path

    yield write
    for name in made:
        sys.modules.pop(name, None)


def test_editing_the_file_after_import_does_not_change_the_function(module_file):
    mod, path = module_file("edited_kernel", KERNEL.replace("SCALE", "5.5"))
    path.write_text(KERNEL.replace("SCALE", "550.0"))  # edited before the first call
    assert mod.total(10) == 55.0


def test_a_function_not_defined_from_its_file_is_a_clear_error(module_file, tmp_path):
    _, path = module_file("real_file", KERNEL.replace("SCALE", "1.0"))
    namespace: dict = {}
    exec(compile(KERNEL.replace("SCALE", "2.0"), str(path), "exec"), namespace)  # same lines, other code
    with pytest.raises(ApproxError, match=r"real_file.py:4: error: the source of 'total' .* is not the code that runs"):
        namespace["total"](3)


def test_a_function_without_source_is_a_clear_error():
    namespace: dict = {}
    exec(compile(KERNEL.replace("SCALE", "1.0"), "<generated>", "exec"), namespace)
    with pytest.raises(ApproxError, match="cannot read the source of 'total'"):
        namespace["total"](3)


def test_kernel_integers_outside_i64_are_errors(module_file):
    mod, _ = module_file("int_kernel", KERNEL.replace("SCALE", "1.0"))
    assert mod.total(4) == 4.0
    with pytest.raises(ApproxError, match="18446744073709551619 does not fit in i64"):
        mod.total(2**64 + 3)
