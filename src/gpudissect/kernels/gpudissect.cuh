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
