"""The gemm suite: our tensor-core GEMM (gpudissect.gemm, kernels/gemm.cu) rung by rung against cuBLAS
(ladder.py: `ladder`, `vs_cublas`) and each side alone under the power cap (power.py: `power_split`).
"""

from . import ladder, power  # noqa: F401 - the order the benchmarks run in
