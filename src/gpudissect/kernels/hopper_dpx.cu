// DPX intrinsics (Luo et al. 000 §8.1, Figs. 13-14): latency, per-SM throughput and semantics of
// every __vimax*/__vimin*/__viaddmax*/__viaddmin*/__vibmax*/__vibmin* function.
//
// The same source is built twice: for the device (sm_90a: hardware DPX, VIMNMX3 / VIADDMNMX ...)
// and as compute_80 PTX that the driver JIT-compiles (the emulated pre-Hopper code path).
//
// Keeping the compiler honest without distorting the measurement:
//  - every operand comes from a runtime argument (`ops`), never a constant;
//  - the k-th step of a chain uses operand pair (b[k % pairs], c[k % pairs]) held in registers, so
//    neighbouring steps never repeat an operation (max(max(x,b),b) would fold);
//  - the chain is loop-carried through the result x; nothing else sits on it;
//  - the __vib* predicates are consumed (counted) off the chain, otherwise they would be dropped
//    and the intrinsic would become a plain max/min (000 §8.1 saw exactly that on sm_80/sm_89);
//  - every final x and count is written out and compared, on the host, with a CPU model that
//    replays the same chain; the CPU tests also count the DPX instructions in each loop body.
#ifndef LAT_PAIRS
#define LAT_PAIRS 32  // distinct operand pairs (b, c) in registers
#endif
#ifndef LAT_UNROLL
#define LAT_UNROLL 128  // dependent steps per latency-loop iteration: step k uses pair k % LAT_PAIRS
#endif
#ifndef THR_UNROLL
#define THR_UNROLL 16  // steps per throughput-loop iteration and chain
#endif
#ifndef THR_ILP
#define THR_ILP 4  // independent chains per thread in the throughput kernels
#endif

#include "gpudissect.cuh"  // u64/u32, clk(), gtime(), smid()

// One step of each intrinsic on 32-bit words: x is the chain value, b and c the operands;
// pa / pb count the predicates of the __vib* functions (hi/only and lo halfword).
// `one` is a single call (used by dpx_eval), `step` what a chain step executes, `calls` how many
// calls a step makes. The 2-operand relu forms step as a max/min pair (PARTNER): ptxas fuses two
// dependent 2-operand relu max (or min) calls into one 3-operand VIMNMX3.RELU, which would halve
// what a call seems to cost; a max followed by a min cannot be fused.
#define STEP_A2(NAME, T, PARTNER)                                                            \
    struct Op_##NAME {                                                                       \
        static constexpr int calls = 2;                                                      \
        static __device__ __forceinline__ u32 one(u32 x, u32 b, u32, u32&, u32&) {           \
            return (u32)__##NAME((T)x, (T)b);                                                \
        }                                                                                    \
        static __device__ __forceinline__ u32 step(u32 x, u32 b, u32 c, u32&, u32&) {        \
            return (u32)__##PARTNER((T)__##NAME((T)x, (T)b), (T)c);                          \
        }                                                                                    \
    };
#define STEP_A3(NAME, T, PARTNER)                                                            \
    struct Op_##NAME {                                                                       \
        static constexpr int calls = 1;                                                      \
        static __device__ __forceinline__ u32 one(u32 x, u32 b, u32 c, u32&, u32&) {         \
            return (u32)__##NAME((T)x, (T)b, (T)c);                                          \
        }                                                                                    \
        static __device__ __forceinline__ u32 step(u32 x, u32 b, u32 c, u32& pa, u32& pb) {  \
            return one(x, b, c, pa, pb);                                                     \
        }                                                                                    \
    };
#define STEP_B1(NAME, T, PARTNER)                                                            \
    struct Op_##NAME {                                                                       \
        static constexpr int calls = 1;                                                      \
        static __device__ __forceinline__ u32 one(u32 x, u32 b, u32, u32& pa, u32&) {        \
            bool p;                                                                          \
            u32 r = (u32)__##NAME((T)x, (T)b, &p);                                           \
            pa += p;                                                                         \
            return r;                                                                        \
        }                                                                                    \
        static __device__ __forceinline__ u32 step(u32 x, u32 b, u32 c, u32& pa, u32& pb) {  \
            return one(x, b, c, pa, pb);                                                     \
        }                                                                                    \
    };
