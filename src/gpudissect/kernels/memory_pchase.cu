// Pointer chases over global and shared memory (Luo et al. §4, Jia et al. ch. 3, Mei & Chu).
// Chains hold absolute addresses, so a step is one load and nothing else.
// CACHE_OP selects the load: 0 = ld.global.ca, 1 = ld.global.cg, 2 = ld.global (default policy),
// 3 = ld.volatile.global (relaxed, system scope).
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
#elif CACHE_OP == 2
    asm volatile("ld.global.u64 %0, [%0];" : "+l"(p) :: "memory");
#else
    asm volatile("ld.volatile.global.u64 %0, [%0];" : "+l"(p) :: "memory");
#endif
    return p;
}


// The index form: the element index scaled by 128 B and added to the base, then the load.
__device__ __forceinline__ u32 load_index(u64 base, u32 j) {
    u64 a = base + ((u64)j << 7);
#if CACHE_OP == 0
    asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(j) : "l"(a) : "memory");
#elif CACHE_OP == 1
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(j) : "l"(a) : "memory");
#elif CACHE_OP == 2
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(j) : "l"(a) : "memory");
#else
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(j) : "l"(a) : "memory");
#endif
    return j;
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
// out: end address, cycles, SM, and the %globaltimer ns of the same window (for the SM clock).
extern "C" __global__ void pchase(u64 start, u64 warm_steps, u64 steps, u64* out) {
    u64 p = start;
    for (u64 i = 0; i < warm_steps; i++) p = load_next(p);
    u64 g0 = gtime();
    long long t0 = clk();
#pragma unroll 4
    for (u64 i = 0; i < steps; i++) p = load_next(p);
    out[0] = p;  // consumes p, so the closing clock read issues after the last load returned
    long long t1 = clk();
    u64 g1 = gtime();
    out[1] = (u64)(t1 - t0);
    out[2] = smid();
    out[3] = g1 - g0;
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

// Per-access latencies of `count` loads after `warm` untimed ones, run by one thread on SM
// `target_sm` (0xffffffff: wherever the first block lands). Launch many one-thread blocks: the
// first block that finds itself on the target SM (claim counter, zeroed by the host) chases, the
// rest leave. Dynamic shared memory: count u32 latencies + count u32 sinks.
// out: end address, SM, cycles and %globaltimer ns of the timed part, claims seen.
extern "C" __global__ void chase_on_sm(u64 start, u64 warm, u32 count, u32 target_sm, u32* claim,
                                       u32* lat_out, u64* out) {
    extern __shared__ u32 s_dyn[];
    u32 me = smid();
    if (target_sm != 0xffffffffu && me != target_sm) return;
    if (atomicAdd(claim, 1u) != 0u) return;
    u32* s_lat = s_dyn;
    u32* s_sink = s_dyn + count;
    u64 p = start;
    for (u64 i = 0; i < warm; i++) p = load_next(p);
    u64 g0 = gtime();
    long long c0 = clk();
    for (u32 i = 0; i < count; i++) {
        long long t0 = clk();
        p = load_next(p);
        s_sink[i] = (u32)p;  // waits for the load before the second clock read
        long long t1 = clk();
        s_lat[i] = (u32)(t1 - t0);
    }
    long long c1 = clk();
    u64 g1 = gtime();
    for (u32 i = 0; i < count; i++) lat_out[i] = s_lat[i];
    out[0] = p;
    out[1] = me;
    out[2] = (u64)(c1 - c0);
    out[3] = g1 - g0;
    out[4] = s_sink[0];
}

// Like chain_init, but every 128-byte line is written whole (the pointer, then zeros), and each
// block records its SM: element perm[i] is written by thread i, block i / blockDim.x.
extern "C" __global__ void chain_write_lines(u64 base, const u32* perm, u64 n, u64 stride, u32* writer_sm) {
    u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (threadIdx.x == 0) writer_sm[blockIdx.x] = smid();
    if (i >= n) return;
    u64* line = (u64*)(base + (u64)perm[i] * stride);
    line[0] = base + (u64)perm[(i + 1) % n] * stride;
#pragma unroll
    for (int k = 1; k < 16; k++) line[k] = 0;
}

// Chain whose stored addresses are in another mapping of the same memory: written through
// `write_base`, pointing into `value_base` (the forced-walk control: warm through one virtual
// range, chase through another). Element i -> element perm[i+1] as in chain_init, perm optional.
extern "C" __global__ void chain_init_alias(u64 write_base, u64 value_base, const u32* perm, u64 n, u64 stride) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 here = perm ? perm[i] : i;
        u64 next = perm ? perm[(i + 1) % n] : (i + 1) % n;
        *(u64*)(write_base + here * stride) = value_base + next * stride;
    }
}

