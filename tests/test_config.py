"""Knob configurations: the search space read from annotations, and applying a
saved configuration (`approx-opt --apply-config`)."""

from __future__ import annotations

import json

import pytest

from approx_dialect.context import parse_module
from approx_dialect.diagnostics import ApproxError
from approx_opt.driver import run_pipeline
from approx_opt.jit import compile_module
from passes.knobs import apply_config, knob_specs
from tests.programs import STATE_OF_N, SUM_LOOP, decision_tree, module, static_transform

LADDER = module(STATE_OF_N, SUM_LOOP, decision_tree("sum", "loop_perforate", "state", [5], [0, 2],
                                                   state_indices=(1,), values=[0, 2, 4], uppers=(100,)))


def test_specs_come_from_the_annotations():
    (spec,) = knob_specs(parse_module(LADDER))
    # decision_values [0, 2, 4] is the range searched, as ApproxMLIR's tuner reads it
    assert (spec.name, spec.kind, spec.values, spec.num_thresholds) == ("sum", "ladder", (0, 1, 2, 3, 4), 1)
    assert spec.bounds(0) == (0, 100)
    (static,) = knob_specs(parse_module(module(SUM_LOOP, static_transform("sum", "loop_truncate", 0))))
    assert static.kind == "static" and static.values == (0, 2, 3, 4, 8)


@pytest.mark.parametrize("config, n, stride", [
    ({"sum": {"knob_val": 4}}, 3, 4),
    ({"sum": {"knob_val": 0}}, 50, 1),
    ({"sum": {"thresholds": [20], "decisions": [2, 4]}}, 19, 2),
    ({"sum": {"thresholds": [20], "decisions": [2, 4]}}, 20, 4),
])
def test_configuration_sets_the_program(config, n, stride):
    data = __import__("numpy").arange(64, dtype=float)
    fn = compile_module(run_pipeline(LADDER, "approx-pipeline", config=config)).fn("sum")
    assert fn(data, n) == data[:n][::stride].sum()


@pytest.mark.parametrize("config, message", [
    ({"nope": {"knob_val": 1}}, "unknown knob 'nope'"),
    ({"sum": {"knob_val": 5}}, "knob value 5 is not among its values [0, 1, 2, 3, 4]"),
    ({"sum": {"thresholds": [500], "decisions": [0, 2]}}, "threshold 0 = 500 is outside its range [0, 100]"),
    ({"sum": {"bogus": 1}}, "has none of the expected keys"),
])
def test_bad_configurations_are_clear_errors(config, message):
    with pytest.raises(ApproxError, match=message.replace("[", r"\[").replace("]", r"\]")):
        apply_config(parse_module(LADDER), config)


def test_cli_applies_a_saved_configuration_and_lists_knobs(cli, tmp_path):
    src, cfg = tmp_path / "p.mlir", tmp_path / "c.json"
    src.write_text(LADDER)
    cfg.write_text(json.dumps({"knobs": {"sum": {"knob_val": 4}}}))
    proc = cli(str(src), "-p", "approx-pipeline", "--apply-config", str(cfg))
    assert proc.returncode == 0, proc.stderr
    assert "arith.constant 4 : index" in proc.stdout
    listed = json.loads(cli(str(src), "--list-knobs").stdout)
    assert listed[0]["name"] == "sum" and listed[0]["values"] == [0, 1, 2, 3, 4]
    cfg.write_text("{bad json")
    bad = cli(str(src), "--apply-config", str(cfg))
    assert bad.returncode == 1 and "configuration is not JSON" in bad.stderr
