// Small-M GEMM on Hopper (issue 30 §2): a few tokens X (M x K row-major) against a large weight W (N x K
// row-major, i.e. B column-major), C = X W^T (M x N row-major, 16-bit; fp8 e4m3 in, C = scale_a scale_b X W^T
// in bf16 with SM_FP8). The tensor cores run it "swap AB":
// D = W X^T (N x M) with W on wgmma's M side (m64 slices, where the rows are plentiful) and the tokens on
// its N side, padded to SM_MP (16, 32, 64 or 128): at 16 tokens a 128-row weight tile costs 1/8 of the
// tensor-core work of our 128 x 128 tiles, and the kernel becomes what the GEMM is, a stream of the weight
// from DRAM.
//
// One CTA: SM_BW weight rows (SM_BW / 64 m64 slices) x SM_MP tokens over a K range (split-K), one producer
// warp (one thread issues TMA loads of the weight box and the token box, 128-byte swizzle, tokens past M
// zero-filled) into an SM_STAGES-deep full/empty mbarrier ring, one consumer warpgroup (wgmma from the
// shared-memory descriptors). Grid (token tiles, splits, weight tiles): the token tiles of one weight
// slice launch together so that the second reads its rows from L2.
//
// Split-K (splits > 1): each CTA stores its fp32 partial tile (thread-major, coalesced) into the workspace,
// then one thread bumps the tile's counter (acq_rel at gpu scope, after a CTA barrier: the release covers
// every consumer thread's stores); the CTA that sees splits - 1 is the last: it zeroes the counter for the
// next launch and sums the partials in split order (deterministic whichever CTA comes last), then writes
// C. splits == 1 writes C straight from the accumulators. C = D^T: lanes l and l ^ 4 hold neighbouring
// weight rows, so one shuffle gives each lane two adjacent n of one token: 4-byte stores, checked m < M
// (N is a multiple of 8).
//
// Defines: SM_MP, SM_BW (64 or 128), SM_STAGES, SM_F16 (1: fp16, 0: bf16), SM_FP8 (1: e4m3 operands, a 128-byte
// row of K holding 128 of them, wgmma k32, the per-tensor scales read after the PDL wait), SM_CTAS (CTAs per SM the
// launch bounds plan for), SM_WAIT_HINT (mbarrier suspend-time hint in ns, 0: none), SM_EVICT_FIRST
// (1: the weight loads carry an L2 evict-first policy: each byte is read once, the tokens and partials stay),
// SM_PDL_TRIGGER (where a CTA lets the next grid be scheduled: 0 at its start, 1 once its last load is issued,
// 2 at its exit, the default: see the wait below).
// Every mbarrier wait traps after ~2^32 cycles: a pipeline bug fails the launch instead of hanging the GPU.
#include "gpudissect.cuh"

#if !defined(SM_MP) || !defined(SM_STAGES)
#error "gemm_small.cu needs SM_MP and SM_STAGES"
#endif
#ifndef SM_BW
#define SM_BW 128
#endif
#ifndef SM_F16
#define SM_F16 0
#endif
#ifndef SM_FP8
#define SM_FP8 0
#endif
#if SM_FP8 && SM_F16
#error "SM_FP8 writes bf16: it takes no SM_F16"
#endif
#ifndef SM_CTAS
#define SM_CTAS 2
#endif
#ifndef SM_WAIT_HINT
#define SM_WAIT_HINT 0
#endif
#ifndef SM_EVICT_FIRST
#define SM_EVICT_FIRST 0
#endif
#ifndef SM_PDL_TRIGGER
#define SM_PDL_TRIGGER 2
#endif
#if SM_BW != 64 && SM_BW != 128
#error "SM_BW must be 64 or 128"
#endif
#if SM_F16
#define SM_TSTR "f16"
#define SM_CVT "cvt.rn.f16x2.f32"
#elif SM_FP8
#define SM_TSTR "e4m3"
#define SM_CVT "cvt.rn.bf16x2.f32"
#else
#define SM_TSTR "bf16"
#define SM_CVT "cvt.rn.bf16x2.f32"
#endif
typedef unsigned short u16;

