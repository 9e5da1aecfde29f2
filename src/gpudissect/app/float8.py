"""Transformer Engine's FP8 recipe, rebuilt in the open (000 §6.3.1 describes te.Linear doing this).

Per-tensor *current* scaling: each cast takes the tensor's own amax now (TE's default recipe uses
*delayed* scaling, the amax of earlier steps, which moves the amax reduction off the critical path):

    scale = fp8_max / amax            (float32; amax 0 -> scale 1)
    q     = cast(x * scale)           (the product is formed in x's dtype, then rounded to fp8)
    y     = _scaled_mm(qa, qb, 1/scale_a, 1/scale_b) -> bf16 (or the input's dtype)

Forward: activations and weights in e4m3, fast (reduced-precision) accumulation, as TE's fprop
(its `use_split_accumulator=False`). Backward ("hybrid", TE's Format.HYBRID): the output gradient in
e5m2, dgrad = dY(e5m2) W(e4m3) and wgrad = dY^T(e5m2) X(e4m3), both with full-precision
accumulation (TE's dgrad/wgrad use the split accumulator). `_scaled_mm` wants its first operand
row-major and its second column-major, so the backward makes transposed fp8 copies, as TE keeps
a transposed fp8 cache.

This module imports torch at import time: the suite imports it only after checking torch is there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

E4M3 = torch.float8_e4m3fn
E5M2 = torch.float8_e5m2
FP8_MAX = {E4M3: float(torch.finfo(E4M3).max), E5M2: float(torch.finfo(E5M2).max)}  # 448, 57344
ROWS_MULTIPLE = 16  # a tensor-wise _scaled_mm wants K and N multiples of 16; rows are padded only if it refuses


@dataclass
class Fp8:
    """An fp8 tensor with the inverse of the scale it was cast with (x ~= data * scale_inv)."""

    data: Any  # torch.Tensor of E4M3 / E5M2
    scale_inv: Any  # 0-dim float32 tensor


def amax(x: torch.Tensor) -> torch.Tensor:
    """max |x| as a 0-dim float32 tensor, in one reduction kernel (no |x| temporary)."""
    return torch.linalg.vector_norm(x, ord=float("inf")).float()


def scale_from_amax(a: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """fp8_max / amax; an all-zero tensor gets scale 1 (any scale represents it exactly)."""
    return torch.where(a > 0, FP8_MAX[dtype] / a, torch.ones_like(a))


def cast(x: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """x * scale rounded to fp8. |x * scale| <= fp8_max up to one rounding of the product, and the
    fp8 conversion rounds values below max + half an ulp to max, so no clamp is needed."""
    return (x * scale).to(dtype)


def quantize(x: torch.Tensor, dtype: torch.dtype = E4M3) -> Fp8:
    s = scale_from_amax(amax(x), dtype)
    return Fp8(cast(x, s, dtype), s.reciprocal())


def dequantize(q: Fp8, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return q.data.to(dtype) * q.scale_inv.to(dtype)


_pad_rows = False  # set once _scaled_mm has refused a row count that is not a multiple of 16


def scaled_mm(a: Fp8, b_colmajor: Fp8, out_dtype: torch.dtype, fast_accum: bool) -> torch.Tensor:
    """(a.data x b.data) * a.scale_inv * b.scale_inv; a (M, K) row-major, b (K, N) column-major."""
    global _pad_rows
    m = a.data.shape[0]
    if not _pad_rows or m % ROWS_MULTIPLE == 0:
        try:
            out = torch._scaled_mm(
                a.data,
                b_colmajor.data,
                scale_a=a.scale_inv,
                scale_b=b_colmajor.scale_inv,
                out_dtype=out_dtype,
                use_fast_accum=fast_accum,
            )
            return out[0] if isinstance(out, tuple) else out  # torch < 2.4 returned (out, amax)
        except RuntimeError as e:
            if m % ROWS_MULTIPLE == 0 or "divisible" not in str(e):
                raise
            _pad_rows = True
    pad = (-m) % ROWS_MULTIPLE  # zero rows (fp8 zero is all-zero bits), cut off again below
    data = torch.cat([a.data.view(torch.uint8), a.data.new_zeros((pad, a.data.shape[1])).view(torch.uint8)]).view(
        a.data.dtype
    )
    out = torch._scaled_mm(
        data,
        b_colmajor.data,
        scale_a=a.scale_inv,
        scale_b=b_colmajor.scale_inv,
        out_dtype=out_dtype,
        use_fast_accum=fast_accum,
    )
    out = out[0] if isinstance(out, tuple) else out
    return out[:m]


def rows_padded() -> bool:
    """Whether this process had to pad GEMM rows to a multiple of 16 (said in the method line)."""
    return _pad_rows


def colmajor(t: torch.Tensor) -> torch.Tensor:
    """The same matrix stored column-major (a transposed copy, as TE's fp8 transpose cache)."""
    return t.t().contiguous().t()


def _as_fp8(t: torch.Tensor, like: Fp8) -> Fp8:
    return Fp8(t, like.scale_inv)


class _Fp8LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        xq, wq = quantize(x2, E4M3), quantize(w, E4M3)
        y = scaled_mm(xq, _as_fp8(wq.data.t(), wq), x.dtype, fast_accum=True)  # W (N,K) row-major = W^T col-major
        ctx.save_for_backward(xq.data, xq.scale_inv, wq.data, wq.scale_inv)
        ctx.x_shape = shape
        return y.reshape(*shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        xd, xs, wd, ws = ctx.saved_tensors
        return fp8_backward(Fp8(xd, xs), Fp8(wd, ws), gy, ctx.x_shape)


def fp8_backward(xq: Fp8, wq: Fp8, gy: torch.Tensor, x_shape: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """dX and dW from the forward's fp8 x (M,K) and W (N,K): dY cast to e5m2 (current scaling), both GEMMs
    with full-precision accumulation."""
    g2 = gy.reshape(-1, gy.shape[-1])
    gq = quantize(g2, E5M2)
    # dX (M,K) = dY (M,N) . W (N,K): W wanted column-major
    dx = scaled_mm(gq, Fp8(colmajor(wq.data), wq.scale_inv), gy.dtype, fast_accum=False)
    # dW (N,K) = dY^T (N,M) . X (M,K): dY^T row-major, X column-major
    dw = scaled_mm(
        Fp8(gq.data.t().contiguous(), gq.scale_inv), Fp8(colmajor(xq.data), xq.scale_inv), gy.dtype, fast_accum=False
    )
    return dx.reshape(x_shape), dw


class Float8Linear(nn.Module):
    """nn.Linear with TE's FP8 recipe: high-precision master weight, cast to e4m3 on every forward
    (as te.Linear does outside its first-microbatch weight cache), trainable."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        self.weight = nn.Parameter(weight)
        self.bias = nn.Parameter(bias) if bias is not None else None
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]

    @classmethod
    def from_linear(cls, lin: nn.Linear) -> Float8Linear:
        return cls(lin.weight.data, lin.bias.data if lin.bias is not None else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = _Fp8LinearFn.apply(x, self.weight)
        return y + self.bias if self.bias is not None else y


class Float8InferenceLinear(nn.Module):
    """Inference-only FP8 linear: the weight is cast to e4m3 once (per-tensor scale) and the
    high-precision copy dropped; activations are scaled from their current amax on every call."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None):
        super().__init__()
        wq = quantize(weight.detach(), E4M3)
        self.register_buffer("weight_fp8", wq.data)
        self.register_buffer("weight_scale_inv", wq.scale_inv)
        self.register_buffer("bias", bias.detach() if bias is not None else None)
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]

    @classmethod
    def from_linear(cls, lin: nn.Linear) -> Float8InferenceLinear:
        return cls(lin.weight.data, lin.bias.data if lin.bias is not None else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        xq = quantize(x.reshape(-1, shape[-1]), E4M3)
        y = scaled_mm(xq, Fp8(self.weight_fp8.t(), self.weight_scale_inv), x.dtype, fast_accum=True)
        y = y.reshape(*shape[:-1], self.out_features)
        return y + self.bias if self.bias is not None else y


def swap_linears(
    model: nn.Module,
    factory: Callable[[nn.Linear], nn.Module],
    keep: Callable[[str, nn.Linear], bool] = lambda name, lin: False,
) -> int:
    """Replace every nn.Linear under `model` (except those `keep(name, lin)` holds back) by
    factory(linear), as the paper swaps nn.Linear for te.Linear; returns how many were replaced."""
    todo = [name for name, m in model.named_modules() if isinstance(m, nn.Linear) and not keep(name, m)]
    for name in todo:  # one at a time, so that each replaced weight can be freed before the next cast
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, factory(getattr(parent, child)))
    return len(todo)


# ---- the forward's phases, timed one by one for the Fig. 6 split ---------------------------
def phase_amax_scale(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return scale_from_amax(amax(x), E4M3), scale_from_amax(amax(w), E4M3)


def phase_cast(x: torch.Tensor, w: torch.Tensor, sx: torch.Tensor, sw: torch.Tensor) -> tuple[Fp8, Fp8]:
    return Fp8(cast(x, sx, E4M3), sx.reciprocal()), Fp8(cast(w, sw, E4M3), sw.reciprocal())


def phase_gemm(xq: Fp8, wq: Fp8, out_dtype: torch.dtype) -> torch.Tensor:
    return scaled_mm(xq, _as_fp8(wq.data.t(), wq), out_dtype, fast_accum=True)
