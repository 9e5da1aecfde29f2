"""The hopper suite: what Hopper added (Luo et al. 000 §5, §7, §8). tma/ (TMA latency and throughput, the
asynchronous-copy GEMM), dsm/ (distributed shared memory over thread-block clusters), dpx.py (the DPX
instructions) and the Smith-Waterman search built on them (sw_reference.py is its CPU side).
Kernels: kernels/hopper_*.cu.
"""

from . import dpx, dsm, tma  # noqa: F401 - the order the benchmarks run in