// Index chases beside the pointer chases: the papers' form j = a[j], so every hop adds the
// address arithmetic (shift + add of base) between dependent loads.
extern "C" __global__ void smem_ichase(const u32* chain, u32 n, u64 steps, u64* out) {
    extern __shared__ u32 s[];
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) s[i] = chain[i];
    __syncthreads();
    if (threadIdx.x != 0) return;
    u32 base = (u32)__cvta_generic_to_shared(s);
    u32 j = 0;
    for (u64 i = 0; i < n; i++) asm volatile("{.reg .u32 a; shl.b32 a, %0, 2; add.u32 a, a, %1; ld.shared.u32 %0, [a];}" : "+r"(j) : "r"(base) : "memory");
    long long t0 = clk();
#pragma unroll 4
    for (u64 i = 0; i < steps; i++) asm volatile("{.reg .u32 a; shl.b32 a, %0, 2; add.u32 a, a, %1; ld.shared.u32 %0, [a];}" : "+r"(j) : "r"(base) : "memory");
    out[0] = j;
    long long t1 = clk();
    out[1] = (u64)(t1 - t0);
}

// Global index chase (u32 indices, 128 B apart as in the pointer chase): j = a[j * 32].
extern "C" __global__ void ichase(const u32* a, u32 warm_steps, u32 steps, u64* out) {
    u32 j = 0;
    u64 base = (u64)a;
    for (u32 i = 0; i < warm_steps; i++) j = load_index(base, j);
    u64 g0 = gtime();
    long long t0 = clk();
#pragma unroll 4
    for (u32 i = 0; i < steps; i++) j = load_index(base, j);
    out[0] = j;
    long long t1 = clk();
    u64 g1 = gtime();
    out[1] = (u64)(t1 - t0);
    out[2] = smid();
    out[3] = g1 - g0;
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
    u64 g0 = gtime();
    long long t0 = clk();
#pragma unroll 4
    for (u64 i = 0; i < steps; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    out[0] = (a - base) / 4u;
    long long t1 = clk();
    u64 g1 = gtime();
    out[1] = (u64)(t1 - t0);
    out[2] = g1 - g0;
}

// The L1 chase of the papers' released code (Luo et al., conference version, Table IV "L1 Cache"; the
// l1_lat benchmark they adapted from Jia et al.), in its own form: a pointer chase, not an index chase.
// One thread writes the chain element i -> i + 1 (u64 addresses 8 B apart, PAPER_L1_N of them) just before
// timing it, loads element 0 once with the same load, then times PAPER_L1_ITERS dependent
// ld.global.ca.u64 between two 32-bit %clock reads; the closing read does not wait for the last load.
// The timed hops hence include the first pass over the freshly written chain. `warm` untimed hops before
// the first clock read (0: the papers' form) take that first pass out of the window.
// out: end address, cycles.
#define PAPER_L1_N 4096
#define PAPER_L1_ITERS 32768
extern "C" __global__ void paper_l1_lat(u64* a, u32 warm, u64* out) {
    if (threadIdx.x == 0) {
        for (u32 i = 0; i < PAPER_L1_N - 1; i++) a[i] = (u64)(a + i + 1);
        a[PAPER_L1_N - 1] = (u64)a;
    }
    u64 next, cur;
    asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(cur) : "l"(a) : "memory");
    for (u32 i = 0; i < warm; i++) {
        asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(next) : "l"((u64*)cur) : "memory");
        cur = next;
    }
    asm volatile("bar.sync 0;");
    u32 t0, t1;
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t0) :: "memory");
    for (u32 i = 0; i < PAPER_L1_ITERS; ++i) {
        asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(next) : "l"((u64*)cur) : "memory");
        cur = next;
    }
    asm volatile("mov.u32 %0, %%clock;" : "=r"(t1) :: "memory");
    out[0] = cur;
    out[1] = t1 - t0;
}
