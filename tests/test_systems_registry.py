"""Every example system is one `System` of examples/systems/registry.py: its specs
resolve, it has inputs for each split (disjoint, the held-out one what `approx-tune
verify` re-reads), a metric that scores them, and the bench and the demo name no
system of their own. Building each program through the registry, knob 0 and a tiny
tuning run of each are tests/test_systems_conformance.py's."""

from __future__ import annotations

import importlib

import pytest

from approx_dialect.diagnostics import ApproxError
from examples.systems.registry import SYSTEMS, system

N_TUNE, N_EVAL = 2, 4


def resolve(spec: str):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def test_one_name_each_and_an_unknown_name_says_the_known_ones():
    assert all(name == s.name for name, s in SYSTEMS.items())
    assert system("tools") is SYSTEMS["tools"]
    with pytest.raises(ApproxError, match="unknown system 'nope' \\(systems: rag_bm25, rag_dense, tools, "):
        system("nope")


@pytest.mark.parametrize("name", SYSTEMS)
def test_specs_resolve_and_facts_are_complete(name):
    s = SYSTEMS[name]
    from autotuner import TUNING_QOS

    for spec in (s.program, s.inputs, s.metric, s.kept_candidates):
        assert callable(resolve(spec)) or hasattr(resolve(spec), "fn"), spec
    for spec in (s.narrow, s.facts):
        assert not spec or callable(resolve(spec)) or isinstance(resolve(spec), dict), spec
    assert len(s.paper) == 3 and len(s.target) == 2
    assert s.tuning_qos in s.tuning_qos_modes and set(s.tuning_qos_modes) <= set(TUNING_QOS)
    assert set(s.tuning_qos_modes) == ({"gold", "kept"} if s.items else {"agreement", "gold", "kept"})
    assert s.demo is None or len(s.demo) == 4


@pytest.mark.parametrize("name", SYSTEMS)
def test_inputs_for_each_split(name):
    s = SYSTEMS[name]
    (tune_in, tune_ref), (eval_in, eval_ref) = s.splits(N_TUNE, 0, N_EVAL)
    assert len(tune_in) == len(tune_ref) == N_TUNE and len(eval_in) == len(eval_ref) == N_EVAL
    assert not {repr(x) for x in tune_in} & {repr(x) for x in eval_in}  # disjoint
    assert s.splits(N_TUNE, 0, N_EVAL)[0][0] == tune_in  # seeded
    from autotuner import TuningResult
    from autotuner.verify import held_out_inputs

    recorded = {"inputs": s.inputs, "kwargs": {"n_tune": N_TUNE, "seed": 0, "n_eval": N_EVAL}, "split": True}
    assert held_out_inputs(TuningResult(name, "", 0.0, 0, 0, 0.0, held_out=recorded)) == (eval_in, eval_ref)
    assert all(0.0 <= s.score(out, ref) <= 1.0 for out, ref in zip(["", ""], eval_ref[:2]))


def test_what_each_tuning_run_does_differently_is_its_entry():
    """One driver: the budget, clock, timed passes, kept candidates and row facts of each
    system are data (the BFCL agents: budget the highest reported level, CPU time, 2
    passes; questions: 0.2, the device's clock, 1 pass, the readers' float16 left out)."""
    from examples.systems.registry import REPORTED_LEVELS

    tuned = {n: (s.budget, s.clock, s.eval_repeats, bool(s.narrow), s.kept_candidates.split(":")[0], bool(s.facts))
             for n, s in SYSTEMS.items()}
    squad, items = "examples.systems.common", (max(REPORTED_LEVELS) / 100, "cpu", 2, False,
                                               "examples.systems.tools.data", True)
    assert tuned == {"rag_bm25": (0.2, "", 1, True, squad, False), "rag_dense": (0.2, "", 1, True, squad, False),
                     "tools": items, "rag_bm25_llm": (0.2, "", 1, False, squad, False),
                     "rag_dense_llm": (0.2, "", 1, False, squad, False), "tools_llm": items,
                     "agent_llm": (0.2, "", 1, False, "examples.systems.agent.data", False)}


