// Pointer chases over global and shared memory (Luo et al. §4, Jia et al. ch. 3, Mei & Chu).
// Chains hold absolute addresses, so a step is one load and nothing else.
// CACHE_OP selects the load: 0 = ld.global.ca, 1 = ld.global.cg, 2 = ld.global (default policy).
#include "gpudissect.cuh"
#ifndef CACHE_OP
#define CACHE_OP 0
#endif
#ifndef FINE_N
#define FINE_N 4096
#endif
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 load_next(u64 p) {
#if CACHE_OP == 0
    asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p) :: "memory");
#elif CACHE_OP == 1
    asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p) :: "memory");
#else
    asm volatile("ld.global.u64 %0, [%0];" : "+l"(p) :: "memory");
#endif
    return p;
}



// Element perm[i] points to element perm[i+1] (cyclically); elements are `stride` bytes apart.
extern "C" __global__ void chain_init(u64 base, const u32* perm, u64 n, u64 stride) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 next = perm[(i + 1) % n];
        *(u64*)(base + (u64)perm[i] * stride) = base + next * stride;
    }
}

// Sequential chain 0 -> 1 -> ... -> n-1 -> 0 without a permutation (huge TLB footprints).
extern "C" __global__ void chain_init_seq(u64 base, u64 n, u64 stride) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        *(u64*)(base + i * stride) = base + ((i + 1) % n) * stride;
}

// One thread: `warm_steps` untimed, then `steps` timed with the very same load instruction
// (on H100 a chain warmed with another load kind can miss L1 in the timed pass).
extern "C" __global__ void pchase(u64 start, u64 warm_steps, u64 steps, u64* out) {
    u64 p = start;
    for (u64 i = 0; i < warm_steps; i++) p = load_next(p);
    long long t0 = clk();
#pragma unroll 4
    for (u64 i = 0; i < steps; i++) p = load_next(p);
    out[0] = p;  // consumes p, so the closing clock read issues after the last load returned
    long long t1 = clk();
    out[1] = (u64)(t1 - t0);
    out[2] = smid();
}

// Per-access latencies (Mei & Chu's fine-grained chase): each access timed on its own.
extern "C" __global__ void fine_pchase(u64 start, u64 warm_steps, u32 n, u32* lat_out, u64* out) {
    __shared__ u32 s_lat[FINE_N];
    __shared__ u32 s_sink[FINE_N];
    u64 p = start;
    for (u64 i = 0; i < warm_steps; i++) p = load_next(p);
    for (u32 i = 0; i < n && i < FINE_N; i++) {
        long long t0 = clk();
        p = load_next(p);
        s_sink[i] = (u32)p;  // waits for the load before the second clock read
        long long t1 = clk();
        s_lat[i] = (u32)(t1 - t0);
    }
    for (u32 i = 0; i < n && i < FINE_N; i++) lat_out[i] = s_lat[i];
    out[0] = p;
    out[1] = s_sink[0];
    out[2] = smid();
}

// Shared-memory chase: chain[] holds element indices; they become shared-window byte addresses.
extern "C" __global__ void smem_pchase(const u32* chain, u32 n, u64 steps, u64* out) {
    extern __shared__ u32 s[];
    u32 base = (u32)__cvta_generic_to_shared(s);
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) s[i] = base + chain[i] * 4u;
    __syncthreads();
    if (threadIdx.x != 0) return;
    u32 a = base;
    for (u64 i = 0; i < n; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    long long t0 = clk();
#pragma unroll 4
    for (u64 i = 0; i < steps; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    out[0] = (a - base) / 4u;
    long long t1 = clk();
    out[1] = (u64)(t1 - t0);
}
