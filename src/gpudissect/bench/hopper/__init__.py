"""The hopper suite: what Hopper added (Luo et al. 000 §5, §7, §8). tma/ (TMA latency and throughput, the
asynchronous-copy GEMM), dsm/ (distributed shared memory over thread-block clusters), dpx.py (the DPX
instructions; dpx_model.py is their CPU model) and smith_waterman.py, the Smith-Waterman search built on
them (sw_reference.py is its CPU side). Kernels: kernels/hopper_*.cu.
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = (
    "tma.latency",
    "tma.throughput",
    "tma.async_copy",
    "dsm.latency",
    "dsm.throughput",
    "dsm.histogram",
    "dpx",
    "smith_waterman",
)