#define STEP_B2(NAME, T, PARTNER)                                                            \
    struct Op_##NAME {                                                                       \
        static constexpr int calls = 1;                                                      \
        static __device__ __forceinline__ u32 one(u32 x, u32 b, u32, u32& pa, u32& pb) {     \
            bool ph, pl;                                                                     \
            u32 r = __##NAME(x, b, &ph, &pl);                                                \
            pa += ph;                                                                        \
            pb += pl;                                                                        \
            return r;                                                                        \
        }                                                                                    \
        static __device__ __forceinline__ u32 step(u32 x, u32 b, u32 c, u32& pa, u32& pb) {  \
            return one(x, b, c, pa, pb);                                                     \
        }                                                                                    \
    };

// The 36 DPX functions of the CUDA Math API: name, form, C type of the operands, partner (A2 only).
// Keep in step with INTRINSICS in gpudissect/bench/hopper/dpx_model.py (a CPU test compares them).
#define DPX_LIST(X)                                                                          \
    X(vimax_s32_relu, A2, int, vimin_s32_relu)                                               \
    X(vimax_s16x2_relu, A2, u32, vimin_s16x2_relu)                                           \
    X(vimin_s32_relu, A2, int, vimax_s32_relu)                                               \
    X(vimin_s16x2_relu, A2, u32, vimax_s16x2_relu)                                           \
    X(vimax3_s32, A3, int, _) X(vimax3_u32, A3, u32, _) X(vimax3_s16x2, A3, u32, _)          \
    X(vimax3_u16x2, A3, u32, _) X(vimin3_s32, A3, int, _) X(vimin3_u32, A3, u32, _)          \
    X(vimin3_s16x2, A3, u32, _) X(vimin3_u16x2, A3, u32, _)                                  \
    X(vimax3_s32_relu, A3, int, _) X(vimax3_s16x2_relu, A3, u32, _)                          \
    X(vimin3_s32_relu, A3, int, _) X(vimin3_s16x2_relu, A3, u32, _)                          \
    X(viaddmax_s32, A3, int, _) X(viaddmax_u32, A3, u32, _) X(viaddmax_s16x2, A3, u32, _)    \
    X(viaddmax_u16x2, A3, u32, _) X(viaddmin_s32, A3, int, _) X(viaddmin_u32, A3, u32, _)    \
    X(viaddmin_s16x2, A3, u32, _) X(viaddmin_u16x2, A3, u32, _)                              \
    X(viaddmax_s32_relu, A3, int, _) X(viaddmax_s16x2_relu, A3, u32, _)                      \
    X(viaddmin_s32_relu, A3, int, _) X(viaddmin_s16x2_relu, A3, u32, _)                      \
    X(vibmax_s32, B1, int, _) X(vibmax_u32, B1, u32, _) X(vibmin_s32, B1, int, _)            \
    X(vibmin_u32, B1, u32, _) X(vibmax_s16x2, B2, u32, _) X(vibmax_u16x2, B2, u32, _)        \
    X(vibmin_s16x2, B2, u32, _) X(vibmin_u16x2, B2, u32, _)

#define DECLARE_OP(NAME, FORM, T, PARTNER) STEP_##FORM(NAME, T, PARTNER)
DPX_LIST(DECLARE_OP)

// Latency: one thread, one chain x <- f(x, b[k % LAT_PAIRS], c[k % LAT_PAIRS]); two timed passes of
// `iters` iterations of LAT_UNROLL steps (the first warms the instruction cache), the second is
// reported. The long unrolled body keeps the loop's own instructions below 0.1 cycle per step.
// ops: b[0..LAT_PAIRS), c[0..LAT_PAIRS), x0 at 2*LAT_PAIRS.  out: x, pa, pb.
template <class Op>
__device__ __forceinline__ void lat_body(const u32* __restrict__ ops, int iters, u32* __restrict__ out,
                                         u64* __restrict__ cycles) {
    u32 b[LAT_PAIRS], c[LAT_PAIRS];
#pragma unroll
    for (int k = 0; k < LAT_PAIRS; ++k) {
        b[k] = ops[k];
        c[k] = ops[LAT_PAIRS + k];
    }
    u32 x = ops[2 * LAT_PAIRS], pa = 0, pb = 0;
    u64 span = 0;
#pragma unroll 1
    for (int rep = 0; rep < 2; ++rep) {
        u64 t0 = clk();
#pragma unroll 1
        for (int it = 0; it < iters; ++it) {
#pragma unroll
            for (int k = 0; k < LAT_UNROLL; ++k) x = Op::step(x, b[k % LAT_PAIRS], c[k % LAT_PAIRS], pa, pb);
        }
        u64 t1 = clk();
        span = t1 - t0;
    }
    out[0] = x;
    out[1] = pa;
    out[2] = pb;
    cycles[0] = span;
}

