// Native instructions of sm_90 (Jia et al. 002 §4.1, Table 4.1): dependent-issue latency and
// throughput per SM, one compiled variant per instruction (the host passes -DOP_<NAME>=1), and the
// scheduler mapping (002 §2.2, Table 2.1) in the FFMA variant.
//
// Every chain step is inline PTX that ptxas turns into the instruction under test (the CPU tests
// count it in the loop body of every kernel): x <- op(x, b[k], c[k]), where the k-th step of an
// unrolled loop body uses operand pair k mod NOPS held in registers (loaded from `ops` at run time,
// so nothing folds), and the chain is carried through x alone. Every final x is written out and
// compared on the host with a CPU replay of the same chain.
//
// isa_ilp<ILP>: each thread runs ILP independent chains, BODY steps per loop iteration in total
// (BODY / ILP per chain); two passes of `iters` iterations, the second timed (the first warms the
// instruction cache). Per warp: clock64 and %globaltimer around the timed pass, and the SM id.
#include "gpudissect.cuh"  // u64/u32, clk(), gtime(), smid()

#ifndef BODY
#define BODY 64  // chain steps per loop iteration, summed over the ILP chains
#endif
#define NOPS_DEFAULT 8  // distinct operand pairs (b, c) per chain
#define MAX_WARPS 16    // largest block: up to 128 registers per thread, no spills with 64-bit operands
#define TABLE 256       // words of the shared-memory table of the LDS / STS chains

// ---- the instructions ------------------------------------------------------------------------
// T: type of the chain value; OT: type of the operands; STEP(x, b, c, j): one step of chain j.
// In scope of STEP: lane, sbase (shared address of the table).
#define PRED1(setp, body) "{.reg .pred p; " setp " " body "}"

