// Tensor-core register mapping (Jia et al. 002 §4.3, Figs. 4.2-4.7; Yan et al. 004 §IV-B, Fig. 1):
// which thread and register holds which element of A, B, C/D.
//
// wmma (m16n16k16, f16 inputs, f32 accumulator): the fragments are loaded by wmma.load from matrices
// whose every element holds a distinct code, and the fragment registers are written out as they are;
// the accumulator is also stored by wmma.store from registers that hold codes of (lane, register).
// wmma.mma on the loaded fragments gives D = A*B + C, checked on the host (the layouts are consistent).
//
// mma.sync m16n8k16 (f16 inputs, f32 accumulator) has no load instruction of its own: its layout is
// discovered from products. Probe p (one warp each): "A probes" put 1.0 in one A slot (lane, register,
// half) and 0 elsewhere, with a distinct code in every B slot: the D slots that light up are the row of
// that A element, and their values name the B slots of its k. "C probes" put 1.0 in one C slot and zeros
// in A and B: D = C shows that C and D share slots.
//
// One build serves three variants (bench/isa/fragments.py): wmma (sm_70+), mma.sync m16n8k16 (sm_80+) and
// wgmma (sm_90a); the functions a target lacks are left out of its build, the rest compile as they are.
#include "gpudissect.cuh"

#define WMMA_SHAPE ".m16n16k16"

// A: 16x16 f16 row-major, B: 16x16 f16 column-major, C: 16x16 f32 row-major (leading dimension 16).
// fa/fb/fc: [register][lane] raw words of the loaded fragments; dst: the 16x16 f32 matrix stored from
// registers holding lane * 8 + register; d: A*B + C stored row-major.
extern "C" __global__ void frag_wmma(const unsigned short* A, const unsigned short* B, const float* C, u32* fa,
                                     u32* fb, u32* fc, float* dst, float* d) {
    const u32 lane = threadIdx.x & 31;
    u32 a[8], b[8];
    float c[8];
    asm volatile("wmma.load.a.sync.aligned.row" WMMA_SHAPE ".f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], 16;"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]), "=r"(a[4]), "=r"(a[5]), "=r"(a[6]), "=r"(a[7])
                 : "l"(A));
    asm volatile("wmma.load.b.sync.aligned.col" WMMA_SHAPE ".f16 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], 16;"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]), "=r"(b[4]), "=r"(b[5]), "=r"(b[6]), "=r"(b[7])
                 : "l"(B));
    asm volatile("wmma.load.c.sync.aligned.row" WMMA_SHAPE ".f32 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8], 16;"
                 : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3]), "=f"(c[4]), "=f"(c[5]), "=f"(c[6]), "=f"(c[7])
                 : "l"(C));
#pragma unroll
    for (int r = 0; r < 8; r++) {
        fa[r * 32 + lane] = a[r];
        fb[r * 32 + lane] = b[r];
        fc[r * 32 + lane] = __float_as_uint(c[r]);
    }
    float e[8];
#pragma unroll
    for (int r = 0; r < 8; r++) e[r] = (float)(lane * 8 + r);
    asm volatile("wmma.store.d.sync.aligned.row" WMMA_SHAPE ".f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, 16;"
                 :: "l"(dst), "f"(e[0]), "f"(e[1]), "f"(e[2]), "f"(e[3]), "f"(e[4]), "f"(e[5]), "f"(e[6]), "f"(e[7])
                 : "memory");
    asm volatile("wmma.mma.sync.aligned.row.col" WMMA_SHAPE ".f32.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
                 "{%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19,%20,%21,%22,%23}, {%0,%1,%2,%3,%4,%5,%6,%7};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[4]), "r"(a[5]), "r"(a[6]), "r"(a[7]),
                   "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(b[4]), "r"(b[5]), "r"(b[6]), "r"(b[7]));
    asm volatile("wmma.store.d.sync.aligned.row" WMMA_SHAPE ".f32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8}, 16;"
                 :: "l"(d), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]), "f"(c[4]), "f"(c[5]), "f"(c[6]), "f"(c[7])
                 : "memory");
}

#if __CUDA_ARCH__ >= 800  // mma.sync m16n8k16 with f16 inputs
// mma.sync m16n8k16 probes. a_in/b_in/c_in: [probe][register][lane] words (A, B: f16x2; C: f32 bits);
// d: [probe][register][lane] f32 bits.
extern "C" __global__ void frag_mma_probe(const u32* a_in, const u32* b_in, const u32* c_in, u32* d) {
    const u32 lane = threadIdx.x & 31;
    const u64 p = blockIdx.x;
    u32 a[4], b[2];
    float c[4];
#pragma unroll
    for (int r = 0; r < 4; r++) a[r] = a_in[(p * 4 + r) * 32 + lane];
#pragma unroll
    for (int r = 0; r < 2; r++) b[r] = b_in[(p * 2 + r) * 32 + lane];
#pragma unroll
    for (int r = 0; r < 4; r++) c[r] = __uint_as_float(c_in[(p * 4 + r) * 32 + lane]);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#pragma unroll
    for (int r = 0; r < 4; r++) d[(p * 4 + r) * 32 + lane] = __float_as_uint(c[r]);
}
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // wgmma: sm_90a only
// wgmma.mma_async m64n8k16 (f16 A from registers, B from shared memory, f32 D), one warpgroup per probe:
// A probe p puts 1.0 in one A slot (thread, register, half); B (16 x 8) sits in shared memory in the
// no-swizzle K-major layout (image and descriptor template from the host, as bench/tensor/wgmma/layout.py packs
// them) with B[k][n] = k * 8 + n + 1, so every lit D slot names k and n itself.
// a_in: [probe][register][thread] words; d: [probe][register][thread] f32 bits (D = A * B, scale-d = 0).
__device__ __forceinline__ u32 shared_addr(const void* p) {
    return (u32)__cvta_generic_to_shared(p);
}
extern "C" __global__ void __launch_bounds__(128) frag_wgmma_probe(const u32* a_in, const uint4* bimg, u32 bbytes,
                                                                  u64 tpl_b, u32* d) {
    __shared__ __align__(128) uint4 sb[64];
    const u32 t = threadIdx.x;
    const u64 p = blockIdx.x;
    for (u32 i = t; i < 64; i += blockDim.x) sb[i] = i < bbytes / 16 ? bimg[i] : make_uint4(0, 0, 0, 0);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic stores -> async proxy
    __syncthreads();
    const u64 db = tpl_b | (u64)((shared_addr(sb) >> 4) & 0x3FFF);
    u32 a0 = a_in[(p * 4 + 0) * 128 + t], a1 = a_in[(p * 4 + 1) * 128 + t];
    u32 a2 = a_in[(p * 4 + 2) * 128 + t], a3 = a_in[(p * 4 + 3) * 128 + t];
    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
    u32 sd = 0;  // scale-d = 0: D = A * B
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %8, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %9, q, 1, 1, 0;\n}\n"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(sd), "l"(db)
                 : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    d[(p * 4 + 0) * 128 + t] = __float_as_uint(d0);
    d[(p * 4 + 1) * 128 + t] = __float_as_uint(d1);
    d[(p * 4 + 2) * 128 + t] = __float_as_uint(d2);
    d[(p * 4 + 3) * 128 + t] = __float_as_uint(d3);
}
#endif
