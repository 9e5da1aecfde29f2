"""Lazy imports of the optional `app` dependencies, with one clear message naming what is missing."""

from __future__ import annotations

from typing import Any

from ..errors import BenchSkipped

EXTRA = "pip install gpudissect[app]"


class MissingDependency(BenchSkipped):
    """torch / transformers (or a CUDA build of torch) is not there: the benchmark cannot run."""


def require_torch(who: str, cuda: bool = True) -> Any:
    """torch, imported now; MissingDependency (a BenchSkipped) naming `who` when torch, or with
    `cuda` a CUDA build of it, is not there. Also used by bench/tensor/cublas.py."""
    try:
        import torch
    except ImportError as e:
        raise MissingDependency(f"{who} needs PyTorch ({e}); install it with `{EXTRA}`") from None
    if cuda and not torch.cuda.is_available():
        raise MissingDependency(f"{who} needs a CUDA build of PyTorch; torch {torch.__version__} sees no CUDA device")
    return torch


def import_torch(cuda: bool = True) -> Any:
    """torch for the app suite, which also needs torch's FP8 GEMM."""
    torch = require_torch("the app suite", cuda)
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        raise MissingDependency(
            f"torch {torch.__version__} has no FP8 GEMM (torch._scaled_mm); the app suite needs torch >= 2.4"
        )
    return torch


def import_transformers() -> Any:
    try:
        import transformers
    except ImportError as e:
        raise MissingDependency(f"the LLM benchmark needs transformers ({e}); install it with `{EXTRA}`") from None
    return transformers


def set_tf32(torch: Any, allowed: bool) -> None:
    """Let fp32 matmuls use TF32 tensor cores, or keep them IEEE fp32 (the default to restore)."""
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):  # torch >= 2.9; allow_tf32 is deprecated there
        m.fp32_precision = "tf32" if allowed else "ieee"
    else:
        m.allow_tf32 = allowed
