// Warp-level mma.sync / mma.sp latency and throughput (Sun et al. §4-6, Fig. 4; Luo et al. §6.2).
//
// One compiled variant per PTX instruction; the host (gpudissect.bench.tensor.mma) passes
//   MMA_ASM  the whole asm template, e.g. "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
//            {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" (C and D share registers);
//            sparse templates end with ", %E, <selector>;" where %E is the metadata register
//   NA, NB   registers of A and B per lane, NC accumulator registers per lane
//   AK       A/B register kind: 0 = .b32, 1 = .f64;  CK: 0 = .f32, 1 = .b32 (f16x2 / s32), 2 = .f64
//   SPARSE   1 for mma.sp (one more .b32 operand: the metadata)
//   MAX_WARPS  the most warps a block is launched with (16; 8 where the emulation needs > 128 registers)
//   LATENCY_UNROLL  iterations per loop body of mma_ilp1, the latency chain: 64 (128 dependent mma per
//            loop-back, whose ~20 cycles the 16-cycle HMMA.1688 slots cannot hide; the compiler's own 16x
//            unroll, 32 mma per loop-back, put ~0.6 cycle on each step) where the mma is one tensor
//            instruction; 0 (the compiler's unroll) where it is many SASS instructions (lowering.py:
//            latency_unrolled). May be a condition on __CUDA_ARCH__ like OPAQUE. The launches' iteration counts
//            are multiples of it; mma_ilp2..6 keep the compiler's unroll (their SASS as before)
//   OPAQUE   1 where ptxas emulates the instruction with other SASS (on Hopper: fp8 via F2FP + HMMA, s4/u4
//            via unpacking + IMMA.S8, xor.popc, m8n8k4; bench/tensor/mma/lowering.py says where on other
//            GPUs). OPAQUE and MAX_WARPS may be conditions on __CUDA_ARCH__ where the families differ
//            (fp8 is native QMMA on sm_89 and sm_120). The expansions are visible to ptxas, which
//            would hoist the loop-invariant parts (conversions, and even the zero-accumulator HMMA of
//            fp8) out of the loop and share them between chains. Each chain then XORs its A and B
//            with (iteration & zmask[chain]), zero at run time but unknown to the compiler, so every
//            emulated mma really runs with fresh operands, as it would in a GEMM.
// Fragments live in global memory as [register][lane], already in the register layout of the
// ISA; the host builds them from matrices and checks D against its own A*B+C.
#ifndef NA
#define NA 4
#define NB 2
#define NC 4
#define AK 0
#define CK 0
#define SPARSE 0
#define OPAQUE 0
#define MMA_ASM "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
#endif
#include "gpudissect.cuh"  // u64/u32, clk(), gtime(), smid()

#ifndef OPAQUE
#define OPAQUE 0
#endif
#ifndef LATENCY_UNROLL
#define LATENCY_UNROLL 64
#endif
#ifndef MAX_WARPS  // largest block launched: caps registers at 65536 / (32 * MAX_WARPS) per thread
#define MAX_WARPS 16
#endif
#if AK == 0
typedef u32 AT;
#define ACN "r"
#else
typedef double AT;
#define ACN "d"
#endif
#if CK == 0
typedef float CT;
#define CCN "f"
#elif CK == 1
typedef u32 CT;
#define CCN "r"
#else
typedef double CT;
#define CCN "d"
#endif

// Operand lists of every length the ISA uses (string-literal concatenation builds "+f" etc.).
#define IN_1(K, x) K(x[0])
#define IN_2(K, x) IN_1(K, x), K(x[1])
#define IN_4(K, x) IN_2(K, x), K(x[2]), K(x[3])
#define IN_8(K, x) IN_4(K, x), K(x[4]), K(x[5]), K(x[6]), K(x[7])
#define OUT_2(x) "+" CCN(x[0]), "+" CCN(x[1])
#define OUT_4(x) OUT_2(x), "+" CCN(x[2]), "+" CCN(x[3])
#define OUT_8(x) OUT_4(x), "+" CCN(x[4]), "+" CCN(x[5]), "+" CCN(x[6]), "+" CCN(x[7])
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define A_OPS(x) CAT(IN_, NA)(ACN, x)
#define B_OPS(x) CAT(IN_, NB)(ACN, x)
#define C_OPS(x) CAT(OUT_, NC)(x)
#if SPARSE
#define MMA(acc, a, b) asm volatile(MMA_ASM : C_OPS(acc) : A_OPS(a), B_OPS(b), "r"(meta))
#else
#define MMA(acc, a, b) asm volatile(MMA_ASM : C_OPS(acc) : A_OPS(a), B_OPS(b))
#endif

