"""Weight-only int8 for a torch model's linear maps (the `int8` precision): each
weight stored as int8 with one float scale per output channel (max |w| / 127),
the activations in `act` (bfloat16 or float32), the product by torch's
`aten._weight_int8pack_mm`. The weights read per token are a quarter of float32's;
whether that pays depends on the CPU's int8 kernels (`machine.paying_values` decides)."""

from __future__ import annotations

import torch
from torch import nn


class Int8Linear(nn.Module):
    """y = (x @ int8(W).T) * scale + b, computed in `act`."""

    def __init__(self, linear: nn.Linear, act: torch.dtype):
        super().__init__()
        w = linear.weight.detach().float()
        scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
        self.register_buffer("weight", torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8))
        self.register_buffer("scale", scale.to(act))
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(act))
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1]).to(self.act)
        y = torch.ops.aten._weight_int8pack_mm(flat, self.weight, self.scale)
        y = y if self.bias is None else y + self.bias
        return y.reshape(*x.shape[:-1], y.shape[-1]).to(x.dtype)


def quantise_linears(model: nn.Module, act: torch.dtype) -> nn.Module:
    """`model` (in place) with every nn.Linear but the LM head as an Int8Linear
    computing in `act`, the rest of the model cast to `act`."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear) and name != "lm_head":
                setattr(module, name, Int8Linear(child, act))
    return model.to(act)
