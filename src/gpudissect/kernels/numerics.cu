// Tensor-core numerics: "one instruction, arbitrary inputs" (gpudissect.bench.numerics).
//
// Every instance (a warp for mma.sync, a warpgroup for wgmma) loads its own A, B and C from global
// memory, already laid out by the host in the instruction's fragments, executes exactly ONE
// tensor-core instruction and stores the D registers as raw bits. Nothing else touches the values,
// so D is bit for bit what the tensor core returned for those inputs.
// CHAIN (default 1): the instance executes CHAIN instructions in sequence, each taking the previous
// one's D as its C (a GEMM's K loop over CHAIN slices of K), and stores the last D.
//
// mma.sync variant (NUM_WG == 0):
//   NA, NB, NC   32-bit registers per lane of A, B and C/D;  CK: 0 = .f32 accumulators, 1 = .f16x2
//   MMA_ASM      the asm template, C and D sharing registers %0.. (as in tensor_mma.cu)
//   a: [inst][CHAIN][NA][32], b: [inst][CHAIN][NB][32], c/d: [inst][NC][32] words
// wgmma variant (NUM_WG == 1, sm_90a only: elsewhere its variants are skipped, and a build stops at #error):
//   WG_OP        the instruction text up to the operands, e.g. "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"
//   WG_TAIL      immediates after the scale-d predicate (", 1, 1, 0, 0" for f16/bf16, ", 1, 1" else)
//   WG_NACC      accumulator registers per thread (2 or 4);  WG_FACC: 1 = .f32, 0 = .f16x2
//   img: [inst][CHAIN][IMG_BYTES] shared-memory images (A then B^T, no-swizzle K-major, packed by the host;
//   the CHAIN wgmma are issued back to back into one accumulator, then committed and waited for once),
//   c/d: [inst][128][WG_NACC] words. WG_PER_BLOCK warpgroups per block, each with its own image.
typedef unsigned long long u64;
typedef unsigned int u32;

#ifndef NUM_WG
#define NUM_WG 0
#endif
#ifndef CHAIN
#define CHAIN 1
#endif

#if !NUM_WG
#ifndef NA
#define NA 4
#define NB 2
#define NC 4
#define CK 0
#define MMA_ASM "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
#endif
#if CK == 0
typedef float CT;
#define CCN "f"
#else
typedef u32 CT;
#define CCN "r"
#endif
#define IN_1(x) "r"(x[0])
#define IN_2(x) IN_1(x), "r"(x[1])
#define IN_4(x) IN_2(x), "r"(x[2]), "r"(x[3])
#define OUT_1(x) "+" CCN(x[0])
#define OUT_2(x) OUT_1(x), "+" CCN(x[1])
#define OUT_4(x) OUT_2(x), "+" CCN(x[2]), "+" CCN(x[3])
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// One warp = one instance; `count` instances (grid * blockDim / 32 >= count).
extern "C" __global__ void num_mma(const u32* __restrict__ a, const u32* __restrict__ b,
                                   const CT* __restrict__ c, CT* __restrict__ d, u32 count) {
    const u32 lane = threadIdx.x & 31;
    const u64 inst = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (inst >= count) return;  // whole warps leave together: blockDim is a multiple of 32
    u32 ra[NA], rb[NB];
    CT acc[NC];
#pragma unroll
    for (int r = 0; r < NC; r++) acc[r] = c[(inst * NC + r) * 32 + lane];
#pragma unroll
    for (int s = 0; s < CHAIN; s++) {
#pragma unroll
        for (int r = 0; r < NA; r++) ra[r] = a[((inst * CHAIN + s) * NA + r) * 32 + lane];
#pragma unroll
        for (int r = 0; r < NB; r++) rb[r] = b[((inst * CHAIN + s) * NB + r) * 32 + lane];
        asm volatile(MMA_ASM : CAT(OUT_, NC)(acc) : CAT(IN_, NA)(ra), CAT(IN_, NB)(rb));
    }
#pragma unroll
    for (int r = 0; r < NC; r++) d[(inst * NC + r) * 32 + lane] = acc[r];
}

