// wgmma (sm_90a) dense and sparse: one compiled variant per type/N (Luo et al. §6.2, Tables IX-XIII).
//
// A and B live in shared memory in the no-swizzle ("interleave") K-major layout of 8-row x 16-byte
// core matrices; the host packs them (bench/tensor/wgmma/layout.py) and passes the matrix-descriptor
// template (leading/stride byte offsets, layout type) without its start address, which is the only
// thing the device adds. RS variants take A from registers, packed per thread by the host.
//
// Defines (all required, set per variant by bench/tensor/wgmma/variants.py):
//   WG_N, WG_K        instruction shape m64nNkK (K is the logical K, doubled for .sp)
//   WG_DT/AT/BT       PTX types of D, A, B (tokens: f32, f16, bf16, tf32, e4m3, e5m2, s32, s8, u8, b1)
//   WG_NACC           32-bit accumulator registers per thread (N/2, or N/4 for .f16 accumulators)
//   WG_FACC           1: accumulators are .f32 ("f" registers); 0: .f16x2 or .s32 ("r" registers)
//   WG_KIND           0: .f16/.bf16 (scale and transpose immediates), 1: .tf32/fp8 (scale only),
//                     2: integer and .b1 (neither)
//   WG_B1             1 for .b1 (.and.popc)
//   WG_SPARSE         1 for wgmma.mma_async.sp (2:4 sparse A, metadata register, selector 0)
//   WG_UNROLL         wgmmas per commit group in the timed loop
#include "gpudissect.cuh"  // u64/u32, clk(), gtime(), smid()

#if !defined(WG_N) || !defined(WG_K) || !defined(WG_NACC) || !defined(WG_DT) || !defined(WG_UNROLL)
#error "tensor_wgmma.cu needs WG_N, WG_K, WG_NACC, WG_DT/AT/BT, WG_FACC, WG_KIND, WG_B1, WG_SPARSE, WG_UNROLL"
#endif

#define WG_STR(x) #x
#define WG_XSTR(x) WG_STR(x)
#define WG_CAT(a, b) a##b
#define WG_XCAT(a, b) WG_CAT(a, b)

