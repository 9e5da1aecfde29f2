// ldmatrix latency and throughput (Sun et al. §7, Fig. 15, Table 9).
// LDSM_N: 1, 2 or 4 matrices per instruction; LDSM_TRANS: 1 for .trans.
//
// Each chain is a pointer chase through shared memory: the first register a lane receives holds
// the shared-memory address that lane supplies to the next ldmatrix of its chain, so consecutive
// loads of a chain are dependent and nothing else sits between them (no address arithmetic).
// The host lays the data out (gpudissect.bench.tensor_mma.ldsm_image) from the shared-memory base
// address the kernel reports, and recomputes the XOR of every register loaded.
#ifndef LDSM_N
#define LDSM_N 4
#endif
#ifndef LDSM_TRANS
#define LDSM_TRANS 0
#endif
#include "gpudissect.cuh"  // u64/u32, clk(), gtime(), smid()

#if LDSM_TRANS
#define TR ".trans"
#else
#define TR ""
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define LDSM_OP "ldmatrix.sync.aligned.m8n8.x" STR(LDSM_N) TR ".shared.b16"

__device__ __forceinline__ void ldsm(u32 (&r)[4], u32 addr) {
#if LDSM_N == 1
    asm volatile(LDSM_OP " {%0}, [%1];" : "=r"(r[0]) : "r"(addr) : "memory");
#elif LDSM_N == 2
    asm volatile(LDSM_OP " {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(addr) : "memory");
#else
    asm volatile(LDSM_OP " {%0,%1,%2,%3}, [%4];" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
#endif
}

// image: `words` u32 of shared-memory content; start: [chain][lane] first address of each chain
// (the same for every warp); each chain makes 2 * (iters + 1) loads, 2 * iters of them timed; out: [block][warp][chain][lane] x (last address, XOR of all registers);
// rec: [block][warp] x (start clock, end clock, SM id, start ns, end ns); base_out: the dynamic shared-memory base.
template <int ILP>
__device__ __forceinline__ void chase(const u32* image, u32 words, const u32* start, u32 iters, u32* out,
                                      u64* rec, u32* base_out) {
    extern __shared__ __align__(16) u32 smem[];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (u32 i = threadIdx.x; i < words; i += blockDim.x) smem[i] = image[i];
    if (threadIdx.x == 0 && blockIdx.x == 0) *base_out = (u32)__cvta_generic_to_shared(smem);
    __syncthreads();
    // r / n: the registers of the last load of each chain (word 0 = the chain's next address). A step
    // loads into one set from the other and XORs the other into the checksum after the load has
    // issued, so nothing waits between two loads of a chain; two steps per iteration swap the sets.
    u32 r[ILP][4], n[ILP][4], sum[ILP];
#pragma unroll
    for (int j = 0; j < ILP; j++) {
        r[j][0] = start[j * 32 + lane];
        r[j][1] = r[j][2] = r[j][3] = 0;
        n[j][0] = n[j][1] = n[j][2] = n[j][3] = 0;  // .x1/.x2 leave some of them unwritten
        sum[j] = 0;
    }
#define STEP(dst, src)                                                          \
    _Pragma("unroll") for (int j = 0; j < ILP; j++) ldsm(dst[j], src[j][0]);  \
    _Pragma("unroll") for (int j = 0; j < ILP; j++) sum[j] ^= src[j][0] ^ src[j][1] ^ src[j][2] ^ src[j][3]; \
    __syncwarp();
    STEP(n, r) STEP(r, n)  // untimed: consumes the start addresses and warms the pipe
    const u64 g0 = gtime();
    long long t0 = clk();
    for (u32 it = 0; it < iters; it++) {
        STEP(n, r) STEP(r, n)
    }
#pragma unroll
    for (int j = 0; j < ILP; j++) sum[j] ^= r[j][0] ^ r[j][1] ^ r[j][2] ^ r[j][3];
    u32* o = out + 2 * (((u64)blockIdx.x * nwarps + warp) * ILP * 32 + lane);
#pragma unroll
    for (int j = 0; j < ILP; j++) { o[64 * j] = r[j][0]; o[64 * j + 1] = sum[j]; }  // waits for the last load
    long long t1 = clk();
    const u64 g1 = gtime();
    if (lane == 0) record(rec + REC_WORDS * ((u64)blockIdx.x * nwarps + warp), t0, t1, g0, g1);
}

// The dynamic shared-memory base address (the chase image holds absolute addresses).
extern "C" __global__ void ldsm_base(u32* base_out) {
    extern __shared__ __align__(16) u32 smem[];
    *base_out = (u32)__cvta_generic_to_shared(smem);
}

#define LDSM_KERNEL(n)                                                                                  \
    extern "C" __global__ void ldsm_ilp##n(const u32* image, u32 words, const u32* start, u32 iters,   \
                                           u32* out, u64* rec, u32* base_out) {                         \
        chase<n>(image, words, start, iters, out, rec, base_out);                                      \
    }
LDSM_KERNEL(1)
LDSM_KERNEL(2)
LDSM_KERNEL(3)
LDSM_KERNEL(4)
LDSM_KERNEL(5)
LDSM_KERNEL(6)
