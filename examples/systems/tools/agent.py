"""LLM + tools: a tool-calling agent on BFCL v4 (simple_python,
multiple, parallel), one decorated Python program with knobs on every component.

The agent routes the request to one of the item's functions (MiniLM embedding
similarity or keyword IDF, tools/components.py), fills its arguments (candidate
values from the request scored by cue words and by the trained extractive
reader, tools/fill.py / tools/reader.py) and emits the calls; several calls
when the request lists several values of a parameter. QoS = BFCL's AST check.

The decision per input (`tools_agent`'s decision tree, func_substitute, a
ladder of two thresholds): state = 10 x (required string parameters) +
(optional string parameters) of the function the keyword router picks (no
model needed to compute it); each of the three state ranges picks decision 0
(the agent with its component knobs) or 1 (`cheap_tools_agent`: keyword
routing and cue words alone, no model). String values are where the reader
matters; numbers, options and flags the cue words mostly get right, and
requests with three or more strings the reader rarely gets right either
(development split, exact agent vs cheap path, items correct: no string
parameter 64 vs 61 of 106; one required 30 vs 17 of 49; two 8 vs 3 of 46;
three or more 0 vs 0 of 7).

The program (`agent_program`; its components are IR):

    def tools_agent(query):
        function = tools(query)                                   # component.tool_call
        scores = reader((query.question, function), READER_GROUPS)  # component.generate
        return fill_scored(query.question, function, scores_of(scores))

Knobs (all exact at 0): `tools.router` (func_substitute: keyword IDF instead of
MiniLM), `answer.model` (cascade fast -> pro on the reader's confidence),
`answer.precision` (bfloat16), `answer.passages` (1: the reader is asked about
string parameters only), `answer.skip` (task_skipping: no reader, cue words alone),
and `tools_agent` (the decision above). `system()` is the autotuner's
Program; `examples.systems.runs.tune_system("tools", ...)` tunes it (static, dynamic)
and evaluates the fronts on the held-out split."""

from __future__ import annotations

import functools

from examples.systems.program import SystemProgram, program_attribute
from examples.systems.tools.cues import params_of
from examples.systems.tools.data import (
    CATEGORIES,
    ToolQuery,
    pool_items,
    query_of,
    split,
)
from frontends import DecisionTree, Knob
from frontends.components.tools import load_bfcl

STATE_UPPER = 60


def string_load(function) -> int:
    """10 x required + optional string parameters of `function` (what the reader would be asked about)."""
    kinds = [(p.kind, p.required) for p in params_of(function)]
    return min(STATE_UPPER, sum(10 if req else 1 for kind, req in kinds if kind in ("string", "str_list")))


def agent_program(readers=None, encoder=None):
    """(the decorated agent, the embedding router): the program of the module docstring."""
    from examples.systems.tools.components import ItemTools, routers
    from examples.systems.tools.fill import fill_scored
    from examples.systems.tools.reader import READER_GROUPS, THRESHOLDS, ArgumentReader, load_readers, scores_of
    from frontends.components.declare import Generate, ToolCall, Tune

    fast, pro = readers or load_readers()
    embedding, keyword = routers(encoder)
    item_tools = ItemTools()
    route = [Tune.substitute("router", keyword)]
    tools = ToolCall("tools", item_tools, embedding, tune=route)
    reader = Generate("answer", ArgumentReader(pro),
                      tune=[Tune.cascade([ArgumentReader(fast)], THRESHOLDS), Tune.precision("bfloat16"),
                            Tune.param("passages", 1), Tune.skip("skip", fallback=None)])

    def tools_agent(query):
        """Route the request to a function, fill its arguments, return the calls."""
        function = tools(query)
        scores = reader((query.question, function), READER_GROUPS)
        return fill_scored(query.question, function, scores_of(scores))

    tools_agent.__qualname__ = "tools_agent"
    return decided_by_string_load(tools_agent, item_tools, keyword, route), embedding


def decided_by_string_load(agent, item_tools, keyword, route):
    """`agent` as a decorated program with the decision per input of the module
    docstring (its knob is named after the agent): the state is string_load of the
    keyword router's function; decision 1 runs `cheap_tools_agent` (no model)."""
    from examples.systems.tools.fill import fill_scored
    from frontends.components.declare import ToolCall

    keyword_tools = ToolCall("tools", item_tools, keyword, tune=route)

    def keyword_load(query) -> int:
        """The decision's state: string_load of the keyword router's function (no model needed)."""
        return string_load(item_tools.call(query, keyword))

    def cheap_tools_agent(query):
        """Decision 1: keyword routing and cue words alone (no model)."""
        function = keyword_tools(query)
        return fill_scored(query.question, function, {})

    return Knob(decision_tree=DecisionTree(keyword_load, [0], [10, 30], [0, 0, 0], "func_substitute",
                                           approx_kernels={1: cheap_tools_agent}, thresholds_lower=[0],
                                           thresholds_upper=[STATE_UPPER]))(agent)


def indexed(agent, embedding):
    """`agent`, once its embedding router has indexed every BFCL function (all
    categories: any item's candidates are known to it)."""
    from examples.systems.tools.components import index_tools

    index_tools(embedding, [query_of(i) for c in CATEGORIES for i in load_bfcl(c)])
    return agent


def held_out(n_tune: int, seed: int = 0, eval_ratio: int = 5) -> tuple[list[ToolQuery], list]:
    """(requests, items) of the held-out split: what `approx-tune verify` re-measures on."""
    items = split(n_tune, seed, eval_ratio)[1]
    return [query_of(i) for i in items], items


@functools.lru_cache(maxsize=4)
def system(readers=None, encoder=None) -> SystemProgram:
    """The agent as the autotuner's Program, built once (`readers`: (fast, pro), default
    the trained ones; `encoder`: the router's, default MiniLM; the function index)."""
    from examples.systems.common import one_thread

    one_thread()
    return SystemProgram("examples.systems.tools.agent:tools_agent", indexed(*agent_program(readers, encoder)))


def pool_inputs() -> tuple[list[ToolQuery], list]:
    """(requests, items) of the tuning/evaluation pool, for `approx-tune run
    examples.systems.tools.agent:program --inputs examples.systems.tools.agent:pool_inputs`
    with the metric examples.systems.tools.data:ast_match."""
    items = [i for c in CATEGORIES for i in pool_items(c)]
    return [query_of(i) for i in items], items


__getattr__ = program_attribute(__name__, system)  # `approx-tune run examples.systems.tools.agent:program ...`

