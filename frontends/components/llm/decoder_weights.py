"""A decoder-only causal LM's weights, as SmolLM2 and Gemma 3 use them: the float32
base dequantised from a GGUF file once and saved for later loads, the low-rank
adapters (LoRA) and early-exit maps trained on it (kept in an `.npz` beside the base
weights, never merged into the file), and the model cut to its first k layers."""

from __future__ import annotations

import contextlib
import copy
import functools
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from approx_dialect.diagnostics import ApproxError
from frontends.components.llm.span_model import LoRALinear, fill, weights_file

ADAPTED = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")


@contextlib.contextmanager
def gguf_parsed_once():
    """transformers parses the GGUF file anew for the config, the tokenizer and the weights
    (each parse ~8 s on a 2-core EPYC: gguf-py reads the 49k-token vocabulary field by
    field); inside this block one parse of a file serves all three (the reader only reads
    its memory map), and the tensor-name map, which transformers builds again for each of
    the model's ~400 submodules (~6 s), is built once per architecture."""
    import gguf

    original, parsed, names = gguf.GGUFReader, {}, gguf.get_tensor_name_map

    def reader(path, mode="r"):
        key = (str(Path(path).resolve()), mode)
        if key not in parsed:
            parsed[key] = original(path, mode)
        return parsed[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, functools.lru_cache(maxsize=None)(names)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = original, names


def load_gguf_model(gguf, folder: Path):
    """(model, tokenizer) in float32 from `folder` when it holds a saved copy, else
    dequantised from the GGUF file (`gguf`: its path, or a function giving it, called
    only then) and saved to `folder` for the next load. Any causal LM transformers
    reads from a GGUF file (SmolLM2, Gemma 3)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if (folder / "config.json").is_file():
        try:
            tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32)
            return model.eval(), tok
        except (OSError, ValueError):
            pass  # a broken cache is rebuilt from the GGUF file below
    gguf = gguf() if callable(gguf) else gguf
    try:
        with gguf_parsed_once():
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    except (OSError, ValueError, ImportError) as err:
        raise ApproxError(f"cannot load the GGUF model: {str(err).splitlines()[0]}", where=str(gguf)) from None
    model.hf_quantizer = None  # the weights are plain float32 tensors now, nothing is left quantised
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:  # written to a temporary folder, then renamed: a reader never sees half a cache
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=folder.name + "."))
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError:
        pass  # a read-only cache only costs the dequantisation next time
    return model.eval(), tok


# ---------------------------------------------------------------- adapters

def attach_lora(model, rank: int, alpha: float) -> list[str]:
    """Wrap every linear map of every decoder layer in a LoRALinear (exact until
    trained: B = 0); returns the names of the adapter parameters."""
    for layer in model.model.layers:
        for path in ADAPTED:
            parent_path, _, attr = path.rpartition(".")
            parent = layer.get_submodule(parent_path)
            setattr(parent, attr, LoRALinear(getattr(parent, attr), rank, alpha))
    return [n for n, _ in model.named_parameters() if ".lora_" in n]


def attach_exit_maps(model, exits) -> list[str]:
    """One affine map per early-exit depth k (`model.exit_maps[str(k)]`, identity at
    first), applied to layer k's output before the shared final norm and head: it
    carries the intermediate state into the space the head reads. Returns the
    names of its parameters."""
    width = model.config.hidden_size
    maps = nn.ModuleDict()
    for k in exits:
        linear = nn.Linear(width, width)
        with torch.no_grad():
            linear.weight.copy_(torch.eye(width))
            linear.bias.zero_()
        maps[str(k)] = linear
    model.exit_maps = maps
    return [n for n, _ in model.named_parameters() if n.startswith("exit_maps.")]


def trained_names(model) -> list[str]:
    return [n for n, _ in model.named_parameters() if ".lora_" in n or n.startswith("exit_maps.")]


def save_adapter(model, path: str | Path, rank: int, alpha: float, exits=()) -> None:
    """Adapters and exit maps as float16 in an `.npz` (no pickle); `__meta__` =
    [rank, alpha, *early-exit depths trained]."""
    params = dict(model.named_parameters())
    state = {n: params[n].detach().cpu().to(torch.float16).numpy() for n in trained_names(model)}
    meta = np.array([rank, alpha, *exits], dtype=np.float64)
    np.savez_compressed(path, __meta__=meta, **state)


def load_adapter(model, path: str | Path) -> tuple[int, ...]:
    """Attach and fill the adapters and exit maps of `path`; returns the trained exit depths."""
    path = Path(path)
    with weights_file(path, "the adapter file", "rank, alpha, exits...") as data:
        rank, alpha, *exits = data["__meta__"].tolist()
        names = set(attach_lora(model, int(rank), float(alpha))) | set(attach_exit_maps(model, [int(k) for k in exits]))
        fill(model, data, names, "the adapter file", path)
    params = dict(model.named_parameters())
    for name in names:
        params[name].requires_grad_(False)
    return tuple(int(k) for k in exits)


def truncated(model, layers: int):
    """A copy of `model` running its first `layers` decoder layers, then the exit
    map of that depth (if trained), the final norm and the output head;
    parameters and buffers are shared, not copied."""
    memo = {id(t): t for t in itertools.chain(model.parameters(), model.buffers())}
    clone = copy.deepcopy(model, memo)
    clone.model.layers = nn.ModuleList(list(model.model.layers)[:layers])
    maps = getattr(model, "exit_maps", None)
    if maps is not None and str(layers) in maps:
        clone.model.norm = nn.Sequential(maps[str(layers)], clone.model.norm)
    clone.config.num_hidden_layers = layers
    if getattr(clone.config, "layer_types", None):
        clone.config.layer_types = list(clone.config.layer_types)[:layers]
    return clone.eval()

