"""The LLM + tools agent for real: Gemma 3 270M with the tools adapters of
examples/models writes BFCL calls through its `component.generate` op. The
adapters load into every layer, `approx-opt --list-knobs` on the agent's
IR is its knobs, knob 0 is Gemma verifying the fast reader filler's calls, asked directly
with the routed function, and
BFCL's AST checker judges the calls of two held-out requests as recorded; where the
engine extra is installed the writer's exact path (an engine) writes eager torch's calls."""

from __future__ import annotations

import json

import pytest

from approx_opt.main import list_knobs
from examples.systems.tools.agent_llm import VERIFY_MARGIN, load_writer, system, writer_precisions
from examples.systems.tools.components import ItemTools, routers
from examples.systems.tools.data import pool_items, query_of
from examples.systems.tools.llm import ReaderFiller, calls_of, schema_text, target_calls, tools_prompt
from examples.systems.tools.reader import load_readers
from frontends.components.tools.bfcl import format_calls, parse_calls
from tests.test_llm_support import one_torch_thread  # noqa: F401 (autouse fixture)

# held-out requests (pool items) and whether the exact agent's calls pass BFCL's AST check
ITEMS = (("simple_python", 3, True), ("parallel", 0, True))
# BFCL requests (pool items) the engine's exact path is compared with eager torch on
ENGINE_ITEMS = (("simple_python", 0), ("multiple", 0), ("parallel", 0))  # one of each category


@pytest.fixture(scope="module")
def writer():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield load_writer()
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def program(writer):
    return system(writer)


def test_adapters_load_into_every_layer(writer):
    assert writer.exits == () and writer.prompt is tools_prompt  # no trained exits: no layers knob
    assert writer.adapted == 7 * 18  # every linear map of its 18 layers carries its adapters, folded in


def test_list_knobs_of_the_agent_ir_is_program_knobs(program, writer):
    listed = [k["name"] for k in json.loads(list_knobs(program.ir(), "tools_agent_llm"))]
    # a precision knob only where a value was measured to pay on this machine
    precision = ["writer.precision"] if writer_precisions(writer) else []
    assert listed == [k.name for k in program.knobs()] == [
        "tools.router", "writer.model", "writer.max_new_tokens", *precision, "writer.skip",
        "tools_agent_llm"]


def test_a_precision_value_that_does_not_pay_here_is_left_out(writer, monkeypatch, capsys):
    """With every candidate left out (APPROX_LEAVE_OUT, as a CPU where none pays), the
    writer has no precision knob, and the probe says why in one line per value."""
    from frontends.components.llm.policy import LLM_PRECISIONS

    monkeypatch.setenv("APPROX_LEAVE_OUT", ",".join(LLM_PRECISIONS))
    assert writer_precisions(writer) == []
    assert "writer.precision" not in [k.name for k in system.__wrapped__(writer).knobs()]
    said = capsys.readouterr().out
    assert all(f"precision = {v} left out by APPROX_LEAVE_OUT" in said for v in LLM_PRECISIONS)


def test_knob_zero_is_the_verified_writer_asked_directly(program, writer):
    from frontends.components.llm.verifier import Verified

    exact = program.exact()
    embedding = routers()[0]
    verified = Verified(writer, ReaderFiller(load_readers()[0]), VERIFY_MARGIN)
    for category, k, ok in ITEMS:
        item = pool_items(category)[k]
        q = query_of(item)
        function = ItemTools().call(q, embedding)
        direct = verified.answer(q.question, [function])
        got = exact(q)
        assert got == calls_of(direct) and got, (item.id, direct.text)
        assert bool(item.check(got)) is ok, (item.id, direct.text)


def test_prompt_and_targets():
    item = pool_items("parallel")[1]  # three calls, z optional in two
    text = schema_text(item.functions[0])
    assert text.startswith(item.functions[0]["name"] + ": ") and text.count("\n- ") == len(
        item.functions[0]["parameters"]["properties"])
    calls = target_calls(item)
    assert len(calls) == 3 and item.check(calls) and parse_calls(format_calls(calls)) == calls
    assert calls_of(None) == [] and "Request: " in tools_prompt(item.question, item.functions)


