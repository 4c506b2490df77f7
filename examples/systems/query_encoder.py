"""The dense retriever's query encoder as a knobbed component: all-MiniLM-L6-v2
embeds the question (the largest cost of dense retrieval: ~20 ms of ~21 ms on one
thread; the similarity kernel takes ~1 ms).

Knobs (exact at 0):
  query.layers     func_substitute: k embeds with the first LAYERS[k-1] of the 6 layers
                   (the corpus stays embedded by all 6, so the spaces drift apart:
                   measured recall@1 0.69 -> 0.41 with 5 layers on the tuning articles)
  query.precision  precision_reduce: 1 runs the encoder in bfloat16
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

from frontends.components.llm.knobs import Knob, Knobbed
from frontends.components.retrieval import MiniLMEncoder

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


class QueryEncoder(Knobbed):
    """`embed(texts)` like MiniLMEncoder, with the knobs above."""

    def __init__(self, encoder: MiniLMEncoder, name: str = "query"):
        self.encoder, self.name = encoder, name
        self._variants: dict[tuple[int, bool], MiniLMEncoder] = {}  # shared by configured copies
        self._knob_values = {}

    def knob_table(self) -> list[Knob]:
        return [Knob("layers", "func_substitute", tuple(range(len(LAYERS) + 1)),
                     "first " + " / ".join(map(str, LAYERS)) + " of the 6 layers embed the question"),
                Knob("precision", "precision_reduce", (0, 1), "the encoder in bfloat16")]

    def variant(self) -> MiniLMEncoder:
        layers = LAYERS[self.knob("layers") - 1] if self.knob("layers") else 6
        key = (layers, bool(self.knob("precision")))
        if key == (6, False):
            return self.encoder
        if key not in self._variants:
            self._variants[key] = _Variant(self.encoder, *key)
        return self._variants[key]

    def embed(self, texts):
        return self.variant().embed(texts)
