// Smith-Waterman local alignment with affine gaps (Gotoh), protein database search as in
// Luo et al. 000 §8.2 / Fig. 15 (method of CUDASW++ 4.0): scores in s16 (two database sequences
// per thread, packed s16x2), s32, half2 (two per thread) and float.
//
//   E(i,j) = max(E(i-1,j) - beta, H(i-1,j) - alpha)       gap along the query
//   F(i,j) = max(F(i,j-1) - beta, H(i,j-1) - alpha)       gap along the subject
//   H(i,j) = max(H(i-1,j-1) + sigma(q_i, s_j), E(i,j), F(i,j), 0)
//
// Parallelization (inter-sequence): one thread aligns the query against one database sequence
// (two for the packed 16-bit types, one per halfword lane). The query is swept in passes of SW_T
// rows held in registers (H and F of each row); along a pass the thread walks the subject column
// by column, E running down the column. Between passes the pass's last row (H, and E of the row
// below) goes through a per-thread boundary buffer in global memory, interleaved over threads so
// that a warp's accesses coalesce. The query profile slice of a pass (sigma(q_i, letter) for the
// SW_T rows, all 20 letters) is staged in shared memory with an odd row stride: the 20 letter rows
// fall into 20 different banks, so a warp's lookups never conflict.
//
// On sm_90 the 16- and 32-bit integer kinds use DPX: __viaddmax for E and F, __vimax3_*_relu for H
// (000 §8.2); the compute_80 build of the same source gets the emulated sequences.
#ifndef SW_T
#define SW_T 32  // query rows per pass (registers: 2 * SW_T values per thread)
#endif
#define NLET 20  // amino-acid alphabet (ARNDCQEGHILKMFPSTWYV)

typedef unsigned int u32;

