"""FP8 linears with delayed scaling and a one-pass cast: Transformer Engine's default recipe (000 §6.3.1),
with our kernel (kernels/app_fp8cast.cu) doing amax, scale and cast in one read of each tensor.

Per tensor (each linear's activation and weight), on every call:

    scale = fp8_max / 2^margin / max(amax history)      (set on the device by the previous call's kernel)
    q     = sat(x * scale) in e4m3, amax = max |x|       (one kernel: x read once, q written once)
    y     = GEMM(q_x, q_w) / scale_x / scale_w -> bf16   (torch._scaled_mm, or our gpudissect.gemm.matmul)

The kernel's last CTA pushes the amax into the history and sets the next scale, so a forward never waits on
the host and launches nothing but the two casts and the GEMM. The first call of a tensor (empty history)
reads it once more for its own amax. A value above the delayed amax saturates at +-448 (as TE's does).
float8.Float8Linear (current scaling, unfused eager ops) stays as it is: committed figures are its own.

This module imports torch at import time: the suite imports it only after checking torch is there.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from . import fp8cast
from .float8 import E4M3, Fp8, fp8_backward, scaled_mm

GEMMS = ("torch", "ours")  # torch._scaled_mm (cuBLAS) or gpudissect.gemm.matmul (sm_90a); "auto" picks one
_KERNEL_DTYPE = {torch.bfloat16: "bf16", torch.float32: "f32"}
_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_DEVICE = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)  # without current_device()'s checks


def auto_gemm(device: torch.device) -> str:
    """The GEMM gemm="auto" runs on `device`: "ours" where our e4m3 GEMM runs (wgmma: sm_90a), else "torch"."""
    from ..capability import Target
    from ..gemm.variants import BEST_FP8, RUNGS

    why = RUNGS[BEST_FP8].needs.why_not(Target(*torch.cuda.get_device_capability(device)))
    return "ours" if why is None else "torch"


def _stream(index: int) -> int:
    """torch's current stream on device `index` as a handle (without making a Stream object)."""
    if _RAW_STREAM is not None:
        return int(_RAW_STREAM(index))
    return int(torch.cuda.current_stream(index).cuda_stream)


class CastState:
    """One tensor's delayed-scaling state on the device (layout: kernels/app_fp8cast.cu): the scale the next
    cast uses, the inverse of the one the last cast used, and the amax history. Not to be shared by two
    tensors, nor used on two streams at once."""

    def __init__(self, device: Any, history: int = fp8cast.HISTORY, margin: int = 0):
        self.words = torch.zeros(fp8cast.state_words(history), dtype=torch.float32, device=device)
        self.words[fp8cast.SCALE] = self.words[fp8cast.SCALE_INV] = 1.0  # scale and scale_inv start at 1
        self.history, self.margin = history, margin
        self.numerator = fp8cast.fp8max_margin(margin)
        self.primed = False  # a first call has filled the history (host-side: no sync to know it)

    @property
    def scale(self) -> torch.Tensor:
        return self.words[fp8cast.SCALE]

    @property
    def scale_inv(self) -> torch.Tensor:
        """0-dim float32 view: 1 / the scale of the latest cast (what the GEMM dequantises with)."""
        return self.words[fp8cast.SCALE_INV]

    @property
    def last_amax(self) -> torch.Tensor:
        return self.words[fp8cast.LAST]

    @property
    def amax_history(self) -> torch.Tensor:
        return self.words[fp8cast.HEADER_WORDS :]

    @property
    def steps(self) -> torch.Tensor:
        """Amaxes pushed so far (int32 view)."""
        return self.words[fp8cast.STEP : fp8cast.STEP + 1].view(torch.int32)[0]


def _caster(x: torch.Tensor) -> fp8cast.Caster:
    """The cast kernel for x's device and type (x's device is the current one), loaded on first use."""
    key = (x.device.index, _KERNEL_DTYPE[x.dtype])
    run = fp8cast.CASTERS.get(key)
    if run is not None:
        return run
    if torch.cuda.is_current_stream_capturing():  # loading a module is no stream work: allowed beside a capture
        from ..device.fastlaunch import relaxed_capture

        with relaxed_capture():
            return fp8cast.caster(*key)
    return fp8cast.caster(*key)


def cast(x: torch.Tensor, state: CastState, out: torch.Tensor | None = None) -> Fp8:
    """x (bfloat16 or float32, CUDA) to e4m3 with the state's delayed scale, in one kernel on torch's current
    stream; the state then holds x's amax in its history and the next call's scale. The returned scale_inv is
    a view of the state: valid until the next cast with the same state (clone it to keep it longer)."""
    if x.dtype not in _KERNEL_DTYPE or x.device.type != "cuda":
        raise TypeError(f"the fused fp8 cast takes CUDA bfloat16 or float32 tensors, got {x.dtype} on {x.device}")
    if _DEVICE() != x.device.index:  # our kernel is loaded per device (context): launch in x's
        with torch.cuda.device(x.device):
            return cast(x, state, out)
    if not x.is_contiguous():
        x = x.contiguous()
    if x.data_ptr() % 16:  # a view at an odd offset: a fresh allocation is aligned
        x = x.clone()
    if out is None:
        out = torch.empty(x.shape, dtype=E4M3, device=x.device)
    elif out.dtype != E4M3 or out.numel() != x.numel() or not out.is_contiguous() or out.device != x.device:
        raise ValueError(f"out must be a contiguous float8_e4m3fn tensor of {x.numel()} elements on {x.device}")
    n = x.numel()
    if n == 0:
        return Fp8(out, state.scale_inv)
    run = _caster(x)
    stream = _stream(x.device.index)
    args = (x.data_ptr(), out.data_ptr(), n, state.words.data_ptr())
    if not state.primed:  # the first call: the tensor's own amax (one extra read), so its scale is not a guess
        run(*args, False, state.history, state.numerator, stream)
        state.primed = True
    run(*args, True, state.history, state.numerator, stream)
    return Fp8(out, state.scale_inv)


