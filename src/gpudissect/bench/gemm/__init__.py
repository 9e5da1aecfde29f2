"""The gemm suite: our tensor-core GEMM (gpudissect.gemm, kernels/gemm.cu) rung by rung against cuBLAS
(ladder.py), its best rung against cuBLAS over shapes (vs_cublas.py), the public matmul as users call it
(api.py: `api_vs_cublas`, host cost included) and each side alone under the power
cap (power.py: `power_split`). What they share, one checked and timed point: cases.py.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("ladder", "vs_cublas", "api", "power")
