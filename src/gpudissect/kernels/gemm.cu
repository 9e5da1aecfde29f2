// Our tensor-core GEMM on Hopper, C = A * B^T with fp32 accumulation (issue 13; Yan et al. §VI as
// the method). A is M x K row-major, B is given as N x K row-major (B column-major, Yan's layout),
// C is M x N row-major in the input type. One file, one rung of the ladder per compile-time variant:
//
//   GM_RUNG 1  mma.sync m16n8k16 + ldmatrix + 4-stage cp.async, XOR-swizzled 64-byte rows
//              (the Ampere design Yan's HGEMM leads to); 128 threads, 128x128x32 tiles.
//   GM_RUNG 2  TMA (cp.async.bulk.tensor, 128-byte swizzle) + wgmma from shared memory, mbarrier
//              pipeline; one warpgroup loads and computes (thread 0 issues the copies).
//   GM_RUNG 3  warp specialisation: a producer warpgroup (setmaxnreg.dec) issues TMA, two consumer
//              warpgroups (setmaxnreg.inc) run wgmma; full/empty mbarrier pairs per stage.
//   GM_RUNG 4  rung 3 made persistent: one CTA per SM walks tiles in grouped order (GM_GROUP tile
//              rows per group), so the producer prefetches the next tile during the epilogue.
//   GM_RUNG 5  rung 4 in clusters of 2 CTAs stacked along M: each CTA loads its A tile and half of the
//              shared B tile, multicast to both; a stage is free once the consumers of both CTAs
//              released it (remote mbarrier arrives through mapa).
//
//   GM_RUNG 6  (see below) TMA-store epilogue; 7: cuBLAS's 256x128 tile in 1x2 clusters;
//   GM_RUNG 8  rung 6 with stream-K on the last waves (GM_SK): the host passes `dp`, the units run
//              data-parallel; the k-blocks of the rest are spread evenly over all clusters; a tile split
//              between clusters is summed in fp32 through a global workspace by the cluster holding
//              its first k-blocks (flags with release/acquire at gpu scope). Which units to split is
//              the host's rule (analysis/gemm_model.stream_k_dp: rung 8 splits the last 1-1.5 waves when
//              the last is at most half full; rung 10 also splits a fuller last wave on its own, into
//              heads and tails, where that pays).
//
// Defines: GM_RUNG, GM_F16 (1: fp16, 0: bf16), and for rungs 2-4 GM_BM, GM_BN, GM_STAGES,
// GM_CONSUMERS (consumer warpgroups), GM_GROUP (0: row-major tile order).
// Every mbarrier wait gives up with a trap after ~2^32 cycles: a pipeline bug ends the launch with an
// error instead of hanging the shared GPU.
#include "gpudissect.cuh"

