"""Our DRAM copy against the driver's device-to-device copy (cuMemcpyDtoD), the last part of the
`bandwidth` benchmark: every copy kernel of memory_bandwidth.cu at its best launch shape, the fastest
one verified and timed against cuMemcpyDtoD of the same buffers, alone and in alternation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...device.cuda import Arg
from ...models import Point
from ..context import BenchContext
from ..registry import KernelSpec, Needs
from ..shared import fastest_launch_shape

# copy kernels that need more than the rest of memory_bandwidth.cu: the file builds without them where the
# GPU lacks it (guarded by compute capability there), and the comparison goes on without them
COPY_NEEDS: dict[str, tuple[Needs, str]] = {
    "dram_copy_stream": (Needs(min_cc=(8, 0)), "the .L2::256B prefetch size of its loads"),
    "dram_copy_flat_keep": (Needs(min_cc=(8, 0)), "createpolicy and .L2::cache_hint loads"),
    "dram_copy_bulk": (Needs(features=("tma",)), "cp.async.bulk and an mbarrier with expect_tx"),
}


def copy_kernel_runs(ctx: BenchContext, spec: KernelSpec, kname: str) -> bool:
    """Whether this GPU has what copy kernel `kname` needs; if not, it is recorded as a skipped variant."""
    need, what = COPY_NEEDS.get(kname, (Needs(), ""))
    why = need.why_not(ctx.target)
    if why:
        ctx.skip_variant(f"{spec.variant}: {kname}", f"{kname} uses {what}; {why}")
    return why is None


# fp32.v4 copy kernels with 4 and 16 accesses in flight per thread, tried beside the default 8
COPY_VARIANTS = {
    u: KernelSpec(
        "memory_bandwidth.cu",
        {"dram_copy": [r"LDG\.E\.128", r"STG\.E\.128"], "dram_copy_chunked": [r"LDG\.E\.128", r"STG\.E\.128"]},
        {"VEC": 4, "UNROLL": u},
        label=f"memory_bandwidth.cu[fp32v4,unroll{u}]",
    )
    for u in (4, 16)
}
COPY_PAIRS = 9  # alternating (our copy, cuMemcpyDtoD) timings behind the target ratio


def _copy_candidates(
    ctx: BenchContext, spec: KernelSpec, src: Any, dst: Any, nbytes: int, n_acc: int
) -> list[tuple[str, Any]]:
    """Each of our copy kernels at its best launch shape, as (description, launch)."""
    dev, p = ctx.device, ctx.props
    sms, out = p["sm_count"], []
    tiled = [(spec, 8, k) for k in ("dram_copy", "dram_copy_stream", "dram_copy_chunked")]
    tiled += [(v, u, k) for u, v in COPY_VARIANTS.items() for k in ("dram_copy", "dram_copy_chunked")]
    tiled = [(s, u, k) for s, u, k in tiled if copy_kernel_runs(ctx, s, k)]
    for cspec, unroll, kname in tiled:  # persistent: blocks loop over tiles
        kern = ctx.kernel(cspec, kname)

        def do_copy(grid: int, blk: int, kern: Any = kern) -> None:
            kern(grid, blk, [Arg.ptr(src), Arg.ptr(dst), Arg.u64(n_acc)])

        cper, cblock = fastest_launch_shape(
            dev, sms, do_copy, kern.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK")
        )
        out.append(
            (
                f"{kname}, unroll {unroll}, {cper} blocks/SM x {cblock} threads",
                lambda f=do_copy, g=sms * cper, b=cblock: f(g, b),
            )
        )
    flats = [k for k in ("dram_copy_flat", "dram_copy_flat_keep") if copy_kernel_runs(ctx, spec, k)]
    for kname in flats:  # one access per thread, one block per blk accesses
        flat = ctx.kernel(spec, kname)
        for blk in (256, 512, 1024):
            if blk <= flat.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"):
                grid = -(-n_acc // blk)
                out.append(
                    (
                        f"{kname}, {grid} blocks x {blk} threads, one access each",
                        lambda f=flat, g=grid, b=blk: f(g, b, [Arg.ptr(src), Arg.ptr(dst), Arg.u64(n_acc)]),
                    )
                )
    if not copy_kernel_runs(ctx, spec, "dram_copy_bulk"):
        return out
    bulk = ctx.kernel(spec, "dram_copy_bulk")  # the bulk-copy engine, one thread per CTA
    for chunk in (8 << 10, 16 << 10, 32 << 10):
        smem = 4 * chunk  # COPY_STAGES pieces in flight
        for per_sm in (1, 2, 3):
            fits = per_sm * smem <= p["smem_per_sm"] - per_sm * 1024 and smem <= p["smem_per_block_optin"]
            if fits and nbytes % chunk == 0:
                out.append(
                    (
                        f"dram_copy_bulk, {chunk >> 10} KiB pieces, {per_sm} CTAs/SM",
                        lambda c=chunk, m=smem, g=sms * per_sm: bulk(
                            g, 32, [Arg.ptr(src), Arg.ptr(dst), Arg.u64(nbytes), Arg.u32(c)], smem=m
                        ),
                    )
                )
    return out


def _copy_vs_d2d(
    ctx: BenchContext, spec: KernelSpec, src: Any, dst: Any, nbytes: int, n_acc: int, reps: int, verify: Any, x0: int
) -> list[Point]:
    """Our fastest copy against the driver's device-to-device copy of the same buffers. The target
    ratio comes from the two timed in alternation (COPY_PAIRS pairs), not minutes apart."""
    dev = ctx.device
    timed = []
    for desc, launch in _copy_candidates(ctx, spec, src, dst, nbytes, n_acc):
        launch()
        timed.append((min(dev.time_ms(launch, 3)), desc, launch))
    _, desc, launch = min(timed, key=lambda t: t[0])
    dev.memset32(dst, 0xFFFFFFFF)  # NaN poison: the check below sees only what the chosen copy wrote
    ms_c = dev.time_ms(launch, reps)
    verify()
    d2d_launch = lambda: dev.copy_dtod(dst, src, nbytes)
    ms_d = dev.time_ms(d2d_launch, reps)
    pairs = dev.alternate_ms(launch, d2d_launch, COPY_PAIRS)
    ratios = [d / c for c, d in pairs]
    cp = [2 * nbytes / m / 1e6 for m in ms_c]
    d2d = [2 * nbytes / m / 1e6 for m in ms_d]
    ctx.median_figure(
        "mem.bw.dram.copy_gbps",
        cp,
        "GB/s",
        "measured",
        f"our fastest fp32.v4 copy ({desc}), bytes read + written, median of {reps}; "
        f"chosen among {len(timed)} kernel/launch candidates",
    )
    ctx.median_figure(
        "mem.bw.dram.d2d_copy_gbps",
        d2d,
        "GB/s",
        "measured",
        f"driver cuMemcpyDtoD of the same buffers, bytes read + written, median of {reps}",
    )
    ctx.figure(
        "mem.bw.dram.copy_vs_d2d",
        round(float(np.median(ratios)), 4),
        "ratio",
        "derived",
        f"our copy / cuMemcpyDtoD timed in alternation, {COPY_PAIRS} pairs, median of the per-pair ratios",
        (min(ratios), max(ratios)),
        note="target >= 1",
    )
    ctx.figure(
        "mem.bw.dram.copy_vs_d2d_sequential",
        round(float(np.median(cp) / np.median(d2d)), 4),
        "ratio",
        "derived",
        "mem.bw.dram.copy_gbps / mem.bw.dram.d2d_copy_gbps, each timed on its own",
    )
    return [ctx.point(x0, cp, label="copy (ours)"), ctx.point(x0 + 1, d2d, label="cuMemcpyDtoD")]
