"""The tool-calling agent's component providers (what the symbols of its component
ops name; tools/agent.py declares the ops and their knobs):
- `ItemTools` (`@item_tools`, the provider of `component.tool_call`): routes a
  request to one of the item's own functions (BFCL's setting; a request with one
  candidate function is not routed) with the op's router, `@embedding` (MiniLM
  similarity) or `@keyword` (keyword IDF);
- the readers (`@pro`, `@fast`: tools_reader.ArgumentReader), providers of the
  `component.generate` op that scores candidate argument values.
Running tools is not part of BFCL's AST check (its functions are descriptions),
so no op runs them."""

from __future__ import annotations

from collections.abc import Sequence

from frontends.components.tools import EmbeddingTriage, KeywordTriage, ToolRegistry
from frontends.components.tools.triage import tool_text


class ItemTools:
    """The functions of the request's item as the tools of `component.tool_call`."""

    name = "item_tools"

    def call(self, query, router) -> dict:
        """The function to call: the item's only one, or the router's best."""
        if len(query.functions) == 1:
            return query.functions[0]
        name = router.rank(query.question, list(registry_of(query.functions)))[0][0]
        return next(f for f in query.functions if f["name"] == name)


def routers(encoder=None) -> tuple[EmbeddingTriage, KeywordTriage]:
    return EmbeddingTriage(encoder), KeywordTriage()


def index_tools(router: EmbeddingTriage, queries) -> None:
    """Embed the function descriptions of the requests that need routing (more than one
    candidate) once, offline, as a deployed agent indexes its catalog ahead of requests;
    the MiniLM vectors are cached on disk (frontends.components.retrieval.encoder)."""
    from frontends.components.retrieval.encoder import corpus_embeddings

    texts = sorted({tool_text(t) for q in queries if len(q.functions) > 1 for t in registry_of(q.functions)})
    if texts:
        for text, vec in zip(texts, corpus_embeddings(texts, router.encoder)):
            router._cache[text] = vec


def registry_of(functions: Sequence[dict]) -> ToolRegistry:
    reg = ToolRegistry()
    for f in functions:
        if f["name"] not in reg:
            reg.add_schema(f)
    return reg
