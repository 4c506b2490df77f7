"""The search space read from a program's knobs: static and dynamic parameters,
narrowing and fixing, seeds, and configurations the compiler accepts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.program import MlirProgram
from autotuner.space import SearchSpace
from bench.dots_kernel import kernel_text
from tests.tree_programs import leaf, sum2_module, tree

ADAPTIVE = MlirProgram.from_file(Path(__file__).parents[1] / "examples/mlir/adaptive_sum.mlir", "mean")
DOTS = MlirProgram(kernel_text(3), "main", "dots.mlir")


def distributions(space: SearchSpace) -> dict:
    study = optuna.create_study(directions=["minimize", "maximize"])
    trial = study.ask()
    space.suggest(trial)
    return trial.distributions


def test_static_knobs_are_categoricals_over_their_values():
    d = distributions(SearchSpace.from_program(DOTS, "static"))
    assert {n: tuple(x.choices) for n, x in d.items()} == {n: (0, 2, 3, 4, 8) for n in ("d1", "d2", "d3")}
    assert SearchSpace.from_program(DOTS, "static").size() == 125


def test_ladder_in_static_mode_is_one_value_and_in_dynamic_mode_thresholds_and_decisions():
    assert list(distributions(SearchSpace.from_program(ADAPTIVE, "static"))) == ["mean"]
    d = distributions(SearchSpace.from_program(ADAPTIVE, "dynamic"))
    assert sorted(d) == ["mean.d0", "mean.d1", "mean.d2", "mean.t0", "mean.t1"]
    assert (d["mean.t0"].low, d["mean.t0"].high, d["mean.t0"].log) == (1, 1000000, True)
    assert tuple(d["mean.d2"].choices) == tuple(range(9))  # decision_values [0, 2, 4, 8]: the range 0..8
    assert SearchSpace.from_program(ADAPTIVE, "dynamic").size() is None


def test_thresholds_are_sorted_and_the_configuration_runs():
    space = SearchSpace.from_program(ADAPTIVE, "dynamic")
    params = {"mean.t0": 5000, "mean.t1": 20, "mean.d0": 0, "mean.d1": 2, "mean.d2": 8}
    config = space.config_of(params)
    assert config == {"mean": {"thresholds": [20, 5000], "decisions": [0, 2, 8]}}
    x = np.arange(10_000, dtype=np.float64)
    # n = 10000 >= 5000: every 8th sample, counted, so the mean of 0, 8, ..., 9992
    assert ADAPTIVE.build(config)(x, 10_000) == pytest.approx(x[::8].mean())
    assert space.config_of(space.params_of(config)) == config


def test_seeds_are_exact_then_each_knob_alone_at_its_middle_value():
    seeds = SearchSpace.from_program(DOTS, "static").seeds()
    assert seeds[0] == {n: {"knob_val": 0} for n in ("d1", "d2", "d3")}
    assert seeds[1:] == [{**seeds[0], n: {"knob_val": 3}} for n in ("d1", "d2", "d3")]  # of 0, 2, 3, 4, 8
    dyn = SearchSpace.from_program(ADAPTIVE, "dynamic").seeds()
    assert dyn == [{"mean": {"thresholds": [1000, 100000], "decisions": [0, 0, 0]}},
                   {"mean": {"thresholds": [1000, 100000], "decisions": [4, 4, 4]}}]


def test_the_screen_tries_each_knob_alone_gentlest_steps_first_where_the_time_goes_first():
    from autotuner.strategy import screen

    space = SearchSpace.from_program(DOTS, "static")
    exact = space.seeds()[0]
    first = screen(space, {})
    assert first[:3] == [{**exact, n: {"knob_val": 2}} for n in ("d1", "d2", "d3")]  # of 0, 2, 3, 4, 8
    assert len(first) == 3 * 4 and first[3] == {**exact, "d1": {"knob_val": 3}}  # then every other value
    # a knob is `<label>.<setting>`: the label's share of the time orders the knobs
    assert [next(k for k, v in c.items() if v != {"knob_val": 0}) for c in screen(space, {"d3": 0.9})][:3] == [
        "d3", "d1", "d2"]
    fixed = screen(SearchSpace.from_program(DOTS, "static").fix({"d3": 4}), {})
    assert len(fixed) == 2 * 4 and all(c["d3"] == {"knob_val": 4} for c in fixed)
    assert screen(SearchSpace.from_program(ADAPTIVE, "dynamic"), {}) == []  # ladders are not screened


class Routed:
    """Knobs named as a component program's: `<label>.<setting>` of the LLM, and the
    program's own `route` (which components run)."""

    name = "routed"

    def knobs(self):
        from passes.knobs import KnobSpec

        return [KnobSpec("llm.tokens", "f", "param", "static", (0, 1, 2)),
                KnobSpec("bm25.top_k", "f", "param", "static", (0, 1)),
                KnobSpec("route", "f", "param", "static", (0, 1, 2))]


