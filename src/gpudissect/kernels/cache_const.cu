// Constant-cache probes (Jia et al. §3.4, Table 3.1, Figs. 3.6-3.7).
// cdata is the module's constant bank (c[0x3] in SASS); the host fills it with cuModuleGetGlobal +
// a copy. Chains hold word indices: j = cdata[j] is an indexed LDC (LDC R, c[0x3][R]).
#include "gpudissect.cuh"

#define CONST_WORDS 16384  // 64 KiB: the most one constant bank can hold
__constant__ u32 cdata[CONST_WORDS];

#ifndef ICACHE_THRASH
#define ICACHE_THRASH "fma.rn.f32 %0, %0, %2, %2;\n\t" "fma.rn.f32 %1, %1, %2, %2;\n\t"
#endif

// One lane chases `warm` untimed then `steps` timed links from start. res: end, cycles, smid, ns
// (%globaltimer over the timed links: with the cycles, the SM clock).
extern "C" __global__ void const_chase(u32 start, u32 warm, u32 steps, u64* res) {
    u32 j = start + threadIdx.x;  // launched with one thread; a per-lane value keeps every load an LDC
                                  // (a uniform index would make the warm-up loads ULDC)
#pragma unroll 1
    for (u32 i = 0; i < warm; ++i) j = cdata[j];
    const u64 g0 = gtime();
    long long t0 = clk();
#pragma unroll 1
    for (u32 i = 0; i < steps; ++i) j = cdata[j];
    res[0] = j;  // the store waits for j: the second clock read follows the last load's use
    long long t1 = clk();
    const u64 g1 = gtime();
    res[1] = t1 - t0;
    res[2] = smid();
    res[3] = g1 - g0;
}

// A warp chases with lane l starting at starts[l]; lanes with equal starts load the same address
// at every step (broadcast), distinct starts load distinct addresses (Fig. 3.7).
// target_sm != ~0: only a block on that SM runs (the host launches one block per SM), so a cold pass
// (warm = 0) can run on an SM whose L1 and L1.5 never saw this module's constants.
// res: end of each lane, then [32] cycles, [33] smid.
extern "C" __global__ void const_chase_warp(const u32* starts, u32 warm, u32 steps, u32 target_sm, u64* res) {
    const int lane = threadIdx.x & 31;
    if (target_sm != 0xFFFFFFFFu && smid() != target_sm) return;
    u32 j = starts[lane];
#pragma unroll 1
    for (u32 i = 0; i < warm; ++i) j = cdata[j];
    __syncwarp();
    long long t0 = clk();
#pragma unroll 1
    for (u32 i = 0; i < steps; ++i) j = cdata[j];
    res[lane] = j;
    __syncwarp();
    long long t1 = clk();
    if (lane == 0) { res[32] = t1 - t0; res[33] = smid(); }
}

// Jia Fig. 3.6: chase `n` links from word 0 (the host lays a sequential chain), run ICACHE_THRASH
// FFMAs, then time a second chase over the same links. res: cycles of the second chase, end index,
// smid.
extern "C" __global__ void const_thrash(u32 n, float one, u64* res, float* out) {
#pragma unroll 1
    for (int pass = 0; pass < 2; ++pass) {
        u32 j = 0;
        long long t0 = clk();
#pragma unroll 1
        for (u32 i = 0; i < n; ++i) j = cdata[j];
        res[1] = j;
        long long t1 = clk();
        res[0] = t1 - t0;
        if (pass == 0) {
            float a = 0.f, b2 = 1.f;  // distinct starts: ptxas merges identical chains
            asm volatile(ICACHE_THRASH : "+f"(a), "+f"(b2) : "f"(one));
            out[0] = a;
            out[1] = b2;
        }
    }
    res[2] = smid();
}