def test_decision_one_is_keyword_routing_and_cue_words(program):
    """The decision per input at 1 everywhere runs no model: the same calls as the
    keyword router with the writer skipped."""
    cheap = program.build({"tools_agent_llm": {"thresholds": [10, 30], "decisions": [1, 1, 1]}})
    skipped = program.build({"tools.router": {"knob_val": 1}, "writer.skip": {"knob_val": 1}})
    for category, k, _ in ITEMS:
        q = query_of(pool_items(category)[k])
        assert cheap(q) == skipped(q)


def test_the_engine_exact_path_writes_eager_torchs_calls(writer, program):
    """Knob 0's writer through the engine (`policy.exact_path`): on a BFCL request of each category,
    the tools prompt and 160 new tokens, the greedy tokens of eager torch on the same weights."""
    from frontends.components.llm import engine
    from frontends.components.llm.gemma import Gemma3
    from frontends.components.llm.policy import exact_engine

    if not engine.available():
        pytest.skip("onnxruntime-genai not installed (.[engine]): the exact path is torch's")
    if exact_engine(writer) is None:
        pytest.skip(f"{engine.ENV}=torch, a GPU run, or eager torch is faster here: the exact path is torch's")
    assert type(writer).__name__ == "EngineGemma3" and writer.engine == engine.EXACT
    assert f"exact path through {engine.EXACT}" in program.model
    eager = Gemma3(writer.model, writer.tokenizer, name=writer.name, max_new_tokens=writer.max_new_tokens,
                    exits=writer.exits, prompt=writer.prompt)
    for category, k in ENGINE_ITEMS:
        item = pool_items(category)[k]
        tokens, _, prompt = writer.generate(item.question, item.functions)
        assert (tokens, prompt) == eager.generate(item.question, item.functions)[::2], item.id


def test_untimed_passes_reuse_the_writers_calls_and_kept_only_reads_them(program):
    """The writer's calls are kept (their operand, the routed function's schema, is a
    dict): a second run within `untimed()` reads the first's calls, a configuration whose
    calls were kept is scored in `kept_only` with no model run, and one whose calls were
    not raises NotKept there instead of writing them."""
    from approx_opt.program import NotKept

    q = query_of(pool_items("simple_python")[0])
    run = program.build({"writer.max_new_tokens": {"knob_val": 1}})
    with program.untimed():
        first = run(q)
    before = program.reuse_counts()
    with program.kept_only():
        assert run(q) == first
    after = program.reuse_counts()
    assert after["run"] == before["run"] and after["reused"] > before["reused"]
    with program.kept_only(), pytest.raises(NotKept, match="writer"):
        program.build({"writer.max_new_tokens": {"knob_val": 2}})(q)


def test_the_writers_precision_values_are_those_it_builds_and_its_fillers_run_their_own(writer):
    """The writer's precision candidates are the values it builds (int8; int4 where an
    engine builds it), whatever its cascade's fillers build: under a value a filler has no
    variant of (int8), the filler runs its own precision; one it has (bfloat16) reaches it."""
    from frontends.components.llm.policy import LLM_PRECISIONS, precision_candidates
    from frontends.components.settings import GenerateSettings

    lines = []
    kept = precision_candidates(writer, "writer.precision", lines.append)
    assert set(kept) <= writer.precisions and "int8" in kept  # float16 only on a CPU with float16 arithmetic
    assert [v for v in LLM_PRECISIONS if v not in kept] == [line.split(" = ")[1].split()[0] for line in lines]
    filler = ReaderFiller(load_readers()[0])
    assert "int8" not in filler.precisions
    assert GenerateSettings(model="writer", precision="int8").for_provider(filler).precision is None
    assert GenerateSettings(model="writer", precision="bfloat16").for_provider(filler).precision == "bfloat16"
