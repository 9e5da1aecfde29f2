"""Our own tensor-core GEMM on Hopper (issue 13), usable outside the benchmark; on the other GPUs from compute
capability 8.0 on (no wgmma: anything but sm_90a) the public default is rung 1, mma.sync (16-bit types only).

    from gpudissect.gemm import matmul
    c = matmul(a, b)            # a: (M, K) row-major, b: (K, N) row- or column-major; cuda bf16/fp16
    c = matmul(a8, b8, scale_a=sa, scale_b=sb)   # float8_e4m3fn in, bf16 out (per-tensor float32 scales)
    c = matmul(x, w.t())        # x: (batch, tokens, K): one (batch x tokens) x K GEMM

Any M; K and N multiples of 8 (fp8: K of 16). A call's plan (rung, tensor maps, workspace) is cached per
signature, so a shape seen before costs a few microseconds of host time; works under CUDA graph capture
and torch.compile (custom op gpudissect::matmul).

torch is imported only when matmul is called. Rules and rungs: gpudissect.gemm.variants; the small-M path
(swap-AB split-K for a few tokens against a large weight, `rung=SMALL`): gpudissect.gemm.small.
"""

from __future__ import annotations

from .api import cache_info, clear_cache, default_rung, matmul, plan_for, plan_layout
from .small import SMALL
from .variants import AUTO, BEST, BEST_FP8, DTYPES, RUNGS, check_dims, pick_rung, public_rung

__all__ = [
    "matmul",
    "cache_info",
    "clear_cache",
    "plan_for",
    "plan_layout",
    "default_rung",
    "pick_rung",
    "public_rung",
    "AUTO",
    "BEST",
    "BEST_FP8",
    "DTYPES",
    "RUNGS",
    "SMALL",
    "check_dims",
]
