"""The tensor suite, warp level: mma.sync (dense), mma.sp (2:4 sparse) and ldmatrix.

Methods: Sun et al. (001) §4-7 (Fig. 4: clock64 around an unrolled loop of ILP independent, each
dependent, mma chains with __syncwarp; completion latency at 1 warp and ILP 1; throughput over
#warps x ILP; the two convergence points of Tables 3/6/9) and Luo et al. (000) §6.2 (Tables VII,
VIII and XII: the PTX -> SASS map on Hopper, TFLOPS, power and energy efficiency).

Latencies are net of the loop: the span between the clock reads also holds a fixed cost (the loop's entry
after the first clock read, the first pass through the unrolled body, its exit, the stores of D), a few
hundred cycles that a single chain of 2 x 128 steps spreads as 1-2 cycles over every mma. The same kernel
runs the 1-warp, ILP-1 chain at several lengths; latency_cycles is the slope of the line through the spans,
latency_fixed_cycles its intercept, latency_span_cycles the span / steps of the grid's own chain (common.py).
That chain's loop is unrolled 64 times where the mma is native (128 dependent mma per loop-back: the loop-back's
~20 cycles, which a 16-cycle HMMA.1688 cannot hide, come to ~0.15 cycle a step; lowering.latency_unrolled).
A per-clock rate below 95% of the GPU's own peak gets the measured limit in the note of its peak_ratio.

Everything the GPU computes is checked: the host lays out A, B, C (and the sparse metadata) in the
ISA's register fragments, and D must equal numpy's A*B+C — exactly for integer-valued inputs, within
a tolerance for fully random floating-point inputs.

What ptxas makes of them depends on the GPU family, and is pinned per family by the variants' SASS patterns
(lowering.py; `gpudissect sass --all --arch A`). On Hopper (NVRTC 13.5, sm_90a): f16/bf16/tf32 ->
HMMA.<mnk>.F32[.BF16|.TF32] / .F16, f64 -> DMMA.<m>x<n>x<k>, s8/u8 -> IMMA.<mnk>.S8.S8 / .U8.U8, b1 and.popc
-> BMMA.<mnk>.AND.POPC, mma.sp -> HMMA.SP / IMMA.SP; emulated there: fp8 (F2FP...UNPACK_B to f16, then f16
HMMA of half the K), s4/u4 (unpacked, IMMA.S8/U8 of half the K), xor.popc and m8n8k4 .f16 (no MMA at all:
SHFL + HADD2.F32 + FFMA in a subroutine). Elsewhere fp8 is native QMMA (sm_89, sm_120), s4/u4 and xor.popc
native before Hopper, m8n8k4 native HMMA.884 on Volta and Turing, f64 as DMMA.8x8x4 (up to 8 per mma) on Blackwell, b1
emulated with IMMA .U8 on Blackwell. Each GPU runs the variants it can (the others are skipped by name), and
each figure says what its SASS ran (native or emulated), read from the cubin that ran.

Modules: fragments.py (element codes, register fragment layouts, 2:4 sparse metadata), variants.py (which
mma / mma.sp exist, inputs and the check of D), lowering.py (what each GPU needs and makes of a variant, the
label from its SASS), common.py (the GPU's own peaks, timing analysis, grid),
mma.py (`mma_latency_throughput`, `mma_sparse`), ldmatrix.py (`ldmatrix`), power.py (`mma_power`).
The registry imports this package; importing the benchmark modules here registers the benchmarks (in
this order). The public names of the modules are re-exported for callers that use
`gpudissect.bench.tensor.mma.X`.
"""

from .common import *  # noqa: F403
from .fragments import *  # noqa: F403
from .ldmatrix import *  # noqa: F403  (registers ldmatrix)
from .lowering import *  # noqa: F403
from .mma import *  # noqa: F403  (registers mma_latency_throughput, mma_sparse)
from .power import *  # noqa: F403  (registers mma_power)
from .variants import *  # noqa: F403
