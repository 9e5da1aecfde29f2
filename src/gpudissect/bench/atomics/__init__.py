"""The atomics suite (Jia §4.2, Table 4.2, Fig. 4.1): atom/red latency on global and shared memory under
1..32 contending lanes, and red.add throughput in Jia's contention scenarios up to the whole GPU.
Kernels: kernels/atomics.cu.

Modules: spec.py (the kernel spec and its SASS checks), model.py (expected final values, the near/far
split of probed lines), latency.py (`atomic_latency`), throughput.py (`atomic_throughput`).
"""

# the order the benchmarks run and are listed in (modules relative to this package)
ORDER = ("latency", "throughput")