// Operand slots of every wgmma asm statement: %0 a-desc, %1 b-desc, %2 sparsity metadata,
// %3 scale-d (as an integer turned into the predicate), %4..%7 A registers (RS), %8.. accumulators.
// Fixed slots keep every operand number a literal whatever the accumulator count.
// WG_L<n>: the accumulator list "%8,...,%(8+n-1)"; WG_C<n>: its constraint list.
#define WG_L2 "%8,%9"
#define WG_L4 WG_L2 "," "%10,%11"
#define WG_L6 WG_L4 "," "%12,%13"
#define WG_L8 WG_L6 "," "%14,%15"
#define WG_L10 WG_L8 "," "%16,%17"
#define WG_L12 WG_L10 "," "%18,%19"
#define WG_L14 WG_L12 "," "%20,%21"
#define WG_L16 WG_L14 "," "%22,%23"
#define WG_L18 WG_L16 "," "%24,%25"
#define WG_L20 WG_L18 "," "%26,%27"
#define WG_L22 WG_L20 "," "%28,%29"
#define WG_L24 WG_L22 "," "%30,%31"
#define WG_L26 WG_L24 "," "%32,%33"
#define WG_L28 WG_L26 "," "%34,%35"
#define WG_L30 WG_L28 "," "%36,%37"
#define WG_L32 WG_L30 "," "%38,%39"
#define WG_L34 WG_L32 "," "%40,%41"
#define WG_L36 WG_L34 "," "%42,%43"
#define WG_L38 WG_L36 "," "%44,%45"
#define WG_L40 WG_L38 "," "%46,%47"
#define WG_L42 WG_L40 "," "%48,%49"
#define WG_L44 WG_L42 "," "%50,%51"
#define WG_L46 WG_L44 "," "%52,%53"
#define WG_L48 WG_L46 "," "%54,%55"
#define WG_L50 WG_L48 "," "%56,%57"
#define WG_L52 WG_L50 "," "%58,%59"
#define WG_L54 WG_L52 "," "%60,%61"
#define WG_L56 WG_L54 "," "%62,%63"
#define WG_L58 WG_L56 "," "%64,%65"
#define WG_L60 WG_L58 "," "%66,%67"
#define WG_L62 WG_L60 "," "%68,%69"
#define WG_L64 WG_L62 "," "%70,%71"
#define WG_L66 WG_L64 "," "%72,%73"
#define WG_L68 WG_L66 "," "%74,%75"
#define WG_L70 WG_L68 "," "%76,%77"
#define WG_L72 WG_L70 "," "%78,%79"
#define WG_L74 WG_L72 "," "%80,%81"
#define WG_L76 WG_L74 "," "%82,%83"
#define WG_L78 WG_L76 "," "%84,%85"
#define WG_L80 WG_L78 "," "%86,%87"
#define WG_L82 WG_L80 "," "%88,%89"
#define WG_L84 WG_L82 "," "%90,%91"
#define WG_L86 WG_L84 "," "%92,%93"
#define WG_L88 WG_L86 "," "%94,%95"
#define WG_L90 WG_L88 "," "%96,%97"
#define WG_L92 WG_L90 "," "%98,%99"
#define WG_L94 WG_L92 "," "%100,%101"
#define WG_L96 WG_L94 "," "%102,%103"
#define WG_L98 WG_L96 "," "%104,%105"
#define WG_L100 WG_L98 "," "%106,%107"
#define WG_L102 WG_L100 "," "%108,%109"
#define WG_L104 WG_L102 "," "%110,%111"
#define WG_L106 WG_L104 "," "%112,%113"
#define WG_L108 WG_L106 "," "%114,%115"
#define WG_L110 WG_L108 "," "%116,%117"
#define WG_L112 WG_L110 "," "%118,%119"
#define WG_L114 WG_L112 "," "%120,%121"
#define WG_L116 WG_L114 "," "%122,%123"
#define WG_L118 WG_L116 "," "%124,%125"
#define WG_L120 WG_L118 "," "%126,%127"
#define WG_L122 WG_L120 "," "%128,%129"
#define WG_L124 WG_L122 "," "%130,%131"
#define WG_L126 WG_L124 "," "%132,%133"
#define WG_L128 WG_L126 "," "%134,%135"
#define WG_C2 WG_ACC_C(d[0]), WG_ACC_C(d[1])
#define WG_C4 WG_C2, WG_ACC_C(d[2]), WG_ACC_C(d[3])
#define WG_C6 WG_C4, WG_ACC_C(d[4]), WG_ACC_C(d[5])
#define WG_C8 WG_C6, WG_ACC_C(d[6]), WG_ACC_C(d[7])
#define WG_C10 WG_C8, WG_ACC_C(d[8]), WG_ACC_C(d[9])
#define WG_C12 WG_C10, WG_ACC_C(d[10]), WG_ACC_C(d[11])
#define WG_C14 WG_C12, WG_ACC_C(d[12]), WG_ACC_C(d[13])
#define WG_C16 WG_C14, WG_ACC_C(d[14]), WG_ACC_C(d[15])
#define WG_C18 WG_C16, WG_ACC_C(d[16]), WG_ACC_C(d[17])
#define WG_C20 WG_C18, WG_ACC_C(d[18]), WG_ACC_C(d[19])
#define WG_C22 WG_C20, WG_ACC_C(d[20]), WG_ACC_C(d[21])
#define WG_C24 WG_C22, WG_ACC_C(d[22]), WG_ACC_C(d[23])
#define WG_C26 WG_C24, WG_ACC_C(d[24]), WG_ACC_C(d[25])
#define WG_C28 WG_C26, WG_ACC_C(d[26]), WG_ACC_C(d[27])
#define WG_C30 WG_C28, WG_ACC_C(d[28]), WG_ACC_C(d[29])
#define WG_C32 WG_C30, WG_ACC_C(d[30]), WG_ACC_C(d[31])
#define WG_C34 WG_C32, WG_ACC_C(d[32]), WG_ACC_C(d[33])
#define WG_C36 WG_C34, WG_ACC_C(d[34]), WG_ACC_C(d[35])
#define WG_C38 WG_C36, WG_ACC_C(d[36]), WG_ACC_C(d[37])
#define WG_C40 WG_C38, WG_ACC_C(d[38]), WG_ACC_C(d[39])
#define WG_C42 WG_C40, WG_ACC_C(d[40]), WG_ACC_C(d[41])
#define WG_C44 WG_C42, WG_ACC_C(d[42]), WG_ACC_C(d[43])
#define WG_C46 WG_C44, WG_ACC_C(d[44]), WG_ACC_C(d[45])
#define WG_C48 WG_C46, WG_ACC_C(d[46]), WG_ACC_C(d[47])
#define WG_C50 WG_C48, WG_ACC_C(d[48]), WG_ACC_C(d[49])
#define WG_C52 WG_C50, WG_ACC_C(d[50]), WG_ACC_C(d[51])
#define WG_C54 WG_C52, WG_ACC_C(d[52]), WG_ACC_C(d[53])
#define WG_C56 WG_C54, WG_ACC_C(d[54]), WG_ACC_C(d[55])
#define WG_C58 WG_C56, WG_ACC_C(d[56]), WG_ACC_C(d[57])
#define WG_C60 WG_C58, WG_ACC_C(d[58]), WG_ACC_C(d[59])
#define WG_C62 WG_C60, WG_ACC_C(d[60]), WG_ACC_C(d[61])
#define WG_C64 WG_C62, WG_ACC_C(d[62]), WG_ACC_C(d[63])
#define WG_C66 WG_C64, WG_ACC_C(d[64]), WG_ACC_C(d[65])
#define WG_C68 WG_C66, WG_ACC_C(d[66]), WG_ACC_C(d[67])
#define WG_C70 WG_C68, WG_ACC_C(d[68]), WG_ACC_C(d[69])
#define WG_C72 WG_C70, WG_ACC_C(d[70]), WG_ACC_C(d[71])
#define WG_C74 WG_C72, WG_ACC_C(d[72]), WG_ACC_C(d[73])
#define WG_C76 WG_C74, WG_ACC_C(d[74]), WG_ACC_C(d[75])
#define WG_C78 WG_C76, WG_ACC_C(d[76]), WG_ACC_C(d[77])
#define WG_C80 WG_C78, WG_ACC_C(d[78]), WG_ACC_C(d[79])
#define WG_C82 WG_C80, WG_ACC_C(d[80]), WG_ACC_C(d[81])
#define WG_C84 WG_C82, WG_ACC_C(d[82]), WG_ACC_C(d[83])
#define WG_C86 WG_C84, WG_ACC_C(d[84]), WG_ACC_C(d[85])
#define WG_C88 WG_C86, WG_ACC_C(d[86]), WG_ACC_C(d[87])
#define WG_C90 WG_C88, WG_ACC_C(d[88]), WG_ACC_C(d[89])
#define WG_C92 WG_C90, WG_ACC_C(d[90]), WG_ACC_C(d[91])
#define WG_C94 WG_C92, WG_ACC_C(d[92]), WG_ACC_C(d[93])
#define WG_C96 WG_C94, WG_ACC_C(d[94]), WG_ACC_C(d[95])
#define WG_C98 WG_C96, WG_ACC_C(d[96]), WG_ACC_C(d[97])
#define WG_C100 WG_C98, WG_ACC_C(d[98]), WG_ACC_C(d[99])
#define WG_C102 WG_C100, WG_ACC_C(d[100]), WG_ACC_C(d[101])
#define WG_C104 WG_C102, WG_ACC_C(d[102]), WG_ACC_C(d[103])
#define WG_C106 WG_C104, WG_ACC_C(d[104]), WG_ACC_C(d[105])
#define WG_C108 WG_C106, WG_ACC_C(d[106]), WG_ACC_C(d[107])
#define WG_C110 WG_C108, WG_ACC_C(d[108]), WG_ACC_C(d[109])
#define WG_C112 WG_C110, WG_ACC_C(d[110]), WG_ACC_C(d[111])
#define WG_C114 WG_C112, WG_ACC_C(d[112]), WG_ACC_C(d[113])
#define WG_C116 WG_C114, WG_ACC_C(d[114]), WG_ACC_C(d[115])
#define WG_C118 WG_C116, WG_ACC_C(d[116]), WG_ACC_C(d[117])
#define WG_C120 WG_C118, WG_ACC_C(d[118]), WG_ACC_C(d[119])
#define WG_C122 WG_C120, WG_ACC_C(d[120]), WG_ACC_C(d[121])
#define WG_C124 WG_C122, WG_ACC_C(d[122]), WG_ACC_C(d[123])
#define WG_C126 WG_C124, WG_ACC_C(d[124]), WG_ACC_C(d[125])
#define WG_C128 WG_C126, WG_ACC_C(d[126]), WG_ACC_C(d[127])
#if WG_FACC
typedef float acc_t;
#define WG_ACC_C(x) "+f"(x)
#else
typedef u32 acc_t;
#define WG_ACC_C(x) "+r"(x)
#endif

