// The FP8 linear's quantisation in one pass (app suite, gpudissect/app/fp8cast.py launches it on torch's
// stream): read a bf16 or fp32 tensor once, write its e4m3 copy scaled by the delayed scale, and reduce its
// amax; the last CTA to finish pushes that amax into the tensor's history and sets the next call's scale
// (delayed scaling: no host sync, no second kernel).
//
// state (float words, one block per tensor, zero-initialised with scale = scale_inv = 1 by the host):
//   [0] scale      read by every CTA; the last CTA writes next call's scale = fp8max_margin / max(history)
//   [1] amax       accumulator (bits of a non-negative float, atomicMax); zeroed again by the last CTA
//   [2] done       CTAs finished (u32); zeroed again by the last CTA, so every launch starts from zero
//   [3] step       amaxes pushed so far (u32): the history is a ring indexed by step % hist_len
//   [4] scale_inv  1 / the scale this launch used (what the GEMM dequantises with), written by the last CTA;
//                  16-byte aligned: cuBLASLt refuses an fp8 GEMM whose scale pointer is not (NOT_SUPPORTED)
//   [5] last       this launch's amax (for callers and tests)
//   [8 ..]         the history, hist_len floats
// Two launches on one state must not overlap (one stream per tensor, as a layer's forward is).
#include "gpudissect.cuh"

#ifndef THREADS
#define THREADS 256
#endif
#define UNROLL 4  // 16-byte loads in flight per thread before the first convert
#define ST_SCALE 0
#define ST_AMAX 1
#define ST_DONE 2
#define ST_STEP 3
#define ST_SCALE_INV 4
#define ST_LAST 5
#define ST_HIST 8

// Two floats to two e4m3 bytes, round to nearest even, saturated to +-448 (F2FP.SATFINITE.E4M3):
// `lo` lands in the low byte.
__device__ __forceinline__ u32 e4m3x2(float lo, float hi) {
    unsigned short d;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
    return d;
}

// Read-only, not kept in L1 (each byte is read once): LDG.E.128.CONSTANT
__device__ __forceinline__ uint4 load16(const uint4* p) { return __ldg(p); }

// bf16: 8 elements per 16 bytes -> 8 bytes of e4m3. amax kept as packed |bf16| bit patterns (integer max
// orders non-negative floats, and a NaN's 0x7fc0 sorts above inf: it propagates as torch's max does).
struct Bf16 {
    typedef uint2 Out;
    static const int PER = 8;
    static __device__ __forceinline__ float lo(u32 w) { return __uint_as_float(w << 16); }
    static __device__ __forceinline__ float hi(u32 w) { return __uint_as_float(w & 0xffff0000u); }
    static __device__ __forceinline__ u32 pair(u32 w, float s) { return e4m3x2(lo(w) * s, hi(w) * s); }
    static __device__ __forceinline__ Out cast(uint4 v, float s) {
        Out o;
        o.x = pair(v.x, s) | (pair(v.y, s) << 16);
        o.y = pair(v.z, s) | (pair(v.w, s) << 16);
        return o;
    }
    static __device__ __forceinline__ u32 amax(uint4 v, u32 m) {
        m = __vmaxu2(m, v.x & 0x7fff7fffu);
        m = __vmaxu2(m, v.y & 0x7fff7fffu);
        m = __vmaxu2(m, v.z & 0x7fff7fffu);
        return __vmaxu2(m, v.w & 0x7fff7fffu);
    }
    // the packed pair maximum as the bits of a float
    static __device__ __forceinline__ u32 finish(u32 m) { return max(m & 0xffffu, m >> 16) << 16; }
    static __device__ __forceinline__ float scalar(const void* x, long long i) {
        return __uint_as_float((u32)((const unsigned short*)x)[i] << 16);
    }
};

// fp32: 4 elements per 16 bytes -> 4 bytes of e4m3; amax as |x| bit patterns.
struct F32 {
    typedef u32 Out;
    static const int PER = 4;
    static __device__ __forceinline__ Out cast(uint4 v, float s) {
        return e4m3x2(__uint_as_float(v.x) * s, __uint_as_float(v.y) * s) |
               (e4m3x2(__uint_as_float(v.z) * s, __uint_as_float(v.w) * s) << 16);
    }
    static __device__ __forceinline__ u32 amax(uint4 v, u32 m) {
        m = max(m, v.x & 0x7fffffffu);
        m = max(m, v.y & 0x7fffffffu);
        m = max(m, v.z & 0x7fffffffu);
        return max(m, v.w & 0x7fffffffu);
    }
    static __device__ __forceinline__ u32 finish(u32 m) { return m; }
    static __device__ __forceinline__ float scalar(const void* x, long long i) { return ((const float*)x)[i]; }
};

