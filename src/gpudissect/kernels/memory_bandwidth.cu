// Throughput of L1, shared memory, L2 and DRAM (Luo et al. Table V, Jia et al. Tables 3.2/3.4)
// with fp32, fp64 and fp32.v4 accesses. VEC: 1 = f32, 2 = f64, 4 = f32.v4.
// Data are small integers stored as floats, so every sum is exact and can be checked on the host.
#include "gpudissect.cuh"
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
typedef unsigned long long u64;
typedef unsigned int u32;

#if VEC == 1
typedef float T;
#define LD_CA(p, v) asm volatile("ld.global.ca.f32 %0, [%1];" : "=f"(v) : "l"(p))
#define LD_CG(p, v) asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p))
#define LD_SH(a, v) asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a))
#define ACC(acc, v) acc += v
#elif VEC == 2
typedef double T;
#define LD_CA(p, v) asm volatile("ld.global.ca.f64 %0, [%1];" : "=d"(v) : "l"(p))
#define LD_CG(p, v) asm volatile("ld.global.cg.f64 %0, [%1];" : "=d"(v) : "l"(p))
#define LD_SH(a, v) asm volatile("ld.shared.f64 %0, [%1];" : "=d"(v) : "r"(a))
#define ACC(acc, v) acc += v
#else
typedef float4 T;
#define LD_CA(p, v) asm volatile("ld.global.ca.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p))
#define LD_CG(p, v) asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p))
#define LD_SH(a, v) asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a))
#define ACC(acc, v) acc += (v.x + v.y) + (v.z + v.w)
#endif


#if VEC == 1
#define LD_STREAM(p, v) asm volatile("ld.global.nc.L1::no_allocate.L2::256B.f32 %0, [%1];" : "=f"(v) : "l"(p))
#define ST_STREAM(p, v) asm volatile("st.global.cs.f32 [%0], %1;" :: "l"(p), "f"(v) : "memory")
#elif VEC == 2
#define LD_STREAM(p, v) asm volatile("ld.global.nc.L1::no_allocate.L2::256B.f64 %0, [%1];" : "=d"(v) : "l"(p))
#define ST_STREAM(p, v) asm volatile("st.global.cs.f64 [%0], %1;" :: "l"(p), "d"(v) : "memory")
#else
#define LD_STREAM(p, v) asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p))
#define ST_STREAM(p, v) asm volatile("st.global.cs.v4.f32 [%0], {%1,%2,%3,%4};" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w) : "memory")
#endif

// Loads that ask L2 to keep the line (evict_last policy from createpolicy; sm_80+).
#if VEC == 1
#define LD_KEEP(p, v, pol) asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(pol))
#elif VEC == 2
#define LD_KEEP(p, v, pol) asm volatile("ld.global.L2::cache_hint.f64 %0, [%1], %2;" : "=d"(v) : "l"(p), "l"(pol))
#else
#define LD_KEEP(p, v, pol) asm volatile("ld.global.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p), "l"(pol))
#endif

#if VEC == 2
typedef double A;
#else
typedef float A;
#endif


// Deterministic fill of n scalars (float, or double when VEC == 2): value = hash(i) & 3,
// which the host recomputes to check every sum exactly.
extern "C" __global__ void fill(A* data, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        data[i] = (A)((u32)((i * 2654435761ull) >> 13) & 3u);
}

// One timing record per block (gpudissect.cuh record()): the union window of a launch in %globaltimer.
__device__ __forceinline__ void block_record(u64* rec, long long t0, long long t1, u64 g0, u64 g1) {
    if (threadIdx.x == 0) record(rec + REC_WORDS * blockIdx.x, t0, t1, g0, g1);
}

// L1 and shared memory: each block owns ROWS = 2*UNROLL-1 rows of blockDim accesses. Iteration `it`
// reads rows r..r+UNROLL-1 with r = it & rmask: the rotation keeps ptxas from hoisting the loads out
// of the loop (it removes repeated loads of one address), while the per-load addressing stays an
// immediate offset. rmask (= UNROLL-1) is a launch argument so the compiler cannot fold the rotation.
#define ROWS (2 * UNROLL - 1)
#ifndef BLOCK  // threads per block of l1_read/smem_read: compile-time, so row offsets are immediates
#define BLOCK (VEC == 4 ? 512 : 1024)
#endif

extern "C" __global__ void l1_read(const T* data, u32 iters, u32 rmask, A* sums, u64* rec) {
    const T* mine = data + (u64)blockIdx.x * ROWS * BLOCK + threadIdx.x;
    A acc[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) acc[k] = 0;
    for (int k = 0; k < ROWS; k++) { T v; LD_CA(mine + k * BLOCK, v); ACC(acc[0], v); }  // warm L1
    __syncthreads();
    u64 g0 = gtime();
    long long t0 = clk();
    for (u32 it = 0; it < iters; it++) {
        const T* p = mine + (it & rmask) * BLOCK;
#pragma unroll
        for (int k = 0; k < UNROLL; k++) { T v; LD_CA(p + k * BLOCK, v); ACC(acc[k], v); }
    }
    __syncthreads();
    long long t1 = clk();
    u64 g1 = gtime();
    A s = 0;
#pragma unroll
    for (int k = 0; k < UNROLL; k++) s += acc[k];
    sums[(u64)blockIdx.x * BLOCK + threadIdx.x] = s;
    block_record(rec, t0, t1, g0, g1);
}

