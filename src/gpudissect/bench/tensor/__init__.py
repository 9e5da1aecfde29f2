"""The tensor suite: tensor-core instructions at the warp level (mma/, mma.sync, mma.sp, ldmatrix) and the
warpgroup level (wgmma/, Hopper's wgmma), and cuBLAS through torch as the library anchor (cublas.py).
Kernels: kernels/tensor_*.cu.
"""

from . import cublas, mma, wgmma  # noqa: F401 - the order the benchmarks run in
