// Shared by the kernel files (NVRTC gets it as an in-memory header; no include path needed).
#pragma once
typedef unsigned long long u64;
typedef unsigned int u32;

// %clock64 with a "memory" clobber: the compiler may not move loads/stores across the read.
__device__ __forceinline__ long long clk() {
    long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t) :: "memory");
    return t;
}

// Nanoseconds (%globaltimer): with clock64 it gives the SM clock over a long launch.
__device__ __forceinline__ u64 gtime() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
    return t;
}

__device__ __forceinline__ u32 smid() {
    u32 s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// The timing record: REC_WORDS u64 per timed unit (a warp or a block) — start and end clock64, the SM
// (%smid: clocks compare only within one SM), start and end %globaltimer ns (one time base for every SM).
// analysis/records.py reads it back.
#define REC_WORDS 5
__device__ __forceinline__ void record(u64* r, long long t0, long long t1, u64 g0, u64 g1) {
    r[0] = (u64)t0;
    r[1] = (u64)t1;
    r[2] = smid();
    r[3] = g0;
    r[4] = g1;
}