#ifndef GM_RUNG
#error "gemm.cu needs GM_RUNG"
#endif
#ifndef GM_F16
#define GM_F16 0
#endif
#ifndef GM_FP8
#define GM_FP8 0
#endif
#ifndef GM_SK
#define GM_SK 0
#endif
#if GM_FP8 && (GM_F16 || GM_RUNG < 6)
#error "fp8 e4m3 (bf16 out) is built on rung 6 and later only"
#endif
#if GM_FP8
#define GM_TSTR "e4m3"
#define GM_CVT "cvt.rn.bf16x2.f32"
#elif GM_F16
#define GM_TSTR "f16"
#define GM_CVT "cvt.rn.f16x2.f32"
#else
#define GM_TSTR "bf16"
#define GM_CVT "cvt.rn.bf16x2.f32"
#endif
typedef unsigned short u16;

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// Two fp32 accumulators -> one 32-bit word of two 16-bit outputs (lo in the low half).
__device__ __forceinline__ u32 pack2(float lo, float hi) {
    u32 r;
    asm(GM_CVT " %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

#if GM_RUNG == 1
// ------------------------------------------------------------------------------------------------
// Rung 1: mma.sync + ldmatrix + multistage cp.async.
// Shared tiles: 128 rows x 32 elements (64 bytes = 4 chunks of 16 bytes) per operand and stage; chunk
// c of row r is stored at chunk c ^ ((r >> 1) & 3): the 8 rows one ldmatrix phase reads then fall
// on 8 distinct 16-byte bank groups (row pairs share a 128-byte line), so ldmatrix and the
// cp.async stores are conflict-free without padding.
// ------------------------------------------------------------------------------------------------
#define R1_BM 128
#define R1_BN 128
#define R1_BK 32
#define R1_STAGES 4
#define R1_TILE_BYTES (R1_BM * R1_BK * 2)

__device__ __forceinline__ u32 r1_off(int row, int chunk) { return row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4); }

__device__ __forceinline__ void cp16(u32 dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void ldsm4(u32 (&r)[4], u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void mma16816(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." GM_TSTR "." GM_TSTR ".f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One stage: A rows m0.., B rows n0.., K columns k0..k0+31; 4 chunks of A and 4 of B per thread.
__device__ __forceinline__ void r1_load(u32 sa, u32 sb, const u16* A, const u16* B, int K, int m0, int n0, int k0) {
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int idx = threadIdx.x + i * 128, row = idx >> 2, chunk = idx & 3;
        cp16(sa + r1_off(row, chunk), A + (size_t)(m0 + row) * K + k0 + chunk * 8);
        cp16(sb + r1_off(row, chunk), B + (size_t)(n0 + row) * K + k0 + chunk * 8);
    }
}

// grid: (N / 128, M / 128); block 128 = 4 warps in 2 x 2, each a 64 x 64 warp tile.
extern "C" __global__ void __launch_bounds__(128, 1) gemm_r1(const u16* A, const u16* B, u16* C, int M, int N, int K) {
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 base = smem_u32(smem);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp >> 1, wn = warp & 1;
    const int m0 = blockIdx.y * R1_BM, n0 = blockIdx.x * R1_BN, KB = K / R1_BK;
    float acc[4][8][4];
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
    #pragma unroll
    for (int s = 0; s < R1_STAGES - 1; ++s) {
        if (s < KB) r1_load(base + s * 2 * R1_TILE_BYTES, base + (s * 2 + 1) * R1_TILE_BYTES, A, B, K, m0, n0, s * R1_BK);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kb = 0; kb < KB; ++kb) {
        asm volatile("cp.async.wait_group %0;" :: "n"(R1_STAGES - 2) : "memory");
        __syncthreads();  // stage kb landed for every thread; stage kb-1 is no longer read by anyone
        const int nk = kb + R1_STAGES - 1, ns = nk % R1_STAGES;
        if (nk < KB) r1_load(base + ns * 2 * R1_TILE_BYTES, base + (ns * 2 + 1) * R1_TILE_BYTES, A, B, K, m0, n0, nk * R1_BK);
        asm volatile("cp.async.commit_group;" ::: "memory");
        const int s = kb % R1_STAGES;
        const u32 sa = base + s * 2 * R1_TILE_BYTES, sb = sa + R1_TILE_BYTES;
        #pragma unroll
        for (int kk = 0; kk < 2; ++kk) {
            u32 af[4][4], bf[4][4];
            #pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int row = wm * 64 + i * 16 + (lane & 15);
                ldsm4(af[i], sa + r1_off(row, kk * 2 + (lane >> 4)));
            }
            #pragma unroll
            for (int p = 0; p < 4; ++p) {
                const int row = wn * 64 + p * 16 + (lane & 7) + ((lane >> 4) << 3);
                ldsm4(bf[p], sb + r1_off(row, kk * 2 + ((lane >> 3) & 1)));
            }
            #pragma unroll
            for (int i = 0; i < 4; ++i)
                #pragma unroll
                for (int j = 0; j < 8; ++j) mma16816(acc[i][j], af[i], bf[j >> 1][(j & 1) * 2], bf[j >> 1][(j & 1) * 2 + 1]);
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        #pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int row = m0 + wm * 64 + i * 16 + (lane >> 2), col = n0 + wn * 64 + j * 8 + 2 * (lane & 3);
            *(u32*)(C + (size_t)row * N + col) = pack2(acc[i][j][0], acc[i][j][1]);
            *(u32*)(C + (size_t)(row + 8) * N + col) = pack2(acc[i][j][2], acc[i][j][3]);
        }
}

#else
// ------------------------------------------------------------------------------------------------
// Rungs 2-4: TMA + wgmma. Each stage holds the A tile (BM rows x 64 elements = 128 bytes per row) and
// the B tile (BN rows x 128 bytes), both written by TMA with the 128-byte swizzle and read by wgmma
// through descriptors of the same swizzle (stride 1024 bytes per 8 rows); the k16 steps inside a
// 128-byte row advance the descriptor's start address by 32 bytes.
// ------------------------------------------------------------------------------------------------
#if !defined(GM_BM) || !defined(GM_BN) || !defined(GM_STAGES) || !defined(GM_CONSUMERS) || !defined(GM_GROUP)
#error "gemm.cu rungs 2-4 need GM_BM, GM_BN, GM_STAGES, GM_CONSUMERS, GM_GROUP"
#endif
#define GM_BK (GM_FP8 ? 128 : 64)  // elements in one 128-byte row
#define A_BYTES (GM_BM * 128)
#define B_BYTES (GM_BN * 128)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define WG_ROWS (GM_BM / GM_CONSUMERS)  // rows of C per consumer warpgroup
#define MSLICES (WG_ROWS / 64)           // m64 wgmmas per k16 step and consumer
#define NACC (GM_BN / 2)                 // f32 accumulators per thread and m64 slice
#if GM_RUNG >= 3
#define PRODUCER 1
#define THREADS (128 * (GM_CONSUMERS + 1))
#else
#define PRODUCER 0
#define THREADS 128
#endif
#if GM_RUNG >= 4
#define PERSISTENT 1
#else
#define PERSISTENT 0
#endif
#if GM_RUNG >= 6
#if !defined(GM_CLM) || !defined(GM_CLN) || GM_CLM > 2 || GM_CLN > 2
#error "rungs 6+ need GM_CLM (CTAs along M sharing B) and GM_CLN (along N sharing A), each 1 or 2"
#endif
#define CLUSTER (GM_CLM * GM_CLN)
#elif GM_RUNG >= 5
#define CLUSTER 2  // CTAs along M that share (multicast) one B tile
#else
#define CLUSTER 1
#endif

struct __align__(64) TmaDesc { u64 v[16]; };

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
#ifndef GM_WAIT_HINT
#define GM_WAIT_HINT 0
#endif
__device__ __forceinline__ bool mbar_try(u32 bar, u32 parity) {
    u32 ok;
#if GM_WAIT_HINT
    // with a suspend-time hint (ns): the waiting thread sleeps until the phase completes or the hint runs
    // out, instead of returning after the hardware's default limit and spinning through the retry loop
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\nselp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok) : "r"(bar), "r"(parity), "r"(GM_WAIT_HINT) : "memory");
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
// The same box into the same shared offset of every CTA in `mask`, each CTA's mbarrier at `bar` told.
__device__ __forceinline__ void tma_load_mc(u32 dst, const TmaDesc* map, int x, int y, u32 bar, unsigned short mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;"
                 :: "r"(dst), "l"((u64)map), "r"(x), "r"(y), "r"(bar), "h"(mask) : "memory");
}
__device__ __forceinline__ u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Arrive on the mbarrier at the same shared offset in CTA `rank` of the cluster (self included).
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 rank) {
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}" :: "r"(bar), "r"(rank) : "memory");
}
// a box of the tensor map at (x, y) fetched into L2 only (no shared memory, no barrier)
__device__ __forceinline__ void tma_prefetch_l2(const TmaDesc* map, int x, int y) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" :: "l"((u64)map), "r"(x), "r"(y)
                 : "memory");
}
__device__ __forceinline__ void tma_load(u32 dst, const TmaDesc* map, int x, int y, u32 bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(dst), "l"((u64)map), "r"(x), "r"(y), "r"(bar) : "memory");
}
// Matrix descriptor of a K-major operand in 128-byte swizzle: start >> 4, leading offset 1 (unused
// for swizzled K-major), stride 1024 bytes (8 rows of 128 bytes) >> 4, layout type 1 = 128B swizzle.
__device__ __forceinline__ void release_stage(u32 bar) {
#if CLUSTER > 1
    #pragma unroll
    for (u32 c = 0; c < CLUSTER; ++c) mbar_arrive_cluster(bar, c);
#else
    mbar_arrive(bar);
#endif
}
__device__ __forceinline__ u64 desc128(u32 addr) {
    return (u64)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((u64)(1024 >> 4) << 32) | (1ull << 62);
}

#if GM_RUNG <= 5
// D(64 x 128, f32) += A(64 x 16, smem) * B(16 x 128, smem): both K-major, 128-byte swizzle.
__device__ __forceinline__ void wgmma_n128(float (&d)[64], u64 da, u64 db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." GM_TSTR "." GM_TSTR " "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(1) : "memory");
}

