"""The tensor suite: tensor-core instructions at the warp level (mma/, mma.sync, mma.sp, ldmatrix) and the
warpgroup level (wgmma/, Hopper's wgmma), and cuBLAS through torch as the library anchor (cublas.py).
Kernels: kernels/tensor_*.cu.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("mma.mma", "mma.ldmatrix", "mma.power", "wgmma.throughput", "wgmma.power", "cublas")
