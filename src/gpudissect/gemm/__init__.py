"""Our own tensor-core GEMM on Hopper (issue 13), usable outside the benchmark.

    from gpudissect.gemm import matmul
    c = matmul(a, b)            # a: (M, K) row-major, b: (K, N) row- or column-major; cuda bf16/fp16

torch is imported only when matmul is called. Rules and rungs: gpudissect.gemm.variants.
"""

from __future__ import annotations

from .api import matmul, plan_layout
from .variants import BEST, DTYPES, RUNGS, check_dims

__all__ = ["matmul", "plan_layout", "BEST", "DTYPES", "RUNGS", "check_dims"]
