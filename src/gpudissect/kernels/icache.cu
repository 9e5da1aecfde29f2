// Instruction-cache probes (Jia et al. §3.3): straight-line FFMA sequences timed with clock64.
// The sequences are single inline-asm statements whose text the generator
// (gpudissect/bench/icache_source.py) defines as ICACHE_MEASURE / ICACHE_THRASH; the small defaults
// below let the file compile on its own for the SASS tests. One asm statement keeps NVRTC linear
// in the length (an unrolled C++ loop of 16K FMAs takes NVVM seconds).
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

// Waits until *flag >= v; gives up after ~2^32 cycles (a partner that never came), setting *bad.
__device__ __forceinline__ void wait_flag(volatile u32* flag, u32 v, long long* bad) {
    const long long t = clk();
    while (*flag < v) {
        if (clk() - t > (1ll << 32)) { *bad = 1; return; }
    }
}

// The SM of every block (the host picks thrasher and observer SMs from these).
extern "C" __global__ void block_smid(u32* out) {
    if (threadIdx.x == 0) out[blockIdx.x] = smid();
}

// Privacy probe (Jia Fig. 3.5). Launched with one block per SM; the thrasher is warp 0 of the block
// on SM t_sm, the observer warp ob_warp of the block on SM o_sm (the same warp when o_sm == t_sm and
// ob_warp == 0). Both run the measured sequence once (warm-up), then the thrasher runs
// ICACHE_THRASH, then the observer times the measured sequence once. The measured sequence is one
// code instance inside a two-pass loop, so warm-up and timed pass fetch the same addresses.
// res[0] = timed cycles, res[1] = observer SM, res[2] = thrasher SM, res[3] = 1 if a wait gave up.
extern "C" __global__ void icache_pair(float b, float c, u32 t_sm, u32 o_sm, int ob_warp, u32* flag,
                                       long long* res, float* out) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const u32 sm = smid();
    const bool thrasher = sm == t_sm && warp == 0;
    const bool observer = sm == o_sm && warp == ob_warp;
    const bool self = thrasher && observer;
    if (!thrasher && !observer) return;
    float r[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) r[i] = (float)i;  // distinct, so ptxas cannot merge chains
    long long dt = 0;
#pragma unroll 1
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            if (thrasher) {
                if (!self) wait_flag(flag, 1, &res[3]);
                GD_RUN(ICACHE_THRASH);
                __threadfence();
                if (lane == 0) atomicExch(flag, 2u);
                if (!self) break;  // leaves the observer alone on its SM/sub-core while it times
            } else {
                wait_flag(flag, 2, &res[3]);
            }
        }
        long long t0 = clk();
        GD_RUN(ICACHE_MEASURE);
        long long t1 = clk();
        dt = t1 - t0;
        if (pass == 0 && observer && !self) {
            __threadfence();
            if (lane == 0) atomicExch(flag, 1u);
        }
    }
    if (lane == 0) {
        if (observer) { res[0] = dt; res[1] = sm; }
        if (thrasher) res[2] = sm;
        float* o = out + (thrasher ? 0 : 8);
#pragma unroll
        for (int i = 0; i < 8; ++i) o[i] = r[i];
    }
}