// D(64 x 256, f32) += A(64 x 16, smem) * B(16 x 256, smem): both K-major, 128-byte swizzle.
__device__ __forceinline__ void wgmma_n256(float (&d)[128], u64 da, u64 db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." GM_TSTR "." GM_TSTR " "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(1) : "memory");
}

#if GM_BN == 256
#define WGMMA wgmma_n256
#elif GM_BN == 128
#define WGMMA wgmma_n128
#else
#error "rungs 2-5 need GM_BN 128 or 256"
#endif
#endif  // GM_RUNG <= 5

// Tile index -> (tile row, tile column): row-major, or GM_GROUP tile rows at a time walked column by
// column, so that the CTAs running together share A rows and B columns in L2.
__device__ __forceinline__ void tile_coords(int t, int tm_n, int tn_n, int& tm, int& tn) {
#if GM_GROUP > 0
    const int width = GM_GROUP * tn_n, g = t / width, first = g * GM_GROUP;
    const int rows = min(tm_n - first, GM_GROUP), r = t % width;
    tm = first + r % rows;
    tn = r / rows;
#else
    tm = t / tn_n;
    tn = t % tn_n;
#endif
}

#if GM_RUNG <= 5
__device__ __forceinline__ void store_tile(float (&acc)[MSLICES][NACC], u16* C, int M, int N, int row0, int col0) {
    const int t = threadIdx.x & 127, w = t >> 5, l = t & 31;
    #pragma unroll
    for (int ms = 0; ms < MSLICES; ++ms)
        #pragma unroll
        for (int j = 0; j < GM_BN / 8; ++j) {
            const int row = row0 + ms * 64 + 16 * w + (l >> 2), col = col0 + 8 * j + 2 * (l & 3);
            if (col < N) {
                if (row < M) *(u32*)(C + (size_t)row * N + col) = pack2(acc[ms][4 * j], acc[ms][4 * j + 1]);
                if (row + 8 < M) *(u32*)(C + (size_t)(row + 8) * N + col) = pack2(acc[ms][4 * j + 2], acc[ms][4 * j + 3]);
            }
        }
}

// One k-block of one consumer warpgroup: 4 k16 steps x MSLICES m64 wgmmas, committed as one group.
__device__ __forceinline__ void mma_stage(float (&acc)[MSLICES][NACC], u32 stage, int wg_row) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    #pragma unroll
    for (int kk = 0; kk < GM_BK / 16; ++kk)
        #pragma unroll
        for (int ms = 0; ms < MSLICES; ++ms)
            WGMMA(acc[ms], desc128(stage + (wg_row + ms * 64) * 128 + kk * 32), desc128(stage + A_BYTES + kk * 32));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// grid: tiles (rungs 2-3) or one CTA per SM (rung 4); block THREADS; dynamic smem STAGES x STAGE_BYTES + 1 KiB.
extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm_tma(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb, u16* C, int M, int N, int K) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) u64 full_mem[GM_STAGES], empty_mem[GM_STAGES];
    const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;  // the 128-byte swizzle repeats every 1024 bytes
    const int tm_n = (M + GM_BM - 1) / GM_BM, tn_n = (N + GM_BN - 1) / GM_BN, tiles = tm_n * tn_n;
    const int KB = (K + GM_BK - 1) / GM_BK;  // a partial last k-block is zero-filled by TMA
    if (threadIdx.x == 0) {
        for (int s = 0; s < GM_STAGES; ++s) {
            mbar_init(smem_u32(&full_mem[s]), 1);
            mbar_init(smem_u32(&empty_mem[s]), CLUSTER * GM_CONSUMERS * 4);  // lane 0 of every consumer warp of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
#if CLUSTER > 1
    cluster_sync();  // the peer's barriers are initialised before any multicast or remote arrive reaches them
    const int rank = (int)cluster_rank();
#else
    __syncthreads();
    const int rank = 0;
#endif
    // work units: one tile, or (cluster) CLUSTER tiles stacked along M that share the B tile
    const int um_n = (tm_n + CLUSTER - 1) / CLUSTER, units = um_n * tn_n;
#if PERSISTENT
    const int t_first = blockIdx.x / CLUSTER, t_step = gridDim.x / CLUSTER;
#else
    const int t_first = blockIdx.x, t_step = units;
#endif
    (void)tiles;

#if PRODUCER
    const int wg = threadIdx.x >> 7;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = t_first; t < units; t += t_step) {
                int tm, tn;
                tile_coords(t, um_n, tn_n, tm, tn);
                tm = tm * CLUSTER + rank;
                for (int kb = 0; kb < KB; ++kb, ++it) {
                    const int s = it % GM_STAGES, r = it / GM_STAGES;
                    if (r > 0) mbar_wait(smem_u32(&empty_mem[s]), (r - 1) & 1);
                    const u32 st = base + s * STAGE_BYTES, fb = smem_u32(&full_mem[s]);
                    mbar_expect_tx(fb, STAGE_BYTES);
                    tma_load(st, &ta, kb * GM_BK, tm * GM_BM, fb);
#if CLUSTER > 1
                    // our slice of the shared B tile, into the same place in both CTAs
                    tma_load_mc(st + A_BYTES + rank * (B_BYTES / CLUSTER), &tb, kb * GM_BK,
                                tn * GM_BN + rank * (GM_BN / CLUSTER), fb, (unsigned short)((1u << CLUSTER) - 1));
#else
                    tma_load(st + A_BYTES, &tb, kb * GM_BK, tn * GM_BN, fb);
#endif
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
        const int wg_row = (wg - 1) * WG_ROWS;
        const bool lead = (threadIdx.x & 31) == 0;
        int it = 0;
        for (int t = t_first; t < units; t += t_step) {
            int tm, tn;
            tile_coords(t, um_n, tn_n, tm, tn);
            tm = tm * CLUSTER + rank;
            float acc[MSLICES][NACC];
            #pragma unroll
            for (int ms = 0; ms < MSLICES; ++ms)
                #pragma unroll
                for (int i = 0; i < NACC; ++i) acc[ms][i] = 0.f;
            for (int kb = 0; kb < KB; ++kb, ++it) {
                const int s = it % GM_STAGES;
                mbar_wait(smem_u32(&full_mem[s]), (it / GM_STAGES) & 1);
                mma_stage(acc, base + s * STAGE_BYTES, wg_row);
                // keep this k-block's wgmmas in flight; the previous one is done: free its stage
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (kb > 0 && lead) release_stage(smem_u32(&empty_mem[(it - 1) % GM_STAGES]));
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (KB > 0 && lead) release_stage(smem_u32(&empty_mem[(it - 1) % GM_STAGES]));
            store_tile(acc, C, M, N, tm * GM_BM + wg_row, tn * GM_BN);
        }
    }
#if CLUSTER > 1
    __syncwarp();
    cluster_sync();  // no CTA leaves while its peer may still arrive on its barriers
#endif
#else
    // Rung 2: one warpgroup; thread 0 refills a stage once every warp has finished reading it.
    const int t = t_first;
    int tm, tn;
    tile_coords(t, tm_n, tn_n, tm, tn);
    if (threadIdx.x == 0)
        for (int kb = 0; kb < GM_STAGES && kb < KB; ++kb) {
            const u32 st = base + kb * STAGE_BYTES, fb = smem_u32(&full_mem[kb]);
            mbar_expect_tx(fb, STAGE_BYTES);
            tma_load(st, &ta, kb * GM_BK, tm * GM_BM, fb);
            tma_load(st + A_BYTES, &tb, kb * GM_BK, tn * GM_BN, fb);
        }
    float acc[MSLICES][NACC];
    #pragma unroll
    for (int ms = 0; ms < MSLICES; ++ms)
        #pragma unroll
        for (int i = 0; i < NACC; ++i) acc[ms][i] = 0.f;
    for (int kb = 0; kb < KB; ++kb) {
        const int s = kb % GM_STAGES;
        mbar_wait(smem_u32(&full_mem[s]), (kb / GM_STAGES) & 1);
        mma_stage(acc, base + s * STAGE_BYTES, 0);
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();  // every warp's wgmmas on stage s are complete
        const int nk = kb + GM_STAGES;
        if (threadIdx.x == 0 && nk < KB) {
            const u32 st = base + s * STAGE_BYTES, fb = smem_u32(&full_mem[s]);
            mbar_expect_tx(fb, STAGE_BYTES);
            tma_load(st, &ta, nk * GM_BK, tm * GM_BM, fb);
            tma_load(st + A_BYTES, &tb, nk * GM_BK, tn * GM_BN, fb);
        }
    }
    store_tile(acc, C, M, N, tm * GM_BM, tn * GM_BN);
    (void)empty_mem;
#endif
}
#else  // GM_RUNG >= 6
// ------------------------------------------------------------------------------------------------
// Rungs 6-7 (and the fp8 e4m3 variant): rung 5's warp-specialised persistent cluster kernel with
// - an epilogue through shared memory: each consumer warpgroup writes its C fragments with stmatrix
//   into a 64 x 64 box (128-byte swizzle, so the 8 rows of one stmatrix phase hit 8 distinct 16-byte
//   bank groups) and one thread stores the box with TMA (whole 32-byte sectors, clipped at the matrix
//   edge by the tensor map). Two box slots per warpgroup: the store of one box drains while the
//   next is written, and the last stores of a tile drain while the next tile's k-loop runs;
// - a trimmed k-loop: descriptors computed once and advanced by adding constants, the stage index
//   and its parity carried as counters (no divisions or modulo per k-block);
// - GM_CLM / GM_CLN: 2 CTAs along M sharing (multicasting) the B tile, or along N sharing A
//   (cuBLAS's 256x128 tile with a 1x2 cluster);
// - GM_FP8: e4m3 operands (one byte: a 128-byte row holds 128 of K), wgmma k32, fp32 accumulate,
//   C = scale_a * scale_b * (A B^T) in bf16, the per-tensor scales read from device memory.
// - GM_NOZERO (rungs 6-10): a tile's first wgmma overwrites the accumulators (scale-d predicate 0)
//   instead of adding to zeroed ones; GM_EPI_WHOLE and GM_KEEP_DESC are experiments no rung ships
//   (gemm.variants; device check modes epilogue and keepdesc).
// ------------------------------------------------------------------------------------------------
#ifndef GM_EPI_WHOLE
#define GM_EPI_WHOLE 0  // 1: a slot per box of the warpgroup's C (the whole tile staged at once), else two
#endif
#ifndef GM_NOZERO
#define GM_NOZERO 0  // 1: a tile's first wgmma overwrites the accumulators (scale-d 0) instead of zeroing them
#endif
#ifndef GM_KEEP_DESC
#define GM_KEEP_DESC 0  // 1 (experiment): the descriptor bases kept in registers instead of rebuilt per k-block
#endif
#define EPI_SLOT 8192                               // one 64 x 64 box of 16-bit C
#define EPI_SLOTS (GM_EPI_WHOLE ? MSLICES * GM_BN / 64 : 2)  // per consumer warpgroup
// Columns of C per box: 64 (128-byte rows, 128-byte swizzle); 32 where the tile is not a multiple of 64 columns
// (64-byte rows, unswizzled: the tensor map of C says so, launch.py)
#if GM_BN % 64
#define EPI_COLS 32
#if GM_EPI_WHOLE
#error "GM_EPI_WHOLE stages 64-column boxes only"
#endif
#else
#define EPI_COLS 64
#endif
#define EPI_BOXES (MSLICES * (GM_BN / EPI_COLS))  // boxes of C per tile and consumer warpgroup
#define EPI_BYTES (GM_CONSUMERS * EPI_SLOTS * EPI_SLOT)
#if GM_FP8
#define WG_KIND "k32.f32.e4m3.e4m3"
#define WG_TAIL ";"
#else
#define WG_KIND "k16.f32." GM_TSTR "." GM_TSTR
#define WG_TAIL ", 0, 0;"  // no transpose: both operands K-major
#endif
#define F4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define F16(i) F4(i), F4(i + 4), F4(i + 8), F4(i + 12)
#define F64(i) F16(i), F16(i + 16), F16(i + 32), F16(i + 48)

// D(64 x N, f32) += A(64 x 32 bytes of K, smem) * B(N x 32 bytes of K, smem), both K-major, 128-byte swizzle.
// sd = 0: D = A * B, the accumulators' old values ignored (a tile's first k16 step with GM_NOZERO).
__device__ __forceinline__ void wg_n256(float (&d)[128], u64 da, u64 db, int sd) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\nwgmma.mma_async.sync.aligned.m64n256" WG_KIND " "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}, %128, %129, p, 1, 1" WG_TAIL "\n}\n"
                 : F64(0), F64(64) : "l"(da), "l"(db), "r"(sd) : "memory");
}
__device__ __forceinline__ void wg_n128(float (&d)[64], u64 da, u64 db, int sd) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128" WG_KIND " "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, %64, %65, p, 1, 1" WG_TAIL "\n}\n"
                 : F64(0) : "l"(da), "l"(db), "r"(sd) : "memory");
}
// rung 11: 192-column tiles, for the shapes whose 256-column tile pairs leave a wave partly idle
__device__ __forceinline__ void wg_n192(float (&d)[96], u64 da, u64 db, int sd) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\nwgmma.mma_async.sync.aligned.m64n192" WG_KIND " "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95}, %96, %97, p, 1, 1" WG_TAIL "\n}\n"
                 : F64(0), F16(64), F16(80) : "l"(da), "l"(db), "r"(sd) : "memory");
}
// rung 12: 160-column tiles (their C leaves in 32-column boxes: EPI_COLS)
__device__ __forceinline__ void wg_n160(float (&d)[80], u64 da, u64 db, int sd) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\nwgmma.mma_async.sync.aligned.m64n160" WG_KIND " "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79}, %80, %81, p, 1, 1" WG_TAIL "\n}\n"
                 : F64(0), F16(64) : "l"(da), "l"(db), "r"(sd) : "memory");
}
// rung 13: 224-column tiles (C in 32-column boxes, as 160)
__device__ __forceinline__ void wg_n224(float (&d)[112], u64 da, u64 db, int sd) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %114, 0;\nwgmma.mma_async.sync.aligned.m64n224" WG_KIND " "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111}, %112, %113, p, 1, 1" WG_TAIL "\n}\n"
                 : F64(0), F16(64), F16(80), F16(96) : "l"(da), "l"(db), "r"(sd) : "memory");
}
#if GM_BN == 256
#define WG wg_n256
#elif GM_BN == 224
#define WG wg_n224
#elif GM_BN == 192
#define WG wg_n192
#elif GM_BN == 160
#define WG wg_n160
#elif GM_BN == 128
#define WG wg_n128
#else
#error "rungs 6+ need GM_BN 128, 160, 192, 224 or 256"
#endif

