"""On the GPU machine: where the public matmul's host time goes (issue 30 §1), and which cuBLAS kernels
torch.matmul runs on small-M shapes (what cuBLAS does there, for the README).

Host pieces: each step of a cached call timed alone over many repetitions (perf_counter, the stream held by
a sleep kernel so nothing waits on the GPU): the signature key, the cache lookup, torch.empty, data_ptr,
the current device and stream, the plan's launch (rebind + cuLaunchKernelEx), the whole call, and
torch.matmul. Kernels: torch.profiler's CUDA kernel names for one torch.matmul per shape.

Usage: PYTHONPATH=src python3 dev/gemm_host_cost.py   (writes $OUT/host_cost.json)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

import torch

from gpudissect.gemm import api, matmul

N_REP = 20000


def per_call_us(fn: Callable[[], object], reps: int = N_REP) -> float:
    for _ in range(100):
        fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps * 1e6


def held(fn: Callable[[], object], reps: int = 1000, batches: int = 5) -> float:
    """Per-call host microseconds with the stream held by a sleep (launches never wait): the median of `batches`
    batches of `reps` calls."""
    got = []
    for _ in range(batches):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(0.2 * 2e9))
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        got.append((time.perf_counter() - t0) / reps * 1e6)
        torch.cuda.synchronize()
    return sorted(got)[len(got) // 2]


def launch_experiment(plan: object) -> dict[str, Callable[[int], None]]:
    """Launches of one 256^3 GEMM on the plan's operands: rung 10 as prepared (cluster of 2 by launch attribute),
    the same kernel built with its cluster shape compiled in (GM_STATIC_CLUSTER) launched on the same parameters
    without an attribute, and rung 4 (no cluster)."""
    from gpudissect.device import current
    from gpudissect.device.compiler import arch_for, compile_kernel_file
    from gpudissect.device.fastlaunch import PreparedLaunch
    from gpudissect.gemm.launch import prepare
    from gpudissect.gemm.variants import RUNGS

    a, bt, c = plan.launch.bound[:3]  # type: ignore[attr-defined]
    r10 = prepare(10, "bf16", a, bt, c, 256, 256, 256)
    rung = RUNGS[10]
    arch = arch_for(*torch.cuda.get_device_capability())
    cubin = compile_kernel_file("gemm.cu", arch, rung.defines("bf16") | {"GM_STATIC_CLUSTER": 1})
    fn = current.load_function(cubin, rung.function, rung.smem_bytes, "gemm.cu")
    static = PreparedLaunch(fn, r10.grid, (r10.block, 1, 1), r10.smem, r10.params, None)
    r4 = prepare(4, "bf16", a, bt, c, 256, 256, 256)
    return {
        "launch rung 10 (cluster attribute)": lambda s: r10(s),
        "launch rung 10, cluster compiled in (no attribute)": lambda s: static(s),
        "launch rung 4 (no cluster)": lambda s: r4(s),
    }


FLOOR_SRC = """
struct Big { unsigned char b[PARAM_BYTES]; };
extern "C" __global__ void empty_small(int x) { if (x == 12345) asm volatile("trap;"); }
extern "C" __global__ void empty_big(const __grid_constant__ Big p) { if (p.b[0] == 123) asm volatile("trap;"); }
"""


def floor() -> dict[str, Callable[[int], None]]:
    """The driver's launch floor through the same ctypes path: an empty kernel with a 4-byte parameter, and one
    with 448 bytes of parameters (our gemm_ws's three tensor maps and the rest), one CTA and 132 CTAs."""
    import ctypes

    from gpudissect.device import current
    from gpudissect.device.compiler import arch_for, compile_cubin
    from gpudissect.device.fastlaunch import PreparedLaunch
    from gpudissect.device.launch import param_array

    arch = arch_for(*torch.cuda.get_device_capability())
    cubin = compile_cubin(FLOOR_SRC, "floor.cu", arch, {"PARAM_BYTES": 448})
    small = current.load_function(cubin, "empty_small", 0, "floor.cu")
    big = current.load_function(cubin, "empty_big", 0, "floor.cu")
    hs, hb = [ctypes.c_int32(0)], [(ctypes.c_ubyte * 448)()]
    out = {}
    for grid in (1, 132):
        ls = PreparedLaunch(small, (grid, 1, 1), (128, 1, 1), 0, param_array(hs))
        lb = PreparedLaunch(big, (grid, 1, 1), (128, 1, 1), 0, param_array(hb))
        out[f"launch floor: empty kernel, 4 B of parameters, {grid} CTAs"] = lambda s, f=ls: f(s)
        out[f"launch floor: empty kernel, 448 B of parameters, {grid} CTAs"] = lambda s, f=lb: f(s)
    out["a no-op Python call (for scale)"] = lambda s, h=(hs, hb): None  # also keeps the holders alive
    return out


def main() -> None:
    a = torch.randn(256, 256, device="cuda").bfloat16()
    b = torch.randn(256, 256, device="cuda").bfloat16().t()
    matmul(a, b)
    key = (a.device, b.device, a.dtype, b.dtype, a.shape, a.stride(), b.shape, b.stride(), None)
    plan = api._CACHE.get(key)
    c = torch.empty(256, 256, device="cuda", dtype=torch.bfloat16)
    stream = torch.cuda.current_stream().cuda_stream
    dev = a.device
    out: dict[str, object] = {}
    like = torch.empty((), dtype=torch.bfloat16, device=dev).expand(256, 256)  # a template of no memory
    out["pieces_us"] = {
        "key": per_call_us(lambda: (a.device, b.device, a.dtype, b.dtype, a.shape, a.stride(), b.shape, b.stride())),
        "cache_get": per_call_us(lambda: api._CACHE.get(key)),
        "torch.empty": per_call_us(lambda: torch.empty((256, 256), dtype=torch.bfloat16, device=dev)),
        "a.new_empty": per_call_us(lambda: a.new_empty((256, 256))),
        "data_ptr x3": per_call_us(lambda: (a.data_ptr(), b.data_ptr(), c.data_ptr())),
        "current_device": per_call_us(torch.cuda.current_device),
        "raw_stream": per_call_us(lambda: api._RAW_STREAM(0)),
        "is_compiling": per_call_us(api._COMPILING),
        "dim x2": per_call_us(lambda: (a.dim(), b.dim())),
        "rebind (same)": per_call_us(lambda: plan.launch.rebind(*plan.launch.bound)),
        "a.new_empty dtype=": per_call_us(lambda: a.new_empty((256, 256), dtype=torch.bfloat16)),
        "get_device x2": per_call_us(lambda: (a.get_device(), b.get_device())),
        "device x2": per_call_us(lambda: (a.device, b.device)),
        "shape+stride x2": per_call_us(lambda: (a.shape, a.stride(), b.shape, b.stride())),
        "lock": per_call_us(lambda: plan.lock.acquire() and plan.lock.release()),
        "torch.empty_like(template)": per_call_us(lambda: torch.empty_like(c)),
        "torch.empty_like(expanded scalar)": per_call_us(lambda: torch.empty_like(like)),
        "torch.empty_like(plan.like: a view of a shared buffer)": per_call_us(lambda: torch.empty_like(plan.like)),
    }
    assert torch.empty_like(like).stride() == (256, 1) and torch.empty_like(like).shape == (256, 256)
    exp = launch_experiment(plan)
    out["held_us"] = {
        "plan.run": held(lambda: plan.run(a.data_ptr(), b.data_ptr(), c.data_ptr(), 0, 0, stream)),
        "launch only": held(lambda: plan.launch(stream)),
        **{name: held(lambda f=f: f(stream)) for name, f in exp.items()},
        **{name: held(lambda f=f: f(stream)) for name, f in floor().items()},
        "repoint C": held(lambda: plan.launch.setters[2](c.data_ptr())),
        "general path (_run2d)": held(lambda: api._run2d(torch, a, b, None, None, None, None)),
        "matmul(out=c)": held(lambda: matmul(a, b, out=c)),
        "matmul": held(lambda: matmul(a, b)),
        "torch.matmul": held(lambda: torch.matmul(a, b)),
        "torch.matmul(out=c)": held(lambda: torch.matmul(a, b, out=c)),
    }
    kernels = {}
    for m, n, k in ((16, 6144, 4096), (16, 4096, 14336), (128, 4096, 4096), (16, 57344, 8192), (512, 10240, 8192)):
        x = torch.randn(m, k, device="cuda").bfloat16()
        w = torch.randn(n, k, device="cuda").bfloat16().t()
        torch.matmul(x, w)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            torch.matmul(x, w)
            torch.cuda.synchronize()
        kernels[f"{m}x{n}x{k}"] = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    out["cublas_kernels"] = kernels
    print(json.dumps(out, indent=1))
    with open(os.path.join(os.environ.get("OUT", "."), "host_cost.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