#define SLICES (SM_BW / 64)         // m64 wgmmas per 32-byte step of K
#define SM_BK (SM_FP8 ? 128 : 64)  // elements of K in one 128-byte row (a k-block)
#define NACC (SM_MP / 2)            // f32 accumulators per thread and slice
#define W_BYTES (SM_BW * 128)       // one 128-byte row of K per weight row
#define X_BYTES (SM_MP * 128)
#define STAGE_BYTES (W_BYTES + X_BYTES)  // a multiple of 1024: every tile starts on a swizzle period
#define THREADS 160                 // the consumer warpgroup (warps 0-3) and the producer warp (4)
#define EPI_BAR 1                   // named barrier of the consumer warpgroup

struct __align__(64) TmaDesc { u64 v[16]; };

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

__device__ __forceinline__ u32 pack2(float lo, float hi) {
    u32 r;
    asm(SM_CVT " %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try(u32 bar, u32 parity) {
    u32 ok;
#if SM_WAIT_HINT
    // the waiting thread sleeps until the phase completes (or the hint runs out) instead of spinning
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok) : "r"(bar), "r"(parity), "r"(SM_WAIT_HINT) : "memory");
#else
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
#endif
    return ok != 0;
}
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    if (mbar_try(bar, parity)) return;
    const long long t0 = clk();
    while (!mbar_try(bar, parity))
        if (clk() - t0 > (1ll << 32)) __trap();  // a lost arrival: fail the launch, never hang
}
__device__ __forceinline__ void tma_load(u32 dst, const TmaDesc* map, int x, int y, u32 bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"((u64)map), "r"(x), "r"(y), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_load_hint(u32 dst, const TmaDesc* map, int x, int y, u32 bar, u64 policy) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 :: "r"(dst), "l"((u64)map), "r"(x), "r"(y), "r"(bar), "l"(policy) : "memory");
}
// K-major operand in 128-byte swizzle: start >> 4, leading offset 1 (unused), stride 1024 B (8 rows) >> 4.
__device__ __forceinline__ u64 desc128(u32 addr) {
    return (u64)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((u64)(1024 >> 4) << 32) | (1ull << 62);
}

// D(64 x SM_MP, f32) += W(64 x 32 bytes of K, smem) * X^T(32 bytes of K x SM_MP, smem), both K-major, 128-byte
// swizzle: k16 of a 16-bit type, k32 of e4m3 (whose wgmma takes no transpose operands).
#define WG_HEAD "{\n.reg .pred p;\nsetp.ne.b32 p, %" 
#define F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define F8(i) F4(i), F4(i + 4)
#define F16(i) F8(i), F8(i + 8)
#define F32(i) F16(i), F16(i + 16)
#if SM_FP8
#define WG_K "k32"
#define WG_TAIL "p, 1, 1;\n}\n"
#else
#define WG_K "k16"
#define WG_TAIL "p, 1, 1, 0, 0;\n}\n"
#endif
#define WG_OP "wgmma.mma_async.sync.aligned.m64n" WG_N WG_K ".f32." SM_TSTR "." SM_TSTR " "
#if SM_MP == 16
#define WG_N "16"
#define WG_REGS "{%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, " WG_TAIL
#define WG_SD "10"
#define WG_OUT F8(0)
#elif SM_MP == 32
#define WG_N "32"
#define WG_REGS "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, " WG_TAIL
#define WG_SD "18"
#define WG_OUT F16(0)
#elif SM_MP == 64
#define WG_N "64"
#define WG_REGS "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26," \
                "%27,%28,%29,%30,%31}, %32, %33, " WG_TAIL
#define WG_SD "34"
#define WG_OUT F32(0)
#elif SM_MP == 128
#define WG_N "128"
#define WG_REGS "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26," \
                "%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51," \
                "%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, " WG_TAIL