#if defined(OP_FFMA) || defined(OP_FFMA_REUSE)
typedef float T;
#define STEP(x, b, c, j) asm("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(b), "f"(c))
#elif defined(OP_FADD)
typedef float T;
#define STEP(x, b, c, j) asm("add.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(b))
#elif defined(OP_FMUL)
typedef float T;
#define STEP(x, b, c, j) asm("mul.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(b))
#elif defined(OP_FMNMX)  // max then min: two FMNMX per step (a max chain alone could be reassociated)
typedef float T;
#define STEP(x, b, c, j) asm("max.f32 %0, %0, %1; min.f32 %0, %0, %2;" : "+f"(x) : "f"(b), "f"(c))
#elif defined(OP_FSETP)  // FSETP then FSEL: the predicate needs a consumer to stay on the chain
typedef float T;
#define STEP(x, b, c, j) asm("{.reg .pred p; setp.lt.f32 p, %0, %1; selp.f32 %0, %2, %1, p;}" : "+f"(x) : "f"(b), "f"(c))
#elif defined(OP_FSEL)  // predicates from c, set once outside the loop (4 distinct: P registers are few)
typedef float T;
#define NOPS 4
#define STEP(x, b, c, j) asm("{.reg .pred p; setp.ne.f32 p, %2, 0f00000000; selp.f32 %0, %0, %1, p;}" : "+f"(x) : "f"(b), "f"(c))
#elif defined(OP_HFMA2) || defined(OP_HFMA2_REUSE)
typedef u32 T;
#define STEP(x, b, c, j) asm("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_HADD2)
typedef u32 T;
#define STEP(x, b, c, j) asm("add.rn.f16x2 %0, %0, %1;" : "+r"(x) : "r"(b))
#elif defined(OP_HMUL2)
typedef u32 T;
#define STEP(x, b, c, j) asm("mul.rn.f16x2 %0, %0, %1;" : "+r"(x) : "r"(b))
#elif defined(OP_HMNMX2)
typedef u32 T;
#define STEP(x, b, c, j) asm("max.f16x2 %0, %0, %1; min.f16x2 %0, %0, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_HFMA2_BF16)
typedef u32 T;
#define STEP(x, b, c, j) asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_DFMA)
typedef double T;
#define STEP(x, b, c, j) asm("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(b), "d"(c))
#elif defined(OP_DFMA_UREG)  // b from the kernel's parameter `bconst` (the constant bank): x and c alone are
typedef double T;             // register pairs, two values per bank, what the register file gives in DFMA's 2 clocks
#define STEP(x, b, c, j) asm("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(__longlong_as_double((long long)bconst)), "d"(c))
#elif defined(OP_DADD)
typedef double T;
#define STEP(x, b, c, j) asm("add.rn.f64 %0, %0, %1;" : "+d"(x) : "d"(b))
#elif defined(OP_DMUL)
typedef double T;
#define STEP(x, b, c, j) asm("mul.rn.f64 %0, %0, %1;" : "+d"(x) : "d"(b))
#elif defined(OP_IMAD)
typedef u32 T;
#define STEP(x, b, c, j) asm("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_IMAD_WIDE)  // x <- lo(x) * hi(x) (64-bit; ptxas splits a mad.wide with a register addend
typedef u64 T;                //  into IMAD.WIDE + a 64-bit add, so the chain multiplies only)
#define STEP(x, b, c, j) asm("{.reg .u32 l, h; mov.b64 {l, h}, %0; mul.wide.u32 %0, l, h;}" : "+l"(x))
#elif defined(OP_IADD3)
typedef u32 T;
#define STEP(x, b, c, j) asm("add.u32 %0, %0, %1; add.u32 %0, %0, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_LOP3)  // (x & b) ^ c: not associative across steps, so nothing is hoisted
typedef u32 T;
#define STEP(x, b, c, j) asm("lop3.b32 %0, %0, %1, %2, 0x6A;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_SHF)  // funnel shift left of (x:b) by c
typedef u32 T;
#define STEP(x, b, c, j) asm("shf.l.wrap.b32 %0, %1, %0, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_VIMNMX)  // integer max then min: sm_90 encodes IMNMX as VIMNMX
typedef u32 T;
#define STEP(x, b, c, j) asm("max.s32 %0, %0, %1; min.s32 %0, %0, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_ISETP)  // ISETP then SEL
typedef u32 T;
#define STEP(x, b, c, j) asm("{.reg .pred p; setp.lt.s32 p, %0, %1; selp.b32 %0, %2, %1, p;}" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_SEL)
typedef u32 T;
#define NOPS 4
#define STEP(x, b, c, j) asm("{.reg .pred p; setp.ne.u32 p, %2, 0; selp.b32 %0, %0, %1, p;}" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_POPC)
typedef u32 T;
#define STEP(x, b, c, j) asm("popc.b32 %0, %0;" : "+r"(x))
#elif defined(OP_FLO)
typedef u32 T;
#define STEP(x, b, c, j) asm("bfind.u32 %0, %0;" : "+r"(x))
#elif defined(OP_BREV)
typedef u32 T;
#define STEP(x, b, c, j) asm("brev.b32 %0, %0;" : "+r"(x))
#elif defined(OP_PRMT)
typedef u32 T;
#define STEP(x, b, c, j) asm("prmt.b32 %0, %0, %1, %2;" : "+r"(x) : "r"(b), "r"(c))
#elif defined(OP_MUFU_EX2)  // x <- 2^-x (the negation is a source modifier)
typedef float T;
#define STEP(x, b, c, j) asm("{.reg .f32 t; neg.f32 t, %0; ex2.approx.ftz.f32 %0, t;}" : "+f"(x))
#elif defined(OP_MUFU_LG2)  // x <- log2(x) + b (b = 2): the FADD keeps the chain finite
typedef float T;
#define STEP(x, b, c, j) asm("lg2.approx.ftz.f32 %0, %0; add.rn.f32 %0, %0, %1;" : "+f"(x) : "f"(b))
#elif defined(OP_MUFU_RSQ)
typedef float T;
#define STEP(x, b, c, j) asm("rsqrt.approx.ftz.f32 %0, %0;" : "+f"(x))
#elif defined(OP_MUFU_RCP)  // x <- 1/|x| (|x| is a source modifier; rcp(rcp(x)) alone is folded)
typedef float T;
#define STEP(x, b, c, j) asm("{.reg .f32 t; abs.f32 t, %0; rcp.approx.ftz.f32 %0, t;}" : "+f"(x))
#elif defined(OP_MUFU_SIN)  // sm_90: an FMUL.RZ by 1/(2 pi) precedes MUFU.SIN
typedef float T;
#define STEP(x, b, c, j) asm("sin.approx.ftz.f32 %0, %0;" : "+f"(x))
#elif defined(OP_MUFU_COS)
typedef float T;
#define STEP(x, b, c, j) asm("cos.approx.ftz.f32 %0, %0;" : "+f"(x))
#elif defined(OP_MUFU_SQRT)
typedef float T;
#define STEP(x, b, c, j) asm("sqrt.approx.ftz.f32 %0, %0;" : "+f"(x))
#elif defined(OP_MUFU_TANH)
typedef float T;
#define STEP(x, b, c, j) asm("tanh.approx.f32 %0, %0;" : "+f"(x))
#elif defined(OP_F2I)  // float -> s32 (truncating), the bits read back as a float
typedef float T;
#define STEP(x, b, c, j) asm("{.reg .s32 t; cvt.rzi.s32.f32 t, %0; mov.b32 %0, t;}" : "+f"(x))
#elif defined(OP_I2FP)  // s32 -> float, the bits read back as an int (sm_90: I2FP.F32.S32)
typedef u32 T;
#define STEP(x, b, c, j) asm("{.reg .f32 t; cvt.rn.f32.s32 t, %0; mov.b32 %0, t;}" : "+r"(x))
#elif defined(OP_F2F)  // double -> float -> double: two F2F per step
typedef double T;
#define STEP(x, b, c, j) asm("{.reg .f32 t; cvt.rn.f32.f64 t, %0; cvt.f64.f32 %0, t;}" : "+d"(x))
#elif defined(OP_F2FP)  // two floats (x's bits, b) -> packed f16x2
typedef u32 T;
#define STEP(x, b, c, j) asm("{.reg .f32 t, u; mov.b32 t, %0; mov.b32 u, %1; cvt.rn.f16x2.f32 %0, t, u;}" : "+r"(x) : "r"(b))
#elif defined(OP_SHFL)  // x <- x of lane (lane + b) mod 32
typedef u32 T;
#define PREP(b, c) b = (lane + b) & 31
#define STEP(x, b, c, j) asm("shfl.sync.idx.b32 %0, %0, %1, 31, -1;" : "+r"(x) : "r"(b))
#elif defined(OP_VOTE)  // predicate chain: any then all over the warp (ptxas drops the setp/selp between steps)
typedef u32 T;
#define MAX_ILP 4       // one predicate register per chain
#define STEP(x, b, c, j) asm("{.reg .pred p; setp.ne.u32 p, %0, 0; vote.sync.any.pred p, p, -1; vote.sync.all.pred p, p, -1; selp.u32 %0, 1, 0, p;}" : "+r"(x))
#elif defined(OP_REDUX)  // x <- sum of x over the warp (the sum lands in a uniform register, moved back)
typedef u32 T;
#define STEP(x, b, c, j) asm("redux.sync.add.u32 %0, %0, -1;" : "+r"(x))
#elif defined(OP_MATCH)  // x <- mask of the lanes whose x equals this lane's
typedef u32 T;
#define STEP(x, b, c, j) asm("match.any.sync.b32 %0, %0, -1;" : "+r"(x))
#elif defined(OP_LDS)  // pointer chase through the shared table (x: shared address)
typedef u32 T;
#define SMEM_CHAIN 1
#define STEP(x, b, c, j) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(x))
#elif defined(OP_STS)  // store x, load it back from the same word: STS then LDS
typedef u32 T;
#define SMEM_STORE 1
#define STEP(x, b, c, j) asm volatile("st.volatile.shared.u32 [%1], %0; ld.volatile.shared.u32 %0, [%1];" \
                                      : "+r"(x) : "r"(sbase + 4u * ((lane + 32u * (j)) % TABLE)) : "memory")
