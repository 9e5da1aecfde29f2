// Tiled fp32 matrix multiply, C = A x B, with the K-tiles of A and B staged in shared memory
// (003 §III-D, Tables XIII-XIV; the structure of CUDA's globalToShmemAsyncCopy sample):
//   SyncShare  (mm_sync_<BS>):      every thread loads one element of each tile with an ordinary
//                                   load + shared store, __syncthreads, multiply, __syncthreads.
//   AsyncPipe  (mm_async<CP>_<BS>): a two-stage ring; the copies of tile t+1 (cp.async.ca,
//                                   CP = 4, 8 or 16 bytes per copy) are in flight while tile t is
//                                   multiplied; cp.async.commit_group / wait_group order them.
// A block of BS x BS threads computes one BS x BS tile of C, one element per thread.
// Row-major: A is (gridDim.y*BS) x wA, B is wA x wB, C is (gridDim.y*BS) x wB; wA a multiple of BS.
typedef unsigned int u32;

template <int BS>
__device__ __forceinline__ void mm_sync(float* C, const float* A, const float* B, int wA, int wB) {
    __shared__ float As[BS][BS];
    __shared__ float Bs[BS][BS];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int aBegin = wA * BS * blockIdx.y, aEnd = aBegin + wA;
    const int bStep = BS * wB;
    float c = 0.f;
    for (int a = aBegin, b = BS * blockIdx.x; a < aEnd; a += BS, b += bStep) {
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BS; k++) c += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(blockIdx.y * BS + ty) * wB + blockIdx.x * BS + tx] = c;
}

template <int CP>
__device__ __forceinline__ void cp_async(void* dst, const void* src) {
    u32 d = (u32)__cvta_generic_to_shared(dst);
    if (CP == 4)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(d), "l"(src) : "memory");
    else if (CP == 8)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" :: "r"(d), "l"(src) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" :: "r"(d), "l"(src) : "memory");
}

// Copies of one K-tile of A and B into stage buffers: CP/4 floats per copy, so the first
// BS*BS*4/CP threads of the block copy (all of them for CP = 4).
template <int BS, int CP>
__device__ __forceinline__ void load_tile(float (*As)[BS], float (*Bs)[BS], const float* A, const float* B,
                                          int a, int b, int wA, int wB, int t) {
    constexpr int F = CP / 4, PER_ROW = BS / F;
    if (t < BS * PER_ROW) {
        const int row = t / PER_ROW, col = (t % PER_ROW) * F;
        cp_async<CP>(&As[row][col], &A[a + wA * row + col]);
        cp_async<CP>(&Bs[row][col], &B[b + wB * row + col]);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int BS, int CP>
__device__ __forceinline__ void mm_async(float* C, const float* A, const float* B, int wA, int wB) {
    __shared__ __align__(16) float As[2][BS][BS];
    __shared__ __align__(16) float Bs[2][BS][BS];
    const int tx = threadIdx.x, ty = threadIdx.y, t = ty * BS + tx;
    const int aBegin = wA * BS * blockIdx.y, bBegin = BS * blockIdx.x;
    const int bStep = BS * wB, ntiles = wA / BS;
    float c = 0.f;
    load_tile<BS, CP>(As[0], Bs[0], A, B, aBegin, bBegin, wA, wB, t);
    for (int i = 0; i < ntiles; i++) {
        if (i + 1 < ntiles) {  // next tile into the other stage, then wait for this one only
            load_tile<BS, CP>(As[(i + 1) & 1], Bs[(i + 1) & 1], A, B, aBegin + (i + 1) * BS, bBegin + (i + 1) * bStep,
                              wA, wB, t);
            asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();  // every thread's copies of tile i have landed
        const int s = i & 1;
#pragma unroll
        for (int k = 0; k < BS; k++) c += As[s][ty][k] * Bs[s][k][tx];
        __syncthreads();  // stage s is free for tile i + 2
    }
    C[(blockIdx.y * BS + ty) * wB + blockIdx.x * BS + tx] = c;
}

#define SYNC_KERNEL(BS) \
    extern "C" __global__ void __launch_bounds__(BS * BS) mm_sync_##BS(float* C, const float* A, const float* B, int wA, int wB) { \
        mm_sync<BS>(C, A, B, wA, wB); \
    }
#define ASYNC_KERNEL(CP, BS) \
    extern "C" __global__ void __launch_bounds__(BS * BS) mm_async##CP##_##BS(float* C, const float* A, const float* B, int wA, int wB) { \
        mm_async<BS, CP>(C, A, B, wA, wB); \
    }

SYNC_KERNEL(8)
SYNC_KERNEL(16)
SYNC_KERNEL(32)
ASYNC_KERNEL(4, 8)
ASYNC_KERNEL(4, 16)
ASYNC_KERNEL(4, 32)
ASYNC_KERNEL(8, 8)
ASYNC_KERNEL(8, 16)
ASYNC_KERNEL(8, 32)
ASYNC_KERNEL(16, 8)
ASYNC_KERNEL(16, 16)
ASYNC_KERNEL(16, 32)
