"""GPU timing through torch: CUDA events around batches, CUDA-graph batches for short work, and the
two ceilings the roofline needs, measured in the same process (DRAM copy, large GEMMs)."""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .deps import set_tf32


@dataclass
class Timing:
    ms: list[float]  # per call, one value per repetition
    how: str  # "CUDA graph of N calls" / "N eager calls"

    @property
    def median(self) -> float:
        return statistics.median(self.ms)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.ms), max(self.ms)


@contextmanager
def gc_frozen() -> Iterator[None]:
    """The objects alive on entry (torch's, transformers' and sympy's: over a million) kept out of the garbage
    collector until exit, so that the gc.collect() a benchmark calls between models or cases to free their device
    memory walks only what it made since (0.13 s a call on the H100 host with torch loaded: 18 in linear). What was
    made inside is collected as before. Nothing is done where something else has already frozen objects."""
    if gc.get_freeze_count():
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def event_ms(torch: Any, run: Callable[[], Any], reps: int) -> list[float]:
    """ms of each repetition of `run`, between two CUDA events on the current stream."""
    out = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    return out


def capture(torch: Any, fn: Callable[[], Any], iters: int) -> Any | None:
    """A CUDA graph of `iters` calls of fn (warmed on a side stream, as capture requires), or None
    when capture fails (the caller then times eager calls and says so)."""
    g = None
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(iters):
                fn()
        return g
    except Exception:  # noqa: BLE001 - capture unsupported for this call: eager fallback
        del g
        torch.cuda.synchronize()
        return None


def time_call(
    torch: Any,
    fn: Callable[[], Any],
    reps: int,
    target_ms: float,
    graph: bool = True,
    max_iters: int = 200,
    warm: bool = True,
) -> Timing:
    """Per-call ms of fn: one warm call (none when not `warm`: the caller has just run fn), the fastest of two (one,
    when it is long) to size the batch, then `reps` batches of `iters` calls (at least target_ms each), from a CUDA
    graph when `graph` and capture works, else eager."""
    if warm:
        fn()
    torch.cuda.synchronize()
    one = event_ms(torch, fn, 1)[0]
    # a second sizing call, whose minimum with the first sizes the batch, can change nothing where the first took
    # 2 x target: one batch call unless the second ran 3 x faster (a warm call repeats within a few %). Those are the
    # longest calls (FP32 n = 16384 forward + backward: 0.5 s)
    if one < 2 * target_ms:
        one = min(one, *event_ms(torch, fn, 1))
    iters = max(1, min(max_iters, round(target_ms / max(one, 1e-3))))
    g = capture(torch, fn, iters) if graph else None
    if g is not None:
        g.replay()
        torch.cuda.synchronize()
        ms = [m / iters for m in event_ms(torch, g.replay, reps)]
        del g
        return Timing(ms, f"CUDA graph of {iters} calls")

    def eager() -> None:
        for _ in range(iters):
            fn()

    return Timing([m / iters for m in event_ms(torch, eager, reps)], f"{iters} eager calls")


# ---- ceilings ----------------------------------------------------------------------------
COPY_BYTES = 2 << 30  # 2 GiB each way: far past the 50 MB L2


def dram_copy_gbps(torch: Any, reps: int, nbytes: int = COPY_BYTES) -> tuple[float, tuple[float, float], str]:
    """Device-to-device copy (dst.copy_(src)), bytes read + bytes written per second, GB/s."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    dst.copy_(src)
    ok = bool(torch.equal(dst[:: 1 << 20], src[:: 1 << 20]))
    ms = event_ms(torch, lambda: dst.copy_(src), reps)
    gbps = [2 * nbytes / (m * 1e-3) / 1e9 for m in ms]
    src = dst = None  # free both buffers before returning (the lambda shares these cells)
    torch.cuda.empty_cache()
    if not ok:
        raise RuntimeError("the device-to-device copy did not reproduce its source")
    return (
        statistics.median(gbps),
        (min(gbps), max(gbps)),
        (f"torch dst.copy_(src) of {nbytes >> 30} GiB, (read + written bytes) / CUDA-event time, median of {reps}"),
    )


MATMUL_N = 8192


def matmul_tflops(torch: Any, kind: str, reps: int, n: int = MATMUL_N) -> tuple[float, tuple[float, float], str]:
    """Throughput of one large square product of `kind` (fp32 = IEEE fp32, tf32, fp16, bf16,
    fp8 = e4m3 x e4m3 -> bf16 through _scaled_mm with fast accumulation, as the FP8 forward uses)."""
    from . import float8

    g = torch.Generator(device="cuda")
    g.manual_seed(1234)
    if kind == "fp8":
        a = float8.quantize(torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g))
        b = float8.quantize(torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g))
        bt = float8.Fp8(b.data.t(), b.scale_inv)

        def fn() -> Any:
            return float8.scaled_mm(a, bt, torch.bfloat16, fast_accum=True)

        what = "torch._scaled_mm e4m3 x e4m3 -> bf16, fast accumulation"
    else:
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[kind]
        a = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
        b = torch.randn(n, n, device="cuda", dtype=dtype, generator=g)
        set_tf32(torch, kind == "tf32")

        def fn() -> Any:
            return a @ b

        what = f"torch.matmul {kind}"
    try:
        # correctness: a few entries against a float64 reference
        c = fn()
        ref_a = a.data.float() * a.scale_inv if kind == "fp8" else a.float()
        ref_b = b.data.float() * b.scale_inv if kind == "fp8" else b.float()
        # the fp8 product is A . B^T (B passed as its column-major transpose)
        rows = ref_a[:4].double() @ (ref_b.double().t() if kind == "fp8" else ref_b.double())
        err = float((c[:4].double() - rows).norm() / rows.norm())
        tol = {"fp32": 1e-5, "tf32": 5e-3, "fp16": 1e-2, "bf16": 1e-2, "fp8": 5e-2}[kind]
        if not err <= tol:
            raise RuntimeError(f"{what}: relative error {err:.3g} above {tol:g}")
        del c, ref_a, ref_b, rows
        t = time_call(torch, fn, reps, target_ms=30.0, graph=False, max_iters=50)
    finally:
        set_tf32(torch, False)
    vals = [2.0 * n**3 / (m * 1e-3) / 1e12 for m in t.ms]
    return (
        statistics.median(vals),
        (min(vals), max(vals)),
        (
            f"{what}, {n}x{n}x{n}, 2n^3 flops / CUDA-event time over {t.how}, median of {reps}; "
            f"4 output rows checked against float64 (relative error {err:.2g})"
        ),
    )