#define WG_LIST WG_XCAT(WG_L, WG_NACC)
#define WG_CLIST WG_XCAT(WG_C, WG_NACC)

#if WG_SPARSE
#define WG_SP ".sp"
#define WG_META ", %2, 0"  // metadata register, sparsity selector 0
#else
#define WG_SP ""
#define WG_META ""
#endif
#if WG_B1
#define WG_OPSUFFIX ".and.popc"
#else
#define WG_OPSUFFIX ""
#endif
#if WG_KIND == 0
#define WG_SS_TAIL ", 1, 1, 0, 0"  // imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b: K-major A and B
#define WG_RS_TAIL ", 1, 1, 0"
#elif WG_KIND == 1
#define WG_SS_TAIL ", 1, 1"
#define WG_RS_TAIL ", 1, 1"
#else
#define WG_SS_TAIL ""
#define WG_RS_TAIL ""
#endif

#define WG_OP "wgmma.mma_async" WG_SP ".sync.aligned.m64n" WG_XSTR(WG_N) "k" WG_XSTR(WG_K) "." \
    WG_XSTR(WG_DT) "." WG_XSTR(WG_AT) "." WG_XSTR(WG_BT) WG_OPSUFFIX
#define WG_SS_TEXT WG_OP " {" WG_LIST "}, %0, %1" WG_META ", p" WG_SS_TAIL ";"
#define WG_RS_TEXT WG_OP " {" WG_LIST "}, {%4, %5, %6, %7}, %1" WG_META ", p" WG_RS_TAIL ";"

