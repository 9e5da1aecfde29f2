"""`tma_latency`: TMA load latency vs footprint beside ld.global.cg (Luo et al. Fig. 2)."""

from __future__ import annotations

import numpy as np

from ....analysis import plateaus
from ....device.cuda import Arg
from ....errors import GpuDissectError
from ....models import Point
from ...context import BenchContext
from ...registry import Needs, Param, benchmark, fits_free_memory, in_range, multiple_of, parse_size
from ...shared import PCHASE, Chaser, flush_l2, log_grid
from .common import TMA, latency_offset

# ---------------------------------------------------------------------------------------
# 1. TMA latency (Fig. 2)
# ---------------------------------------------------------------------------------------
_check_stride = multiple_of(16, "the TMA copy size and alignment")
_check_bytes = fits_free_memory(0.8)


@benchmark(
    name="tma_latency",
    title="TMA load latency vs footprint, beside ld.global.cg (random-stride chase)",
    axes={
        "load": "TMA 16-byte bulk copy + mbarrier wait; ld.global.cg",
        "footprint": "4 KiB .. 4 x L2, log steps + fine steps at every knee",
    },
    kernels=[TMA, PCHASE["cg"]],
    needs=Needs((9, 0), features=("tma",)),  # cp.async.bulk and the mbarrier's transaction count
    timeout_s=300,
    paper="000 §5.1 Fig. 2",
    params={
        "stride": Param(128, "bytes between chain elements (multiple of 16)", parse_size, _check_stride),
        "max_footprint": Param(None, "largest footprint (default 4 x L2)", parse_size, _check_bytes),
        "steps": Param(4096, "timed steps per launch", int, in_range(64, 1 << 20, "64 .. 1M")),
    },
)
def tma_latency(ctx: BenchContext) -> None:
    l2, dev = ctx.props["l2_bytes"], ctx.device
    stride, steps = ctx.params["stride"], ctx.params["steps"]
    top = ctx.params["max_footprint"] or 4 * l2
    reps = 3 if ctx.quick else 5
    fn = ctx.kernel(TMA, "tma_chase")
    ch = Chaser(ctx, "cg", top + stride, seed=5)
    tma_pts: dict[int, Point] = {}
    cg_pts: dict[int, Point] = {}

    def tma_run(warm: int, first: int) -> float:
        fn(1, 1, [Arg.u64(ch.address(first)), Arg.u64(warm), Arg.u64(steps), Arg.ptr(ch.out)])
        dev.sync("tma_chase")
        end, cycles, _ = (int(v) for v in dev.download(ch.out, np.uint64, 3))
        want = ch.expected_end(warm + steps, first)
        ctx.check(
            end == want, f"TMA chase ended at {end:#x}, expected {want:#x} (footprint {ch.chain_len * ch.stride})"
        )
        return cycles / steps

    def measure(fp: int) -> None:
        n = ch.build_random(fp, stride)
        if fp <= 1.5 * l2:
            # As the memory suite: every launch first walks the whole chain with its own load kind, then
            # times the next `steps`. (Re-timing a few thousand elements without the full pass would
            # measure a working set that stays in the near L2 partition whatever the footprint.)
            warm, starts = n, [(0, 0)] * reps
        else:  # each launch chases a part of the chain no earlier one touched, after an L2 flush
            flush_l2(ctx, 2 * l2)
            warm, gap = 16, n // (2 * reps)
            if gap < warm + steps:
                raise GpuDissectError(
                    f"chain of {n} elements too short for {2 * reps} disjoint chases of {warm + steps}"
                )
            starts = [(2 * r * gap, (2 * r + 1) * gap) for r in range(reps)]
        cg, tm = [], []
        for a, b in starts:  # interleaved, so drifts hit both alike
            cg.append(ch.run(warm, steps, first=a)[0])
            tm.append(tma_run(warm, b))
        cg_pts[fp], tma_pts[fp] = ctx.point(fp, cg), ctx.point(fp, tm)

    grid = log_grid(4096, top, 2 if ctx.quick else 4)
    for j, fp in enumerate(grid):
        measure(fp)
        ctx.progress(j * 70 // len(grid), 100, f"{fp >> 10} KiB")
    for rnd in range(2 if ctx.quick else 3):  # fine steps around every jump of either curve
        xs = sorted(tma_pts)
        new = set(plateaus.refine_points(xs, [tma_pts[x].y for x in xs], per_gap=3 if ctx.quick else 6))
        new |= set(plateaus.refine_points(xs, [cg_pts[x].y for x in xs], per_gap=3 if ctx.quick else 6))
        for fp in sorted(int(f) for f in new if 4096 <= f <= top and int(f) not in tma_pts)[:40]:
            measure(fp)
        ctx.progress(70 + 15 * (rnd + 1), 100, "refining")
    xs = sorted(tma_pts)
    tp, cp = [tma_pts[x] for x in xs], [cg_pts[x] for x in xs]
    ctx.series(
        "tma",
        "footprint",
        "bytes",
        "latency",
        "cycles",
        tp,
        plot="logx",
        figure="tma_latency_vs_footprint",
        stride=stride,
        steps=steps,
        reps=reps,
        copy_bytes=16,
    )
    ctx.series(
        "ld.global.cg",
        "footprint",
        "bytes",
        "latency",
        "cycles",
        cp,
        plot="logx",
        figure="tma_latency_vs_footprint",
        stride=stride,
        steps=steps,
        reps=reps,
    )
    ctx.series(
        "tma - ld.global.cg",
        "footprint",
        "bytes",
        "latency difference",
        "cycles",
        [Point(x, t.y - c.y) for x, t, c in zip(xs, tp, cp)],
        plot="logx",
        figure="tma_latency_offset",
    )
    _derive_latency(ctx, xs, [p.y for p in tp], [p.y for p in cp])


def _derive_latency(ctx: BenchContext, xs: list[int], tma: list[float], cg: list[float]) -> None:
    med, lo, hi = latency_offset(tma, cg)
    ctx.figure(
        "tma.latency_offset_cycles",
        round(med, 1),
        "cycles",
        "derived",
        "median over all footprints of (TMA 16-byte bulk-copy chase - ld.global.cg chase), same chains, "
        "cycles per dependent step",
        (lo, hi),
    )
    pl = plateaus.find_plateaus(xs, tma)
    knees = plateaus.find_knees(xs, tma)
    cg_knees = plateaus.find_knees(xs, cg)
    method = "plateaus of the TMA latency-vs-footprint curve (analysis.plateaus)"
    if pl:
        on = [y for x, y in zip(xs, tma) if pl[0].x_first <= x <= pl[0].x_last]
        ctx.figure(
            "tma.latency.l2_hit_cycles",
            pl[0].level,
            "cycles",
            "derived",
            f"first plateau; {method}",
            (min(on), max(on)),
        )
        if len(pl) >= 2:
            on = [y for x, y in zip(xs, tma) if pl[-1].x_first <= x <= pl[-1].x_last]
            ctx.figure(
                "tma.latency.dram_cycles",
                pl[-1].level,
                "cycles",
                "derived",
                f"last plateau (footprint >= {pl[-1].x_first / 2**20:.1f} MiB); {method}",
                (min(on), max(on)),
            )
        for i, lv in enumerate(pl[1:-1], 2):  # levels between (on Hopper: the far L2 partition)
            on = [y for x, y in zip(xs, tma) if lv.x_first <= x <= lv.x_last]
            ctx.figure(
                f"tma.latency.plateau{i}_cycles",
                lv.level,
                "cycles",
                "derived",
                f"plateau {i} of {len(pl)} (footprints {lv.x_first / 2**20:.1f} .. {lv.x_last / 2**20:.1f} MiB); "
                f"{method}",
                (min(on), max(on)),
            )
        for name, lv in (("l2", pl[0]), ("dram", pl[-1] if len(pl) >= 2 else None)):
            if lv is None:
                continue
            d = [t - c for x, t, c in zip(xs, tma, cg) if lv.x_first <= x <= lv.x_last]
            ctx.figure(
                f"tma.latency.offset_{name}_cycles",
                round(float(np.median(d)), 1),
                "cycles",
                "derived",
                f"median of (TMA - ld.global.cg) over the footprints of the TMA curve's {name} plateau",
                (min(d), max(d)),
            )
    ctx.figure(
        "tma.latency.knee_count",
        len(knees),
        "count",
        "derived",
        f"upward transitions between plateaus of the TMA curve; {method}",
        note=f"ld.global.cg curve over the same chains: {len(cg_knees)} knee(s)",
    )
    ctx.figure(
        "tma.latency.cg_knee_count",
        len(cg_knees),
        "count",
        "derived",
        "upward transitions between plateaus of the ld.global.cg curve (L1 bypassed)",
    )
    for i, k in enumerate(knees, 1):
        ctx.figure(
            f"tma.latency.knee{i}_bytes",
            plateaus.capacity_from_knee(k),
            "bytes",
            "derived",
            f"largest footprint on the lower plateau of TMA knee {i} ({k.low:.0f} -> {k.high:.0f} cycles)",
            (k.x_last_low, k.x_first_high),
        )
