// Atomics (Jia et al. §4.2, Table 4.2, Fig. 4.1): latency of dependent atom chains, with 1..32 lanes
// of one warp on one address, and throughput of red.add under Jia's contention scenarios.
#include "gpudissect.cuh"

// ---- latency: each lane runs old = ATOM(p, f(old)) in inline PTX (the compiler would otherwise
// aggregate a warp's adds itself with SHFL/VOTE); f is one LOP3 ((old & m) | 1, or old ^ 1 for CAS/exch) that the host subtracts with the alu_chain baseline. m = 0 at run time makes the add operand
// constant while keeping the dependency, and the address g + (tid & m) keeps ptxas from proving it
// warp-uniform (for a uniform address ptxas aggregates a full warp itself: VOTE + SHFL scan + one atom).
// SP: global or shared; AC: the address constraint ("l" for a global pointer, "r" for a shared
// window offset); ADDR: the address expression.
// res[0]: clock64 cycles of the timed steps (lane 0), res[1 + lane]: each lane's last return value,
// res[33]: %globaltimer ns around them (with res[0], the SM clock), res[34]: the SM (the home L2
// partition of a global word is near or far depending on it).
#define GD_CHAIN(T, RES, STEP)                                                                        \
    for (u32 i = 0; i < warm; ++i) { STEP; }                                                          \
    const u64 g0 = gtime();                                                                           \
    long long t0 = clk();                                                                             \
    _Pragma("unroll 1") for (u32 i = 0; i < steps; ++i) { STEP; }                                     \
    res[1 + threadIdx.x] = RES;                                                                       \
    long long t1 = clk();                                                                             \
    const u64 g1 = gtime();                                                                           \
    if (threadIdx.x == 0) { res[0] = t1 - t0; res[33] = g1 - g0; res[34] = smid(); }

