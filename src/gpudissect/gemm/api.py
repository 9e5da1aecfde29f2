"""`matmul(a, b, out=None)` on torch tensors, on our best rung (or a named one)."""

from __future__ import annotations

from typing import Any

from .variants import BEST, RUNGS, check_dims

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16"}


def plan_layout(a_shape: tuple[int, ...], a_strides: tuple[int, ...], b_shape: tuple[int, ...],
                b_strides: tuple[int, ...], dtype: str, rung: int = BEST) -> tuple[int, int, int, bool]:
    """(M, N, K, b_is_column_major) for A (M x K) and B (K x N) given as shapes and element strides;
    raises ValueError with the rule that is broken. Torch-free so CPU tests cover it."""
    if dtype not in _TORCH_DTYPES.values():
        raise ValueError(f"dtype {dtype} is not supported yet; supported: bfloat16, float16 "
                         "(fp8 e4m3 is planned, not built)")
    if len(a_shape) != 2 or len(b_shape) != 2:
        raise ValueError(f"matmul takes 2-D matrices, got A {tuple(a_shape)} and B {tuple(b_shape)}")
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: A is {m} x {k}, B is {k2} x {n}")
    check_dims(m, n, k, rung)
    if tuple(a_strides) != (k, 1):
        raise ValueError(f"A must be row-major and contiguous (strides ({k}, 1)), got strides {tuple(a_strides)}")
    if tuple(b_strides) == (1, k):
        return m, n, k, True
    if tuple(b_strides) == (n, 1):
        return m, n, k, False
    raise ValueError(f"B must be contiguous row-major (strides ({n}, 1)) or column-major (strides (1, {k})), "
                     f"got strides {tuple(b_strides)}")


def matmul(a: Any, b: Any, out: Any = None, rung: int = BEST) -> Any:
    """C = A @ B with fp32 accumulation, C in A's dtype. A row-major; B column-major runs as is, a
    row-major B is transposed into a column-major copy first (one extra pass over B)."""
    import torch

    from .launch import prepare

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError("matmul takes torch tensors")
    if a.device.type != "cuda" or b.device != a.device:
        raise ValueError(f"A and B must be on the same CUDA device, got {a.device} and {b.device}")
    if a.dtype != b.dtype:
        raise ValueError(f"A and B must have the same dtype, got {a.dtype} and {b.dtype}")
    dtype = _TORCH_DTYPES.get(str(a.dtype).removeprefix("torch."), str(a.dtype).removeprefix("torch."))
    m, n, k, b_colmajor = plan_layout(tuple(a.shape), tuple(a.stride()), tuple(b.shape), tuple(b.stride()), dtype, rung)
    bt = b.t() if b_colmajor else b.t().contiguous()  # bt: N x K row-major
    if out is None:
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
    elif out.shape != (m, n) or out.dtype != a.dtype or out.device != a.device or out.stride() != (n, 1):
        raise ValueError(f"out must be a contiguous {m} x {n} {a.dtype} tensor on {a.device}")
    with torch.cuda.device(a.device):
        launch = prepare(rung, dtype, a.data_ptr(), bt.data_ptr(), out.data_ptr(), m, n, k)
        launch(torch.cuda.current_stream(a.device).cuda_stream)
    return out


__all__ = ["matmul", "plan_layout", "RUNGS"]
