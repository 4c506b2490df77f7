"""The LLM + tools system (examples/systems/tools/agent.py) on real BFCL items with
the trained readers, one decorated program whose routing and reader are component
ops: its exact calls on fixed items (and their AST-check results) stay the same,
the decision per input sends exactly the inputs
below its threshold to the cheap path, `approx-opt --list-knobs` on its IR is its
knobs, every knob changes its op, the previous implementation's calls are kept (where
the reader computes in float32; in bfloat16 they depend on the CPU, so they are checked
on this machine against the components called directly), the split is disjoint, and the
driver's "kept" tuning tunes on items the exact agent gets right (knob 0 and a tiny
tuning run: tests/test_systems_conformance.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from approx_dialect.diagnostics import ApproxError
from approx_opt.main import list_knobs
from examples.systems.tools.agent import string_load, system
from examples.systems.tools.components import ItemTools
from examples.systems.tools.data import DEV_FRACTION, dev_items, pool_items, query_of, spare_items, split
from examples.systems.tools.fill import fill_scored
from examples.systems.tools.reader import READER_GROUPS
from examples.systems.tools.text import analyse
from frontends.components.tools import KeywordTriage, load_bfcl
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

PREVIOUS = Path(__file__).parent / "data" / "tools_previous.json"

# (item id, the exact agent's calls, BFCL AST check) as the agent produced them
EXPECTED = [
    ("simple_python_0", [{"calculate_triangle_area": {"base": 10, "height": 5}}], True),
    ("simple_python_4", [{"solve_quadratic_equation": {"a": 2, "b": 6, "c": 5}}], True),
    ("simple_python_13", [{"calculate_area_under_curve": {"function": "x=3", "interval": [1.0]}}], False),
    ("multiple_0", [{"triangle_properties.get": {"side1": 3, "side2": 4, "side3": 5}}], False),
    ("parallel_0", [{"spotify.play": {"artist": "Taylor Swift", "duration": 20}},
                    {"spotify.play": {"artist": "Maroon 5", "duration": 15}}], True),
    ("parallel_1", [{"calculate_em_force": {"b_field": 5, "area": 2, "d_time": 10}},
                    {"calculate_em_force": {"b_field": 5, "area": 2, "d_time": 4}}], True),
]


def item(item_id: str):
    category = item_id.rsplit("_", 1)[0]
    return next(i for i in load_bfcl(category) if i.id == item_id)


@pytest.fixture(scope="module")
def program():
    return system()


def test_exact_calls_on_fixed_items(program):
    exact = program.exact()
    for item_id, calls, ok in EXPECTED:
        it = item(item_id)
        got = exact(query_of(it))
        assert (item_id, got) == (item_id, calls)
        assert bool(it.check(got)) is ok, it.check(got).error


def test_decision_picks_the_path_by_state(program):
    config = {"tools_agent": {"thresholds": [1, 20], "decisions": [1, 0, 1]}}
    dynamic, exact = program.build(config), program.exact()
    states = []
    for it in [i for c in ("simple_python", "multiple") for i in dev_items(c)[:8]]:
        q = query_of(it)
        function = ItemTools().call(q, KeywordTriage())
        state = string_load(function)
        states.append(state)
        want = exact(q) if 1 <= state < 20 else fill_scored(q.question, function, {})
        assert dynamic(q) == want, it.id
    assert 0 in states and any(1 <= s < 20 for s in states) and max(states) >= 20  # all three ranges


def test_knobs_and_configuration_errors(program):
    names = [s.name for s in program.knobs()]
    assert names == ["tools.router", "answer.model", "answer.precision", "answer.passages", "answer.skip",
                     "tools_agent"]
    assert program.knobs()[-1].kind == "ladder"
    from approx_dialect.diagnostics import ApproxError

    with pytest.raises(ApproxError, match="unknown knob 'tools.skip'"):
        program.build({"tools.skip": {"knob_val": 1}})


def test_list_knobs_of_the_agent_ir_is_program_knobs(program):
    listed = [k["name"] for k in json.loads(list_knobs(program.ir(), "tools_agent"))]
    assert listed == [k.name for k in program.knobs()]


def test_every_knob_changes_its_component_op(program):
    exact = Counter(program.ir(after=True).splitlines())
    for spec in program.knobs():
        for k in spec.values[1:]:
            changed = Counter(program.ir(after=True, config={spec.name: {"knob_val": k}}).splitlines()) - exact
            if spec.name == "tools_agent":
                assert any(f"func.call @approx_tools_agent_{k}" in line for line in changed), (spec.name, k)
            elif spec.name == "answer.skip":  # the reader op is gone, None flows instead
                assert any("pyobj.const" in line for line in changed) and not any(
                    "component.generate" in line for line in changed), (spec.name, k)
            else:
                label = spec.name.split(".")[0]
                assert any(f'component = "{label}"' in line for line in changed), (spec.name, k)


def previous_config(config: dict) -> dict:
    """A configuration of the previous implementation in today's knob names: the
    router knob was `tools.triage`; `filler.reader` 1 (strings only) is
    `answer.passages` 1, 2 (no reader) is `answer.skip` 1."""
    out = {}
    for name, setting in config.items():
        if name == "tools.triage":
            out["tools.router"] = setting
        elif name == "filler.reader":
            out[{1: "answer.passages", 2: "answer.skip"}[setting["knob_val"]]] = {"knob_val": 1}
        else:
            out[name] = setting
    return out


MAX_CHANGED = 3  # of the 20 items' calls, by the bfloat16 reader against float32 on one machine (measured: 0)


def machine_dependent(config: dict) -> bool:
    """The reader runs in bfloat16: its numbers depend on the CPU's instructions (AMX,
    AVX-512 bf16, or none), so its calls are checked on this machine, never against
    calls recorded on another."""
    return config.get("answer.precision", {}).get("knob_val", 0) != 0


def recorded() -> tuple[dict, dict[str, dict], list]:
    """The recording, its configurations in today's knob names, and its items' requests."""
    previous = json.loads(PREVIOUS.read_text())
    items = {i.id: i for c in ("simple_python", "multiple", "parallel") for i in load_bfcl(c)}
    return (previous, {name: previous_config(c) for name, c in previous["configs"].items()},
            [query_of(items[i]) for i in previous["items"]])


def test_calls_equal_the_previous_implementation(program):
    """20 fixed items at the recorded configurations computed in float32 give the calls
    the previous implementation (Knobbed components beside the IR, commit 73d2e32) gave;
    recorded by tests/data/record_tools_previous.py. The bfloat16 one is the next test's."""
    previous, configs, queries = recorded()
    float32 = {name: c for name, c in configs.items() if not machine_dependent(c)}
    assert "exact" in float32 and len(float32) >= 3
    for name, config in float32.items():
        run = program.build(config)
        assert [run(q) for q in queries] == previous["calls"][name], name


