"""Hopper suite, part TMA and asynchronous copy: Luo et al. (000) §5 and 003 §III-D.

* tma_latency       - the random-stride chase of the memory suite done with 16-byte TMA bulk loads
                      (expect-tx arrive, copy, try_wait, read the next address from shared memory)
                      beside ordinary ld.global.cg loads over the same chains: curve, knees, offset.
* tma_throughput    - global -> shared with cp.async.bulk (1-16 KB per copy) and 1D/2D/3D tensor maps
                      (the paper's box shapes) at 1..4 x SM-count CTAs (Fig. 3), 2D boxes also from a
                      tensor whose rows are one box wide, box shapes of 16 KB (Fig. 4), and the memory
                      suite's streaming read over the same buffer, timed in alternation with the best
                      copies for the ratios.
* async_copy_matmul - tiled fp32 GEMM, synchronous shared-memory staging vs a two-stage cp.async
                      pipeline, block sizes 8/16/32 x blocks per SM (Tables XIII-XIV of 003).

Every copy is checked: chases end where the chain says, each CTA's sum of what landed in shared
memory equals the host's sum of the tiles it was given, and sampled GEMM entries equal a float64
reference.

Modules: common.py (kernel specs, the streaming read, derivations on measured numbers), plans.py (tensor
maps and copy plans), latency.py (`tma_latency`), throughput.py (`tma_throughput`), async_copy.py
(`async_copy_matmul`). The registry imports this package; importing the benchmark modules here registers
the benchmarks (in this order). The public names of the modules are re-exported for callers that use
`gpudissect.bench.hopper.tma.X`, with the private ones the tests use.
"""

from .async_copy import *  # noqa: F403  (registers async_copy_matmul)
from .async_copy import _report_async  # noqa: F401
from .common import *  # noqa: F403
from .latency import *  # noqa: F403  (registers tma_latency)
from .latency import _derive_latency  # noqa: F401
from .plans import *  # noqa: F403
from .throughput import *  # noqa: F403  (registers tma_throughput)
from .throughput import _paired_ratio, _report_throughput  # noqa: F401
