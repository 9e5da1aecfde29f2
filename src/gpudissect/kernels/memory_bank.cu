// Shared-memory bank conflicts (Sun et al. Table 10, Jia et al. Fig. 3.9): one warp, every lane
// chases its own self-loop, lane t at element t*STRIDE, so a warp-wide load is STRIDE-way conflicted.
#include "gpudissect.cuh"
typedef unsigned long long u64;
typedef unsigned int u32;


extern "C" __global__ void bank_u32(u32 stride, u32 steps, u64* out) {
    extern __shared__ u32 s32[];
    u32 t = threadIdx.x;
    u32 base = (u32)__cvta_generic_to_shared(s32);
    u32 mine = base + t * stride * 4u;
    s32[t * stride] = mine;
    __syncwarp();
    u32 a = mine;
    for (int i = 0; i < 32; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    u64 g0 = gtime();
    long long t0 = clk();
#pragma unroll 8
    for (u32 i = 0; i < steps; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    out[t] = (a == mine);  // the chase stayed on its own element
    long long t1 = clk();
    u64 g1 = gtime();
    if (t == 0) { out[32] = (u64)(t1 - t0); out[33] = g1 - g0; }
}

extern "C" __global__ void bank_u64(u32 stride, u32 steps, u64* out) {
    extern __shared__ u64 s64[];
    u32 t = threadIdx.x;
    u32 base = (u32)__cvta_generic_to_shared(s64);
    u64 mine = (u64)(base + t * stride * 8u);
    s64[t * stride] = mine;
    __syncwarp();
    u64 a = mine;
    for (int i = 0; i < 32; i++) asm volatile("{.reg .u32 ad; cvt.u32.u64 ad, %0; ld.shared.u64 %0, [ad];}" : "+l"(a) :: "memory");
    u64 g0 = gtime();
    long long t0 = clk();
#pragma unroll 8
    for (u32 i = 0; i < steps; i++) asm volatile("{.reg .u32 ad; cvt.u32.u64 ad, %0; ld.shared.u64 %0, [ad];}" : "+l"(a) :: "memory");
    out[t] = (a == mine);
    long long t1 = clk();
    u64 g1 = gtime();
    if (t == 0) { out[32] = (u64)(t1 - t0); out[33] = g1 - g0; }
}
