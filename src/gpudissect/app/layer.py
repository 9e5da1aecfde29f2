"""A Llama decoder layer in plain PyTorch, shaped like te.TransformerLayer in 000 §6.3.2.

RMSNorm -> fused QKV linear -> scaled_dot_product_attention (causal) -> output linear -> residual,
RMSNorm -> fused gate/up linear -> SiLU(gate) * up -> down linear -> residual. QKV and gate/up are
one GEMM each, as TE's LayerNormLinear / LayerNormMLP fuse them. No rotary embedding: the paper's
te.TransformerLayer call passes none (it is elementwise work, a few percent of the layer).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5, dtype: torch.dtype | None = None, device: str | None = None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim, dtype=dtype, device=device))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int, ffn: int, heads: int, dtype: torch.dtype, device: str):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden {hidden} is not a multiple of {heads} heads")
        self.hidden, self.ffn, self.heads = hidden, ffn, heads
        kw = dict(bias=False, dtype=dtype, device=device)
        self.norm1 = RMSNorm(hidden, dtype=dtype, device=device)
        self.qkv = nn.Linear(hidden, 3 * hidden, **kw)
        self.out = nn.Linear(hidden, hidden, **kw)
        self.norm2 = RMSNorm(hidden, dtype=dtype, device=device)
        self.gate_up = nn.Linear(hidden, 2 * ffn, **kw)
        self.down = nn.Linear(ffn, hidden, **kw)
        # std 1/sqrt(fan_in): each linear keeps the variance, so the layer's update is as large as its
        # input and the checks see the GEMMs' error rather than the rounding of the residual sum
        for lin in (self.qkv, self.out, self.gate_up, self.down):
            nn.init.normal_(lin.weight, std=lin.in_features**-0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, h))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


def build_layer(hidden: int, ffn: int, heads: int, dtype: torch.dtype, device: str, seed: int = 0) -> DecoderLayer:
    """A layer with seeded random weights, built directly on `device` in `dtype`."""
    torch.manual_seed(seed)
    return DecoderLayer(hidden, ffn, heads, dtype, device)
