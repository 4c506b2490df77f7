"""The tuner remembers a program's builds (one pipeline run per configuration) only as
long as the program lives: a build holds the program's models (an LLM system's, GBs), and
a process that tunes one system after another must not keep every one it tuned."""

from __future__ import annotations

import gc
import weakref

from autotuner.workers import build


class Model:
    """Stands for a provider a build calls."""


class Program:
    def __init__(self):
        self.model = Model()
        self.builds = 0

    def build(self, config):
        self.builds += 1
        model = self.model
        return lambda x: (model, config, x)


def test_a_configuration_is_built_once_per_program():
    program = Program()
    first = build(program, {"k": {"knob_val": 1}})
    assert build(program, {"k": {"knob_val": 1}}) is first
    build(program, {"k": {"knob_val": 2}})
    assert program.builds == 2
    other = Program()
    build(other, {"k": {"knob_val": 1}})
    assert other.builds == 1  # another program's build is its own, never one remembered for another


def test_a_program_let_go_takes_its_builds_and_models_with_it():
    program = Program()
    build(program, {"k": {"knob_val": 1}})
    model = weakref.ref(program.model)
    del program
    gc.collect()
    assert model() is None
