"""The LLM + tools agent: the tool-calling agent of tools/agent.py with Gemma 3 270M
(the tools adapters of examples/train_gemma_tools.py) writing the calls.

    def tools_agent_llm(query):
        function = tools(query)                          # component.tool_call (routing)
        written = writer(query.question, [function])     # component.generate: Gemma writes the calls
        return calls_or_cues(written, query.question, function)

The writer's prompt is the request and the routed function's schema
(tools.llm.tools_prompt); its answer is a call list in BFCL's Python syntax. The exact
writer is Gemma verifying the fast reader filler's calls (`verifier.Verified`: Gemma writes
its own calls and scores the filler's after the same prompt; the filler's answer where Gemma
finds them within VERIFY_MARGIN nats a token of its own): the most accurate composition
measured (`bench/tools_composition_probe.py`, docs/systems.md), well above Gemma alone.
Knobs (all exact at 0, all attributes of the two component ops):
`tools.router` (keyword IDF instead of MiniLM), `writer.model` (a cascade: the
reader-based filler of tools/agent.py, fast then pro, answers when the reader is
confident, the verifying Gemma otherwise), `writer.max_new_tokens`, `writer.precision`
(the values that write calls faster than float32 on this machine, and the same calls
on most probe requests: `writer_precisions`), `writer.layers` (early
exit at the depths the adapters were trained for, where they were: Gemma's were not) and `writer.skip`
(task_skipping: no model, cue words alone); `tools_agent_llm`, the decision per
input of tools/agent.py (by the string parameters of the keyword router's
function: the agent or cue words alone). The writer's exact configuration decodes on
this machine's exact path (`policy.exact_path`: the engine where it pays).

    python -m examples.systems.tools.measure [--items 30]   # AST accuracy and time per request vs the reader agent
"""

from __future__ import annotations

import functools
from pathlib import Path

from examples.systems.program import SystemProgram, program_attribute
from examples.systems.tools.agent import (  # noqa: F401 (pool_inputs: the CLI's inputs)
    decided_by_string_load,
    indexed,
    pool_inputs,
)
from examples.systems.tools.llm import DEFAULT_MAX_NEW_TOKENS, ReaderFiller, calls_of, tools_prompt

ADAPTER = Path(__file__).resolve().parents[2] / "models" / "gemma3_tools_lora.npz"
TOKENS = (96, 64)  # writer.max_new_tokens knob values (exact: DEFAULT_MAX_NEW_TOKENS)
VERIFY_MARGIN = -1.2  # nats per token: fitted on the composition probe's 100 tuning requests


def model_name() -> str:
    """What writes the calls (results.json records it under `model`): says the exact path's engine."""
    from examples.systems.common import gemma_weights

    return f"{gemma_weights()} + LoRA examples/models/{ADAPTER.name}, verifying the fast reader filler's calls"


def load_writer():
    """Gemma 3 270M with the tools adapters and their prompt, on the run's device, its exact
    configuration on this machine's exact path (`policy.exact_path`). (SmolLM2 with its tools
    adapters, examples/train_llm_tools.py, wrote fewer calls right, 24.3 % of the pool against
    27.1 %, at the same CPU cost: no cheaper tier.)"""
    from frontends.components import run_settings
    from frontends.components.llm.gemma import Gemma3
    from frontends.components.llm.policy import exact_path

    return exact_path(Gemma3.load(ADAPTER, name="gemma3_tools", prompt=tools_prompt,
                                  max_new_tokens=DEFAULT_MAX_NEW_TOKENS, device=run_settings.current().device))


PROBE_ITEMS = 2  # BFCL development requests (outside every tuning and held-out split) the precision probe writes


def writer_precisions(writer) -> list[str]:
    """The writer's precision values (its cascade's fillers run their own where they have
    none of one: the readers have no int8 or int4), that write
    calls faster than float32 on this machine and the same calls on most of PROBE_ITEMS
    development requests (`policy.paying_precisions`): bfloat16 is 2-4x faster on a CPU
    with bf16 instructions and several times slower on one without."""
    from examples.systems.tools.data import dev_items
    from frontends.components.llm.policy import paying_precisions

    probe = [(i.question, list(i.functions[:1])) for i in dev_items("simple_python")[:PROBE_ITEMS]]
    return paying_precisions(writer, probe, DEFAULT_MAX_NEW_TOKENS)


def calls_or_cues(written, question: str, function: dict) -> list[dict]:
    """The written calls; the cue words' calls when the writer was skipped (None)."""
    if written is None:
        from examples.systems.tools.fill import fill_scored

        return fill_scored(question, function, {})
    return calls_of(written)


def agent_program(writer=None, readers=None, encoder=None):
    """(the decorated agent, the embedding router, the answer models whose calls the
    tuner's untimed passes keep: the verified writer and the readers' fillers, all
    deterministic): the program of the module docstring."""
    from examples.systems.tools.components import ItemTools, routers
    from examples.systems.tools.reader import THRESHOLDS, load_readers
    from frontends.components.declare import Generate, ToolCall, Tune
    from frontends.components.llm.verifier import Verified

    writer = writer or load_writer()
    fast, pro = readers or load_readers()
    embedding, keyword = routers(encoder)
    item_tools, route = ItemTools(), [Tune.substitute("router", keyword)]
    tools = ToolCall("tools", item_tools, embedding, tune=route)
    fillers = [ReaderFiller(fast), ReaderFiller(pro)]
    precisions = writer_precisions(writer)
    verified = Verified(writer, fillers[0], VERIFY_MARGIN)
    write = Generate("writer", verified, max_new_tokens=DEFAULT_MAX_NEW_TOKENS,
                     tune=[Tune.cascade(fillers, THRESHOLDS),
                           Tune.param("max_new_tokens", *TOKENS),
                           *([Tune.precision(*precisions)] if precisions else []),
                           *([Tune.param("layers", *sorted(writer.exits, reverse=True))] if writer.exits else []),
                           Tune.skip("skip", fallback=None)])

    def tools_agent_llm(query):
        """Route the request to a function, have the LLM write its calls."""
        function = tools(query)
        written = write(query.question, [function])
        return calls_or_cues(written, query.question, function)

    tools_agent_llm.__qualname__ = "tools_agent_llm"
    return decided_by_string_load(tools_agent_llm, item_tools, keyword, route), embedding, (verified, *fillers)


@functools.lru_cache(maxsize=4)
def system(writer=None, readers=None, encoder=None) -> SystemProgram:
    """The LLM agent as the autotuner's Program, built once (`writer`: default Gemma 3
    with the tools adapters; `readers`, `encoder` as tools_agent.system's; the function
    index), torch on one thread. Its answer models' calls are kept for the tuner's
    untimed passes (`reuse_answers`), as the RAG systems' are."""
    from examples.systems.common import one_thread, reuse_answers

    one_thread()
    program, embedding, answer_models = agent_program(writer, readers, encoder)
    return SystemProgram("examples.systems.tools.agent_llm:tools_agent_llm", indexed(program, embedding),
                         model=model_name(), reuse=answer_models if reuse_answers(True) else ())


__getattr__ = program_attribute(__name__, system)  # `approx-tune run examples.systems.tools.agent_llm:program ...`

