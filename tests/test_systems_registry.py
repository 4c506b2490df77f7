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
    for spec in (s.program, s.inputs, s.held_out, s.metric):
        assert callable(resolve(spec)) or hasattr(resolve(spec), "fn"), spec
    for spec in (s.narrow, s.kept_candidates, s.facts):
        assert not spec or callable(resolve(spec)) or isinstance(resolve(spec), dict), spec
    assert len(s.paper) == 3 and len(s.target) == 2
    assert s.tuning_qos in resolve(s.qos_notes)
    assert set(resolve(s.qos_notes)) == ({"gold", "kept"} if s.items else {"agreement", "gold", "kept"})
    assert s.demo is None or len(s.demo) == 4


@pytest.mark.parametrize("name", SYSTEMS)
def test_inputs_for_each_split(name):
    s = SYSTEMS[name]
    (tune_in, tune_ref), (eval_in, eval_ref) = s.splits(N_TUNE, 0, N_EVAL)
    assert len(tune_in) == len(tune_ref) == N_TUNE and len(eval_in) == len(eval_ref) == N_EVAL
    assert not {repr(x) for x in tune_in} & {repr(x) for x in eval_in}  # disjoint
    assert s.splits(N_TUNE, 0, N_EVAL)[0][0] == tune_in  # seeded
    kwargs = {"n_tune": N_TUNE, "seed": 0, **({"eval_ratio": N_EVAL // N_TUNE} if s.items else {"n_eval": N_EVAL})}
    assert s.held_out_kwargs(N_TUNE, 0, N_EVAL) == kwargs  # what a run records for verify
    assert resolve(s.held_out)(**kwargs) == (eval_in, eval_ref)  # what verify re-measures on
    assert all(0.0 <= s.score(out, ref) <= 1.0 for out, ref in zip(["", ""], eval_ref[:2]))


def test_what_each_tuning_run_does_differently_is_its_entry():
    """One driver: the budget, clock, timed passes, kept candidates and row facts of each
    system are data (the BFCL agents: budget the highest reported level, CPU time, 2
    passes; questions: 0.2, the device's clock, 1 pass, the readers' float16 left out)."""
    from examples.systems.runs import REPORTED_LEVELS

    tuned = {n: (s.budget, s.clock, s.eval_repeats, bool(s.narrow), bool(s.kept_candidates), bool(s.facts))
             for n, s in SYSTEMS.items()}
    items = (max(REPORTED_LEVELS) / 100, "cpu", 2, False, True, True)
    assert tuned == {"rag_bm25": (0.2, "", 1, True, False, False), "rag_dense": (0.2, "", 1, True, False, False),
                     "tools": items, "rag_bm25_llm": (0.2, "", 1, False, False, False),
                     "rag_dense_llm": (0.2, "", 1, False, False, False), "tools_llm": items,
                     "agent_llm": (0.2, "", 1, False, False, False)}
    assert SYSTEMS["tools"].held_out_kwargs(3, 1, None) == {"n_tune": 3, "seed": 1, "eval_ratio": 5}
    assert SYSTEMS["rag_bm25"].held_out_kwargs(3, 1, None) == {"n_tune": 3, "seed": 1, "n_eval": None}


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

