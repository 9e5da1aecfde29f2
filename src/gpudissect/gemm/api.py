"""`matmul(a, b, out=None)` on torch tensors, on our best rung (or a named one)."""

from __future__ import annotations

from typing import Any

from ..capability import Target
from .variants import AUTO, BEST_FP8, DTYPES, RUNGS, check_dims, check_rung_runs, public_rung

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "e4m3"}


def default_rung(dtype: str, target: Target | None = None) -> int:
    """The rung matmul uses when none is named: AUTO (per shape: variants.pick_rung), or BEST_FP8 for fp8.
    With the GPU's `target`, one it can run: rung 1 where the TMA rungs cannot (ValueError where none can)."""
    if target is not None and dtype in DTYPES:
        return public_rung(target, dtype)
    return BEST_FP8 if dtype == "e4m3" else AUTO


def plan_layout(
    a_shape: tuple[int, ...],
    a_strides: tuple[int, ...],
    b_shape: tuple[int, ...],
    b_strides: tuple[int, ...],
    dtype: str,
    rung: int | None = None,
) -> tuple[int, int, int, bool]:
    """(M, N, K, b_is_column_major) for A (M x K) and B (K x N) given as shapes and element strides;
    raises ValueError with the rule that is broken. Torch-free so CPU tests cover it."""
    if dtype not in DTYPES:
        raise ValueError(
            f"dtype {dtype} is not supported; supported: bfloat16, float16, float8_e4m3fn (with scale_a and scale_b)"
        )
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ValueError(f"matmul takes 2-D matrices, got A {tuple(a_shape)} and B {tuple(b_shape)}")
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: A is {m} x {k}, B is {k2} x {n}")
    check_dims(m, n, k, default_rung(dtype) if rung is None else rung, dtype)
    if tuple(a_strides) != (k, 1):
        raise ValueError(f"A must be row-major and contiguous (strides ({k}, 1)), got strides {tuple(a_strides)}")
    if tuple(b_strides) == (1, k):
        return m, n, k, True
    if tuple(b_strides) == (n, 1):
        return m, n, k, False
    raise ValueError(
        f"B must be contiguous row-major (strides ({n}, 1)) or column-major (strides (1, {k})), "
        f"got strides {tuple(b_strides)}"
    )


def check_scales(dtype: str, scales: tuple[Any, Any], device: Any) -> None:
    """fp8 needs both per-tensor scales (one float32 each on A's device, as torch._scaled_mm takes
    them); 16-bit inputs take none."""
    import torch

    if dtype != "e4m3":
        if any(s is not None for s in scales):
            raise ValueError("scale_a / scale_b apply to float8_e4m3fn inputs only")
        return
    for name, s in zip(("scale_a", "scale_b"), scales):
        if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or s.numel() != 1 or s.device != device:
            raise ValueError(
                f"float8_e4m3fn inputs need {name}: a one-element float32 tensor on {device} "
                "(the per-tensor scale, as torch._scaled_mm takes it)"
            )


def matmul(a: Any, b: Any, out: Any = None, rung: int | None = None, scale_a: Any = None, scale_b: Any = None) -> Any:
    """C = A @ B with fp32 accumulation. bf16/fp16: C in A's dtype. float8_e4m3fn: C = scale_a * scale_b
    * (A @ B) in bfloat16 (scales: one-element float32 tensors). A row-major; B column-major runs as is,
    a row-major B is transposed into a column-major copy first (one extra pass over B). rung: None for
    the default (per shape: rung 10, or rung 9 where its tiles fill the waves better; BEST_FP8 for fp8; on a
    GPU without wgmma, i.e. any but sm_90a, rung 1, whose M and N must be multiples of 128 and K of 32, and
    no fp8)."""
    import torch

    from .launch import OUT_DTYPE, prepare

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError("matmul takes torch tensors")
    if a.device.type != "cuda" or b.device != a.device:
        raise ValueError(f"A and B must be on the same CUDA device, got {a.device} and {b.device}")
    if a.dtype != b.dtype:
        raise ValueError(f"A and B must have the same dtype, got {a.dtype} and {b.dtype}")
    name = str(a.dtype).removeprefix("torch.")
    dtype = _TORCH_DTYPES.get(name, name)
    target = Target(*torch.cuda.get_device_capability(a.device))
    r = default_rung(dtype, target) if rung is None else rung
    if r in RUNGS:  # a named rung this GPU cannot run: say so before compiling anything
        check_rung_runs(r, target)
    try:
        m, n, k, b_colmajor = plan_layout(
            tuple(a.shape), tuple(a.stride()), tuple(b.shape), tuple(b.stride()), dtype, r
        )
    except ValueError as e:
        if rung is None and r == 1:  # the default fell back to rung 1: say why its tile rules apply
            raise ValueError(f"{e} (on {target.arch}, without wgmma, the default is rung 1)") from None
        raise
    check_scales(dtype, (scale_a, scale_b), a.device)
    if b_colmajor:
        bt = b.t()  # bt: N x K row-major
    elif dtype == "e4m3":  # transpose the bytes: copy kernels need not exist for float8
        bt = b.view(torch.uint8).t().contiguous().view(b.dtype)
    else:
        bt = b.t().contiguous()
    c_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[OUT_DTYPE[dtype]]
    if out is None:
        out = torch.empty((m, n), dtype=c_dtype, device=a.device)
    elif out.shape != (m, n) or out.dtype != c_dtype or out.device != a.device or out.stride() != (n, 1):
        raise ValueError(f"out must be a contiguous {m} x {n} {c_dtype} tensor on {a.device}")
    sa, sb = (scale_a.data_ptr(), scale_b.data_ptr()) if dtype == "e4m3" else (0, 0)
    with torch.cuda.device(a.device):
        launch = prepare(r, dtype, a.data_ptr(), bt.data_ptr(), out.data_ptr(), m, n, k, sa, sb)
        launch(torch.cuda.current_stream(a.device).cuda_stream)
    return out


__all__ = ["matmul", "plan_layout", "default_rung", "RUNGS"]
