"""wgmma on Hopper (sm_90a): latency, throughput, N sweep, sparsity and power (Luo et al. §6.2, Tables IX-XIII).

Operands A and B sit in shared memory in the simplest layout the matrix descriptor can describe:
no swizzle ("interleave"), K-major, 8-row x 16-byte core matrices stored contiguously (128 bytes).
A wgmma reads 32 bytes of K per row of A and B (two core matrices along K); a sparse one reads 32
of the compressed A and 64 of B (four). Core matrix (row group i, K chunk j) of an operand starts at
start + i * SBO + j * LBO (PTX ISA: the stride byte offset steps along M or N, the leading byte offset
along K, for K-major no-swizzle operands). The image stores the K chunks one after the other, each
holding all row groups: SBO = 128, LBO = 16 * rows (the tiling CUTLASS's no-swizzle atoms give).

Everything that decides where a bit goes is on the host and runs on the CPU: the packer of the
shared-memory image, the descriptor encoder, the RS register packer of A, the sparse metadata packer
and the reader of the accumulator fragment. A numpy simulator of how the hardware interprets a
descriptor, the A/metadata registers and the D registers (`emulate`) checks all of them without a GPU,
and on the GPU every variant's D is compared element by element with a numpy reference first.

Modules: variants.py (types, shapes, what the ISA allows, peaks, kernel specs), layout.py (descriptor and
shared-memory image, encodings, register fragments, sparse metadata), operands.py (operands, reference,
`emulate`, comparison), throughput.py (device side; `wgmma_throughput`, `wgmma_sparse`, `wgmma_n_sweep`),
power.py (`wgmma_power`). The registry imports this package; importing the benchmark modules here
registers the benchmarks (in this order). The public names of the modules are re-exported for callers
that use `gpudissect.bench.tensor.wgmma.X`, with the private ones other modules and tests use.
"""

from .layout import *  # noqa: F403
from .layout import _PAIRS, _fp8_encode  # noqa: F401
from .operands import *  # noqa: F403
from .power import *  # noqa: F403  (registers wgmma_power)
from .throughput import *  # noqa: F403  (registers wgmma_throughput, wgmma_sparse, wgmma_n_sweep)
from .variants import *  # noqa: F403
from .variants import _FLOAT_NS  # noqa: F401