// desc128 split: the low word (start address >> 4, leading offset 1) takes the per-stage and per-k
// offsets with a 32-bit add (the 14-bit address field cannot carry out below 256 KiB of shared memory);
// the high word (stride 1024 B, 128-byte swizzle) is a constant.
#define DESC_HI ((u64)(1024 >> 4) << 32 | 1ull << 62)
__device__ __forceinline__ u32 desc_lo(u32 addr) { return ((addr & 0x3FFFF) >> 4) | (1u << 16); }
__device__ __forceinline__ u64 desc_of(u32 lo) { return (u64)lo | DESC_HI; }

__device__ __forceinline__ void stsm4(u32 addr, u32 r0, u32 r1, u32 r2, u32 r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}
__device__ __forceinline__ void tma_store(const TmaDesc* map, u32 src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"((u64)map), "r"(src), "r"(x), "r"(y) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// The issuing thread's bulk stores: all but the newest `n` have finished reading shared memory.
template <int n> __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(n) : "memory");
}
__device__ __forceinline__ void named_bar(u32 id) { asm volatile("bar.sync %0, 128;" :: "r"(id) : "memory"); }
#ifndef GM_L2_PREFETCH
#define GM_L2_PREFETCH 0  // experiment: k-blocks of the first unit prefetched into L2 before the PDL wait (0: none)
#endif
#ifndef GM_PDL_TRIGGER
#define GM_PDL_TRIGGER 0  // where a CTA lets the next grid be scheduled: 0 at the start, 1 after its last load, 2 at exit
#endif
// Programmatic dependent launch: wait for the grid before (its writes visible past it), then, with the trigger at
// the start (GM_PDL_TRIGGER 0), let the next grid be scheduled. Both no-ops without the launch attribute.
__device__ __forceinline__ void pdl_enter() {
    asm volatile("griddepcontrol.wait;" ::: "memory");
#if GM_PDL_TRIGGER == 0
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#ifndef GM_STAGGER
#define GM_STAGGER 0  // k-blocks the second consumer warpgroup starts after the first (0: together)
#endif
#define STAGGER_BAR 3  // named barrier of the two consumer warpgroups (1 and 2 are their epilogues')

// The next work of a cluster: unit u, k-blocks [k0, k1). First whole units t, t + step, ... below dp
// (data-parallel), then the cluster's share [g, gend) of the stream-K k-blocks: in the continuous split
// (hh == 0) absolute indices unit * KB + k-block; in the head/tail split (hh = head k-blocks) g < 0 is
// the head of unit dp - g - 1 (k-blocks [0, hh)), g >= 0 indexes the tails (KB - hh k-blocks per unit,
// from k-block hh on). False when nothing is left.
__device__ __forceinline__ bool next_work(int& t, long long& g, long long gend, int dp, int step, int KB, int hh,
                                          int& u, int& k0, int& k1) {
    if (t < dp) {
        u = t; k0 = 0; k1 = KB; t += step;
        return true;
    }
    if (g < gend && hh > 0) {
        if (g < 0) {
            u = dp + (int)(-g - 1); k0 = 0; k1 = hh; g = gend;
        } else {
            const int tl = KB - hh;
            const long long v = g / tl;
            u = dp + (int)v;
            k0 = hh + (int)(g - v * tl);
            k1 = (int)min((long long)KB, k0 + (gend - g));
            g += k1 - k0;
        }
        return true;
    }
    if (g < gend) {
        u = (int)(g / KB);
        k0 = (int)(g - (long long)u * KB);
        k1 = (int)min((long long)KB, k0 + (gend - g));
        g += k1 - k0;
        return true;
    }
    return false;
}
#if GM_SK
__device__ __forceinline__ u32 ld_acquire(const u32* p) {
    u32 v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(u32* p, u32 v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed(u32* p, u32 v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
#endif

// GM_STATIC_CLUSTER (experiment, dev/gemm_host_cost.py): the cluster shape compiled in, so that a launch needs no
// cluster attribute (the driver's cost per launch with and without one)
#if defined(GM_STATIC_CLUSTER) && CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif
// grid: one CTA per SM (clusters of CLUSTER); block THREADS; dynamic smem STAGES x STAGE_BYTES + EPI_BYTES + 1 KiB.
extern "C" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_DIMS
gemm_ws(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tb, const __grid_constant__ TmaDesc tc,
        const float* scale_a, const float* scale_b, float* ws, u32* flags, int M, int N, int K, int dp_units) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) u64 full_mem[GM_STAGES], empty_mem[GM_STAGES];
    const u32 base = (smem_u32(smem_raw) + 1023) & ~1023u;  // the 128-byte swizzle repeats every 1024 bytes
    const u32 epi = base + GM_STAGES * STAGE_BYTES;
    const u32 full0 = smem_u32(&full_mem[0]), empty0 = smem_u32(&empty_mem[0]);
    const int tm_n = (M + GM_BM - 1) / GM_BM, tn_n = (N + GM_BN - 1) / GM_BN;
    const int KB = (K + GM_BK - 1) / GM_BK;  // a partial last k-block is zero-filled by TMA
    if (threadIdx.x == 0) {
        for (int s = 0; s < GM_STAGES; ++s) {
            mbar_init(full0 + 8 * s, 1);
            mbar_init(empty0 + 8 * s, CLUSTER * GM_CONSUMERS * 4);  // lane 0 of every consumer warp of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        // the tensor maps are kernel parameters, which no earlier grid writes: fetched before the wait below
        asm volatile("prefetch.tensormap [%0];" :: "l"((u64)&ta) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"((u64)&tb) : "memory");
        asm volatile("prefetch.tensormap [%0];" :: "l"((u64)&tc) : "memory");
    }
#if CLUSTER > 1
    cluster_sync();
    const int rank = (int)cluster_rank();
#else
    __syncthreads();
    const int rank = 0;
#endif
    // Programmatic dependent launch (launch.py sets the launch attribute): this grid may start while the previous
    // one in the stream finishes; everything above touches only shared memory and parameters. Past the wait the
    // previous grid has completed and its writes are visible (it may have written A or B, or read our C); then
    // the next grid may be scheduled, its CTAs starting on SMs as ours leave. Without the attribute both are no-ops.
    // (With GM_L2_PREFETCH both come after the schedule below, which reads only parameters, and the L2 prefetch.)
#if !GM_L2_PREFETCH
    pdl_enter();
#endif
    // work unit: CLUSTER tiles sharing one operand tile (stacked along M, or side by side along N)
    const int um_n = (tm_n + GM_CLM - 1) / GM_CLM, un_n = (tn_n + GM_CLN - 1) / GM_CLN, units = um_n * un_n;
    const int t_first = blockIdx.x / CLUSTER, t_step = gridDim.x / CLUSTER;
    // cluster rank = rank_m + GM_CLM * rank_n: the CTAs of one rank_n stack along M and share B, those
    // of one rank_m sit side by side along N and share A (a 2 x 2 cluster shares both)
#if GM_CLM > 1 && GM_CLN > 1
    const int rank_m = rank % GM_CLM, rank_n = rank / GM_CLM;
#else
    const int rank_m = GM_CLM > 1 ? rank : 0, rank_n = GM_CLN > 1 ? rank : 0;  // (the 1-D rungs' code unchanged)
#endif
#if GM_SK
    // dp_units units run data-parallel (whole k-ranges, unit t on cluster t mod P); the host picks
    // dp_units (a multiple of P, or all units): analysis/gemm_model.stream_k_dp. The R units left:
    // - R >= P (or R < P/2): continuous split, their k-blocks cut into q equal runs, one per cluster;
    // - P/2 <= R < P (a last wave more than half full): head/tail split. Cluster c < R runs the head of
    //   unit dp + c (k-blocks [0, H), H = ceil(R KB / P)), in step with the other heads, so they share
    //   A and B in L2 as a data-parallel wave does; the F = P - R idle clusters split the tails
    //   (k-blocks [H, KB) of every unit, R (KB - H) in all) into equal runs. A run is at most one tail
    //   long, so a tail has at most 2 parts: slots (unit, part) of the workspace. Each run costs ~6
    //   k-block times beyond its k-blocks (drain, partial store, release), so the host splits such a
    //   wave only when few runs per idle cluster make it pay (gemm_model.head_tail_time).
    const int P = t_step, dp = min(dp_units, units), R = units - dp;
    const bool ht = R > 0 && R < P && 2 * R >= P;
    const int H = ht ? (int)(((long long)R * KB + P - 1) / P) : 0, TL = KB - H, F = P - R;
    const long long TT = (long long)R * TL;  // tail k-blocks (head/tail split)
    const long long ski = ht ? 0 : (long long)R * KB, q = min((long long)P, ski);
    long long g_first = t_first < q ? (long long)dp * KB + t_first * ski / q : 0;
    long long g_end = t_first < q ? (long long)dp * KB + (t_first + 1) * ski / q : 0;
    if (ht) {
        g_first = t_first < R ? -(long long)(t_first + 1) : (long long)(t_first - R) * TT / F;
        g_end = t_first < R ? 0 : (long long)(t_first - R + 1) * TT / F;
    }
#else
    const int dp = units, H = 0;
    const long long g_first = 0, g_end = 0;
    (void)ws; (void)flags; (void)dp_units;
#endif
#if GM_L2_PREFETCH
    // experiment: while the grid before may still run, warm L2 with the first GM_L2_PREFETCH k-blocks of this CTA's
    // first unit (the slices its own TMA loads will ask for). A prefetch only moves lines into L2, the point where
    // every SM's accesses meet, so it cannot hand a stale value to the loads issued after the wait.
    if (threadIdx.x == 0) {
        int t = t_first, u, k0, k1;
        long long g = g_first;
        if (next_work(t, g, g_end, dp, t_step, KB, H, u, k0, k1)) {
            int um, un;
            tile_coords(u, um_n, un_n, um, un);
            const int row_a = (um * GM_CLM + rank_m) * GM_BM + (GM_CLN > 1 ? rank_n * (GM_BM / 2) : 0);
            const int row_b = (un * GM_CLN + rank_n) * GM_BN + (GM_CLM > 1 ? rank_m * (GM_BN / 2) : 0);
            for (int kb = k0; kb < min(k1, k0 + GM_L2_PREFETCH); ++kb) {
                tma_prefetch_l2(&ta, kb * GM_BK, row_a);
                tma_prefetch_l2(&tb, kb * GM_BK, row_b);
            }
        }
    }
    pdl_enter();
#endif
    const int wg = threadIdx.x >> 7;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");
        if (threadIdx.x == 0) {
            u32 s = 0, ph = 0;  // stage, and the parity of its current round
            int t = t_first, u, k0, k1;
            long long g = g_first;
            while (next_work(t, g, g_end, dp, t_step, KB, H, u, k0, k1)) {
                int um, un;
                tile_coords(u, um_n, un_n, um, un);
                const int row_a = (um * GM_CLM + rank_m) * GM_BM, row_b = (un * GM_CLN + rank_n) * GM_BN;
                for (int kx = k0 * GM_BK; kx < k1 * GM_BK; kx += GM_BK) {
                    mbar_wait(empty0 + 8 * s, ph ^ 1);  // round 0: the barrier's "previous phase" counts as done
                    const u32 st = base + s * STAGE_BYTES, fb = full0 + 8 * s;
                    mbar_expect_tx(fb, STAGE_BYTES);
#if GM_CLN > 1
                    // this CTA's half of the A tile, to itself and its partner along N (same rank_m)
                    tma_load_mc(st + rank_n * (A_BYTES / 2), &ta, kx, row_a + rank_n * (GM_BM / 2), fb,
                                (unsigned short)((1u | (1u << GM_CLM)) << rank_m));
#else
                    tma_load(st, &ta, kx, row_a, fb);
#endif
#if GM_CLM > 1
                    // this CTA's half of the B tile, to itself and its partner along M (same rank_n)
                    tma_load_mc(st + A_BYTES + rank_m * (B_BYTES / 2), &tb, kx, row_b + rank_m * (GM_BN / 2), fb,
                                (unsigned short)(3u << (GM_CLM * rank_n)));
#else
                    tma_load(st + A_BYTES, &tb, kx, row_b, fb);
#endif
                    if (++s == GM_STAGES) { s = 0; ph ^= 1; }
                }
            }
#if GM_PDL_TRIGGER == 1
            asm volatile("griddepcontrol.launch_dependents;" ::: "memory");  // every load of this CTA issued
#endif
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");
        const int wg_row = (wg - 1) * WG_ROWS, w = (threadIdx.x >> 5) & 3, l = threadIdx.x & 31;
        const bool lead = l == 0, issuer = (threadIdx.x & 127) == 0;
        // stmatrix: lane l gives row (l & 7) of matrix l >> 3 (matrices: rows +0/+8 x chunks +0/+1)
        const u32 slot0 = epi + (wg - 1) * EPI_SLOTS * EPI_SLOT;
        const u32 erow = (16 * w + (l & 7) + 8 * ((l >> 3) & 1)) * (EPI_COLS * 2), ech = l >> 4;
#if EPI_COLS == 64
        const u32 ex = l & 7;  // the 128-byte swizzle: 16-byte chunk XOR row mod 8
#else
        const u32 ex = 0;  // unswizzled 64-byte rows
#endif
#if GM_FP8
        const float scale = *scale_a * *scale_b;
#else
        (void)scale_a; (void)scale_b;
#endif
        u32 da0 = desc_lo(base + wg_row * 128), db0 = desc_lo(base + A_BYTES);
#if GM_KEEP_DESC
        asm volatile("" : "+r"(da0), "+r"(db0));  // opaque: kept in registers, not rebuilt from the shared window
#endif
        u32 s = 0, ph = 0, soff = 0;  // stage, its round's parity, its offset in descriptor units (16 bytes)
#if EPI_BOXES % 2
        u32 epi_box = 0;  // boxes of C this warpgroup has staged (their slot alternates)
#endif
        int t = t_first, u, k0, k1;
        long long g = g_first;
#if GM_STAGGER
        // Once, at the first work item, the second warpgroup waits until the first has issued GM_STAGGER
        // k-blocks; both then consume the same stages that far apart, so at each tile's end one
        // warpgroup's epilogue runs while the other still feeds the tensor cores.
        int lead_left = wg == 1 ? GM_STAGGER : 0;
        bool must_wait = wg == 2;
#endif
#if GM_NOZERO
        float acc[MSLICES][NACC];  // defined once; every tile's (and segment's) first wgmma overwrites them
        #pragma unroll
        for (int ms = 0; ms < MSLICES; ++ms)
            #pragma unroll
            for (int i = 0; i < NACC; ++i) acc[ms][i] = 0.f;
#endif
        while (next_work(t, g, g_end, dp, t_step, KB, H, u, k0, k1)) {
            int um, un;
            tile_coords(u, um_n, un_n, um, un);
            const int row0 = (um * GM_CLM + rank_m) * GM_BM + wg_row, col0 = (un * GM_CLN + rank_n) * GM_BN;
#if GM_STAGGER
            if (must_wait) {
                asm volatile("bar.sync %0, 256;" :: "n"(STAGGER_BAR) : "memory");
                must_wait = false;
            }
#endif
#if !GM_NOZERO
            float acc[MSLICES][NACC];
            #pragma unroll
            for (int ms = 0; ms < MSLICES; ++ms)
                #pragma unroll
                for (int i = 0; i < NACC; ++i) acc[ms][i] = 0.f;
#endif
            u32 prev = 0;  // the stage whose wgmmas are still in flight (released one k-block later)
            for (int kb = k0; kb < k1; ++kb) {
                mbar_wait(full0 + 8 * s, ph);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
                #pragma unroll
                for (int kk = 0; kk < 4; ++kk)  // 4 x 32 bytes of K per 128-byte row
                    #pragma unroll
                    for (int ms = 0; ms < MSLICES; ++ms)
                        WG(acc[ms], desc_of(da0 + soff + ms * (64 * 128 / 16) + kk * 2), desc_of(db0 + soff + kk * 2),
                           GM_NOZERO ? (int)(kk > 0 || kb > k0) : 1);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#if GM_STAGGER
                if (lead_left > 0 && --lead_left == 0) asm volatile("bar.arrive %0, 256;" :: "n"(STAGGER_BAR) : "memory");
#endif
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (kb > k0 && lead) release_stage(empty0 + 8 * prev);
                prev = s;
                soff += STAGE_BYTES / 16;
                if (++s == GM_STAGES) { s = 0; soff = 0; ph ^= 1; }
            }
#if GM_STAGGER
            if (lead_left > 0) {  // a first work item shorter than the stagger: let the other start now
                lead_left = 0;
                asm volatile("bar.arrive %0, 256;" :: "n"(STAGGER_BAR) : "memory");
            }
#endif
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (k1 > k0 && lead) release_stage(empty0 + 8 * prev);
#if GM_SK
            // a split tile: this warpgroup's fp32 partial sums in a workspace slot, thread-major so a
            // warp's stores coalesce. Slots: one per CTA in the continuous split (a cluster leaves at
            // most one partial: only its first run can start inside a tile); per (split unit, tail
            // part, CTA rank) in the head/tail split, where a tail cluster leaves one per tail run.
            const int uh = u - dp;  // the unit's index among the split ones
            if (k0 > 0) {  // not the tile's first k-blocks: leave the sums for the cluster that has those
                const int slot = ht ? (uh * 2 + (k0 != H)) * CLUSTER + rank : (int)blockIdx.x;
                float* part = ws + (size_t)(slot * GM_CONSUMERS + wg - 1) * (MSLICES * NACC * 128) + (threadIdx.x & 127);
                #pragma unroll
                for (int ms = 0; ms < MSLICES; ++ms)
                    #pragma unroll
                    for (int i = 0; i < NACC; ++i) __stcg(part + (ms * NACC + i) * 128, acc[ms][i]);
                named_bar(wg);
                if (issuer) st_release(flags + slot * GM_CONSUMERS + wg - 1, 1u);  // gpu scope: the stores before it
                continue;
            }
            if (k1 < KB) {  // the tile's first k-blocks, not all of them: add the other parts' sums
                int first, last;  // slots (as cluster-level indices c2: slot c2 * CLUSTER + rank)
                if (ht) {
                    // the tail's first and last tail index, and the tail clusters holding them
                    // (cluster R + j holds tail indices [j TT / F, (j + 1) TT / F))
                    const long long s0 = (long long)uh * TL;
                    const int h0 = (int)(((s0 + 1) * F + TT - 1) / TT) - 1, h1 = (int)(((s0 + TL) * F + TT - 1) / TT) - 1;
                    first = uh * 2;
                    last = uh * 2 + (h1 != h0);
                } else {
                    const long long last_i = (long long)u * KB + KB - 1 - (long long)dp * KB;  // its last k-block
                    first = t_first + 1;
                    last = (int)(((last_i + 1) * q + ski - 1) / ski) - 1;  // the cluster holding it
                }
                for (int c2 = first; c2 <= last; ++c2) {
                    const int other = c2 * CLUSTER + rank;  // the slot of the same tile's CTA (same rank)
                    u32* f2 = flags + other * GM_CONSUMERS + wg - 1;
                    if (issuer) {
                        const long long t0 = clk();
                        while (ld_acquire(f2) == 0u)
                            if (clk() - t0 > (1ll << 32)) __trap();  // a lost partial: fail, never hang
                        st_relaxed(f2, 0u);  // consumed: zero for the next launch (stream order keeps it)
                    }
                    named_bar(wg);
                    const float* p2 = ws + (size_t)(other * GM_CONSUMERS + wg - 1) * (MSLICES * NACC * 128) + (threadIdx.x & 127);
                    #pragma unroll
                    for (int ms = 0; ms < MSLICES; ++ms)
                        #pragma unroll
                        for (int i = 0; i < NACC; ++i) acc[ms][i] += __ldcg(p2 + (ms * NACC + i) * 128);
                }
            }
#endif
#if GM_EPI_WHOLE
            // a slot per box: the stores of the previous tile read their slots long ago (checked once),
            // then every box written, one fence and one barrier, and the issuer stores them all
            if (issuer) bulk_wait_read<0>();
            named_bar(wg);
            #pragma unroll
            for (int ms = 0; ms < MSLICES; ++ms)
                #pragma unroll
                for (int b = 0; b < GM_BN / 64; ++b)
                    #pragma unroll
                    for (int jj = 0; jj < 4; ++jj) {
                        const float* f = &acc[ms][4 * (8 * b + 2 * jj)];
                        const u32 at = slot0 + (ms * (GM_BN / 64) + b) * EPI_SLOT + erow + (((2 * jj + ech) ^ ex) << 4);
#if GM_FP8
                        stsm4(at, pack2(f[0] * scale, f[1] * scale), pack2(f[2] * scale, f[3] * scale),
                              pack2(f[4] * scale, f[5] * scale), pack2(f[6] * scale, f[7] * scale));
#else
                        stsm4(at, pack2(f[0], f[1]), pack2(f[2], f[3]), pack2(f[4], f[5]), pack2(f[6], f[7]));
#endif
                    }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // our writes, visible to TMA
            named_bar(wg);
            if (issuer) {
                #pragma unroll
                for (int ms = 0; ms < MSLICES; ++ms)
                    #pragma unroll
                    for (int b = 0; b < GM_BN / 64; ++b)
                        tma_store(&tc, slot0 + (ms * (GM_BN / 64) + b) * EPI_SLOT, col0 + 64 * b, row0 + 64 * ms);
                bulk_commit();
            }
#else
            #pragma unroll
            for (int ms = 0; ms < MSLICES; ++ms)
                #pragma unroll
                for (int b = 0; b < GM_BN / EPI_COLS; ++b) {
#if EPI_BOXES % 2
                    // an odd count of boxes per tile (160, 192 or 224 columns): the slot alternates by a running count of
                    // boxes, so a tile's first box never takes the slot of the last tile's last box
                    const u32 slot = slot0 + (epi_box++ & 1) * EPI_SLOT;
#else
                    const u32 slot = slot0 + (b & 1) * EPI_SLOT;  // an even count per tile: slots alternate across tiles too
#endif
                    if (issuer) bulk_wait_read<1>();  // the store of two boxes ago has read this slot
                    named_bar(wg);
                    #pragma unroll
                    for (int jj = 0; jj < EPI_COLS / 16; ++jj) {
                        const float* f = &acc[ms][4 * (EPI_COLS / 8 * b + 2 * jj)];
#if GM_FP8
                        stsm4(slot + erow + (((2 * jj + ech) ^ ex) << 4), pack2(f[0] * scale, f[1] * scale),
                              pack2(f[2] * scale, f[3] * scale), pack2(f[4] * scale, f[5] * scale), pack2(f[6] * scale, f[7] * scale));
#else
                        stsm4(slot + erow + (((2 * jj + ech) ^ ex) << 4), pack2(f[0], f[1]), pack2(f[2], f[3]),
                              pack2(f[4], f[5]), pack2(f[6], f[7]));
#endif
                    }
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // our writes, visible to TMA
                    named_bar(wg);
                    if (issuer) {
                        tma_store(&tc, slot, col0 + EPI_COLS * b, row0 + 64 * ms);
                        bulk_commit();
                    }
                }
#endif
        }
        // before the CTA leaves, its stores must have read their shared slots (the writes themselves complete
        // with the grid, as every other store does)
        if (issuer) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
#if CLUSTER > 1
    __syncwarp();
    cluster_sync();  // no CTA leaves while its peer may still arrive on its barriers
#endif
}
#endif  // GM_RUNG <= 5
#endif
