"""`async_copy_matmul`: SyncShare vs AsyncPipe tiled GEMM (003 Tables XIII-XIV)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ....device.cuda import Arg
from ....errors import GpuDissectError
from ....models import Point
from ...context import BenchContext
from ...registry import Facts, Needs, Param, benchmark
from .common import ASYNC, BLOCK_SIZES, best_speedup, mean_gain_pct, speedups

# ---------------------------------------------------------------------------------------
# 3. Asynchronous copy: SyncShare vs AsyncPipe tiled GEMM (003 Tables XIII-XIV)
# ---------------------------------------------------------------------------------------
VARIANTS = {
    "SyncShare": "mm_sync_{bs}",
    "AsyncPipe": "mm_async4_{bs}",
    "AsyncPipe-8B": "mm_async8_{bs}",
    "AsyncPipe-16B": "mm_async16_{bs}",
}
SAMPLE = 4096  # C entries checked against the float64 reference per product
PAPER_BPSM = (1, 2, 4, 8, 16, 32)  # the blocks-per-SM columns of 003 Tables XIII-XIV (= the quick grid)


def _check_k(v: int, facts: Facts) -> str | None:
    return None if v >= 32 and v % 32 == 0 else "a positive multiple of 32 (every block size must divide it)"


def gemm_dims(bs: int, blocks_per_sm: int, sms: int, k: int) -> tuple[int, int, int]:
    """(M, N, K): one output tile per block, grid = (sms, blocks_per_sm) tiles of bs x bs, so the grid
    holds blocks_per_sm x sms blocks (003 varies A's height and B's width the same way)."""
    if k % bs:
        raise GpuDissectError(f"K={k} is not a multiple of the block size {bs}")
    return blocks_per_sm * bs, sms * bs, k


def reference_entries(
    a: np.ndarray, b: np.ndarray, rows: np.ndarray, cols: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """float64 C[rows, cols] and the fp32 error bound of each: 2^-20 x sum |a_ik b_kj| (K-term fp32
    accumulation; integer-valued operands make the fp32 result exact anyway)."""
    pa, pb = a[rows].astype(np.float64), b[:, cols].T.astype(np.float64)
    return (pa * pb).sum(axis=1), 2.0**-20 * np.abs(pa * pb).sum(axis=1)


@benchmark(
    name="async_copy_matmul",
    title="Tiled GEMM: synchronous shared-memory staging vs two-stage cp.async pipeline",
    axes={
        "variant": "SyncShare; AsyncPipe with 4 (the paper's), 8, 16-byte cp.async",
        "block": "8x8, 16x16, 32x32",
        "blocks_per_sm": "1, 2, 4, 8, 16, 32 (full: 1..32)",
    },
    kernels=[ASYNC],
    needs=Needs((8, 0), features=("cp_async",)),  # the comparison is the cp.async pipeline's
    timeout_s=300,
    paper="003 §III-D, Tables XIII-XIV",
    params={"k": Param(2048, "inner dimension (A's width, B's height); 003 uses 2048", int, _check_k)},
)
def async_copy_matmul(ctx: BenchContext) -> None:
    dev, sms, k = ctx.device, ctx.props["sm_count"], ctx.params["k"]
    bpsm = list(PAPER_BPSM) if ctx.quick else list(range(1, 33))
    reps = 3 if ctx.quick else 5
    rng = np.random.default_rng(3)
    m_max, n_max = max(bpsm) * max(BLOCK_SIZES), sms * max(BLOCK_SIZES)
    a_h = rng.integers(-3, 4, (m_max, k)).astype(np.float32)
    b_flat = rng.integers(-3, 4, k * n_max).astype(np.float32)
    a_d, b_d, c_d = ctx.upload(a_h), ctx.upload(b_flat), ctx.alloc(m_max * n_max * 4)
    results: dict[tuple[str, int], dict[int, Point]] = {}
    total, done = len(BLOCK_SIZES) * len(bpsm), 0
    for bs in BLOCK_SIZES:
        for nb in bpsm:
            m, n, _ = gemm_dims(bs, nb, sms, k)
            b_h = b_flat[: k * n].reshape(k, n)
            rows, cols = rng.integers(0, m, SAMPLE), rng.integers(0, n, SAMPLE)
            ref, tol = reference_entries(a_h, b_h, rows, cols)
            flop = 2.0 * m * n * k
            for name, fname in VARIANTS.items():
                fn = ctx.kernel(ASYNC, fname.format(bs=bs))
                args = [Arg.ptr(c_d), Arg.ptr(a_d), Arg.ptr(b_d), Arg.i32(k), Arg.i32(n)]

                def launch(fn: Any = fn, args: list[Arg] = args, nb: int = nb, bs: int = bs) -> None:
                    fn((sms, nb), (bs, bs), args)

                dev.memset32(c_d, 0x7FC00000)  # NaN: an unwritten entry cannot pass
                t1 = dev.time_ms(launch, 1)[0]  # also the warm-up
                c = dev.download(c_d, np.float32, m * n).reshape(m, n)
                err = np.abs(c[rows, cols].astype(np.float64) - ref)
                ok = ctx.soft_check(
                    bool(np.isfinite(c).all()) and bool((err <= tol).all()),
                    f"{name} {bs}x{bs}, {nb} blocks/SM: {int((err > tol).sum())} of {SAMPLE} sampled "
                    f"entries differ from the float64 reference, {int((~np.isfinite(c)).sum())} not finite",
                )
                iters = max(1, min(50, math.ceil(2.0 / max(t1, 1e-3))))  # ~2 ms per measurement
                ms = dev.time_ms(lambda: [launch() for _ in range(iters)], reps)
                g = [iters * flop / t / 1e6 for t in ms]
                results.setdefault((name, bs), {})[nb] = ctx.point(nb, g, ok=ok, iters=iters)
            done += 1
            ctx.progress(done, total, f"{bs}x{bs}, {nb} blocks/SM")
    _report_async(ctx, results, bpsm, sms, k, reps)


def _report_async(
    ctx: BenchContext, results: dict[tuple[str, int], dict[int, Point]], bpsm: list[int], sms: int, k: int, reps: int
) -> None:
    how = (
        f"C = A x B fp32, K={k}, grid = {sms} x blocks/SM tiles of bs x bs (one element per thread), "
        f"GFLOP/s by CUDA events, median of {reps}"
    )
    for bs in BLOCK_SIZES:
        for name in VARIANTS:
            pts = [results[(name, bs)][nb] for nb in bpsm]
            ctx.series(
                name,
                "blocks per SM",
                "",
                "throughput",
                "GFLOP/s",
                pts,
                plot="logx",
                figure=f"async_copy_{bs}x{bs}",
                block=f"{bs}x{bs}",
            )
        sync = {nb: p.y for nb, p in results[("SyncShare", bs)].items()}
        ok = all(p.extra["ok"] for name in ("SyncShare", "AsyncPipe") for p in results[(name, bs)].values())
        for name in ("AsyncPipe", "AsyncPipe-8B", "AsyncPipe-16B"):
            sp = speedups(sync, {nb: p.y for nb, p in results[(name, bs)].items()})
            ctx.series(
                f"{name} / SyncShare",
                "blocks per SM",
                "",
                "speedup",
                "ratio",
                [Point(nb, v) for nb, v in sp.items()],
                plot="logx",
                figure="async_copy_speedup",
                block=f"{bs}x{bs}",
            )
            if name != "AsyncPipe":
                continue
            best, at = best_speedup(sp)
            ctx.figure(
                f"async_copy.asyncpipe_speedup_{bs}x{bs}",
                round(best, 4),
                "ratio",
                "derived",
                f"best case over blocks/SM of AsyncPipe (2-stage cp.async.ca, 4 B per copy) / SyncShare; {how}",
                (min(sp.values()), max(sp.values())),
                "ok" if ok else "failed",
                note=f"at {at} blocks/SM",
            )
            paper_pts = {nb: v for nb, v in sp.items() if nb in PAPER_BPSM}
            ctx.figure(
                f"async_copy.asyncpipe_mean_gain_{bs}x{bs}_pct",
                round(mean_gain_pct(paper_pts), 2),
                "%",
                "derived",
                f"mean of (AsyncPipe / SyncShare - 1) at {sorted(paper_pts)} blocks/SM (003's columns), "
                "like 003's Perf column",
                check="ok" if ok else "failed",
            )
        for name in VARIANTS:
            pts = list(results[(name, bs)].values())
            top = max(pts, key=lambda p: p.y)
            tag = name.lower().replace("-", "_")
            ctx.figure(
                f"async_copy.{tag}.{bs}x{bs}.peak_gflops",
                top.y,
                "GFLOP/s",
                "measured",
                f"best over blocks/SM; {how}",
                (top.y_min, top.y_max),
                "ok" if all(p.extra["ok"] for p in pts) else "failed",
                note=f"at {int(top.x)} blocks/SM",
            )
