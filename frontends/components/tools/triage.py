"""Triage: which tool does a query need? Two routers with one interface,
`rank(query, tools) -> [(tool name, score)]`, best first (ties: registry order):

- `EmbeddingTriage` (the exact router): cosine similarity of the MiniLM
  embedding of the query and of each tool's text (its name split into words and
  its description); tool embeddings are computed once per text and cached;
- `KeywordTriage` (the cheap variant, no model): the summed IDF, over the tools
  ranked, of the query words found in a tool's text; 0 when none is shared.

A tool's text: "calculate triangle area: Calculate the area of a triangle..."."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from frontends.components.tools.registry import Tool

_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its me my of on or please that the this to "
    "was what when where which who with you your can could would should will do does give get find".split()
)


def tool_text(tool: Tool) -> str:
    words = " ".join(re.split(r"[._\-]+", tool.name))
    return f"{words}: {tool.description}"


def words(text: str) -> list[str]:
    """Lower-case words, identifiers split at '.', '_' and camelCase, stopwords out."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()
    return [w for w in _WORD.findall(text) if w not in STOPWORDS]


def _sorted(names: list[str], scores: Sequence[float]) -> list[tuple[str, float]]:
    order = sorted(range(len(names)), key=lambda i: -scores[i])  # stable: registry order on ties
    return [(names[i], float(scores[i])) for i in order]


class KeywordTriage:
    name = "keyword"

    def rank(self, query: str, tools: Sequence[Tool]) -> list[tuple[str, float]]:
        bags = [set(words(tool_text(t))) for t in tools]
        n = len(tools)
        q = set(words(query))
        idf = {w: math.log(1 + n / sum(w in b for b in bags)) for w in q if any(w in b for b in bags)}
        return _sorted([t.name for t in tools], [sum(idf[w] for w in q & b) for b in bags])


class EmbeddingTriage:
    name = "embedding"

    def __init__(self, encoder=None):
        if encoder is None:
            from frontends.components.retrieval.encoder import MiniLMEncoder

            encoder = MiniLMEncoder()
        self.encoder = encoder
        self._cache: dict[str, np.ndarray] = {}

    def embed_tools(self, tools: Sequence[Tool]) -> np.ndarray:
        texts = [tool_text(t) for t in tools]
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for text, vec in zip(todo, self.encoder.embed(todo)):
                self._cache[text] = vec
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def rank(self, query: str, tools: Sequence[Tool]) -> list[tuple[str, float]]:
        if not tools:
            return []
        q = self.encoder.embed([query])[0]
        return _sorted([t.name for t in tools], (self.embed_tools(tools) @ q).tolist())
