"""On the GPU machine: every rung of kernels/gemm.cu on small and odd shapes against torch (cuBLAS)
and a float64 product, printing the errors, then one timing at 8192 per rung. A quick look before the
gemm suite runs; exit code 1 if any rung is wrong. Usage: PYTHONPATH=src python3 scripts/gemm_device_check.py

`... gemm_device_check.py profile N RUNG` instead runs, after a warm-up, one N^3 bf16 GEMM of ours and one of
cuBLAS between cudaProfilerStart/Stop, for `ncu --profile-from-start off ...` to profile side by side."""

from __future__ import annotations

import sys
import time

import torch

from gpudissect.bench.gemm import max_norm_bound
from gpudissect.gemm import RUNGS, matmul


def err(c: torch.Tensor, ref: torch.Tensor) -> float:
    return float((c.double() - ref).abs().max() / ref.abs().max())


def main() -> int:
    torch.manual_seed(0)
    bad = 0
    shapes = [(128, 128, 64), (256, 512, 1024), (1024, 1024, 4096)]
    odd = [(136, 264, 72), (8, 8, 8), (1000, 2056, 520)]  # not multiples of the tiles: TMA rungs only
    for dt, tdt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        for r in RUNGS.values():
            for m, n, k in shapes + (odd if r.number >= 2 else []):
                a = torch.randn(m, k, device="cuda", dtype=tdt)
                b = torch.randn(n, k, device="cuda", dtype=tdt).t()  # column-major B
                t0 = time.time()
                try:
                    c = matmul(a, b, rung=r.number)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    print(f"rung {r.number} {dt} {m}x{n}x{k}: {type(e).__name__}: {e}", flush=True)
                    return 1  # a trapped kernel poisons the context
                ref = a.double() @ b.double()
                e = err(c, ref)
                ok = e <= max_norm_bound(dt, k) + 2.0**-8
                bad += not ok
                print(f"rung {r.number} {dt} {m}x{n}x{k}: max err {e:.3g} {'ok' if ok else 'WRONG'} "
                      f"({time.time() - t0:.2f}s)", flush=True)
    # row-major B goes through a transposed copy
    a = torch.randn(512, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(256, 384, device="cuda", dtype=torch.bfloat16)
    e = err(matmul(a, b), a.double() @ b.double())
    print(f"row-major B 512x384x256: max err {e:.3g}", flush=True)
    bad += e > 2.0**-6
    if bad:
        return 1
    # which TMA rung is fastest at 8192 bf16 (alternating, CUDA events): the suite's vs_cublas runs it
    from gpudissect.gemm.launch import prepare

    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    bt = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    launches = {r: prepare(r, "bf16", a.data_ptr(), bt.data_ptr(), c.data_ptr(), n, n, n) for r in (3, 4, 5)}
    ms: dict[int, list[float]] = {r: [] for r in launches}
    for _ in range(4):
        for r, launch in launches.items():
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(10):
                launch(torch.cuda.current_stream().cuda_stream)
            e1.record()
            e1.synchronize()
            ms[r].append(e0.elapsed_time(e1) / 10)
    med = {r: sorted(v)[len(v) // 2] for r, v in ms.items()}
    for r, t in med.items():
        print(f"rung {r} 8192 bf16: {2 * n**3 / t / 1e9:.0f} TFLOPS", flush=True)
    print(f"best_rung={min((4, 5), key=med.__getitem__)}", flush=True)
    return 0


def profile(n: int, rung: int) -> int:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16).t()
    for _ in range(3):  # warm-up (compile, cuBLAS heuristics); ncu counts launches, so skip these with -s
        matmul(a, b, rung=rung)
        a @ b
    torch.cuda.synchronize()
    torch.cuda.profiler.start()  # with ncu --profile-from-start off only these two are profiled
    matmul(a, b, rung=rung)
    a @ b
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "profile":
        sys.exit(profile(int(sys.argv[2]), int(sys.argv[3])))
    sys.exit(main())