#elif defined(OP_BAR)  // block barrier; x untouched
typedef u32 T;
#define STEP(x, b, c, j) asm volatile("bar.sync 0;" ::: "memory")
#elif defined(OP_VIADDMNMX)  // DPX: max(x + b, c)
typedef u32 T;
#define STEP(x, b, c, j) x = (u32)__viaddmax_s32((int)x, (int)b, (int)c)
#elif defined(OP_VIMNMX3)  // DPX: max of three (as bench/hopper_dpx times its A3 forms)
typedef u32 T;
#define STEP(x, b, c, j) x = (u32)__vimax3_s32((int)x, (int)b, (int)c)
#else
#error "define one OP_<NAME>"
#endif

// The peak forms: one (b, c) pair for every step. _REUSE: every FMA of the loop names the same b and c in the
// same operand slots and ptxas marks them .reuse, so the register file delivers x alone for most of them (ptxas
// drops the flags now and then). DFMA_UREG: b is the kernel parameter `bconst` (a uniform register on sm_75+, the
// constant bank before), so a DFMA reads at most x and c from the register file, one value per bank each, two
// per bank in DFMA's 2 issue clocks with or without .reuse (the 8-pair form's first DFMA of a pair reads b, c
// and x: three values per bank). The host passes a longer BODY: the loop's own instructions take fewer slots.
#if defined(OP_FFMA_REUSE) || defined(OP_HFMA2_REUSE) || defined(OP_DFMA_UREG)
#define NOPS 1
#endif
#ifndef NOPS
#define NOPS NOPS_DEFAULT
#endif
#ifndef MAX_ILP
#define MAX_ILP 8
#endif
#ifndef PREP
#define PREP(b, c) (void)0
#endif
#ifndef OT
#define OT T
#endif