#define WG_SD "66"
#define WG_OUT F32(0), F32(32)
#else
#error "SM_MP must be 16, 32, 64 or 128"
#endif
// sd = 0: D = W X^T, the accumulators' old values ignored (the CTA's first k16 step: no zeroing needed)
__device__ __forceinline__ void wgmma_small(float (&d)[NACC], u64 dw, u64 dx, int sd) {
    asm volatile(WG_HEAD WG_SD ", 0;\n" WG_OP WG_REGS : WG_OUT : "l"(dw), "l"(dx), "r"(sd) : "memory");
}

__device__ __forceinline__ void consumer_bar() { asm volatile("bar.sync %0, 128;" :: "n"(EPI_BAR) : "memory"); }

// C[m][n] = D[n][m] from the accumulators of one slice (rows n0.., tokens m0..): lanes l and l ^ 4 hold weight
// rows r and r + 1 (r even on the lane with bit 2 clear) for the same two tokens c, c + 1; one shuffle leaves
// the even lane (D[r][c], D[r+1][c]) and the odd lane (D[r][c+1], D[r+1][c+1]): 4-byte stores.
__device__ __forceinline__ void store_c(const float (&d)[NACC], u16* C, int M, int N, int n0, int m0, float scale) {
    const int t = threadIdx.x & 127, w = t >> 5, l = t & 31;
    const bool odd = (l >> 2) & 1;
    #pragma unroll
    for (int j = 0; j < SM_MP / 8; ++j)
        #pragma unroll
        for (int h = 0; h < 2; ++h) {  // rows +0 and +8
            const float a = d[4 * j + 2 * h] * scale, b = d[4 * j + 2 * h + 1] * scale;
            const float got = __shfl_xor_sync(0xffffffffu, odd ? a : b, 4);
            const int n = n0 + 16 * w + 8 * h + ((l >> 2) & ~1);
            const int m = m0 + 8 * j + 2 * (l & 3) + (odd ? 1 : 0);
            const u32 v = odd ? pack2(got, b) : pack2(a, got);
            if (m < M && n < N) *(u32*)(C + (size_t)m * N + n) = v;
        }
}

