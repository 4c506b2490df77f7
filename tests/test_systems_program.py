"""The compound systems' one Program (examples/systems/program.py) on a small
decorated program: its knobs, builds and IR are the program's, and the exact
configuration builds."""

from __future__ import annotations

import numpy as np
import pytest

from examples.systems.program import SystemProgram, is_exact, program_attribute
from tests.frontend_programs import adaptive_sum

X = np.arange(1.0, 201.0)


@pytest.fixture
def system():
    return SystemProgram("adaptive_sum", adaptive_sum)


def test_knobs_builds_and_ir_are_the_programs(system):
    assert system.knobs() == adaptive_sum.knobs()
    assert system.ir() == adaptive_sum.ir()
    config = {"adaptive_sum": {"thresholds": [10, 100], "decisions": [0, 2, 4]}}
    assert system.ir(after=True, config=config) == adaptive_sum.ir(after=True, config=config)
    assert system.build(config)(X, len(X)) == adaptive_sum.build(config)(X, len(X))
    assert system.exact()(X, len(X)) == X.sum()
    assert system.model == "" and system.reuse == ()


def test_exact_means_every_knob_and_decision_at_zero():
    assert is_exact(None) and is_exact({"a": {"knob_val": 0}, "b": {"thresholds": [3], "decisions": [0, 0]}})
    assert not is_exact({"a": {"knob_val": 1}})
    assert not is_exact({"b": {"thresholds": [3], "decisions": [0, 1]}})
    assert not is_exact({"t": {"tree_decisions": [0, 2]}})


def test_module_program_is_built_on_first_use(system):
    built = []
    getattr_ = program_attribute("some.module", lambda: built.append(1) or system)
    assert not built and getattr_("program") is system and built == [1]
    with pytest.raises(AttributeError, match="module 'some.module' has no attribute 'other'"):
        getattr_("other")