extern "C" __global__ void smem_read(const T* data, u32 iters, u32 rmask, A* sums, u64* rec) {
    extern __shared__ __align__(16) unsigned char sbuf[];
    T* s = (T*)sbuf;
    const T* mine = data + (u64)blockIdx.x * ROWS * BLOCK;
    for (u32 i = threadIdx.x; i < ROWS * BLOCK; i += BLOCK) s[i] = mine[i];
    __syncthreads();
    u32 base = (u32)__cvta_generic_to_shared(s) + threadIdx.x * (u32)sizeof(T);
    u32 row = BLOCK * (u32)sizeof(T);
    A acc[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) acc[k] = 0;
    u64 g0 = gtime();
    long long t0 = clk();
    for (u32 it = 0; it < iters; it++) {
        u32 a = base + (it & rmask) * row;
#pragma unroll
        for (int k = 0; k < UNROLL; k++) { T v; LD_SH(a + k * row, v); ACC(acc[k], v); }
    }
    __syncthreads();
    long long t1 = clk();
    u64 g1 = gtime();
    A sum = 0;
#pragma unroll
    for (int k = 0; k < UNROLL; k++) sum += acc[k];
    sums[(u64)blockIdx.x * BLOCK + threadIdx.x] = sum;
    block_record(rec, t0, t1, g0, g1);
}

// L2: every block streams the whole L2-resident region with .cg loads (bypassing L1),
// starting at a block-dependent offset so the SMs spread over the slices.
extern "C" __global__ void l2_read(const T* data, u64 n, u32 iters, A* sums, u64* rec) {
    A acc[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) acc[k] = 0;
    u64 chunk = (u64)UNROLL * blockDim.x;
    u64 chunks = n / chunk;
    u64 first = (blockIdx.x * 7919ull) % chunks;
    __syncthreads();
    u64 g0 = gtime();
    long long t0 = clk();
    for (u32 it = 0; it < iters; it++) {
        for (u64 c = 0; c < chunks; c++) {
            u64 cc = first + c;
            if (cc >= chunks) cc -= chunks;
            const T* p = data + cc * chunk + threadIdx.x;
#pragma unroll
            for (int k = 0; k < UNROLL; k++) { T v; LD_CG(p + k * blockDim.x, v); ACC(acc[k], v); }
        }
    }
    __syncthreads();
    long long t1 = clk();
    u64 g1 = gtime();
    A s = 0;
#pragma unroll
    for (int k = 0; k < UNROLL; k++) s += acc[k];
    sums[(u64)blockIdx.x * blockDim.x + threadIdx.x] = s;
    block_record(rec, t0, t1, g0, g1);
}

// DRAM: blocks take contiguous tiles of UNROLL*blockDim accesses in turn (each warp's loads are
// neighbours, good for DRAM pages); event-timed on the host.
extern "C" __global__ void dram_read(const T* __restrict__ data, u64 n, A* sums) {
    A acc[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) acc[k] = 0;
    u64 tile = (u64)UNROLL * blockDim.x;
    u64 tiles = n / tile;
    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        const T* p = data + t * tile + threadIdx.x;
        T v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++) v[k] = p[k * blockDim.x];
#pragma unroll
        for (int k = 0; k < UNROLL; k++) ACC(acc[k], v[k]);
    }
    for (u64 i = tiles * tile + blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        T v = data[i];
        ACC(acc[0], v);
    }
    A s = 0;
#pragma unroll
    for (int k = 0; k < UNROLL; k++) s += acc[k];
    sums[blockIdx.x * (u64)blockDim.x + threadIdx.x] = s;
}

// DRAM copies (read + write), compared with the driver's device-to-device copy. Tile t holds
// UNROLL*blockDim accesses; STREAMING selects the cache-hinted loads and stores.
template <bool STREAMING>
__device__ __forceinline__ void copy_tile(const T* __restrict__ src, T* __restrict__ dst, u64 t) {
    u64 tile = (u64)UNROLL * blockDim.x;
    const T* p = src + t * tile + threadIdx.x;
    T* q = dst + t * tile + threadIdx.x;
    T v[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
        if (STREAMING) LD_STREAM(p + k * blockDim.x, v[k]); else v[k] = p[k * blockDim.x];
    }
#pragma unroll
    for (int k = 0; k < UNROLL; k++) {
        if (STREAMING) ST_STREAM(q + k * blockDim.x, v[k]); else q[k * blockDim.x] = v[k];
    }
}