// 64-bit words <-> values of every chain type
__device__ __forceinline__ void load_word(float& v, u64 w) { v = __int_as_float((int)(u32)w); }
__device__ __forceinline__ void load_word(double& v, u64 w) { v = __longlong_as_double((long long)w); }
__device__ __forceinline__ void load_word(u32& v, u64 w) { v = (u32)w; }
__device__ __forceinline__ void load_word(u64& v, u64 w) { v = w; }
__device__ __forceinline__ u64 word(float v) { return (u32)__float_as_int(v); }
__device__ __forceinline__ u64 word(double v) { return (u64)__double_as_longlong(v); }
__device__ __forceinline__ u64 word(u32 v) { return v; }
__device__ __forceinline__ u64 word(u64 v) { return v; }

// ops: b[0..NOPS), c[0..NOPS) as words, read at ops[k + lane * ostride] with ostride = 0 at run time: ptxas
// cannot prove the operands warp-uniform, so it keeps them in ordinary registers (in uniform registers
// some instructions would need a move per use); init: [chain][lane] start words (LDS: table indices;
// the table itself follows at init[8 * 32]); out: [block][warp][chain][lane];
// rec: [block][warp] x (start clock, end clock, SM id, start ns, end ns)
template <int ILP>
__device__ __forceinline__ void chains(const u64* __restrict__ ops, u32 ostride, const u64* __restrict__ init, u32 iters,
                                       u64* __restrict__ out, u64* __restrict__ rec, u64 bconst) {
    (void)bconst;
    __shared__ u32 table[TABLE];
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 sbase = (u32)__cvta_generic_to_shared(table);
    (void)sbase;
#if defined(SMEM_CHAIN)
    for (u32 i = threadIdx.x; i < TABLE; i += blockDim.x) table[i] = sbase + 4u * (u32)init[8 * 32 + i];
    __syncthreads();
#endif
    OT b[NOPS], c[NOPS];
#pragma unroll
    for (int k = 0; k < NOPS; k++) {
        load_word(b[k], ops[k + lane * ostride]);
        load_word(c[k], ops[NOPS + k + lane * ostride]);
        PREP(b[k], c[k]);
    }
    T x[ILP];
#pragma unroll
    for (int j = 0; j < ILP; j++) load_word(x[j], init[j * 32 + lane]);
#if defined(SMEM_CHAIN)
#pragma unroll
    for (int j = 0; j < ILP; j++) x[j] = sbase + 4u * x[j];
#endif
    __syncthreads();
    long long t0 = 0, t1 = 0;
    u64 g0 = 0, g1 = 0;
#pragma unroll 1
    for (int pass = 0; pass < 2; pass++) {
        g0 = gtime();
        t0 = clk();
#pragma unroll 1
        for (u32 it = 0; it < iters; it++) {
#pragma unroll
            for (int k = 0; k < BODY / ILP; k++) {
#pragma unroll
                for (int j = 0; j < ILP; j++) STEP(x[j], b[k % NOPS], c[k % NOPS], j);
            }
        }
        t1 = clk();
        g1 = gtime();
    }
#if defined(SMEM_CHAIN)
#pragma unroll
    for (int j = 0; j < ILP; j++) x[j] = (x[j] - sbase) / 4u;
#endif
    const u64 w = (u64)blockIdx.x * (blockDim.x >> 5) + warp;
#pragma unroll
    for (int j = 0; j < ILP; j++) out[(w * ILP + j) * 32 + lane] = word(x[j]);
    if (lane == 0) record(rec + REC_WORDS * w, t0, t1, g0, g1);
}