def test_the_command_says_the_systems_settings():
    """What the bench and the demo run is an `approx-tune run` command that parses, with
    the system's settings; a tuning QoS the system does not take is refused first."""
    from autotuner.cli import make_parser

    s = SYSTEMS["rag_bm25"]
    argv = s.command(16, 18, 240, out_dir="reports/rag_bm25", ablate=(3, 6))
    a = make_parser().parse_args(["run", *argv])
    assert (a.program, a.inputs, a.n_tune, a.n_eval, a.metric, a.tuning_qos) == \
        (s.program, s.inputs, 16, None, s.metric, "agreement")
    assert (a.budget, a.trials, a.timeout, a.clock, a.repeats, a.narrow) == (0.2, 18, 120.0, "cpu", 1,
                                                                             ["answer.precision=0,1"])
    assert (a.eval_levels, a.ablate, a.study_name, a.kept_from) == ("0.01,0.03,0.06,0.09", "0.03,0.06", "rag_bm25",
                                                                    None)
    kept = make_parser().parse_args(["run", *SYSTEMS["tools"].command(3, 2, None, out_dir="x", tuning_qos="kept")])
    assert kept.kept_from == SYSTEMS["tools"].kept_candidates and kept.timeout is None and kept.budget == 0.09
    with pytest.raises(ApproxError, match="unknown tuning QoS 'agreement' for tools \\(one of: gold, kept\\)"):
        SYSTEMS["tools"].command(3, 2, out_dir="x", tuning_qos="agreement")


def test_the_question_systems_kept_candidates_are_tuning_questions_in_a_seeded_order():
    from examples.systems.common import KEPT_CANDIDATES, kept_candidates, question_sets

    questions, answers = kept_candidates(3, 0)
    (tune_q, tune_a), (held_q, _) = question_sets(KEPT_CANDIDATES * 3, 0, 0)[0], question_sets(3, 0)[1]
    assert sorted(questions) == sorted(tune_q) and questions != tune_q and not set(questions) & set(held_q)
    assert dict(zip(questions, answers)) == dict(zip(tune_q, tune_a))


def test_the_tools_agents_kept_candidates_leave_the_held_out_split():
    from examples.systems.tools.data import kept_candidates, split

    requests, items = kept_candidates(3, 0, 6)
    tune, held_out = split(3, 0, 2)
    assert items[:3] == tune and not {i.id for i in items} & {i.id for i in held_out}
    assert len(requests) == len(items) > 3


def test_the_bench_and_the_demo_read_the_registry():
    from bench.systems_bench import GPU_SYSTEMS
    from examples.demo import DEMOS

    assert set(GPU_SYSTEMS) == {n for n, s in SYSTEMS.items() if s.llm}
    assert DEMOS and set(DEMOS) <= set(SYSTEMS)



@pytest.mark.parametrize("name, sizes", [
    ("rag_bm25_llm", dict(n_tune=8, trials=10, seconds=120, n_eval=40, tuning_qos="agreement")),  # make demo
    ("rag_bm25", dict(n_tune=40, trials=40, seconds=720, ablate=(3, 6, 9), repeats=2)),  # bench/results.py's row
])
def test_the_documented_commands_are_what_the_demo_and_the_bench_run(name, sizes):
    """docs/autotuner.md writes out `make demo`'s command and a bench row's: the same
    options as the system's command with the demo's and the bench's defaults."""
    import shlex
    from pathlib import Path

    from autotuner.cli import make_parser

    page = (Path(__file__).resolve().parents[1] / "docs" / "autotuner.md").read_text().replace("\\\n", " ")
    program = SYSTEMS[name].program
    [line] = [ln for ln in page.splitlines() if ln.startswith(f"approx-tune run {program} ")]
    documented = vars(make_parser().parse_args(shlex.split(line)[1:]))
    expected = vars(make_parser().parse_args(["run", *SYSTEMS[name].command(
        sizes.pop("n_tune"), sizes.pop("trials"), sizes.pop("seconds"), out_dir=documented["out"], **sizes)]))
    differ = {k: (documented[k], expected[k]) for k in documented if documented[k] != expected[k]}
    assert differ == {"progress": (None, False), "report": (True, False)}
