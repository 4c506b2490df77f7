"""The tool-calling agent's components and their knobs, as one object that the
decorated program (tools_agent.py) receives: routing (`ToolComponent`: MiniLM
embedding or keyword triage), the answer model (`ReaderChoice`: pro / fast /
cascade, float32 / bfloat16) and argument filling (`ArgFiller`: which
parameters the reader is asked about).

Knobs (each exact at 0), named as the autotuner sees them:
- `tools.triage` (func_substitute): 0 MiniLM embedding similarity, 1 keyword IDF;
- `answer.model` (cascade), `answer.precision` (precision_reduce): tools_reader.py;
- `filler.reader` (func_substitute): 0 the reader scores the candidates of every
  numeric and string parameter, 1 of string parameters only (numbers by their
  cue words alone), 2 no reader (cue words alone, no model at all).
Routing looks only at the item's own functions (BFCL's setting); a request
with one candidate function is not routed. The triage component's `skip` and
`memo` knobs concern running tools, which BFCL's described functions are not,
so they are not offered."""

from __future__ import annotations

from collections.abc import Sequence

from approx_dialect.diagnostics import ApproxError
from approx_opt.config import KnobSpec
from examples.systems.tools_fill import fill
from examples.systems.tools_reader import ReaderChoice, SpanScorer, load_readers
from frontends.components.llm.knobs import Knob, Knobbed
from frontends.components.tools import EmbeddingTriage, KeywordTriage, ToolComponent, ToolRegistry
from frontends.components.tools.triage import tool_text

READER_KINDS = (("string", "str_list", "int", "float", "num_list"), ("string", "str_list"), ())
TUNED = ("tools.triage",)  # of the tool component's knobs


class ArgFiller(Knobbed):
    def __init__(self, name: str = "filler"):
        self.name = name
        self._knob_values = {}

    def knob_table(self) -> list[Knob]:
        return [Knob("reader", "func_substitute", (0, 1, 2),
                     "reader asked about: 0 numbers and strings, 1 strings only, 2 nothing (cue words alone)")]

    def kinds(self) -> tuple:
        return READER_KINDS[self.knob("reader")]


class ToolsAgent:
    """Routing + argument filling under the current knob values; `configure` gives a copy."""

    name = "agent"

    def __init__(self, readers: tuple[SpanScorer, SpanScorer] | None = None, encoder=None):
        fast, pro = readers or load_readers()
        self.tools = ToolComponent(ToolRegistry(), name="tools", routers=[EmbeddingTriage(encoder), KeywordTriage()],
                                   memo_values=(0,))
        self.answer = ReaderChoice(fast, pro, name="answer")
        self.filler = ArgFiller()
        self._cheapest: ToolsAgent | None = None

    def components(self) -> list[Knobbed]:
        return [self.tools, self.answer, self.filler]

    def knobs(self) -> list[KnobSpec]:
        specs = [s for s in self.tools.knobs() if s.name in TUNED]
        return specs + self.answer.knobs() + self.filler.knobs()

    def configure(self, config: dict) -> ToolsAgent:
        """A copy with the component knobs of `config` set (keys `tools.*`, `answer.*`, `filler.*`)."""
        parts: dict[str, dict] = {c.name: {} for c in self.components()}
        allowed = {s.name for s in self.knobs()}
        for key, setting in config.items():
            if key not in allowed:
                raise ApproxError(f"unknown knob '{key}' (knobs: {', '.join(sorted(allowed))})", where="<config>")
            parts[key.split(".", 1)[0]][key] = setting
        clone = object.__new__(ToolsAgent)
        clone.__dict__.update(self.__dict__)
        clone.tools = self.tools.configure(parts["tools"])
        clone.answer = self.answer.configure(parts["answer"])
        clone.filler = self.filler.configure(parts["filler"])
        clone._cheapest = self._cheapest
        return clone

    def cheapest(self) -> ToolsAgent:
        """Keyword routing, no reader: the agent without any model."""
        if self._cheapest is None:
            self._cheapest = self.configure({"tools.triage": {"knob_val": 1}, "filler.reader": {"knob_val": 2}})
        return self._cheapest

    def index_tools(self, queries) -> None:
        """Embed the function descriptions of the requests that need routing (more than one
        candidate) once, offline, as a deployed agent indexes its catalog ahead of requests;
        the MiniLM vectors are cached on disk (frontends.components.retrieval.encoder)."""
        from frontends.components.retrieval.encoder import corpus_embeddings

        router = self.tools.routers[0]
        texts = sorted({tool_text(t) for q in queries if len(q.functions) > 1 for t in _registry(q.functions)})
        if texts:
            for text, vec in zip(texts, corpus_embeddings(texts, router.encoder)):
                router._cache[text] = vec

    # ------------------------------------------------------------ the two steps

    def route(self, query) -> dict:
        """The function to call: the item's only one, or the triage router's best."""
        if len(query.functions) == 1:
            return query.functions[0]
        name = self.tools.route(query.question, n=1, tools=list(_registry(query.functions)))[0][0]
        return next(f for f in query.functions if f["name"] == name)

    def fill(self, query, function: dict) -> list[dict]:
        """The calls of `function` for the request (one, or several for a parallel request)."""
        kinds = self.filler.kinds()
        return fill(query.question, function, self.answer if kinds else None, kinds)


def _registry(functions: Sequence[dict]) -> ToolRegistry:
    reg = ToolRegistry()
    for f in functions:
        if f["name"] not in reg:
            reg.add_schema(f)
    return reg