class RoutedWithPrecision(Routed):
    def knobs(self):
        from passes.knobs import KnobSpec

        return [*super().knobs(), KnobSpec("llm.precision", "f", "precision_reduce", "static", (0, 1, 2))]


def test_the_screen_takes_the_programs_own_knobs_before_those_of_the_component_taking_the_time():
    """Every route first where the study's trials afford the whole screen (a search that
    runs out of time early has tried them all); else each knob's gentlest step first."""
    from autotuner.strategy import screen

    space = SearchSpace.from_program(Routed(), "static")

    def changed(slots):
        return [next((k, v["knob_val"]) for k, v in c.items() if v != {"knob_val": 0})
                for c in screen(space, {"llm": 0.99, "bm25": 0.01}, slots)]

    routes_first = [("route", 1), ("route", 2), ("llm.tokens", 1), ("bm25.top_k", 1), ("llm.tokens", 2)]
    assert changed(None) == changed(5) == changed(200) == routes_first
    assert changed(4) == changed(2) == [("route", 1), ("llm.tokens", 1), ("bm25.top_k", 1), ("route", 2),
                                        ("llm.tokens", 2)]
    # a precision knob's values are each a gentlest step (each kept by the machine's probe; which is the
    # fastest is the CPU's): every one is screened with the other knobs' first steps
    space = SearchSpace.from_program(RoutedWithPrecision(), "static")
    assert changed(4)[:6] == [("route", 1), ("llm.tokens", 1), ("llm.precision", 1), ("llm.precision", 2),
                              ("bm25.top_k", 1), ("route", 2)]


def test_narrow_and_fix():
    space = SearchSpace.from_program(DOTS, "static").narrow({"d1": [0, 4], "d2": {"values": [8]}}).fix({"d3": 2})
    assert {d.name: d.values for d in space.free()} == {"d1": (0, 4)}  # d2 has one value left: not searched
    assert space.size() == 2
    assert space.config_of({"d1": 4}) == {"d1": {"knob_val": 4}, "d2": {"knob_val": 8}, "d3": {"knob_val": 2}}
    assert space.seeds() == [{"d1": {"knob_val": 0}, "d2": {"knob_val": 8}, "d3": {"knob_val": 2}},
                             {"d1": {"knob_val": 4}, "d2": {"knob_val": 8}, "d3": {"knob_val": 2}}]
    dyn = SearchSpace.from_program(ADAPTIVE, "dynamic").narrow({"mean": {"thresholds": [10, 50]}})
    assert [d.bounds for d in dyn.dims] == [((10, 50), (10, 50))]


@pytest.mark.parametrize("mode, call, message", [
    ("static", lambda s: s.narrow({"d1": []}), "no value is among its values"),
    ("static", lambda s: s.narrow({"d1": [5]}), "value 5 is not among its values [0, 2, 3, 4, 8]"),
    ("static", lambda s: s.narrow({"d1": [0, 2]}).narrow({"d1": [3]}), "leaves no value"),
    ("static", lambda s: s.narrow({"nope": [0]}), "unknown knob 'nope' (knobs: d1, d2, d3)"),
    ("static", lambda s: s.fix({"d2": 7}), "cannot fix to"),
    ("static", lambda s: s.narrow({"d1": {"thresholds": [1, 2]}}), "it has no thresholds in this mode"),
])
def test_empty_or_bad_ranges_are_one_clear_error(mode, call, message):
    with pytest.raises(ApproxError) as err:
        call(SearchSpace.from_program(DOTS, mode))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_empty_threshold_range_is_an_error():
    with pytest.raises(ApproxError, match=r"range is empty within its bounds"):
        SearchSpace.from_program(ADAPTIVE, "dynamic").narrow({"mean": {"thresholds": [2000000, 3000000]}})


def test_multi_feature_tree_keeps_its_structure_and_tunes_thresholds_and_leaves():
    t = tree((0, 100, 1, 2, 0), leaf(0), leaf(2))
    program = MlirProgram(sum2_module(t, values=[0, 2, 4], lowers=[0, -5], uppers=[1000, 5]), "sum")
    space = SearchSpace.from_program(program, "dynamic")
    d = distributions(space)
    assert sorted(d) == ["sum.n0.t", "sum.n1.d", "sum.n2.d"]
    assert (d["sum.n0.t"].low, d["sum.n0.t"].high) == (0, 1000)  # bounds of feature 0
    config = space.config_of({"sum.n0.t": 10, "sum.n1.d": 0, "sum.n2.d": 4})
    assert config == {"sum": {"tree_thresholds": [10, 0, 0], "tree_decisions": [0, 0, 4]}}
    data = np.arange(64, dtype=np.float64)
    assert program.build(config)(data, 64, 0) == data[::4].sum()  # n = 64 >= 10: stride 4
    assert program.build(config)(data, 9, 0) == data[:9].sum()