#else  // wgmma

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "numerics.cu (wgmma) needs sm_90a: the benchmarks skip its variants on other GPUs"
#endif
#if !defined(WG_OP) || !defined(WG_TAIL) || !defined(WG_NACC) || !defined(WG_FACC)
#error "numerics.cu (wgmma) needs WG_OP, WG_TAIL, WG_NACC, WG_FACC"
#endif
#ifndef WG_PER_BLOCK
#define WG_PER_BLOCK 4
#endif
#define IMG_BYTES 2304  // A: 64 rows x 32 bytes, then B^T: 8 rows x 32 bytes
#define IMG_WORDS (IMG_BYTES / 16)
#define A_LBO 1024      // next 16-byte K chunk of A after all 8 row groups of 128 bytes
#define B_LBO 128       // B^T has one row group
#define SBO 128

#if WG_FACC
typedef float acc_t;
#define AC(x) "+f"(x)
#else
typedef u32 acc_t;
#define AC(x) "+r"(x)
#endif
#if WG_NACC == 2
#define WG_LIST "{%3,%4}"
#define WG_CL AC(acc[0]), AC(acc[1])
#elif WG_NACC == 4
#define WG_LIST "{%3,%4,%5,%6}"
#define WG_CL AC(acc[0]), AC(acc[1]), AC(acc[2]), AC(acc[3])
#else
#error "WG_NACC must be 2 or 4 (m64n8)"
#endif

__device__ __forceinline__ u32 smem_addr(const void* p) {
    u32 r;
    asm("{\n.reg .u64 t;\ncvta.to.shared.u64 t, %1;\ncvt.u32.u64 %0, t;\n}" : "=r"(r) : "l"(p));
    return r;
}
__device__ __forceinline__ u64 desc(u32 addr, u32 lbo) {
    // no swizzle, base offset 0: start >> 4 | LBO >> 4 << 16 | SBO >> 4 << 32
    return (u64)((addr >> 4) & 0x3FFF) | (u64)((lbo >> 4) & 0x3FFF) << 16 | (u64)((SBO >> 4) & 0x3FFF) << 32;
}

// One warpgroup = one instance. scale_d is 1 (D = A*B + C) but read at run time, so that ptxas
// keeps the accumulating form whatever the host passes.
extern "C" __global__ void __launch_bounds__(128 * WG_PER_BLOCK) num_wgmma(
    const uint4* __restrict__ img, const acc_t* __restrict__ c, acc_t* __restrict__ d, u32 count, u32 scale_d) {
    __shared__ __align__(128) uint4 smem[WG_PER_BLOCK][CHAIN * IMG_WORDS];
    const u32 wg = threadIdx.x >> 7, t = threadIdx.x & 127;
    const u64 inst = (u64)blockIdx.x * WG_PER_BLOCK + wg;
    const bool live = inst < count;
    if (live)
        for (u32 i = t; i < CHAIN * IMG_WORDS; i += 128) smem[wg][i] = img[inst * CHAIN * IMG_WORDS + i];
    // generic-proxy stores made visible to the async proxy that wgmma reads through
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (!live) return;  // whole warpgroups leave together
    const u32 base = smem_addr(&smem[wg][0]);
    acc_t acc[WG_NACC];
#pragma unroll
    for (int i = 0; i < WG_NACC; i++) acc[i] = c[(inst * 128 + t) * WG_NACC + i];
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    // same shape and accumulator: consecutive wgmma need no fence between them (PTX ISA, wgmma.fence)
#pragma unroll
    for (int s = 0; s < CHAIN; s++) {
        u64 da = desc(base + s * IMG_BYTES, A_LBO), db = desc(base + s * IMG_BYTES + 64 * 32, B_LBO);
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %2, 0;\n" WG_OP " " WG_LIST ", %0, %1, p" WG_TAIL ";\n}\n"
                     : "+l"(da), "+l"(db), "+r"(scale_d), WG_CL::"memory");
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < WG_NACC; i++) d[(inst * 128 + t) * WG_NACC + i] = acc[i];
}
#endif
