// Distributed shared memory on Hopper (Luo et al. §7): latency of local, cluster-local and remote
// shared memory, SM-to-SM throughput by access pattern, and a histogram with its bins spread over
// the shared memories of a cluster. Cluster-only PTX (mapa, ld/st/atom .shared::cluster,
// barrier.cluster) is written inline: NVRTC has no cooperative_groups headers here.
#include "gpudissect.cuh"
typedef unsigned long long u64;
typedef unsigned int u32;

#ifndef BW_WORDS
#define BW_WORDS 4096  // 16 KiB of shared memory per block in the throughput test, as in the paper
#endif
#ifndef MAX_CS
#define MAX_CS 16
#endif

__device__ __forceinline__ u32 ctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 nctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 clusterid() {
    u32 r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }
// The shared::cluster address of shared::cta address `a` in the block of cluster rank `rank`.
__device__ __forceinline__ u32 mapa(u32 a, u32 rank) {
    u32 d;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(rank));
    return d;
}
// Release/acquire cluster barrier (not .aligned: callers may reach it from divergent code).
// Entry: every block of the cluster runs and has written its shared memory before anyone reads it.
// Exit: no block leaves (freeing its shared memory) while another may still access it.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

// ---------------------------------------------------------------------------------------------
// Latency: one thread of rank 0 chases a random single-cycle chain of n elements (each holds the
// address of the next) in
//   slot 0: its own shared memory, u32 shared::cta addresses, ld.shared (LDS);
//   slot 1: its own shared memory through the cluster window: u64 generic addresses made by mapa of
//           its own rank, generic ld (LD.E.64: what ld.shared::cluster and a dereferenced
//           cluster.map_shared_rank pointer become on sm_90);
//   slot 2: the same in the literal PTX form, u32 mapa.shared::cluster addresses and
//           ld.shared::cluster.u32 (ptxas pairs each address with SR_SWINHI and may put a register
//           move into the dependency chain: kept to show what that form costs);
//   slot 2 + t: the shared memory of rank t (t = 1 .. cluster size - 1), as slot 1.
// res[3 s + 0 .. 2] of slot s: cycles of `steps` timed loads, the address the chase ended on, the
// address of element 0 (the host turns the end into an element index and checks it).
// place[2 b], place[2 b + 1]: %smid and %cluster_ctarank of block b.
// ---------------------------------------------------------------------------------------------
#define CHASE_SLOTS (2 + MAX_CS)

__device__ __forceinline__ u32 chase_lds(u32 a, u32 steps) {
#pragma unroll 4
    for (u32 i = 0; i < steps; i++) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a) :: "memory");
    return a;
}
__device__ __forceinline__ u32 chase_cluster32(u32 a, u32 steps) {
#pragma unroll 4
    for (u32 i = 0; i < steps; i++) asm volatile("ld.shared::cluster.u32 %0, [%0];" : "+r"(a) :: "memory");
    return a;
}
__device__ __forceinline__ u64 chase_generic(u64 p, u32 steps) {
#pragma unroll 4
    for (u32 i = 0; i < steps; i++) asm volatile("ld.u64 %0, [%0];" : "+l"(p) :: "memory");
    return p;
}
// The generic address of `p` (a generic pointer into this block's shared memory) in block `rank`.
__device__ __forceinline__ u64 mapa_generic(const void* p, u32 rank) {
    u64 d;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(d) : "l"((u64)p), "r"(rank));
    return d;
}

// kind: 0 = LDS on u32, 1 = generic on u64, 2 = ld.shared::cluster on u32
__device__ __forceinline__ void timed_chase(int kind, u64 first, u32 warm, u32 steps, u64* slot) {
    u64 a = first;
    if (kind == 0) a = chase_lds((u32)a, warm);
    else if (kind == 1) a = chase_generic(a, warm);
    else a = chase_cluster32((u32)a, warm);
    long long t0 = clk();
    if (kind == 0) a = chase_lds((u32)a, steps);
    else if (kind == 1) a = chase_generic(a, steps);
    else a = chase_cluster32((u32)a, steps);
    slot[1] = a;  // consumes a, so the closing clock read issues after the last load returned
    long long t1 = clk();
    slot[0] = (u64)(t1 - t0);
    slot[2] = first;
}

