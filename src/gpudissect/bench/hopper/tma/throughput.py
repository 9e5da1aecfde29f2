"""`tma_throughput`: TMA global -> shared throughput, bulk and 1D/2D/3D tensor copies, box shapes, against
the streaming read (Luo et al. Figs. 3-4).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ....analysis.stats import median_spread
from ....device.cuda import Arg
from ....errors import GpuDissectError
from ....models import Point
from ...context import BenchContext
from ...registry import Facts, Needs, Param, benchmark, parse_size
from ...shared import fastest_launch_shape
from .common import STREAM, TMA, Rate, peak
from .latency import _check_bytes
from .plans import (
    BULK_SIZES,
    FIGURES,
    KB,
    KINDS,
    MULTIPLES,
    PACKED_ROW,
    PLANE_3D,
    ROW_3D,
    SHAPES_16K,
    T1D_BOXES,
    T2D_BOXES,
    T2D_PACKED_BOXES,
    T3D_BOXES,
    TARGETS,
    CopyPlan,
    cta_sums,
    encode_tensor_map,
    per_thread_bound,
    plan_bulk,
    plan_tensor,
    smem_for,
    stage_stride,
    tile_sums,
)


# ---------------------------------------------------------------------------------------
# 2. TMA throughput (Figs. 3-4)
# ---------------------------------------------------------------------------------------
def _check_stages(v: int, facts: Facts) -> str | None:
    return None if 1 <= v <= 4 else "1 .. 4 (hopper_tma.cu MAX_STAGES)"


BLOCK = 128  # threads per CTA of the copy kernels: thread 0 issues, all of them sum what landed
MIN_BUFFER = ROW_3D * PLANE_3D * 256 * 4  # the 4x4x256 box needs 256 planes of the 3D tensor


def _check_buffer(v: int, facts: Facts) -> str | None:
    if v < MIN_BUFFER:
        return f"at least {MIN_BUFFER >> 20} MiB (256 planes of the {ROW_3D} x {PLANE_3D}-float 3D tensor)"
    return _check_bytes(v, facts)


@benchmark(
    name="tma_throughput",
    title="TMA global -> shared throughput: bulk, 1D/2D/3D tensor copies, box shapes",
    axes={
        "copy": "bulk 1-16 KB; tensor 1D (int64, 0.5-2 KB), 2D (float, 1-16 KB; 32 KB rows and 1 KB rows) and "
        "3D (float, 1-16 KB); 16 KB box shapes",
        "ctas": "1, 2, 3, 4 x SM count",
        "reference": "memory suite's streaming float4 read of the same buffer",
    },
    kernels=[TMA, STREAM],
    needs=Needs((9, 0), features=("tma",)),  # cp.async.bulk[.tensor]
    timeout_s=600,
    paper="000 §5.2 Figs. 3-4",
    params={
        "buffer_bytes": Param(None, "source buffer (default max(8 x L2, 512 MiB))", parse_size, _check_buffer),
        "total_bytes": Param(
            None,
            "bytes moved per measurement (default 4 GiB; quick 1 GiB)",
            parse_size,
            lambda v, f: None if v > 0 else "must be positive",
        ),
        "stages": Param(3, "shared-memory stages (copies in flight per CTA)", int, _check_stages),
    },
)
def tma_throughput(ctx: BenchContext) -> None:
    p = ctx.props
    sms, l2 = p["sm_count"], p["l2_bytes"]
    stages = ctx.params["stages"]
    size = ctx.params["buffer_bytes"] or max(8 * l2, 512 << 20)
    size = size // (1 << 20) * (1 << 20)
    total = ctx.params["total_bytes"] or ((1 << 30) if ctx.quick else (4 << 30))
    passes = max(1, round(total / size))
    reps = 3 if ctx.quick else 5
    rng = np.random.default_rng(11)
    values = rng.integers(0, 4, size // 4, dtype=np.uint8)  # integer-valued floats: every sum is exact
    src = ctx.upload(values.astype(np.float32))
    sums = ctx.alloc(max(4 * sms * BLOCK, sms * 2048) * 8)
    rates: list[Rate] = []
    plans: list[tuple[str, CopyPlan]] = []
    plans += [("bulk", plan_bulk(size, b)) for b in BULK_SIZES]
    plans += [("1d", plan_tensor(size, b, "int64")) for b in T1D_BOXES]
    plans += [("2d", plan_tensor(size, b)) for b in T2D_BOXES]
    plans += [("2dp", plan_tensor(size, b, row=PACKED_ROW)) for b in T2D_PACKED_BOXES]
    plans += [("3d", plan_tensor(size, b)) for b in T3D_BOXES]
    plans += [("shape", plan_tensor(size, b)) for b in SHAPES_16K]
    tsums_cache: dict[CopyPlan, np.ndarray] = {}
    stream = _stream_read(ctx, src, size, values, sums, passes, reps)
    maps = {plan: encode_tensor_map(plan.tmap, src.ptr) for _, plan in plans if plan.tmap is not None}
    for i, (kind, plan) in enumerate(plans):
        if plan not in tsums_cache:
            tsums_cache[plan] = tile_sums(values, plan)
        for m in MULTIPLES:
            rates.append(
                _copy_rate(
                    ctx, kind, plan, maps.get(plan), tsums_cache[plan], m * sms, m, stages, src, sums, passes, reps
                )
            )
        ctx.progress(i + 1, len(plans), f"{kind} {plan.label}")
    paired = {
        key: _paired_ratio(ctx, rates, plans, maps, KINDS[key], chunk, stream, src, sums, size, stages)
        for key, chunk in (("bulk_16k", 16 << 10), ("tensor2d", None), ("tensor2d_strided", None))
    }
    _report_throughput(ctx, rates, stream, size, passes, stages, reps, paired)


PAIRS = 9  # alternating (copy, streaming read) timings behind each target ratio
PAIR_BYTES = 4 << 30  # bytes each side moves per timing: long enough that launch gaps and noise average out


def _paired_ratio(
    ctx: BenchContext,
    rates: list[Rate],
    plans: list[tuple[str, CopyPlan]],
    maps: dict[CopyPlan, bytes],
    kinds: tuple[str, ...],
    chunk: int | None,
    stream: Rate,
    src: Any,
    sums: Any,
    size: int,
    stages: int,
) -> tuple[float, float, float] | None:
    """Best configuration of `kinds` against the streaming read, timed in alternation (copy, read, copy,
    ...) so that clock and power drift during the benchmark cannot favour either, and measured afresh
    (the best of many noisy medians is biased upward): median, min, max of the per-pair ratios."""
    best = peak(rates, kinds, chunk)
    if best is None:
        return None
    plan = next(pl for k, pl in plans if k == best.kind and pl.label == best.label)
    grid, sms = best.mult * ctx.props["sm_count"], ctx.props["sm_count"]
    read = ctx.kernel(STREAM, "dram_read")
    block = int(stream.label.rsplit("x", 1)[1])
    passes = max(1, -(-PAIR_BYTES // size))
    times = ctx.device.alternate_ms(
        lambda: [_launch_copy(ctx, plan, maps.get(plan), grid, stages, src, sums) for _ in range(passes)],
        lambda: [
            read(stream.mult * sms, block, [Arg.ptr(src), Arg.u64(size // 16), Arg.ptr(sums)]) for _ in range(passes)
        ],
        PAIRS,
    )
    return median_spread([(plan.moved / t_copy) / (size / t_read) for t_copy, t_read in times])


def _launch_copy(
    ctx: BenchContext, plan: CopyPlan, tmap: bytes | None, grid: int, stages: int, src: Any, sums: Any
) -> None:
    tail = [
        Arg.u64(plan.nchunks),
        Arg.u32(plan.chunk_bytes),
        Arg.u32(stages),
        Arg.u32(stage_stride(plan.chunk_bytes)),
        Arg.ptr(sums),
    ]
    smem = smem_for(plan.chunk_bytes, stages)
    if plan.tmap is None:
        ctx.kernel(TMA, "bulk_read")(grid, BLOCK, [Arg.ptr(src), *tail], smem=smem)
        return
    tm, raw = plan.tmap, Arg.raw(tmap or b"")
    if tm.rank == 1:
        ctx.kernel(TMA, "tensor1d_read")(grid, BLOCK, [raw, Arg.u32(tm.box[0]), *tail], smem=smem)
    elif tm.rank == 2:
        ctx.kernel(TMA, "tensor2d_read")(
            grid, BLOCK, [raw, Arg.u32(tm.tiles[0]), Arg.u32(tm.box[0]), Arg.u32(tm.box[1]), *tail], smem=smem
        )
    else:
        ctx.kernel(TMA, "tensor3d_read")(
            grid,
            BLOCK,
            [
                raw,
                Arg.u32(tm.tiles[0]),
                Arg.u32(tm.tiles[1]),
                Arg.u32(tm.box[0]),
                Arg.u32(tm.box[1]),
                Arg.u32(tm.box[2]),
                *tail,
            ],
            smem=smem,
        )


def _copy_rate(
    ctx: BenchContext,
    kind: str,
    plan: CopyPlan,
    tmap: bytes | None,
    tsums: np.ndarray,
    grid: int,
    mult: int,
    stages: int,
    src: Any,
    sums: Any,
    passes: int,
    reps: int,
) -> Rate:
    dev = ctx.device
    if per_thread_bound(plan, grid, BLOCK, 3) >= 1 << 24:
        raise GpuDissectError(f"{kind} {plan.label}: per-thread sums would exceed 2^24 (float sums no longer exact)")
    want = cta_sums(tsums, grid)
    what = f"{kind} {plan.label}, {grid} CTAs"

    def check() -> bool:
        got = dev.download(sums, np.float32, grid * BLOCK).astype(np.float64).reshape(grid, BLOCK).sum(axis=1)
        bad = np.flatnonzero(got != want)
        return ctx.soft_check(
            bad.size == 0,
            f"{what}: {bad.size} CTAs found other data than they were sent"
            + (f" (CTA {bad[0]}: {got[bad[0]]:.0f} != {want[bad[0]]:.0f})" if bad.size else ""),
        )

    dev.memset32(sums, 0xFFFFFFFF)  # NaN: a CTA that writes nothing cannot pass
    _launch_copy(ctx, plan, tmap, grid, stages, src, sums)
    dev.sync(what)
    ok = check()
    dev.memset32(sums, 0xFFFFFFFF)
    ms = dev.time_ms(lambda: [_launch_copy(ctx, plan, tmap, grid, stages, src, sums) for _ in range(passes)], reps)
    ok = check() and ok
    gb = [passes * plan.moved / t / 1e6 for t in ms]
    return Rate.of(kind, plan.label, plan.chunk_bytes, mult, gb, ok)


def _stream_read(ctx: BenchContext, src: Any, size: int, values: np.ndarray, sums: Any, passes: int, reps: int) -> Rate:
    """The memory suite's streaming read (dram_read, float4, its launch shape tuned as there) over the
    same buffer, timed like the copies: `passes` back-to-back launches per measurement."""
    dev, sms = ctx.device, ctx.props["sm_count"]
    read = ctx.kernel(STREAM, "dram_read")
    n_acc = size // 16

    def launch(grid: int, block: int) -> None:
        read(grid, block, [Arg.ptr(src), Arg.u64(n_acc), Arg.ptr(sums)])

    per_sm, block = fastest_launch_shape(dev, sms, launch, read.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"))
    grid = sms * per_sm
    dev.memset32(sums, 0xFFFFFFFF)
    ms = dev.time_ms(lambda: [launch(grid, block) for _ in range(passes)], reps)
    got = dev.download(sums, np.float32, grid * block).astype(np.float64).sum()
    want = float(values.sum(dtype=np.int64))
    ok = ctx.soft_check(got == want, f"streaming read: sum {got:.0f} != {want:.0f}")
    gb = [passes * size / t / 1e6 for t in ms]
    return Rate.of("stream", f"{per_sm} blocks/SM x {block}", 16, per_sm, gb, ok)


def _rate_figure(ctx: BenchContext, key: str, r: Rate, method: str, note: str = "") -> None:
    """The GB/s of one timed configuration, failed where its copies failed their check."""
    ctx.figure(key, r.gbps, "GB/s", "measured", method, (r.lo, r.hi), "ok" if r.ok else "failed", note=note)


def _report_throughput(
    ctx: BenchContext,
    rates: list[Rate],
    stream: Rate,
    size: int,
    passes: int,
    stages: int,
    reps: int,
    paired: dict[str, tuple[float, float, float] | None] | None = None,
) -> None:
    sms = ctx.props["sm_count"]
    how = (
        f"{passes} back-to-back launches x {size >> 20} MiB buffer per measurement, CUDA events, median of {reps}; "
        f"{stages} shared-memory stages per CTA, {BLOCK} threads summing what landed"
    )
    names = {
        "bulk": "non-tensor cp.async.bulk",
        "1d": "1D tensor (int64)",
        "2d": "2D tensor (float), 32 KB rows",
        "2dp": f"2D tensor (float), rows one box wide ({PACKED_ROW * 4} B)",
        "3d": "3D tensor (float)",
        "shape": "3D tensor, 16 KB boxes",
    }
    for kind in ("bulk", "1d", "2d", "2dp", "3d"):
        for m in MULTIPLES:
            pts = [
                Point(r.chunk_bytes, r.gbps, r.lo, r.hi, reps, {"label": r.label, "ok": r.ok})
                for r in rates
                if r.kind == kind and r.mult == m
            ]
            ctx.series(
                f"{m}x SMs ({m * sms} CTAs)",
                "bytes per copy",
                "bytes",
                "throughput",
                "GB/s",
                pts,
                plot="line",
                figure=FIGURES.get(kind, f"tma_throughput_{kind}"),
                copy=names[kind],
            )
    for m in MULTIPLES:
        pts = [
            Point(i, r.gbps, r.lo, r.hi, reps, {"label": r.label, "ok": r.ok})
            for i, r in enumerate(r for r in rates if r.kind == "shape" and r.mult == m)
        ]
        ctx.series(
            f"{m}x SMs ({m * sms} CTAs)",
            "box shape (x*y*z floats)",
            "",
            "throughput",
            "GB/s",
            pts,
            plot="bar",
            figure="tma_box_shapes_16k",
        )
    _rate_figure(
        ctx,
        "tma.stream_read_gbps",
        stream,
        f"memory suite's streaming float4 read (memory_bandwidth.cu dram_read, {stream.label}) "
        f"of the same buffer; {how}",
    )
    best = {key: peak(rates, kinds, 16 * KB if key == "bulk_16k" else None) for key, kinds in KINDS.items()}
    for key, r in best.items():
        failed = [x for x in rates if x.kind in KINDS[key] and not x.ok]
        if r is None:
            ctx.figure(
                f"tma.{key}_peak_gbps", "n/a", "GB/s", "measured", "no configuration passed its check", check="failed"
            )
            continue
        what = " or ".join(names[k] for k in KINDS[key])
        ctx.figure(
            f"tma.{key}_peak_gbps",
            r.gbps,
            "GB/s",
            "measured",
            f"best of {what} over copy sizes and 1..4 x SM-count CTAs; {how}",
            (r.lo, r.hi),
            "failed" if failed else "ok",
            note=f"{names[r.kind]}: {r.label} per copy, {r.mult * sms} CTAs",
        )
    for key in ("bulk_16k", "tensor2d", "tensor2d_strided", "tensor2d_packed", "tensor3d", "bulk"):
        r = best[key]
        if r is None:
            continue
        ok = stream.ok and not [x for x in rates if x.kind in KINDS[key] and not x.ok]
        pair = (paired or {}).get(key)
        if pair is not None:  # the target figure: the two timed in alternation, not minutes apart
            ctx.figure(
                f"tma.{key}_vs_stream",
                round(pair[0], 4),
                "ratio",
                "derived",
                f"best {key} configuration ({names[r.kind]}, {r.label}, {r.mult * ctx.props['sm_count']} CTAs) "
                f"and the streaming read timed in alternation, {PAIRS} pairs of {PAIR_BYTES >> 30} GiB each, "
                "median of the per-pair ratios",
                (pair[1], pair[2]),
                check="ok" if ok else "failed",
                note="target >= 0.95" if key in TARGETS else "",
            )
            ctx.figure(
                f"tma.{key}_vs_stream_sequential",
                round(r.gbps / stream.gbps, 4),
                "ratio",
                "derived",
                f"tma.{key}_peak_gbps / tma.stream_read_gbps, measured at different times of the benchmark",
                check="ok" if ok else "failed",
            )
            continue
        ctx.figure(
            f"tma.{key}_vs_stream",
            round(r.gbps / stream.gbps, 4),
            "ratio",
            "derived",
            f"tma.{key}_peak_gbps / tma.stream_read_gbps (same buffer, same run)",
            check="ok" if ok else "failed",
            note="target >= 0.95" if key in TARGETS else "",
        )
    for r in rates:  # Fig. 4: each 16 KB box shape's best CTA count
        if r.kind == "shape" and r is peak([x for x in rates if x.label == r.label], "shape"):
            _rate_figure(
                ctx,
                f"tma.shape16k.{r.label}_peak_gbps",
                r,
                f"16 KB box {r.label} (x*y*z floats), best of 1..4 x SM-count CTAs; {how}",
                note=f"{r.mult * sms} CTAs",
            )