// grid: (token tiles, splits, weight tiles); block THREADS; dynamic smem SM_STAGES x STAGE_BYTES + 1 KiB.
// kb_per: k-blocks (SM_BK of K: a 128-byte row) per split; the host makes every split non-empty.
extern "C" __global__ void __launch_bounds__(THREADS, SM_CTAS)
gemm_small(const __grid_constant__ TmaDesc tw, const __grid_constant__ TmaDesc tx, u16* C, float* ws, u32* counters,
#if SM_FP8
           const float* scale_a, const float* scale_b,
#endif
           int M, int N, int K, int kb_per) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) u64 full_mem[SM_STAGES], empty_mem[SM_STAGES];
    __shared__ u32 last_flag;
    const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;  // the 128-byte swizzle repeats every 1024 bytes
    const u32 full0 = smem_u32(&full_mem[0]), empty0 = smem_u32(&empty_mem[0]);
    const int mt = blockIdx.x, split = blockIdx.y, nt = blockIdx.z, splits = gridDim.y;
    const int KB = (K + SM_BK - 1) / SM_BK;  // a partial last k-block is zero-filled by TMA
    const int kb0 = split * kb_per, nkb = min(KB, kb0 + kb_per) - kb0;
    const int n0 = nt * SM_BW, m0 = mt * SM_MP;
    if (threadIdx.x == 0) {
        for (int s = 0; s < SM_STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, 4);  // lane 0 of every consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"((u64)&tw) : "memory");  // parameters: no grid writes them
        asm volatile("prefetch.tensormap [%0];" :: "l"((u64)&tx) : "memory");
    }
    __syncthreads();
    // programmatic dependent launch (small_launch.py sets the attribute): past the wait the previous grid in the
    // stream has completed and its writes are visible. The next grid is let in only as this one's CTAs exit (no
    // launch_dependents): triggered at the start, its CTAs took the SMs this grid left free and ran slower than
    // with no dependent launch at all (small_launch.SmallLaunch.pdl). Without the attribute the wait is a no-op.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#if SM_PDL_TRIGGER == 0
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    if (threadIdx.x >= 128) {  // the producer warp: one thread issues every load
        if (threadIdx.x == 128) {
#if SM_EVICT_FIRST
            u64 policy;
            asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
#endif
            u32 s = 0, ph = 0;
            for (int i = 0; i < nkb; ++i) {
                mbar_wait(empty0 + 8 * s, ph ^ 1);  // round 0: the barrier's "previous phase" counts as done
                const u32 st = base + s * STAGE_BYTES, fb = full0 + 8 * s;
                const int kx = (kb0 + i) * SM_BK;
                mbar_expect_tx(fb, STAGE_BYTES);
#if SM_EVICT_FIRST
                tma_load_hint(st, &tw, kx, n0, fb, policy);
#else
                tma_load(st, &tw, kx, n0, fb);
#endif
                tma_load(st + W_BYTES, &tx, kx, m0, fb);
                if (++s == SM_STAGES) { s = 0; ph ^= 1; }
            }
#if SM_PDL_TRIGGER == 1
            asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // every load of this CTA issued
#endif
        }
        return;
    }
    const int t = threadIdx.x, l = t & 31;
    float acc[SLICES][NACC];
    #pragma unroll
    for (int ms = 0; ms < SLICES; ++ms)
        #pragma unroll
        for (int i = 0; i < NACC; ++i) acc[ms][i] = 0.f;
    u32 s = 0, ph = 0, prev = 0;
    for (int i = 0; i < nkb; ++i) {
        mbar_wait(full0 + 8 * s, ph);
        const u32 st = base + s * STAGE_BYTES;
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        #pragma unroll
        for (int kk = 0; kk < 4; ++kk)  // 4 x 32 bytes of K per 128-byte row (k16 of 16-bit, k32 of e4m3)
            #pragma unroll
            for (int ms = 0; ms < SLICES; ++ms)
                wgmma_small(acc[ms], desc128(st + ms * 64 * 128 + kk * 32), desc128(st + W_BYTES + kk * 32),
                            (int)(i > 0 || kk > 0));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        // keep this k-block's wgmmas in flight; the previous one's are done: free its stage
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        if (i > 0 && l == 0) mbar_arrive(empty0 + 8 * prev);
        prev = s;
        if (++s == SM_STAGES) { s = 0; ph ^= 1; }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    if (splits > 1) {
        const int tile = nt * gridDim.x + mt;
        float* mine = ws + ((size_t)tile * splits + split) * (SLICES * NACC * 128) + t;
        #pragma unroll
        for (int ms = 0; ms < SLICES; ++ms)
            #pragma unroll
            for (int i = 0; i < NACC; ++i) __stcg(mine + (ms * NACC + i) * 128, acc[ms][i]);
        consumer_bar();  // every consumer thread's partial is stored before the release below
        if (t == 0) {
            u32 old;
            asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counters + tile) : "memory");
            const bool last = old == (u32)(splits - 1);
            if (last) asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" :: "l"(counters + tile) : "memory");
            last_flag = last;
        }
        consumer_bar();
        if (!last_flag) return;
        // the last CTA of the tile: every split's partial, in split order
        const float* all = ws + (size_t)tile * splits * (SLICES * NACC * 128) + t;
        #pragma unroll
        for (int ms = 0; ms < SLICES; ++ms)
            #pragma unroll
            for (int i = 0; i < NACC; ++i) acc[ms][i] = 0.f;
        for (int s2 = 0; s2 < splits; ++s2) {
            const float* p = all + (size_t)s2 * (SLICES * NACC * 128);
            #pragma unroll
            for (int ms = 0; ms < SLICES; ++ms)
                #pragma unroll
                for (int i = 0; i < NACC; ++i) acc[ms][i] += __ldcg(p + (ms * NACC + i) * 128);
        }
    }
#if SM_FP8
    const float scale = *scale_a * *scale_b;  // past the PDL wait: a grid before may have written them
#else
    const float scale = 1.f;
#endif
    #pragma unroll
    for (int ms = 0; ms < SLICES; ++ms) store_c(acc[ms], C, M, N, n0 + 64 * ms, m0, scale);
}
