"""The dense retriever's query encoder as a component provider: all-MiniLM-L6-v2
embeds the question (the largest cost of dense retrieval: ~20 ms of ~21 ms on one
thread; the similarity kernel takes ~1 ms).

Its knobs (declared by rag_dense on its `component.embed` op, exact at 0):
  query.encoder    func_substitute: the first LAYERS[k-1] of the 6 layers embed the question
                   (the corpus stays embedded by all 6, so the spaces drift apart:
                   measured recall@1 0.69 -> 0.41 with 5 layers on the tuning articles)
  query.precision  precision_reduce: 1 runs the encoder in bfloat16
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

from approx_dialect.diagnostics import ApproxError
from frontends.components.retrieval import MiniLMEncoder
from frontends.components.variants import Variants

LAYERS = (5, 4)


class _Float32Out:
    """The encoder's hidden states as float32 (MiniLMEncoder.embed hands them to numpy)."""

    def __init__(self, model):
        self.model = model

    def __call__(self, **batch):
        return SimpleNamespace(last_hidden_state=self.model(**batch).last_hidden_state.float())


class _Variant(MiniLMEncoder):
    """MiniLM with fewer layers and/or in bfloat16, sharing the base's tokenizer."""

    def __init__(self, base: MiniLMEncoder, layers: int, bf16: bool):
        super().__init__(base.max_length, base.batch_size)
        self.base, self.layers, self.bf16 = base, layers, bf16

    def _load(self) -> None:
        import torch

        if self.base._model is None:
            self.base.embed(["load"])
        model = copy.deepcopy(self.base._model)
        model.encoder.layer = model.encoder.layer[:self.layers]
        model.config.num_hidden_layers = self.layers
        self._tok = self.base._tok
        self._model = _Float32Out(model.to(torch.bfloat16)) if self.bf16 else model


class QueryEncoder(Variants):
    """The question's encoder as a component provider (`component.embed`): the first
    `n_layers` of all-MiniLM-L6-v2's 6 (`first_layers`: a provider of its own, for
    func_substitute), in float32 or (a variant) bfloat16; all share the base model's
    tokenizer."""

    supports = frozenset({"precision"})

    def __init__(self, encoder: MiniLMEncoder, n_layers: int = 6):
        self.encoder, self.n_layers = encoder, n_layers
        self.name = f"minilm_l{n_layers}"
        self._model: MiniLMEncoder | None = None

    def first_layers(self, n_layers: int) -> "QueryEncoder":
        return QueryEncoder(self.encoder, n_layers)

    def build_variant(self, precision: str, layers: int | None) -> "QueryEncoder":
        if precision != "bfloat16":
            raise ApproxError(f"the query encoder runs in float32 or bfloat16, not {precision}", where=self.name)
        return QueryEncoder(self.encoder, self.n_layers)

    def model(self) -> MiniLMEncoder:
        if (self.n_layers, self.precision) == (6, "float32"):
            return self.encoder
        if self._model is None:
            self._model = _Variant(self.encoder, self.n_layers, self.precision == "bfloat16")
        return self._model

    def embed(self, texts):
        return self.model().embed(texts)