// Throughput: every thread runs THR_ILP independent chains (start values x0[j] at
// ops[2*LAT_PAIRS + j]), step k using pair k (THR_UNROLL <= LAT_PAIRS); per block the clock64 span around the loop and the SM it ran on.
// out per thread: x[0..THR_ILP), pa, pb.  spans per block: t0, t1, smid.
template <class Op>
__device__ __forceinline__ void thr_body(const u32* __restrict__ ops, int iters, u32* __restrict__ out,
                                         u64* __restrict__ spans) {
    u32 b[THR_UNROLL], c[THR_UNROLL], x[THR_ILP];
#pragma unroll
    for (int k = 0; k < THR_UNROLL; ++k) {
        b[k] = ops[k];
        c[k] = ops[LAT_PAIRS + k];
    }
#pragma unroll
    for (int j = 0; j < THR_ILP; ++j) x[j] = ops[2 * LAT_PAIRS + j];
    u32 pa = 0, pb = 0;
    __syncthreads();
    u64 t0 = clk();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < THR_UNROLL; ++k) {
#pragma unroll
            for (int j = 0; j < THR_ILP; ++j) x[j] = Op::step(x[j], b[k], c[k], pa, pb);
        }
    }
    __syncthreads();
    u64 t1 = clk();
    const size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
    for (int j = 0; j < THR_ILP; ++j) out[g * (THR_ILP + 2) + j] = x[j];
    out[g * (THR_ILP + 2) + THR_ILP] = pa;
    out[g * (THR_ILP + 2) + THR_ILP + 1] = pb;
    if (threadIdx.x == 0) {
        spans[blockIdx.x * 3 + 0] = t0;
        spans[blockIdx.x * 3 + 1] = t1;
        spans[blockIdx.x * 3 + 2] = smid();
    }
}

#define DECLARE_KERNELS(NAME, FORM, T, PARTNER)                                                         \
    extern "C" __global__ void __launch_bounds__(32) dpx_lat_##NAME(const u32* ops, int iters, \
                                                                    u32* out, u64* cycles) {   \
        lat_body<Op_##NAME>(ops, iters, out, cycles);                                          \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(1024) dpx_thr_##NAME(const u32* ops, int iters, \
                                                                      u32* out, u64* spans) {  \
        thr_body<Op_##NAME>(ops, iters, out, spans);                                           \
    }
DPX_LIST(DECLARE_KERNELS)

// Semantics on random and edge-case inputs: out[f*n + i] = f(a[i], b[i], c[i]) for the f-th
// function of DPX_LIST, pred[f*n + i] = hi/only predicate | lo predicate << 1.
extern "C" __global__ void dpx_eval(const u32* __restrict__ a, const u32* __restrict__ b,
                                    const u32* __restrict__ c, int n, u32* __restrict__ out,
                                    u32* __restrict__ pred) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 x = a[i], y = b[i], z = c[i];
    int f = 0;
#define EVAL_ONE(NAME, FORM, T, PARTNER)                                                                \
    {                                                                                          \
        u32 pa = 0, pb = 0;                                                                    \
        out[(size_t)f * n + i] = Op_##NAME::one(x, y, z, pa, pb);                             \
        pred[(size_t)f * n + i] = pa | (pb << 1);                                              \
        ++f;                                                                                   \
    }
    DPX_LIST(EVAL_ONE)
#undef EVAL_ONE
}
