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


def held(fn: Callable[[], object], reps: int = 1000) -> float:
    """Per-call host microseconds with the stream held by a sleep (launches never wait)."""
    torch.cuda.synchronize()
    torch.cuda._sleep(int(0.2 * 2e9))
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    t = (time.perf_counter() - t0) / reps * 1e6
    torch.cuda.synchronize()
    return t


def _tensor_map_costs(plan: object) -> dict[str, object]:
    """A map re-pointed by the driver (cuTensorMapReplaceAddress) against the learned field's write, per call;
    the field learned from the driver (fastlaunch.AddressField) and whether it reproduces the driver's bytes."""
    import ctypes

    from gpudissect.device.fastlaunch import AddressField, replace_address

    launch = plan.launch  # type: ignore[attr-defined]
    slot = next(s for s in launch.slots if s is not None and not isinstance(launch.holders[s], ctypes.c_uint64))
    h = launch.holders[slot]
    addr = launch.bound[launch.slots.index(slot)]
    f = AddressField.learn(h, addr)
    res: dict[str, object] = {"field": repr(f)}
    probe = addr + (1 << 20) + 16 * 5
    drv = (ctypes.c_ubyte * 128).from_buffer_copy(h)
    replace_address(drv, probe)
    if f is not None:
        mine = (ctypes.c_ubyte * 128).from_buffer_copy(h)
        res["write_equals_driver"] = f.write(mine, probe) and bytes(mine) == bytes(drv)
        res["write_us"] = per_call_us(lambda: f.write(h, addr))
    res["driver_us"] = per_call_us(lambda: replace_address(h, addr))
    return res


def _rotation() -> dict[str, object]:
    """Llama-3-8B o at 16 and 128 tokens: 200 calls of the public matmul over 4 operand sets (as api_vs_cublas
    calls it) against the same through prepared launches and torch.matmul: host us per call with the stream
    held, and GPU us per GEMM back to back (CUDA events)."""
    from gpudissect.gemm.small import default_variant
    from gpudissect.gemm.small_launch import prepare_small

    res: dict[str, object] = {}
    for m in (16, 128):
        n = k = 4096
        xs = [torch.randn(m, k, device="cuda").bfloat16() for _ in range(4)]
        ws = [torch.randn(n, k, device="cuda").bfloat16() for _ in range(4)]
        cs = [torch.empty(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
        v = default_variant(m, n, "bf16", torch.cuda.get_device_properties(0).multi_processor_count)
        pre = [
            prepare_small("bf16", x.data_ptr(), w.data_ptr(), c.data_ptr(), m, n, k, v, "L2_256B")
            for x, w, c in zip(xs, ws, cs)
        ]
        stream = torch.cuda.current_stream().cuda_stream
        i = [0]

        def ours() -> None:
            j = i[0] = (i[0] + 1) % 4
            matmul(xs[j], ws[j].t())

        def prepared() -> None:
            j = i[0] = (i[0] + 1) % 4
            pre[j](stream)

        def cublas() -> None:
            j = i[0] = (i[0] + 1) % 4
            torch.matmul(xs[j], ws[j].t())

        row: dict[str, object] = {"variant": v.name if v else None}
        for name, fn in (("ours", ours), ("prepared", prepared), ("torch", cublas)):
            row[f"{name}_host_us"] = round(held(fn, 200), 2)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(20):
                fn()
            e0.record()
            for _ in range(200):
                fn()
            e1.record()
            e1.synchronize()
            row[f"{name}_gpu_us"] = round(e0.elapsed_time(e1) / 200 * 1e3, 2)
        res[f"8b.o.{m}"] = row
    return res


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
    }
    out["held_us"] = {
        "plan.run": held(lambda: plan.run(a.data_ptr(), b.data_ptr(), c.data_ptr(), 0, 0, stream)),
        "launch only": held(lambda: plan.launch(stream)),
        "matmul(out=c)": held(lambda: matmul(a, b, out=c)),
        "matmul": held(lambda: matmul(a, b)),
        "torch.matmul": held(lambda: torch.matmul(a, b)),
        "torch.matmul(out=c)": held(lambda: torch.matmul(a, b, out=c)),
    }
    out["tensor_map"] = _tensor_map_costs(plan)
    out["rotation"] = _rotation()
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
