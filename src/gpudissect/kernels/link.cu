// Kernels of the link suite: SM-driven copies over PCIe/NVLink (the kernel itself reads or writes
// mapped host memory or a peer GPU's memory), a position-sensitive checksum that verifies every
// copy, a pattern fill, and a pointer chase that times one remote load at a time.
#include "gpudissect.cuh"

// 16-byte vector copy, grid-stride. Either side may be mapped host memory or peer memory: the SM
// issues the remote loads/stores, so this measures what a kernel gets, not the copy engine.
// Grid-stride body shared by both copies: four independent 16-byte loads in flight per thread
// before the stores.
__device__ __forceinline__ void copy_range(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                           u64 i, u64 step, u64 n16) {
    for (; i + 3 * step < n16; i += 4 * step) {
        uint4 a = src[i], b = src[i + step], c = src[i + 2 * step], d = src[i + 3 * step];
        dst[i] = a; dst[i + step] = b; dst[i + 2 * step] = c; dst[i + 3 * step] = d;
    }
    for (; i < n16; i += step) dst[i] = src[i];
}

// 16-byte vector copy. Either side may be mapped host memory or peer memory: the SM issues the
// remote loads/stores, so this measures what a kernel gets, not the copy engine.
extern "C" __global__ void copy_v4(const uint4* __restrict__ src, uint4* __restrict__ dst, u64 n16) {
    copy_range(src, dst, blockIdx.x * (u64)blockDim.x + threadIdx.x, (u64)gridDim.x * blockDim.x, n16);
}

// Both directions in one launch: even blocks copy a (e.g. host->device), odd blocks copy b
// (device->host), so the link carries traffic both ways at once from the same kernel.
extern "C" __global__ void copy_bidir_v4(const uint4* __restrict__ src_a, uint4* __restrict__ dst_a,
                                         const uint4* __restrict__ src_b, uint4* __restrict__ dst_b, u64 n16) {
    const bool is_a = (blockIdx.x & 1) == 0;
    const u64 blocks = (gridDim.x + (is_a ? 1 : 0)) / 2;  // blocks working on this direction
    const u64 i = (blockIdx.x / 2) * (u64)blockDim.x + threadIdx.x;
    if (is_a) copy_range(src_a, dst_a, i, blocks * blockDim.x, n16);
    else copy_range(src_b, dst_b, i, blocks * blockDim.x, n16);
}

// The word every checksum adds for word w at index i: mixing in the index makes a copy that lands
// at the wrong offset (or repeats a block) fail, which a plain sum would not notice.
__device__ __forceinline__ u64 mix(u32 w, u64 i) {
    return (u64)(w ^ ((u32)i * 0x9E3779B9u));
}

// Sum over words of mix(w, i) modulo 2^64. Volatile (.sys) loads: a buffer in host memory that the
// copy engine has just written must be read from the host, never from a stale cached line.
extern "C" __global__ void checksum_u32(const uint4* p, u64 n16, u64* out) {
    u64 acc = 0;
    const u64 step = (u64)gridDim.x * blockDim.x;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n16; i += step) {
        uint4 v;
        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i));
        const u64 w = 4 * i;
        acc += mix(v.x, w) + mix(v.y, w + 1) + mix(v.z, w + 2) + mix(v.w, w + 3);
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) atomicAdd((unsigned long long*)out, (unsigned long long)acc);
}

// A reproducible pattern (a hash of index and seed) for device-side sources.
extern "C" __global__ void fill_u32(u32* p, u64 n, u32 seed) {
    const u64 step = (u64)gridDim.x * blockDim.x;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += step) {
        u32 x = (u32)i * 0x85EBCA6Bu ^ seed;
        x ^= x >> 13; x *= 0xC2B2AE35u; x ^= x >> 16;
        p[i] = x;
    }
}

// One thread follows a chain of absolute addresses in remote memory (mapped host memory or a
// peer GPU): every load waits for the previous one, so the time per step is the round trip of one
// load over the link. Volatile loads (.sys) keep each step off the GPU's caches.
// out[0] = where the chase ended, out[1] = elapsed %globaltimer ns, out[2] = elapsed clock64 cycles.
extern "C" __global__ void remote_chase(const u64* start, int steps, u64* out) {
    const u64* p = start;
    // one untimed step loads the first line's translation before timing starts
    u64 next;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(next) : "l"(p));
    p = (const u64*)next;
    const u64 g0 = gtime();
    const long long c0 = clk();
    for (int s = 0; s < steps; ++s) {
        asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(next) : "l"(p) : "memory");
        p = (const u64*)next;
    }
    const long long c1 = clk();
    const u64 g1 = gtime();
    out[0] = (u64)p;
    out[1] = g1 - g0;
    out[2] = (u64)(c1 - c0);
}

// Holds its stream until the host writes flag[0] != 0 (mapped host memory), so that copies queued
// behind it start back to back; gives up after timeout_ns and says so in flag[1].
extern "C" __global__ void gate_spin(u32* flag, u64 timeout_ns) {
    const u64 t0 = gtime();
    for (;;) {
        u32 f;
        asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(f) : "l"(flag) : "memory");
        if (f) return;
        if (gtime() - t0 > timeout_ns) {
            asm volatile("st.volatile.global.u32 [%0], %1;" :: "l"(flag + 1), "r"(1u) : "memory");
            return;
        }
        __nanosleep(256);
    }
}
