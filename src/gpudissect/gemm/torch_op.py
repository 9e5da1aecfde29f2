"""`matmul` as the torch custom op gpudissect::matmul, so torch.compile traces through it (the op is opaque
to the compiler; its fake implementation gives the output's shape and type without running anything).

No `from __future__ import annotations` here: torch.library reads the op's schema from real annotations.
Imported only once torch is (gemm.api._torch).
"""

from typing import Any, Optional

import torch

_REGISTERED = False


def _out_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.bfloat16 if dtype == torch.float8_e4m3fn else dtype


def register(matmul: Any, torch_module: Any = torch) -> bool:
    """Register gpudissect::matmul, running `matmul` (gemm.api's, handed in so this module imports nothing of
    the package), once; False on a torch without torch.library.custom_op (before 2.4), where matmul still runs
    eagerly but torch.compile cannot trace it."""
    global _REGISTERED
    if _REGISTERED:
        return True
    if not hasattr(torch_module.library, "custom_op"):
        return False

    @torch_module.library.custom_op("gpudissect::matmul", mutates_args=())
    def matmul_op(  # Optional, not X | None: torch's schema inference reads typing.Optional on every version
        a: torch.Tensor,
        b: torch.Tensor,
        rung: int,
        scale_a: Optional[torch.Tensor],  # noqa: UP045
        scale_b: Optional[torch.Tensor],  # noqa: UP045
    ) -> torch.Tensor:
        return matmul(a, b, rung=None if rung < 0 else rung, scale_a=scale_a, scale_b=scale_b)

    @matmul_op.register_fake
    def _(a: torch.Tensor, b: torch.Tensor, rung: int, scale_a: Any, scale_b: Any) -> torch.Tensor:
        if a.dim() == 3 and b.dim() == 2:
            return a.new_empty((a.shape[0], a.shape[1], b.shape[-1]), dtype=_out_dtype(a.dtype))
        if a.dim() == 3:
            return a.new_empty((a.shape[0], a.shape[1], b.shape[-1]), dtype=_out_dtype(a.dtype))
        return a.new_empty((a.shape[0], b.shape[-1]), dtype=_out_dtype(a.dtype))

    _REGISTERED = True
    return True
