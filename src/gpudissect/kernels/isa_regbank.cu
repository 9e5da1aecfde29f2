// Register-bank and stall-count experiments (Jia et al. §3.5, §2.1). The compiler's FFMA blocks are
// only raw material: the benchmark rewrites their source registers and control fields in the cubin
// (gpudissect.sass.patch) before loading it.
#include "gpudissect.cuh"

#ifndef NPOOL
#define NPOOL 24   // pool registers the patched FFMAs read: values in[0..NPOOL)
#endif
#ifndef NBODY
#define NBODY 128  // FFMAs per loop iteration
#endif

#define NACC 8     // accumulators: keep every FFMA live for the compiler (it deletes unused results)

// NBODY FFMAs acc[k % NACC] = a*b + acc per iteration, sources from the pool. The patch replaces all
// three sources with chosen pool registers, so the patched FFMAs are independent of each other; one
// warp times them. out[j] = the last result in accumulator j, which names the registers it read.
extern "C" __global__ void regbank_ffma(const float* __restrict__ in, float* out, long long* times, int iters) {
    float p[NPOOL], acc[NACC];
    // in[NPOOL + NACC] is 0 at run time: the pool values differ per thread as far as the compiler
    // knows, so it keeps them in ordinary registers, not uniform ones
    float zero = in[NPOOL + NACC] * (float)threadIdx.x;
#pragma unroll
    for (int i = 0; i < NPOOL; ++i) p[i] = in[i] + zero;
#pragma unroll
    for (int j = 0; j < NACC; ++j) acc[j] = in[NPOOL + j];
    __syncwarp();
    long long c0 = clk();
    u64 g0 = gtime();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < NBODY; ++k)
            asm volatile("fma.rn.f32 %0, %1, %2, %0;" : "+f"(acc[k % NACC]) : "f"(p[k % NPOOL]), "f"(p[(k + 7) % NPOOL]));
    }
    long long c1 = clk();
    u64 g1 = gtime();
#pragma unroll
    for (int j = 0; j < NACC; ++j) out[threadIdx.x * NACC + j] = acc[j];
#pragma unroll
    for (int i = 0; i < NPOOL; ++i) out[blockDim.x * NACC + i] = p[i];  // every pool register live to the end
    if (threadIdx.x == 0) { times[0] = c1 - c0; times[1] = (long long)(g1 - g0); }
}

// A dependent chain acc = acc*a + b, NBODY per iteration: the stall count of each FFMA is patched
// below the latency to see whether the hardware waits anyway or reads the old acc.
extern "C" __global__ void stall_chain(const float* __restrict__ in, float* out, long long* times, int iters) {
    float a = in[0], b = in[1], acc = in[2];
    __syncwarp();
    long long c0 = clk();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < NBODY; ++k)
            asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(acc) : "f"(a), "f"(b));
    }
    long long c1 = clk();
    out[threadIdx.x] = acc;
    if (threadIdx.x == 0) times[0] = c1 - c0;
}