#define ILP_KERNEL(N)                                                                                         \
    extern "C" __global__ void __launch_bounds__(32 * MAX_WARPS) isa_ilp##N(                                  \
        const u64* ops, u32 ostride, const u64* init, u32 iters, u64* out, u64* rec, u64 bconst) {            \
        chains<N>(ops, ostride, init, iters, out, rec, bconst);                                               \
    }
ILP_KERNEL(1)
ILP_KERNEL(2)
ILP_KERNEL(4)
#if MAX_ILP >= 8
ILP_KERNEL(8)
#endif

#if defined(OP_FFMA)
// Scheduler mapping (002 §2.2): a block of 32 * MAX_WARPS threads in which only the warps whose bit is
// set in `active` run SCHED_ILP independent FFMA chains; the others leave at once. Per warp: start and
// end clock, %warpid (the hardware warp slot) and the SM id; out: every chain's final value.
#define SCHED_ILP 8
extern "C" __global__ void __launch_bounds__(32 * MAX_WARPS) sched_ffma(const u64* ops, const u64* init, u32 active,
                                                                        u32 iters, u64* out, u64* rec) {
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u64 w = (u64)blockIdx.x * (blockDim.x >> 5) + warp;
    if (!((active >> warp) & 1u)) return;
    float b[NOPS], c[NOPS], x[SCHED_ILP];
#pragma unroll
    for (int k = 0; k < NOPS; k++) {
        load_word(b[k], ops[k]);
        load_word(c[k], ops[NOPS + k]);
    }
#pragma unroll
    for (int j = 0; j < SCHED_ILP; j++) load_word(x[j], init[j * 32 + lane]);
    u32 hw;
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(hw));
    __syncwarp();
    long long t0 = 0, t1 = 0;
#pragma unroll 1
    for (int pass = 0; pass < 2; pass++) {
        t0 = clk();
#pragma unroll 1
        for (u32 it = 0; it < iters; it++) {
#pragma unroll
            for (int k = 0; k < BODY / SCHED_ILP; k++) {
#pragma unroll
                for (int j = 0; j < SCHED_ILP; j++) STEP(x[j], b[k % NOPS], c[k % NOPS], j);
            }
        }
        t1 = clk();
    }
#pragma unroll
    for (int j = 0; j < SCHED_ILP; j++) out[(w * SCHED_ILP + j) * 32 + lane] = word(x[j]);
    if (lane == 0) {
        rec[w * 4 + 0] = (u64)t0;
        rec[w * 4 + 1] = (u64)t1;
        rec[w * 4 + 2] = hw;
        rec[w * 4 + 3] = smid();
    }
}
#endif