def test_bfloat16_strings_only_calls_as_its_components_on_this_machine(program):
    """The recorded configuration with the reader in bfloat16 (asked about string
    parameters only), checked on this machine: the calls of its components called
    directly (the embedding router, the pro reader's bfloat16 variant on the first kind
    group, fill_scored), and at most MAX_CHANGED items' calls changed from float32's."""
    _, configs, queries = recorded()
    lower = {name: c for name, c in configs.items() if machine_dependent(c)}
    assert list(lower) == ["bf16_strings_only"]
    config = lower["bf16_strings_only"]
    components = program.program.components
    reader = components["pro"].with_precision("bfloat16")

    def directly(q):
        function = ItemTools().call(q, components["embedding"])
        return fill_scored(q.question, function, reader.answer((q.question, function), READER_GROUPS[:1]).scores)

    run, float32 = program.build(config), program.build({**config, "answer.precision": {"knob_val": 0}})
    got = [run(q) for q in queries]
    assert got == [directly(q) for q in queries]
    changed = [(q.question, a, b) for q, a, b in zip(queries, got, map(float32, queries)) if a != b]
    assert len(changed) <= MAX_CHANGED, changed


def test_split_is_disjoint_stratified_and_outside_the_development_items():
    tune, evaluation = split(20, seed=3)
    assert len(tune) == 20 and len(evaluation) == 100
    assert not {i.id for i in tune} & {i.id for i in evaluation}
    dev = {i.id for c in ("simple_python", "multiple", "parallel") for i in dev_items(c)}
    assert not dev & {i.id for i in tune + evaluation}
    assert {i.category for i in tune} == {"simple_python", "multiple", "parallel"}
    assert [i.id for i in split(20, seed=3)[0]] == [i.id for i in tune]  # seeded
    assert DEV_FRACTION == 0.3
    spare = spare_items(20, seed=3)
    pool = {i.id for c in ("simple_python", "multiple", "parallel") for i in pool_items(c)}
    assert not {i.id for i in spare} & {i.id for i in tune + evaluation}
    assert {i.id for i in spare + tune + evaluation} == pool


def test_query_analysis_numbers_and_spans():
    info = analyse("Calculate a loan of $400,000 at 4% for 15, 20 and 30 years in New York City.")
    assert [(n.value, n.percent) for n in info.numbers] == [(400000.0, False), (4.0, True), (15.0, False),
                                                           (20.0, False), (30.0, False)]
    assert "New York City" in [s.text for s in info.spans]


def test_kept_tuning_run_tunes_on_items_the_exact_agent_gets_right(program, tmp_path):
    from examples.systems.runs import tune_system

    run = tune_system("tools", 3, trials=2, seconds=None, out_dir=tmp_path, n_eval=6, tuning_qos="kept")
    result = json.loads((tmp_path / "result.json").read_text())
    assert run.result.n_tune == 3 and run.result.n_eval == 6 and set(run.extra["qos_exact_by_category"])
    assert "--tuning-qos kept --kept-from examples.systems.tools.data:kept_candidates" in run.command
    assert any(n.startswith("QoS: tuning on 3 inputs the exact program gets right") for n in result["notes"])
    exact = [t for t in result["all_trials"] if t["mode"] == "static" and t["qos_loss"] == 0.0]
    assert exact and all(t["qos_loss"] >= 0.0 for t in result["all_trials"])  # no lucky gains on kept items
    with pytest.raises(ApproxError, match="unknown tuning QoS 'agreement' for tools \\(one of: gold, kept\\)"):
        tune_system("tools", 3, trials=1, seconds=None, out_dir=tmp_path, tuning_qos="agreement")