#define LAT_OPS(SP, SETUP, AC, ADDR, FINAL)                                                           \
extern "C" __global__ void lat_##SP##_add_u32(u32* g, u32 m, u32 warm, u32 steps, u64* res) {     \
    SETUP(u32, 0u)                                                                                    \
    u32 o = 0;                                                                                        \
    GD_CHAIN(u32, o, asm volatile("atom." #SP ".add.u32 %0, [%1], %2;" : "=r"(o) : AC(ADDR), "r"((o & m) | 1u) : "memory")) \
    FINAL(u32)                                                                                        \
}                                                                                                     \
extern "C" __global__ void lat_##SP##_add_f32(float* g, u32 m, u32 warm, u32 steps, u64* res) {   \
    SETUP(float, 0.f)                                                                                 \
    float o = 0.f;                                                                                    \
    GD_CHAIN(float, __float_as_uint(o), asm volatile("atom." #SP ".add.f32 %0, [%1], %2;" : "=f"(o) : AC(ADDR), "f"(__uint_as_float((__float_as_uint(o) & m) | 0x3f800000u)) : "memory")) \
    FINAL(float)                                                                                      \
}                                                                                                     \
extern "C" __global__ void lat_##SP##_add_f64(double* g, u32 m, u32 warm, u32 steps, u64* res) {  \
    SETUP(double, 0.0)                                                                                \
    const u64 mm = ((u64)m << 32) | m;                                                                \
    double o = 0.0;                                                                                   \
    GD_CHAIN(double, __double_as_longlong(o), asm volatile("atom." #SP ".add.f64 %0, [%1], %2;" : "=d"(o) : AC(ADDR), "d"(__longlong_as_double((__double_as_longlong(o) & mm) | 0x3ff0000000000000ull)) : "memory")) \
    FINAL(double)                                                                                     \
}                                                                                                     \
/* CAS/exch (one lane): operand old ^ 1 (LOP3), so the word alternates 0,1 and every CAS succeeds; */ \
/* min/max: operand (old & m) | 1 like add. */             \
extern "C" __global__ void lat_##SP##_cas(u32* g, u32 m, u32 warm, u32 steps, u64* res) {         \
    SETUP(u32, 0u)                                                                                    \
    u32 o = 1u;                                                                                       \
    GD_CHAIN(u32, o, asm volatile("atom." #SP ".cas.b32 %0, [%1], %2, %3;" : "=r"(o) : AC(ADDR), "r"(o ^ 1u), "r"(o) : "memory")) \
    FINAL(u32)                                                                                        \
}                                                                                                     \
extern "C" __global__ void lat_##SP##_exch(u32* g, u32 m, u32 warm, u32 steps, u64* res) {        \
    SETUP(u32, 0u)                                                                                    \
    u32 o = 0;                                                                                        \
    GD_CHAIN(u32, o, asm volatile("atom." #SP ".exch.b32 %0, [%1], %2;" : "=r"(o) : AC(ADDR), "r"(o ^ 1u) : "memory")) \
    FINAL(u32)                                                                                        \
}                                                                                                     \
extern "C" __global__ void lat_##SP##_max(u32* g, u32 m, u32 warm, u32 steps, u64* res) {         \
    SETUP(u32, 0u)                                                                                    \
    u32 o = 0;                                                                                        \
    GD_CHAIN(u32, o, asm volatile("atom." #SP ".max.u32 %0, [%1], %2;" : "=r"(o) : AC(ADDR), "r"((o & m) | 1u) : "memory")) \
    FINAL(u32)                                                                                        \
}                                                                                                     \
extern "C" __global__ void lat_##SP##_min(u32* g, u32 m, u32 warm, u32 steps, u64* res) {         \
    SETUP(u32, 0xFFFFFFFFu)                                                                           \
    u32 o = 0xFFFFFFFFu;                                                                              \
    GD_CHAIN(u32, o, asm volatile("atom." #SP ".min.u32 %0, [%1], %2;" : "=r"(o) : AC(ADDR), "r"((o & m) | 1u) : "memory")) \
    FINAL(u32)                                                                                        \
}

// Global: the host initialises *g. Shared: lane 0 initialises one word and writes it back to *g.
#define SETUP_G(T, INIT)
#define FINAL_G(T)
#define SETUP_S(T, INIT)                                                                              \
    __shared__ T s_word;                                                                              \
    if (threadIdx.x == 0) s_word = INIT;                                                              \
    __syncthreads();                                                                                  \
    const u32 s_addr = (u32)__cvta_generic_to_shared(&s_word);
#define FINAL_S(T)                                                                                    \
    __syncthreads();                                                                                  \
    if (threadIdx.x == 0) *g = s_word;
#define AC_G(x) "l"(x)
#define AC_S(x) "r"(x)

LAT_OPS(global, SETUP_G, AC_G, g + (threadIdx.x & m), FINAL_G)
LAT_OPS(shared, SETUP_S, AC_S, s_addr + ((threadIdx.x & m) << 2), FINAL_S)

// red has no result: time red.add followed by a ld.relaxed of the same word (the load must see the
// add), against the same chain of loads alone (ld_chain_*).
extern "C" __global__ void red_ld_global(u32* g, u32 m, u32 warm, u32 steps, u64* res) {
    u32 o = 0;
#pragma unroll 1
    for (u32 i = 0; i < warm + steps; ++i) {
        if (i == warm) res[0] = clk();
        asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" :: "l"(g + (threadIdx.x & m)), "r"((o & m) | 1u) : "memory");
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(o) : "l"(g + (threadIdx.x & m)) : "memory");
    }
    res[2] = o;
    long long t1 = clk();
    res[1] = t1 - (long long)res[0];
    res[3] = smid();
}
extern "C" __global__ void ld_chain_global(u32* g, u32 m, u32 warm, u32 steps, u64* res) {
    u32 o = 0;
#pragma unroll 1
    for (u32 i = 0; i < warm + steps; ++i) {
        if (i == warm) res[0] = clk();
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(o) : "l"(g + (o & m)) : "memory");
    }
    res[2] = o;
    long long t1 = clk();
    res[1] = t1 - (long long)res[0];
    res[3] = smid();
}

// Home-partition probe: one thread times a chain of `steps` dependent accesses to the first word of
// each of n lines `stride` words apart: ld.relaxed.gpu (L2, not L1; a far-home line may be served from a
// near copy) or, with atomic != 0, atom.add of 1 (performed at the line's home L2 partition). The words
// start at 0; m = 0 at run time keeps every address dependent on the previous access. res[i] = cycles of
// line i, res[n] = the SM, res[n + 1 + i] = the last value read on line i (the host checks it; the store
// also makes the second clock read wait for the last access).
extern "C" __global__ void probe_lines(u32* base, u32 m, u32 stride, u32 n, u32 steps, u32 atomic, u64* res) {
#pragma unroll 1
    for (u32 l = 0; l < n; ++l) {
        u32* g = base + (u64)l * stride;
        u32 o = 0;
#if __CUDA_ARCH__ >= 1000
        // sm_100+ ptxas proves a value loaded from a uniform address uniform and aggregates the first atom
        // of the chain across the warp (VOTEU + POPC + SHFL): the per-lane address keeps it from that
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(o) : "l"(g + (threadIdx.x & m)) : "memory");
#else
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(o) : "l"(g) : "memory");  // the line into L2
#endif
        long long t0 = clk();
        if (atomic) {
#pragma unroll 1
            for (u32 i = 0; i < steps; ++i)
                asm volatile("atom.global.add.u32 %0, [%1], %2;" : "=r"(o) : "l"(g + (o & m)), "r"((o & m) | 1u) : "memory");
        } else {
#pragma unroll 1
            for (u32 i = 0; i < steps; ++i)
                asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(o) : "l"(g + (o & m)) : "memory");
        }
        res[n + 1 + l] = o;
        long long t1 = clk();
        res[l] = t1 - t0;
    }
    res[n] = smid();
}

// Baseline: the dependent LOP3 ((a & m) | one, LUT 0xEA) that links the atomic chains, on per-lane operands so ptxas keeps it
// in vector registers (with uniform operands it moves the chain to the uniform datapath).
extern "C" __global__ void alu_chain(const u32* in, u32 steps, u64* res) {
    const u32 m = in[threadIdx.x], one = in[32 + threadIdx.x];
    u32 a = m ^ threadIdx.x;
    long long t0 = clk();
#pragma unroll 1
    for (u32 i = 0; i < steps; ++i) {
        asm volatile("lop3.b32 %0, %0, %1, %2, 0xEA;\n\t lop3.b32 %0, %0, %1, %2, 0xEA;\n\t"
                     "lop3.b32 %0, %0, %1, %2, 0xEA;\n\t lop3.b32 %0, %0, %1, %2, 0xEA;" : "+r"(a) : "r"(m), "r"(one));
    }
    res[1 + threadIdx.x] = a;
    long long t1 = clk();
    if (threadIdx.x == 0) res[0] = t1 - t0;
}

// ---- throughput: every thread issues `iters` red.add to word (gtid / share) * stride of base.
// Inline PTX so the compiler cannot aggregate a warp's same-address adds itself (SASS-checked: no
// VOTE/POPC). times[4 * block + 0..3]: clock64 start/end, %globaltimer start/end (thread 0).
__device__ __forceinline__ void red_add(u32* p, u32 v) {
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void red_add(float* p, float v) {
    asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" :: "l"(p), "f"(v) : "memory");
}
template <typename T>
__device__ __forceinline__ void red_contend(T* base, u32 share, u32 stride, u32 iters, T val, u64* times) {
    const u64 gtid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    T* p = base + (gtid / share) * stride;
    __syncthreads();
    long long c0 = clk();
    u64 g0 = gtime();
#pragma unroll 1
    for (u32 i = 0; i < iters; ++i) red_add(p, val);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        long long c1 = clk();
        u64 g1 = gtime();
        times[4 * blockIdx.x + 0] = c0;
        times[4 * blockIdx.x + 1] = c1;
        times[4 * blockIdx.x + 2] = g0;
        times[4 * blockIdx.x + 3] = g1;
    }
}
extern "C" __global__ void red_contend_u32(u32* base, u32 share, u32 stride, u32 iters, u32 val, u64* times) {
    red_contend(base, share, stride, iters, val, times);
}
extern "C" __global__ void red_contend_f32(float* base, u32 share, u32 stride, u32 iters, float val, u64* times) {
    red_contend(base, share, stride, iters, val, times);
}
