// Instruction-cache probes (Jia et al. §3.3): straight-line FFMA sequences timed with clock64.
// The sequences are single inline-asm statements whose text the generator
// (gpudissect/bench/cache/sources.py) defines as ICACHE_MEASURE / ICACHE_THRASH; the small defaults
// below let the file compile on its own for the SASS tests. One asm statement keeps NVRTC linear
// in the length (an unrolled C++ loop of 16K FMAs takes NVVM seconds).
// ICACHE_SEQ_ONLY (the staircase and the fine scans, which launch only icache_seq) compiles icache_seq alone:
// icache_observe would hold the measured sequence a second time, and ptxas and cuobjdump take more than twice
// as long over both copies (the privacy experiments build the whole file).
#include "gpudissect.cuh"

#define GD_F8 "fma.rn.f32 %0, %0, %8, %9;\n\t" "fma.rn.f32 %1, %1, %8, %9;\n\t" \
              "fma.rn.f32 %2, %2, %8, %9;\n\t" "fma.rn.f32 %3, %3, %8, %9;\n\t" \
              "fma.rn.f32 %4, %4, %8, %9;\n\t" "fma.rn.f32 %5, %5, %8, %9;\n\t" \
              "fma.rn.f32 %6, %6, %8, %9;\n\t" "fma.rn.f32 %7, %7, %8, %9;\n\t"
#ifndef ICACHE_MEASURE
#define ICACHE_MEASURE GD_F8 GD_F8 GD_F8 GD_F8
#endif
#ifndef ICACHE_THRASH
#define ICACHE_THRASH GD_F8 GD_F8 GD_F8 GD_F8 GD_F8 GD_F8 GD_F8 GD_F8
#endif

// Eight independent chains r[i] = r[i] * b + c, starting at i; with b = c = 1 every FFMA adds exactly 1,
// so the final registers count the FFMAs executed (the host checks them).
#define GD_RUN(BODY)                                                                                  \
    asm volatile(BODY : "+f"(r[0]), "+f"(r[1]), "+f"(r[2]), "+f"(r[3]), "+f"(r[4]), "+f"(r[5]),       \
                 "+f"(r[6]), "+f"(r[7]) : "f"(b), "f"(c))

// One warp runs the measured sequence `reps` times back to back; cycles[k] = clock64 span of pass k;
// cycles[reps], cycles[reps + 1]: clock64 and %globaltimer spans of all passes (the SM clock).
extern "C" __global__ void icache_seq(float b, float c, int reps, long long* cycles, float* out) {
    float r[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) r[i] = (float)i;  // distinct, so ptxas cannot merge chains
    const long long c_start = clk();
    const u64 g_start = gtime();
#pragma unroll 1
    for (int k = 0; k < reps; ++k) {
        long long t0 = clk();
        GD_RUN(ICACHE_MEASURE);
        long long t1 = clk();
        if (threadIdx.x == 0) cycles[k] = t1 - t0;
    }
    const long long c_end = clk();
    const u64 g_end = gtime();
    if (threadIdx.x == 0) {
        cycles[reps] = c_end - c_start;
        cycles[reps + 1] = (long long)(g_end - g_start);
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] = r[i];
    }
}

#ifndef ICACHE_SEQ_ONLY
// Waits until *flag >= v; gives up after 2^28 cycles (~0.1 s: a partner that never came), setting *bad.
__device__ __forceinline__ void wait_flag(volatile u32* flag, u32 v, long long* bad) {
    const long long t = clk();
    while (*flag < v) {
        if (clk() - t > (1ll << 28)) { *bad = 1; return; }
    }
}

// The SM of every block (the host picks thrasher and observer SMs from these).
extern "C" __global__ void block_smid(u32* out) {
    if (threadIdx.x == 0) out[blockIdx.x] = smid();
}

__device__ __forceinline__ u32 hw_warpid() {
    u32 w;
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(w));
    return w;
}

// The SM of each block of a cluster launch (blocks of one cluster never leave their GPC).
extern "C" __global__ void cluster_smid(u32* out) {
    if (threadIdx.x == 0) out[blockIdx.x] = smid();
}

// Privacy probe (Jia Fig. 3.5), observer side. Launched with one block per SM; only warp o_warp of the
// block on SM o_sm runs: `passes` timed passes of the measured sequence (one code instance in a loop,
// so every pass fetches the same addresses). The thrash code lives in another module (another build),
// launched as icache_thrash between two observer launches (sequential mode, flag == 0), or
// concurrently on another stream (flag != 0): then, after pass 0, the observer sets *flag = 1 and
// waits for 2 before its next pass; the wait is its own small loop, no thrash code is near it.
// res[k] = cycles of pass k (k < 16); res[16] = SM; res[17] = %warpid; res[18] = 1 if the wait gave up.
extern "C" __global__ void icache_observe(float b, float c, u32 o_sm, int o_warp, int passes, u32* flag,
                                          long long* res, float* out) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (smid() != o_sm || warp != o_warp) return;
    float r[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) r[i] = (float)i;  // distinct, so ptxas cannot merge chains
#pragma unroll 1
    for (int pass = 0; pass < passes; ++pass) {
        if (pass == 1 && flag != nullptr) {
            __threadfence();
            if (lane == 0) atomicExch(flag, 1u);
            wait_flag(flag, 2, &res[18]);
        }
        long long t0 = clk();
        GD_RUN(ICACHE_MEASURE);
        long long t1 = clk();
        if (lane == 0) res[pass] = t1 - t0;
    }
    if (lane == 0) {
        res[16] = smid();
        res[17] = hw_warpid();
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] = r[i];
    }
}

// Thrasher side: warp t_warp of a block on SM t_sm runs the thrash sequence once. Sequential mode
// (claim == 0): one block per SM, launched alone. Concurrent mode: many small blocks; the first one
// on t_sm takes the role (*claim 0 -> 1), waits for the observer's *flag == 1, thrashes, sets 2.
// res[0] = SM, res[1] = %warpid, res[2] = 1 if the wait gave up, res[3] = 1 once a block ran.
extern "C" __global__ void icache_thrash(float b, float c, u32 t_sm, int t_warp, u32* claim, u32* flag,
                                         long long* res, float* out) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (smid() != t_sm || warp != t_warp) return;
    if (claim != nullptr) {
        u32 won = 0;
        if (lane == 0) won = atomicCAS(claim, 0u, 1u) == 0u;
        if (!__shfl_sync(0xffffffffu, won, 0)) return;
        wait_flag(flag, 1, &res[2]);
    }
    float r[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) r[i] = (float)i + (b - 1.0f);  // unknown to ptxas: no folded first FFMA
    GD_RUN(ICACHE_THRASH);
    if (flag != nullptr) {
        __threadfence();
        if (lane == 0) atomicExch(flag, 2u);
    }
    if (lane == 0) {
        res[0] = smid();
        res[1] = hw_warpid();
        res[3] = 1;
#pragma unroll
        for (int i = 0; i < 8; ++i) out[8 + i] = r[i];
    }
}
#endif  // ICACHE_SEQ_ONLY