extern "C" __global__ void dsm_chase(const u32* chain, u32 n, u32 warm, u32 steps, u64* res, u32* place) {
    extern __shared__ u64 s64[];
    u32* s32 = (u32*)s64;
    const u32 base = smem_addr(s64), rank = ctarank(), cs = nctarank();
    if (threadIdx.x == 0) {
        place[2 * blockIdx.x] = smid();
        place[2 * blockIdx.x + 1] = rank;
    }
    cluster_sync();  // every block of the cluster runs before its shared memory is touched
    if (rank == 0 && threadIdx.x == 0) {
        // One thread writes every chain it chases, remote ones included: program order alone makes
        // them visible to its own loads (no ordering between threads is involved).
        // clock64 and %globaltimer around all the chases: the SM clock of this launch
        const long long c0 = clk();
        const u64 g0 = gtime();
        for (u32 i = 0; i < n; i++) s32[i] = base + chain[i] * 4u;
        timed_chase(0, base, warm, steps, res);
        for (u32 i = 0; i < n; i++) s64[i] = mapa_generic(s64 + chain[i], rank);
        timed_chase(1, mapa_generic(s64, rank), warm, steps, res + 3);
        for (u32 i = 0; i < n; i++) s32[i] = mapa(base + chain[i] * 4u, rank);
        timed_chase(2, mapa(base, rank), warm, steps, res + 6);
        for (u32 t = 1; t < cs && t < MAX_CS; t++) {
            for (u32 i = 0; i < n; i++)
                asm volatile("st.u64 [%0], %1;" :: "l"(mapa_generic(s64 + i, t)), "l"(mapa_generic(s64 + chain[i], t)) : "memory");
            timed_chase(1, mapa_generic(s64, t), warm, steps, res + 3 * (2 + t));
        }
        res[3 * CHASE_SLOTS] = (u64)(clk() - c0);
        res[3 * CHASE_SLOTS + 1] = gtime() - g0;
    }
    cluster_sync();  // the targets' shared memory stays valid until rank 0 is done
}

// The papers' index form of the local chase (j = s[j]: a shift and an add between dependent
// loads) in a cluster launch, beside slot 0's pointer chase. res: cycles, end index.
extern "C" __global__ void dsm_ichase(const u32* chain, u32 n, u32 warm, u32 steps, u64* res) {
    extern __shared__ u64 s64[];
    u32* s32 = (u32*)s64;
    const u32 base = smem_addr(s64);
    cluster_sync();
    if (ctarank() == 0 && threadIdx.x == 0) {
        for (u32 i = 0; i < n; i++) s32[i] = chain[i];
        u32 j = 0;
        for (u32 i = 0; i < warm; i++) asm volatile("{.reg .u32 a; shl.b32 a, %0, 2; add.u32 a, a, %1; ld.shared.u32 %0, [a];}" : "+r"(j) : "r"(base) : "memory");
        long long t0 = clk();
#pragma unroll 4
        for (u32 i = 0; i < steps; i++) asm volatile("{.reg .u32 a; shl.b32 a, %0, 2; add.u32 a, a, %1; ld.shared.u32 %0, [a];}" : "+r"(j) : "r"(base) : "memory");
        res[1] = j;  // consumes j, so the closing clock read issues after the last load returned
        long long t1 = clk();
        res[0] = (u64)(t1 - t0);
    }
    cluster_sync();
}