// One iteration of the timed loop in chains() (its names: ILP, acc, ra, rb, rb2, zmask): D = A*B + D, then
// D = A*B2 + D, in every chain. A macro, so that the loop of ILP > 1 is the very code it was before mma_ilp1
// got its own unroll (a helper lambda changed ptxas' register allocation of mma_ilp2..6 on sm_100a/sm_120a).
#if OPAQUE  // operands XORed with (iteration & zmask[chain]): see OPAQUE above
#define ROUND(it)                                                                                   \
    _Pragma("unroll") for (int j = 0; j < ILP; j++) {                                               \
        const u32 z = (it) & zmask[j];                                                              \
        AT xa[NA], xb[NB];                                                                          \
        _Pragma("unroll") for (int r = 0; r < NA; r++) xa[r] = ra[r] ^ z;                           \
        _Pragma("unroll") for (int r = 0; r < NB; r++) xb[r] = rb[r] ^ z;                           \
        MMA(acc[j], xa, xb);                                                                        \
    }                                                                                               \
    __syncwarp();                                                                                   \
    _Pragma("unroll") for (int j = 0; j < ILP; j++) {                                               \
        const u32 z = (it) & zmask[j];                                                              \
        AT xa[NA], xb[NB];                                                                          \
        _Pragma("unroll") for (int r = 0; r < NA; r++) xa[r] = ra[r] ^ z;                           \
        _Pragma("unroll") for (int r = 0; r < NB; r++) xb[r] = rb2[r] ^ z;                          \
        MMA(acc[j], xa, xb);                                                                        \
    }                                                                                               \
    __syncwarp()
#else
#define ROUND(it)                                                                                   \
    _Pragma("unroll") for (int j = 0; j < ILP; j++) MMA(acc[j], ra, rb);                            \
    __syncwarp();                                                                                   \
    _Pragma("unroll") for (int j = 0; j < ILP; j++) MMA(acc[j], ra, rb2);                           \
    __syncwarp()
#endif

// Every warp of every block runs ILP independent chains; chain j starts from its own C (c[j]),
// computes D = A*B + D once untimed (warm-up), then D = A*B + D and D = A*B2 + D per iteration:
// D_j = C_j + A*B + iters * (A*B + A*B2). The host picks B2 = -B for signed types, so that any
// number of iterations stays exact in every accumulator type while D still shows A*B.
// __syncwarp() after each round as in Sun's Fig. 4.
// e: [32] metadata words, then [6] zero masks (OPAQUE); d: [block][warp][ILP][NC][lane]; rec: [block][warp] x (start clock, end clock, SM id, start ns, end ns).
template <int ILP>
__device__ __forceinline__ void chains(const AT* a, const AT* b, const AT* b2, const CT* c, const u32* e,
                                       u32 iters, CT* d, u64* rec) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    AT ra[NA], rb[NB], rb2[NB];
    CT acc[ILP][NC];
#pragma unroll
    for (int r = 0; r < NA; r++) ra[r] = a[r * 32 + lane];
#pragma unroll
    for (int r = 0; r < NB; r++) { rb[r] = b[r * 32 + lane]; rb2[r] = b2[r * 32 + lane]; }
#pragma unroll
    for (int j = 0; j < ILP; j++)
#pragma unroll
        for (int r = 0; r < NC; r++) acc[j][r] = c[(j * NC + r) * 32 + lane];
    const u32 meta = e[lane];
    (void)meta;
#if OPAQUE
    u32 zmask[ILP];  // e[32 + j]: zero, but the compiler cannot know
#pragma unroll
    for (int j = 0; j < ILP; j++) zmask[j] = e[32 + j];
#endif
    CT* out = d + ((u64)(blockIdx.x * nwarps + warp) * ILP) * NC * 32 + lane;

    // warm-up round: every operand has arrived and the pipe is primed before the first clock
#pragma unroll
    for (int j = 0; j < ILP; j++) MMA(acc[j], ra, rb);
    __syncwarp();
#pragma unroll
    for (int j = 0; j < ILP; j++) out[j * NC * 32] = acc[j][0];  // waits for the warm-up results
    __syncwarp();
    const u64 g0 = gtime();
    long long t0 = clk();
    // ILP 1, the latency chain: LATENCY_UNROLL iterations per loop body, one loop-back per 2 x LATENCY_UNROLL
    // dependent mma; the other ILPs (independent chains hide the loop-back), and ILP 1 where LATENCY_UNROLL is 0,
    // as the compiler unrolls them
#if LATENCY_UNROLL
    if constexpr (ILP == 1) {
#pragma unroll LATENCY_UNROLL
        for (u32 it = 0; it < iters; it++) {
            ROUND(it);
        }
    } else
#endif
    {
        for (u32 it = 0; it < iters; it++) {
            ROUND(it);
        }
    }
    // storing D makes the end clock wait for the last mma of every chain
#pragma unroll
    for (int j = 0; j < ILP; j++)
#pragma unroll
        for (int r = 0; r < NC; r++) out[(j * NC + r) * 32] = acc[j][r];
    long long t1 = clk();
    const u64 g1 = gtime();
    if (lane == 0) record(rec + REC_WORDS * ((u64)blockIdx.x * nwarps + warp), t0, t1, g0, g1);
}

#define MMA_KERNEL(n)                                                                                   \
    extern "C" __global__ void __launch_bounds__(32 * MAX_WARPS) mma_ilp##n(const AT* a, const AT* b, const AT* b2, const CT* c,          \
                                          const u32* e, u32 iters, CT* d, u64* rec) {                   \
        chains<n>(a, b, b2, c, e, iters, d, rec);                                                        \
    }
MMA_KERNEL(1)
MMA_KERNEL(2)
MMA_KERNEL(3)
MMA_KERNEL(4)
MMA_KERNEL(5)
MMA_KERNEL(6)