// ---- score kinds --------------------------------------------------------------------------
// Each kind: V (value type), LANES (database sequences per thread), PWORDS (profile words per
// letter row and pass), and the four operations of a cell.
struct KindS32 {
    typedef int V;
    static constexpr int LANES = 1, PWORDS = SW_T;
    static __device__ __forceinline__ V from_bits(u32 b) { return (int)b; }
    static __device__ __forceinline__ u32 to_bits(V v) { return (u32)v; }
    static __device__ __forceinline__ V zero() { return 0; }
    static __device__ __forceinline__ V add(V a, V b) { return a + b; }
    static __device__ __forceinline__ V addmax(V a, V b, V c) { return __viaddmax_s32(a, b, c); }
    static __device__ __forceinline__ V max3relu(V a, V b, V c) { return __vimax3_s32_relu(a, b, c); }
    static __device__ __forceinline__ V maxrelu(V a, V b) { return __vimax_s32_relu(a, b); }
};
struct KindFloat {
    typedef float V;
    static constexpr int LANES = 1, PWORDS = SW_T;
    static __device__ __forceinline__ V from_bits(u32 b) { return __uint_as_float(b); }
    static __device__ __forceinline__ u32 to_bits(V v) { return __float_as_uint(v); }
    static __device__ __forceinline__ V zero() { return 0.0f; }
    static __device__ __forceinline__ V add(V a, V b) { return a + b; }
    static __device__ __forceinline__ V addmax(V a, V b, V c) { return fmaxf(a + b, c); }
    static __device__ __forceinline__ V max3relu(V a, V b, V c) { return fmaxf(fmaxf(a, b), fmaxf(c, 0.0f)); }
    static __device__ __forceinline__ V maxrelu(V a, V b) { return fmaxf(a, b); }  // both >= 0 here
};
struct KindS16 {  // two sequences per thread: low halfword = even, high = odd database sequence
    typedef u32 V;
    static constexpr int LANES = 2, PWORDS = SW_T / 2;
    static __device__ __forceinline__ V from_bits(u32 b) { return b; }
    static __device__ __forceinline__ u32 to_bits(V v) { return v; }
    static __device__ __forceinline__ V zero() { return 0u; }
    static __device__ __forceinline__ V add(V a, V b) { return __vadd2(a, b); }
    static __device__ __forceinline__ V addmax(V a, V b, V c) { return __viaddmax_s16x2(a, b, c); }
    static __device__ __forceinline__ V max3relu(V a, V b, V c) { return __vimax3_s16x2_relu(a, b, c); }
    static __device__ __forceinline__ V maxrelu(V a, V b) { return __vimax_s16x2_relu(a, b); }
};
__device__ __forceinline__ u32 hadd2(u32 a, u32 b) {
    u32 d;
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
__device__ __forceinline__ u32 hmax2(u32 a, u32 b) {
    u32 d;
#if __CUDA_ARCH__ >= 800
    asm("max.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
    // max.f16x2 is sm_80+: each lane a > b ? a : b through a half-wise compare mask (scores are never NaN,
    // and +0 / -0, the only equal values that differ in bits, decode to the same score)
    u32 gt;
    asm("set.gt.u32.f16x2 %0, %1, %2;" : "=r"(gt) : "r"(a), "r"(b));
    d = (a & gt) | (b & ~gt);
#endif
    return d;
}
struct KindHalf2 {  // two sequences per thread, fp16 lanes
    typedef u32 V;
    static constexpr int LANES = 2, PWORDS = SW_T / 2;
    static __device__ __forceinline__ V from_bits(u32 b) { return b; }
    static __device__ __forceinline__ u32 to_bits(V v) { return v; }
    static __device__ __forceinline__ V zero() { return 0u; }
    static __device__ __forceinline__ V add(V a, V b) { return hadd2(a, b); }
    static __device__ __forceinline__ V addmax(V a, V b, V c) { return hmax2(hadd2(a, b), c); }
    static __device__ __forceinline__ V max3relu(V a, V b, V c) { return hmax2(hmax2(a, b), hmax2(c, 0u)); }
    static __device__ __forceinline__ V maxrelu(V a, V b) { return hmax2(a, b); }  // both >= 0 here
};

// Profile row stride in shared memory: odd, so that 20 rows sit in 20 distinct banks.
template <class K>
struct Stride {
    static constexpr int value = K::PWORDS | 1;
};

// db:     residues (0..19): element (j/4) * db_stride + t (a word, or a uint2 for two lanes) holds
//         residues 4(j/4)..4(j/4)+3 of thread t's sequence(s); db points at the launch's first thread
// nthreads: threads of this launch (the stride of `bound`)
// prof:   [NLET][pwords_total] profile words of the padded query (element type of the kind;
//         16-bit kinds hold rows 2w, 2w+1 in word w)
// bound:  per thread and column, (H of the pass's last row, E of the row below), as bits
// scores: best local score of every database sequence (integers)
template <class K>
__device__ __forceinline__ void sw_body(const u32* __restrict__ db, int db_stride, int nthreads, int n,
                                        const u32* __restrict__ prof, int pwords_total, int npass,
                                        uint2* __restrict__ bound, int* __restrict__ scores,
                                        u32 open_bits, u32 ext_bits) {
    typedef typename K::V V;
    constexpr int S = Stride<K>::value;
    extern __shared__ u32 sprof[];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = tid < nthreads;
    const int t = active ? tid : 0;  // idle threads of the last block read a valid sequence
    const V neg_open = K::from_bits(open_bits), neg_ext = K::from_bits(ext_bits);
    V best = K::zero();

    for (int p = 0; p < npass; ++p) {
        __syncthreads();  // everybody is done with the previous slice
        for (int w = threadIdx.x; w < NLET * K::PWORDS; w += blockDim.x) {
            const int r = w / K::PWORDS, k = w - r * K::PWORDS;
            sprof[r * S + k] = prof[r * pwords_total + p * K::PWORDS + k];
        }
        __syncthreads();

        V H[SW_T], F[SW_T];
#pragma unroll
        for (int r = 0; r < SW_T; ++r) {
            H[r] = K::zero();  // H(i, 0) = 0
            F[r] = neg_open;   // F(i, 1) = H(i, 0) - alpha
        }
        V hb_prev = K::zero();  // H(i0 - 1, j - 1)
        const bool first = p == 0, last = p == npass - 1;

        for (int j4 = 0; j4 < (n >> 2); ++j4) {
            u32 la, lb = 0;
            if (K::LANES == 1) {
                la = db[(size_t)j4 * db_stride + t];
            } else {
                const uint2 v = reinterpret_cast<const uint2*>(db)[(size_t)j4 * db_stride + t];
                la = v.x;
                lb = v.y;
            }
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int j = 4 * j4 + q;
                V hb = K::zero(), e = neg_open;  // first pass: H(0, j) = 0, E(1, j) = -alpha
                if (!first) {
                    const uint2 v = bound[(size_t)j * nthreads + t];
                    hb = K::from_bits(v.x);
                    e = K::from_bits(v.y);
                }
                V diag = hb_prev;
                hb_prev = hb;
                const u32* rowa = sprof + ((la >> (8 * q)) & 0xff) * S;
                const u32* rowb = sprof + ((lb >> (8 * q)) & 0xff) * S;
#pragma unroll
                for (int r = 0; r < SW_T; ++r) {
                    V sc;
                    if (K::LANES == 1) {
                        sc = K::from_bits(rowa[r]);
                    } else {  // halfword (r & 1) of word r/2, letter a in the low lane, b in the high
                        sc = __byte_perm(rowa[r >> 1], rowb[r >> 1], (r & 1) ? 0x7632 : 0x5410);
                    }
                    const V h = K::max3relu(K::add(diag, sc), e, F[r]);  // H(i, j)
                    const V hm = K::add(h, neg_open);                    // H(i, j) - alpha
                    e = K::addmax(e, neg_ext, hm);                       // E(i + 1, j)
                    F[r] = K::addmax(F[r], neg_ext, hm);                 // F(i, j + 1)
                    diag = H[r];                                         // H(i, j - 1): diagonal of row i + 1
                    H[r] = h;
                    best = K::maxrelu(best, h);
                }
                if (!last && active) bound[(size_t)j * nthreads + t] = make_uint2(K::to_bits(H[SW_T - 1]), K::to_bits(e));
            }
        }
    }
    if (!active) return;
    if (K::LANES == 1) {
        scores[tid] = (int)K::to_bits(best);  // s32 as is; float converted by the wrapper below
    } else {
        scores[2 * tid] = (int)(K::to_bits(best) & 0xffff);  // raw halfwords; converted below
        scores[2 * tid + 1] = (int)(K::to_bits(best) >> 16);
    }
}

#define SW_ARGS                                                                                  \
    const u32 *__restrict__ db, int db_stride, int nthreads, int n, const u32 *__restrict__ prof, int pwords_total, \
        int npass, uint2 *__restrict__ bound, int *__restrict__ scores, u32 open_bits, u32 ext_bits
#define SW_PASS db, db_stride, nthreads, n, prof, pwords_total, npass, bound, scores, open_bits, ext_bits

// Scores come back as raw bits: s32 and s16 lanes are integers, float and half2 lanes are the
// bit patterns of float / fp16 (exact integers as long as they stay below 2^11 for fp16); the
// host decodes them.
extern "C" __global__ void __launch_bounds__(256) sw_s32(SW_ARGS) { sw_body<KindS32>(SW_PASS); }
extern "C" __global__ void __launch_bounds__(256) sw_float(SW_ARGS) { sw_body<KindFloat>(SW_PASS); }
extern "C" __global__ void __launch_bounds__(256) sw_s16(SW_ARGS) { sw_body<KindS16>(SW_PASS); }
extern "C" __global__ void __launch_bounds__(256) sw_half2(SW_ARGS) { sw_body<KindHalf2>(SW_PASS); }