#define WG_MMA(TEXT)                                                                              \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %3, 0;\n" TEXT "\n}\n"                        \
                 : "+l"(da), "+l"(db), "+r"(mt), "+r"(sd), "+r"(a0), "+r"(a1), "+r"(a2), "+r"(a3), \
                   WG_CLIST::"memory")

__device__ __forceinline__ u32 smem_addr(const void* p) {
    u32 a;
    asm("{\n.reg .u64 t;\ncvta.to.shared.u64 t, %1;\ncvt.u32.u64 %0, t;\n}" : "=r"(a) : "l"(p));
    return a;
}
__device__ __forceinline__ acc_t poison() {  // all-ones: a NaN for .f32 and .f16x2, -1 for .s32
    acc_t x;
#if WG_FACC
    asm volatile("mov.b32 %0, 0xffffffff;" : "=f"(x));
#else
    asm volatile("mov.b32 %0, 0xffffffff;" : "=r"(x));
#endif
    return x;
}
__device__ __forceinline__ u32 bits(acc_t x) {
#if WG_FACC
    u32 u;
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(x));
    return u;
#else
    return x;
#endif
}

// Every warpgroup of every block: copy the operand image (A and B, packed by the host) into shared
// memory (the rest of the dynamic shared memory zeroed), then one wgmma with scale-d = 0 over
// poisoned accumulators (D = A*B: a wrong scale-d or an unwritten register shows up on the host),
// then `iters` groups of WG_UNROLL dependent wgmmas
// accumulating into the same registers (D += A*B), each group committed, at most two in flight.
// D = (1 + iters * WG_UNROLL) * A * B goes to dout; thread 0 records the block's clock span and SM.
// grid = 1, block = 128 measures the dependent-chain latency; all SMs busy measure throughput.
#define WG_KERNEL(NAME, TEXT, RS)                                                                   \
    extern "C" __global__ void NAME(const uint4* img, u32 img_bytes, u32 off_a, u32 off_b, u64 tpl_a, \
                                    u64 tpl_b, const u32* afrag, const u32* meta, u32 iters,        \
                                    u32* dout, u64* rec) {                                         \
        extern __shared__ uint4 smem[];                                                             \
        u32 dyn;                                                                                    \
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));                                       \
        uint4 zero;                                                                                 \
        zero.x = zero.y = zero.z = zero.w = 0;                                                      \
        /* the image, then zeros: a wrong descriptor reads known bytes (see diagnose()) */          \
        for (u32 i = threadIdx.x; i < dyn / 16; i += blockDim.x)                                    \
            smem[i] = i < img_bytes / 16 ? img[i] : zero;                                           \
        /* generic-proxy stores must be made visible to the async proxy that wgmma reads with */    \
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                               \
        __syncthreads();                                                                            \
        const u32 t = threadIdx.x & 127;                                                            \
        const u32 base = smem_addr(smem);                                                           \
        u64 da = tpl_a | (u64)(((base + off_a) >> 4) & 0x3FFF);                                     \
        u64 db = tpl_b | (u64)(((base + off_b) >> 4) & 0x3FFF);                                     \
        u32 mt = WG_SPARSE ? meta[t] : 0u;                                                          \
        u32 a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                                         \
        if (RS) {                                                                                   \
            a0 = afrag[4 * t + 0]; a1 = afrag[4 * t + 1];                                           \
            a2 = afrag[4 * t + 2]; a3 = afrag[4 * t + 3];                                           \
        }                                                                                           \
        acc_t d[WG_NACC];                                                                           \
        const acc_t bad = poison();                                                                 \
        _Pragma("unroll") for (int i = 0; i < WG_NACC; ++i) d[i] = bad;                            \
        u32 sd = 0;                                                                                 \
        const long long t0 = clk();                                                                 \
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");                                    \
        WG_MMA(TEXT);                                                                               \
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");                             \
        sd = 1;                                                                                     \
        _Pragma("unroll 1") for (u32 it = 0; it < iters; ++it) {                                    \
            _Pragma("unroll") for (int u = 0; u < WG_UNROLL; ++u) WG_MMA(TEXT);                    \
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");                         \
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");                         \
        }                                                                                           \
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");                             \
        __syncthreads();                                                                            \
        const long long t1 = clk();                                                                 \
        if (threadIdx.x == 0) {                                                                     \
            rec[3 * blockIdx.x + 0] = (u64)t0;                                                      \
            rec[3 * blockIdx.x + 1] = (u64)t1;                                                      \
            rec[3 * blockIdx.x + 2] = smid();                                                       \
        }                                                                                           \
        u32* out = dout + ((u64)(blockIdx.x * (blockDim.x >> 7) + (threadIdx.x >> 7)) * 128 + t) * WG_NACC; \
        _Pragma("unroll") for (int i = 0; i < WG_NACC; ++i) out[i] = bits(d[i]);                   \
    }

WG_KERNEL(wg_ss, WG_SS_TEXT, 0)
WG_KERNEL(wg_rs, WG_RS_TEXT, 1)