// ---------------------------------------------------------------------------------------------
// SM-to-SM round trips between ranks 0 and 1 of a cluster (both blocks are co-scheduled by
// construction, so spinning cannot deadlock): rank 0 sends 2k+1, rank 1 answers 2k+2, `rounds`
// times, through a global-memory flag (pingpong_global: st/ld.relaxed.gpu, i.e. through L2) or
// through the peer's shared memory (pingpong_dsm: st.shared::cluster into the peer, spin on one's
// own). Each wait gives up after spin_limit polls, so a lost message ends the kernel instead of
// hanging it. res: [0] cycles of all rounds on rank 0, [1] last value rank 0 saw, [2] timeouts
// (both ranks), [3] %smid of rank 0, [4] %smid of rank 1.
// ---------------------------------------------------------------------------------------------
template <bool DSM>
__device__ __forceinline__ void send(u32* flag, u32 peer_box, u32 v) {
    if (DSM) asm volatile("st.relaxed.cluster.shared::cluster.u32 [%0], %1;" :: "r"(peer_box), "r"(v) : "memory");
    else asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(flag), "r"(v) : "memory");
}
template <bool DSM>
__device__ __forceinline__ u32 poll(const u32* flag, u32 my_box) {
    u32 v;
    if (DSM) asm volatile("ld.relaxed.cluster.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(my_box) : "memory");
    else asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    return v;
}
template <bool DSM>
__device__ __forceinline__ u32 wait_for(const u32* flag, u32 my_box, u32 want, u32 limit, u32* timeouts) {
    u32 v = poll<DSM>(flag, my_box);
    for (u32 i = 0; v != want && i < limit; i++) v = poll<DSM>(flag, my_box);
    if (v != want) (*timeouts)++;
    return v;
}

template <bool DSM>
__device__ __forceinline__ void pingpong(u32* flag, u32 rounds, u32 spin_limit, u64* res) {
    __shared__ u32 box;
    const u32 rank = ctarank();
    if (threadIdx.x == 0) box = 0;
    cluster_sync();  // both mailboxes are cleared before the first message
    if (threadIdx.x == 0 && rank < 2) {
        const u32 my_box = smem_addr(&box), peer_box = mapa(my_box, rank ^ 1u);
        u32 timeouts = 0, v = 0;
        long long t0 = clk();
        for (u32 k = 0; k < rounds && timeouts == 0; k++) {
            if (rank == 0) {
                send<DSM>(flag, peer_box, 2 * k + 1);
                v = wait_for<DSM>(flag, my_box, 2 * k + 2, spin_limit, &timeouts);
            } else {
                v = wait_for<DSM>(flag, my_box, 2 * k + 1, spin_limit, &timeouts);
                send<DSM>(flag, peer_box, 2 * k + 2);
            }
        }
        long long t1 = clk();
        if (rank == 0) {
            res[0] = (u64)(t1 - t0);
            res[1] = v;
            res[3] = smid();
        } else {
            res[4] = smid();
        }
        if (timeouts) atomicAdd(&res[2], (u64)timeouts);
    }
    cluster_sync();  // the peer's mailbox stays valid until the last message landed
}

extern "C" __global__ void pingpong_global(u32* flag, u32 rounds, u32 spin_limit, u64* res) { pingpong<false>(flag, rounds, spin_limit, res); }
extern "C" __global__ void pingpong_dsm(u32* flag, u32 rounds, u32 spin_limit, u64* res) { pingpong<true>(flag, rounds, spin_limit, res); }

// ---------------------------------------------------------------------------------------------
// Throughput: every block fills its BW_WORDS words with (cluster * 7 + rank * 13 + i) & 255, then
// reads `iters` x ILP words of a target block's shared memory through the cluster window:
// pattern 0 ring (rank + 1) % n, 1 pair rank ^ 1, 2 broadcast rank 0, 3 self (own rank, through the
// cluster window: the interface's cost without the network). Thread t's j-th load reads word
// (j * blockDim + t) % BW_WORDS: consecutive lanes, consecutive banks. The ILP loads of an iteration
// are issued before any of their values is used. Loads are generic (LD.E) on the pointer
// mapa gives, as cluster.map_shared_rank code does: the literal ld.shared::cluster.u32 form
// re-reads SR_SWINHI and moves it into every address pair, which is not the network's cost.
// sums[b]: sum of the values block b read (u64, checked on the host);
// place[2 b], place[2 b + 1]: %smid, %cluster_ctarank.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ u32 target_rank(u32 pattern, u32 rank, u32 cs) {
    switch (pattern) {
        case 0: return (rank + 1) % cs;
        case 1: return rank ^ 1u;
        case 2: return 0;
        default: return rank;
    }
}