// The accesses after the last whole tile, grid-strided.
__device__ __forceinline__ void copy_tail(const T* __restrict__ src, T* __restrict__ dst, u64 n) {
    u64 done = n / ((u64)UNROLL * blockDim.x) * ((u64)UNROLL * blockDim.x);
    for (u64 i = done + blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

// Blocks take every gridDim-th tile.
extern "C" __global__ void dram_copy(const T* __restrict__ src, T* __restrict__ dst, u64 n) {
    u64 tiles = n / ((u64)UNROLL * blockDim.x);
    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) copy_tile<false>(src, dst, t);
    copy_tail(src, dst, n);
}

// The same with streaming hints: loads skip L1 and ask L2 for 256-byte fetches, stores are
// marked evict-first, so the copied data does not displace anything. The .L2::256B prefetch size
// needs sm_80: older GPUs build the file without this kernel (the copy comparison skips it there).
#if __CUDA_ARCH__ >= 800
extern "C" __global__ void dram_copy_stream(const T* __restrict__ src, T* __restrict__ dst, u64 n) {
    u64 tiles = n / ((u64)UNROLL * blockDim.x);
    for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) copy_tile<true>(src, dst, t);
    copy_tail(src, dst, n);
}
#endif

// Each block owns one contiguous run of tiles: long sequential streams, fewer DRAM page switches.
extern "C" __global__ void dram_copy_chunked(const T* __restrict__ src, T* __restrict__ dst, u64 n) {
    u64 tiles = n / ((u64)UNROLL * blockDim.x);
    u64 per = (tiles + gridDim.x - 1) / gridDim.x;
    u64 first = blockIdx.x * per, last = first + per < tiles ? first + per : tiles;
    for (u64 t = first; t < last; t++) copy_tile<false>(src, dst, t);
    copy_tail(src, dst, n);
}

// One access per thread and no loop: grid = ceil(n / blockDim). The block scheduler hands out
// blocks in index order, so the resident blocks cover a narrow, advancing window of the buffers
// (a few MiB) and reads and writes keep hitting the same DRAM rows; the persistent tiled copies
// above spread over tens of MiB at a time. On the H100 this is the copy that matches the driver's.
extern "C" __global__ void dram_copy_flat(const T* __restrict__ src, T* __restrict__ dst, u64 n) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

// The same with the source loads marked L2 evict_last, so that the L2 prefers to evict the (normal)
// dirty destination lines; on the H100 it ran slightly ahead of the plain flat copy, and the tuning
// keeps whichever is faster. createpolicy and .L2::cache_hint need sm_80.
#if __CUDA_ARCH__ >= 800
extern "C" __global__ void dram_copy_flat_keep(const T* __restrict__ src, T* __restrict__ dst, u64 n) {
    u64 pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        T v;
        LD_KEEP(src + i, v, pol);
        dst[i] = v;
    }
}
#endif

// Copy through the bulk-copy engine: one thread per CTA moves `chunk`-byte pieces global -> shared
// (cp.async.bulk, completing on an mbarrier) and back shared -> global (cp.async.bulk bulk_group),
// COPY_STAGES pieces in flight per CTA; the SM issues a few instructions per piece, the data never
// passes through registers. cp.async.bulk and mbarrier expect_tx need sm_90: older GPUs build the file
// without this kernel (the copy comparison skips it there).
#ifndef COPY_STAGES
#define COPY_STAGES 4
#endif
#if __CUDA_ARCH__ >= 900
extern "C" __global__ void dram_copy_bulk(const unsigned char* src, unsigned char* dst, u64 nbytes, u32 chunk) {
    extern __shared__ __align__(128) unsigned char stage_buf[];
    __shared__ __align__(8) u64 bars[COPY_STAGES];
    if (threadIdx.x != 0) return;
    u32 sbase = (u32)__cvta_generic_to_shared(stage_buf);
    u32 bbase = (u32)__cvta_generic_to_shared(bars);
    for (int s = 0; s < COPY_STAGES; s++)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bbase + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    u64 pieces = nbytes / chunk;
    u64 mine = pieces > blockIdx.x ? (pieces - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    // piece k of this CTA is global piece blockIdx.x + k * gridDim.x, staged in slot k % COPY_STAGES
    for (u64 k = 0; k < mine && k < COPY_STAGES; k++) {
        u32 bar = bbase + 8 * (u32)k, buf = sbase + (u32)k * chunk;
        const unsigned char* g = src + (blockIdx.x + k * gridDim.x) * chunk;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(chunk) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(buf), "l"(g), "r"(chunk), "r"(bar) : "memory");
    }
    for (u64 k = 0; k < mine; k++) {
        u32 slot = (u32)(k % COPY_STAGES), bar = bbase + 8 * slot, buf = sbase + slot * chunk;
        u32 parity = (u32)((k / COPY_STAGES) & 1), done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done) : "r"(bar), "r"(parity) : "memory");
        unsigned char* g = dst + (blockIdx.x + k * gridDim.x) * chunk;
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(g), "r"(buf), "r"(chunk) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        u64 next = k + COPY_STAGES;
        if (next < mine) {
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // the slot's store has read it
            const unsigned char* gs = src + (blockIdx.x + next * gridDim.x) * chunk;
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(chunk) : "memory");
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         :: "r"(buf), "l"(gs), "r"(chunk), "r"(bar) : "memory");
        }
    }
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
#endif
