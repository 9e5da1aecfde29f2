"""The atomics suite (Jia §4.2, Table 4.2, Fig. 4.1): atom/red latency on global and shared memory under
1..32 contending lanes, and red.add throughput in Jia's contention scenarios up to the whole GPU.
Kernels: kernels/atomics.cu.
"""

from . import contention  # noqa: F401