template <int ILP>
__device__ __forceinline__ void dsm_read(u32 pattern, u32 iters, u64* sums, u32* place) {
    extern __shared__ u32 s[];
    const u32 rank = ctarank(), cs = nctarank(), cid = clusterid();
    for (u32 i = threadIdx.x; i < BW_WORDS; i += blockDim.x) s[i] = (cid * 7u + rank * 13u + i) & 255u;
    if (threadIdx.x == 0) {
        place[2 * blockIdx.x] = smid();
        place[2 * blockIdx.x + 1] = rank;
    }
    cluster_sync();
    const u32* remote = (const u32*)mapa_generic(s, target_rank(pattern, rank, cs));
    u32 acc[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) acc[k] = 0;
    u32 w = threadIdx.x;
    const u32 step = blockDim.x;
#pragma unroll 1
    for (u32 it = 0; it < iters; it++) {
        u32 v[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++)
            asm volatile("ld.u32 %0, [%1];" : "=r"(v[k]) : "l"(remote + ((w + k * step) & (BW_WORDS - 1))));
#pragma unroll
        for (int k = 0; k < ILP; k++) acc[k] += v[k];
        w += ILP * step;
    }
    u32 total = 0;
#pragma unroll
    for (int k = 0; k < ILP; k++) total += acc[k];
    for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(&sums[blockIdx.x], (u64)total);
    cluster_sync();  // the target stays resident until every reader of its shared memory is done
}

extern "C" __global__ void dsm_read_ilp1(u32 pattern, u32 iters, u64* sums, u32* place) { dsm_read<1>(pattern, iters, sums, place); }
extern "C" __global__ void dsm_read_ilp2(u32 pattern, u32 iters, u64* sums, u32* place) { dsm_read<2>(pattern, iters, sums, place); }
extern "C" __global__ void dsm_read_ilp4(u32 pattern, u32 iters, u64* sums, u32* place) { dsm_read<4>(pattern, iters, sums, place); }

// ---------------------------------------------------------------------------------------------
// Histogram with the bins of a cluster spread over its blocks (the CUDA sample "histogram" redone
// with DSM, as in the paper): the block of rank r owns bins [r * bpb, (r + 1) * bpb),
// bpb = 1 << bpb_log2. Element value & bin_mask is its bin; it is counted by an atomic add on its
// owner's shared memory through the cluster window (mapa + atom.shared::cluster). Afterwards each
// block adds its bins to the global histogram. A cluster of one uses the same path.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void dsm_hist(const u32* data, u32 n, u32 bin_mask, u32 bpb_log2, u32* hist) {
    extern __shared__ u32 bins[];
    const u32 bpb = 1u << bpb_log2, rank = ctarank();
    for (u32 i = threadIdx.x; i < bpb; i += blockDim.x) bins[i] = 0;
    cluster_sync();  // every owner has cleared its bins before anyone counts into them
    const u32 base = smem_addr(bins);
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const u32 b = __ldg(data + i) & bin_mask;
        const u32 a = mapa(base + ((b & (bpb - 1)) << 2), b >> bpb_log2);
        u32 old;
        asm volatile("atom.shared::cluster.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(a) : "memory");
    }
    cluster_sync();  // every count has landed before the owner reads its bins
    for (u32 i = threadIdx.x; i < bpb; i += blockDim.x) {
        const u32 c = bins[i];
        if (c) atomicAdd(hist + rank * bpb + i, c);
    }
}

// The same histogram without clusters: all bins in the block's own shared memory, plain shared
// atomics (ATOMS): the reference a cluster of one is compared with.
extern "C" __global__ void smem_hist(const u32* data, u32 n, u32 bin_mask, u32 nbins, u32* hist) {
    extern __shared__ u32 bins[];
    for (u32 i = threadIdx.x; i < nbins; i += blockDim.x) bins[i] = 0;
    __syncthreads();
    const u32 stride = gridDim.x * blockDim.x;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) atomicAdd(bins + (__ldg(data + i) & bin_mask), 1u);
    __syncthreads();
    for (u32 i = threadIdx.x; i < nbins; i += blockDim.x) {
        const u32 c = bins[i];
        if (c) atomicAdd(hist + i, c);
    }
}