// The last CTA: this launch's amax into the ring, the scale it used inverted for the GEMM, the next scale
// from the history's maximum (kept where that maximum is inf or NaN, 1 where it is zero), counters reset.
__device__ __noinline__ void close_launch(float* state, int hist_len, float fp8max_margin) {
    u32* st = (u32*)state;
    __threadfence();  // every other CTA's atomicMax happened before its arrival on `done`
    u32 a = atomicExch(st + ST_AMAX, 0u);
    u32 step = st[ST_STEP];
    st[ST_HIST + step % (u32)hist_len] = a;
    st[ST_STEP] = step + 1;
    st[ST_LAST] = a;
    u32 hm = 0;
    for (int j = 0; j < hist_len; j++) hm = max(hm, st[ST_HIST + j]);
    float used = state[ST_SCALE];
    state[ST_SCALE_INV] = 1.0f / used;
    float next = hm == 0 ? 1.0f : hm < 0x7f800000u ? fp8max_margin / __uint_as_float(hm) : used;
    state[ST_SCALE] = next;
    st[ST_DONE] = 0;
}

template <class T>
__device__ __forceinline__ void cast_tensor(const void* x, unsigned char* q, long long n, float* state, int write,
                                            int hist_len, float fp8max_margin) {
    const uint4* xv = (const uint4*)x;
    typename T::Out* qv = (typename T::Out*)q;
    const float s = state[ST_SCALE];  // a plain load: the last CTA of this launch rewrites it (after every read)
    const long long nv = n / T::PER;
    const long long stride = (long long)gridDim.x * THREADS;
    long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    u32 m = 0;
    for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) v[u] = load16(xv + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            m = T::amax(v[u], m);
            if (write) qv[i + u * stride] = T::cast(v[u], s);
        }
    }
    for (; i < nv; i += stride) {
        uint4 v = load16(xv + i);
        m = T::amax(v, m);
        if (write) qv[i] = T::cast(v, s);
    }
    m = T::finish(m);
    // the last n % PER elements, one per thread of the first CTA
    long long t = nv * T::PER + threadIdx.x;
    if (blockIdx.x == 0 && t < n) {
        float f = T::scalar(x, t);
        m = max(m, __float_as_uint(f) & 0x7fffffffu);
        if (write) q[t] = (unsigned char)e4m3x2(f * s, 0.0f);
    }
    // CTA maximum: a warp max (REDUX), one word per warp, then one atomic per CTA
    __shared__ u32 warp_max[THREADS / 32];
    m = __reduce_max_sync(0xffffffffu, m);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_max[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = lane < THREADS / 32 ? warp_max[lane] : 0u;
        m = __reduce_max_sync(0xffffffffu, m);
        if (lane == 0) {
            u32* st = (u32*)state;
            atomicMax(st + ST_AMAX, m);
            __threadfence();
            if (atomicAdd(st + ST_DONE, 1u) == gridDim.x - 1) close_launch(state, hist_len, fp8max_margin);
        }
    }
}

// x: 16-byte aligned; q: aligned to its vector (8 bytes for bf16, 4 for fp32); write 0: amax only (the first
// call of a tensor, which has no history yet); fp8max_margin: 448 / 2^margin.
extern "C" __global__ void __launch_bounds__(THREADS) fp8cast_bf16(const void* __restrict__ x,
                                                                    unsigned char* __restrict__ q, long long n,
                                                                    float* state, int write, int hist_len,
                                                                    float fp8max_margin) {
    cast_tensor<Bf16>(x, q, n, state, write, hist_len, fp8max_margin);
}

extern "C" __global__ void __launch_bounds__(THREADS) fp8cast_f32(const void* __restrict__ x,
                                                                   unsigned char* __restrict__ q, long long n,
                                                                   float* state, int write, int hist_len,
                                                                   float fp8max_margin) {
    cast_tensor<F32>(x, q, n, state, write, hist_len, fp8max_margin);
}