def fp8_matmul(xq: Fp8, wq: Fp8, out_dtype: torch.dtype, gemm: str) -> torch.Tensor:
    """x (M,K) . W^T for fp8 x and W (N,K) row-major (= W^T column-major), dequantised, in out_dtype."""
    if gemm == "torch":
        return scaled_mm(xq, Fp8(wq.data.t(), wq.scale_inv), out_dtype, fast_accum=True)
    if gemm == "ours":
        from ..gemm import matmul

        y = matmul(xq.data, wq.data.t(), scale_a=xq.scale_inv, scale_b=wq.scale_inv)
        return y if y.dtype == out_dtype else y.to(out_dtype)
    raise ValueError(f"gemm must be one of {', '.join(GEMMS)}, got {gemm!r}")


class _FusedFn(torch.autograd.Function):
    """The trainable path: fresh fp8 buffers and cloned scales saved for the backward (a later forward
    rewrites the states); the backward is Float8Linear's (dY in e5m2, current scaling)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, mod: Float8FusedLinear) -> torch.Tensor:  # type: ignore[override]
        shape = x.shape
        xq = cast(x.reshape(-1, shape[-1]), mod.x_state)
        wq = cast(w, mod.w_state)
        y = fp8_matmul(xq, wq, x.dtype, mod.gemm)
        ctx.save_for_backward(xq.data, xq.scale_inv.clone(), wq.data, wq.scale_inv.clone())
        ctx.x_shape = shape
        return y.reshape(*shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx: Any, gy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:  # type: ignore[override]
        xd, xs, wd, ws = ctx.saved_tensors
        dx, dw = fp8_backward(Fp8(xd, xs), Fp8(wd, ws), gy, ctx.x_shape)
        return dx, dw, None


class Float8FusedLinear(nn.Module):
    """nn.Linear with TE's delayed-scaling FP8 recipe: high-precision master weight, cast to e4m3 on every
    forward (as te.Linear outside its weight cache), activations too, each by one kernel that also records its
    amax; `gemm` picks torch._scaled_mm ("torch"), our GEMM ("ours", sm_90a) or, "auto", ours where it runs
    (auto_gemm; the layer benchmark's fp8 type, the recipe this library ships). Trainable."""

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        history: int = fp8cast.HISTORY,
        margin: int = 0,
        gemm: str = "torch",
    ):
        super().__init__()
        if gemm not in (*GEMMS, "auto"):
            raise ValueError(f"gemm must be one of {', '.join(GEMMS)} or auto, got {gemm!r}")
        if gemm == "auto":
            gemm = auto_gemm(weight.device)
        self.weight = nn.Parameter(weight)
        self.bias = nn.Parameter(bias) if bias is not None else None
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        self.gemm = gemm
        self.x_state = CastState(weight.device, history, margin)
        self.w_state = CastState(weight.device, history, margin)
        self._wq: torch.Tensor | None = None  # the weight's e4m3 copy, rewritten by every inference forward

    @classmethod
    def from_linear(cls, lin: nn.Linear, **kw: Any) -> Float8FusedLinear:
        return cls(lin.weight.data, lin.bias.data if lin.bias is not None else None, **kw)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad):
            y = _FusedFn.apply(x, self.weight, self)
        else:
            y = self._infer(x)
        return y + self.bias if self.bias is not None else y

    def _infer(self, x: torch.Tensor) -> torch.Tensor:
        """No autograd: the weight's e4m3 copy goes to one buffer kept across calls (no allocation)."""
        shape = x.shape
        w = self.weight.detach()
        if self._wq is None or self._wq.shape != w.shape or self._wq.device != w.device:
            self._wq = torch.empty(w.shape, dtype=E4M3, device=w.device)
        xq = cast(x.reshape(-1, shape[-1]), self.x_state)
        wq = cast(w, self.w_state, out=self._wq)
        return fp8_matmul(xq, wq, x.dtype, self.gemm).reshape(*shape[:-1], self.out_features)


# ---- the forward's phases, timed one by one (the linear benchmark's split) --------------------------
def phase_cast(x: torch.Tensor, w: torch.Tensor, sx: CastState, sw: CastState) -> tuple[Fp8, Fp8]:
    """Both fused casts of a forward (x and W, one kernel each)."""
    return cast(x, sx), cast(w, sw)


def phase_gemm(xq: Fp8, wq: Fp8, out_dtype: torch.dtype, gemm: str = "torch") -> torch.Tensor:
    return fp8_matmul(xq, wq, out_dtype, gemm)
