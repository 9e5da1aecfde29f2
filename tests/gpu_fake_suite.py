"""GPU benchmarks that misbehave on purpose: a faulting kernel and a hanging one (tests only)."""

from gpudissect.bench.registry import benchmark
from gpudissect.device.compiler import compile_cubin
from gpudissect.device.cuda import Arg

FAULT = 'extern "C" __global__ void fault(int* p) { p[threadIdx.x] = 1; }'
HANG = 'extern "C" __global__ void hang(volatile int* p) { while (p[0] == 0) { } }'


@benchmark(suite="gpufake", name="gpu_fault", title="illegal address", axes={}, kernels=[])
def gpu_fault(ctx):
    mod = ctx.device.load(compile_cubin(FAULT, "fault.cu", ctx.device.arch))
    mod.function("fault")(1, 32, [Arg.u64(16)])  # address 16: unmapped
    ctx.device.sync("fault")


@benchmark(suite="gpufake", name="gpu_hang", title="spins forever", axes={}, kernels=[], timeout_s=8)
def gpu_hang(ctx):
    buf = ctx.device.alloc(4)
    ctx.device.memset32(buf, 0)
    mod = ctx.device.load(compile_cubin(HANG, "hang.cu", ctx.device.arch))
    mod.function("hang")(1, 1, [Arg.ptr(buf)])
    ctx.device.sync("hang")


@benchmark(suite="gpufake", name="gpu_leak", title="leaves memory allocated", axes={}, kernels=[])
def gpu_leak(ctx):
    import os

    ctx.device.alloc(512 << 20)  # through the device, not the context: nothing frees it when the benchmark ends
    ctx.figure("gpufake.pid", os.getpid(), "", "measured", "the process that ran it")


@benchmark(suite="gpufake", name="gpu_tidy", title="frees what it allocates", axes={}, kernels=[])
def gpu_tidy(ctx):
    import os

    ctx.alloc(512 << 20)  # the context frees it
    ctx.figure("gpufake.pid", os.getpid(), "", "measured", "the process that ran it")
