"""The memory suite, latency: the traditional P-chase over footprint with each level's latency and size
derived from the curve (Luo §4.1 Fig. 2 / Table III; Jia §3.1), shared-memory latency, and the papers'
index chase (j = a[j]) beside our pointer chase.

Sizes come from the device (L2 size, shared-memory limits) and from the curve itself, never from
constants about a particular GPU.
"""

from __future__ import annotations

import re

import numpy as np

from ...analysis import plateaus
from ...device.cuda import Arg
from ...models import Point
from ..context import BenchContext
from ..registry import Param, benchmark, fits_free_memory, in_range, multiple_of, parse_size
from ..shared import (
    PCHASE,
    Chaser,
    ClockMeter,
    capacity_of_level,
    chain_cycle,
    flush_l2,
    log_grid,
    sass_of,
    walk,
)

ALL_OPS = [PCHASE[op] for op in ("ca", "cg", "default")]
_check_stride = multiple_of(8, "each chain element is a 64-bit address")
_check_footprint = fits_free_memory(0.9)


# ---------------------------------------------------------------------------------------
# 1. Traditional P-chase: latency over footprint, with levels and sizes detected
# ---------------------------------------------------------------------------------------
@benchmark(
    name="pchase_latency",
    title="Latency vs footprint (traditional P-chase)",
    axes={
        "cache_op": "ca, cg, default",
        "footprint": "4 KiB .. max_footprint (default 4 x L2), log steps + fine steps at every knee",
    },
    kernels=ALL_OPS,
    params={
        "stride": Param(128, "bytes between chain elements (multiple of 8)", parse_size, _check_stride),
        "max_footprint": Param(None, "largest footprint (default 4 x L2)", parse_size, _check_footprint),
        "steps": Param(4096, "timed loads per launch", int, in_range(64, 1 << 24, "64 .. 16M")),
    },
    timeout_s=400,
    paper="000 §4.1 Fig. 2 / Table III; 002 §3.1",
)
def pchase_latency(ctx: BenchContext) -> None:
    l2 = ctx.props["l2_bytes"]
    stride, steps = ctx.params["stride"], ctx.params["steps"]
    top = ctx.params["max_footprint"] or 4 * l2
    reps = 3 if ctx.quick else 5
    grid = log_grid(4096, top, 2 if ctx.quick else 4)
    curves: dict[str, tuple[list[float], list[Point]]] = {}
    clock = ClockMeter()
    ops = ("ca", "cg", "default")
    for i, op in enumerate(ops):
        ch = Chaser(ctx, op, top + stride)
        pts = {}

        def measure(fp: int) -> None:
            n = ch.build_random(fp, stride)
            # full warm pass while the chain can be cached; beyond that it only costs time
            if fp <= 1.5 * l2:
                pts[fp] = ch.point(fp, n, steps, reps)
            else:  # beyond L2: each repetition chases a part of the chain no earlier one touched,
                flush_l2(ctx, 2 * l2)  # after evicting what building the chain left in L2
                pts[fp] = ch.point(fp, 0, steps, reps, spread_starts=True)

        for j, fp in enumerate(grid):
            measure(fp)
            ctx.progress(i * 100 + j * 70 // len(grid), len(ops) * 100, f"{op} {fp >> 10} KiB")
        for rnd in range(2 if ctx.quick else 3):  # fine steps around every knee
            xs = sorted(pts)
            new = plateaus.refine_points(xs, [pts[x].y for x in xs], per_gap=3 if ctx.quick else 6)
            new = [f for f in new if 4096 <= f <= top and f not in pts][:40]
            for fp in new:
                measure(fp)
            ctx.progress(i * 100 + 70 + rnd * 10, len(ops) * 100, f"{op} refining")
        ch.close()  # before the next cache operator's chain buffer
        for c, ns in ch.cycles_ns:
            clock.add(c, ns)
        xs = sorted(pts)
        curves[op] = (xs, [pts[x] for x in xs])
        ctx.series(
            op,
            "footprint",
            "bytes",
            "latency",
            "cycles",
            [pts[x] for x in xs],
            plot="logx",
            figure="latency_vs_footprint",
            stride=stride,
            steps=steps,
            reps=reps,
        )
    _derive_levels(ctx, curves, l2)
    clock.report(ctx, "the timed chases")


def _derive_levels(ctx: BenchContext, curves: dict[str, tuple[list[float], list[Point]]], l2: int) -> None:
    method = "plateaus of the latency-vs-footprint curve (analysis.plateaus)"
    xs, pts = curves["ca"]
    ys = [p.y for p in pts]
    pl = plateaus.find_plateaus(xs, ys)
    ok = bool(pl) and plateaus.first_plateau_is_lowest(pl, 0.05)
    # The L1 plateau must be the lowest one; if the first plateau is not, the chain missed L1.
    check = "ok" if ok else "failed"
    note = "" if ok else "the first plateau of the .ca curve is not the lowest: the chain missed L1"
    if pl:
        low = pl[0]
        on = [y for x, y in zip(xs, ys) if low.x_first <= x <= low.x_last]
        ctx.figure(
            "mem.latency.l1_hit_cycles",
            low.level,
            "cycles",
            "derived",
            f"lowest plateau of the .ca curve; {method}",
            (min(on), max(on)),
            check,
            note,
        )
        cap = capacity_of_level(pts, low.level)
        if cap is not None and cap < xs[-1]:
            ctx.figure(
                "mem.size.l1_bytes",
                cap,
                "bytes",
                "derived",
                "largest .ca footprint within 10% of the L1 hit latency (default carve-out)",
                check=check,
                note=note,
            )
    xs, pts = curves["cg"]
    ys = [p.y for p in pts]
    pl = plateaus.find_plateaus(xs, ys)
    knees = plateaus.find_knees(xs, ys)
    if pl:
        first = pl[0]
        ctx.figure(
            "mem.latency.l2_hit_cycles",
            first.level,
            "cycles",
            "derived",
            f"first plateau of the .cg curve (L1 bypassed); {method}",
        )
        last = pl[-1]
        if len(pl) >= 2:
            ctx.figure(
                "mem.latency.dram_cycles",
                last.level,
                "cycles",
                "derived",
                f"last plateau of the .cg curve (footprint >= {last.x_first / 2**20:.0f} MiB)",
            )
    if len(pl) >= 2:
        # The knee is where the curve crosses halfway between the plateaus on either side of it,
        # interpolated in log(footprint): a grid-independent point, unlike "the last grid point
        # before the rise" (which moved 49.4 -> 42.5 MiB between the quick and the full grid).
        knee_how = (
            "footprint where the .cg curve crosses halfway between the {a} plateau ({lo:.0f} cycles) and the "
            "{b} plateau ({hi:.0f} cycles), interpolated linearly in log2(footprint) between the grid points "
            "around the crossing (analysis.plateaus.capacity_by_midpoint)"
        )
        lo, hi = pl[-2].level, pl[-1].level
        tail = [(x, y) for x, y in zip(xs, ys) if x >= pl[-2].x_first]
        try:
            ctx.figure(
                "mem.size.l2_bytes",
                round(plateaus.capacity_by_midpoint(*zip(*tail), lo, hi)),
                "bytes",
                "derived",
                knee_how.format(a="next-to-last", b="last (DRAM)", lo=lo, hi=hi),
                note=f"device reports {l2} bytes",
            )
        except ValueError as e:
            ctx.figure("mem.size.l2_bytes", "n/a", "bytes", "derived", str(e), check="failed")
        if len(pl) >= 3:
            lo2, hi2 = pl[0].level, pl[1].level
            try:
                head = [(x, y) for x, y in zip(xs, ys) if x <= pl[1].x_last]
                ctx.figure(
                    "mem.size.l2_partition_knee_bytes",
                    round(plateaus.capacity_by_midpoint(*zip(*head), lo2, hi2)),
                    "bytes",
                    "derived",
                    knee_how.format(a="first (L2 hit)", b="second", lo=lo2, hi=hi2),
                )
            except ValueError:
                pass
    del knees
    ctx.figure("mem.size.l2_reported_bytes", l2, "bytes", "assumed", "device attribute L2_CACHE_SIZE")


# ---------------------------------------------------------------------------------------
# 2. Shared-memory latency
# ---------------------------------------------------------------------------------------
@benchmark(
    name="shared_latency",
    title="Shared-memory load latency (chase)",
    axes={"elements": "1024 u32, random single cycle"},
    kernels=[PCHASE["ca"]],
    paper="000 Table III row Shared Memory",
)
def shared_latency(ctx: BenchContext) -> None:
    dev, n, steps = ctx.device, 1024, 8192
    rng = np.random.default_rng(7)
    chain = chain_cycle(n, rng)
    dchain, out = ctx.upload(chain), ctx.alloc(32)
    fn = ctx.kernel(PCHASE["ca"], "smem_pchase")
    clock = ClockMeter()
    vals = []
    for _ in range(7):
        fn(1, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u64(steps), Arg.ptr(out)], smem=n * 4)
        dev.sync("smem_pchase")
        end, cycles, ns = (int(v) for v in dev.download(out, np.uint64, 3))
        ctx.check(end == walk(chain, n + steps), f"shared chase ended at {end}, expected {walk(chain, n + steps)}")
        vals.append(cycles / steps)
        clock.add(cycles, ns)
    _per_launch_series(ctx, "ld.shared.u32", vals, "shared_latency")
    ctx.median_figure(
        "mem.latency.shared_cycles",
        vals,
        "cycles",
        "measured",
        f"median of 7 launches, {steps} dependent ld.shared.u32 each (pointer chase: the loaded value is "
        "the next address)",
    )
    clock.report(ctx, "the shared-memory chases")


def _per_launch_series(ctx: BenchContext, name: str, vals: list[float], figure: str) -> None:
    """Each launch's latency in launch order (drift between launches shows)."""
    ctx.series(
        name,
        "repetition",
        "",
        "latency",
        "cycles",
        [Point(i, v) for i, v in enumerate(vals)],
        plot="line",
        figure=figure,
    )


INDEX_VS_POINTER = (
    "a pointer chase loads the next address itself, so nothing sits between dependent loads; the "
    "papers' index chase (j = a[j]) adds the scaled-index address arithmetic (one IMAD/LEA) to every hop"
)
INDEX_FOLDED = (
    "a pointer chase loads the next address itself, so nothing sits between dependent loads; in the papers' "
    "index chase (j = s[j]) ptxas folds the scaling into the load's own address (LDS [R.X4]) on this GPU, so "
    "no instruction sits between its hops either"
)
_LDS_X4 = r"LDS(\.U)? R\d+, \[R\d+\.X4\]"


def shared_index_hop(ctx: BenchContext) -> str:
    """What the shared index chase adds to a hop on this GPU, from the SASS it runs (the SASS its family
    declares where no disassembler is installed): address arithmetic, or nothing (the scaling folded)."""
    sass = sass_of(ctx, PCHASE["ca"], "smem_ichase")
    if sass is None:
        folded = any(".X4" in p for p in PCHASE["ca"].required_for(ctx.target)["smem_ichase"])
    else:
        folded = re.search(_LDS_X4, sass) is not None
    return INDEX_FOLDED if folded else INDEX_VS_POINTER


@benchmark(
    name="index_chase",
    title="Index chase (j = a[j], the papers' form) beside the pointer chase",
    axes={"level": "shared memory (1024 u32), L1 hit (.ca, 128 elements 128 B apart)", "form": "pointer, index"},
    kernels=[PCHASE["ca"]],
    paper="000 Table III rows L1 Cache / Shared Memory; 003 Table IV",
)
def index_chase(ctx: BenchContext) -> None:
    dev, steps, reps = ctx.device, 8192, 7
    clock = ClockMeter()
    rng = np.random.default_rng(7)
    # shared memory: the same random single cycle through 1024 u32, as indices and as addresses
    n = 1024
    chain = chain_cycle(n, rng)
    dchain, out = ctx.upload(chain), ctx.alloc(64)
    res: dict[str, list[float]] = {"shared pointer": [], "shared index": [], "l1 pointer": [], "l1 index": []}
    want = walk(chain, n + steps)
    for _ in range(reps):  # alternate the two forms so clock drift cannot favour one
        for form, fname in (("pointer", "smem_pchase"), ("index", "smem_ichase")):
            ctx.kernel(PCHASE["ca"], fname)(
                1, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u64(steps), Arg.ptr(out)], smem=n * 4
            )
            dev.sync(fname)
            end, cycles = (int(v) for v in dev.download(out, np.uint64, 2))
            ctx.check(end == want, f"{fname} ended at {end}, expected {want}")
            res[f"shared {form}"].append(cycles / steps)
    # L1: 128 elements 128 B apart (16 KiB, far inside L1), random single cycle
    m = 128
    idx = chain_cycle(m, rng)
    arr = np.zeros(m * 32, np.uint32)
    arr[np.arange(m) * 32] = idx
    darr = ctx.upload(arr)
    ch = Chaser(ctx, "ca", m * 128)
    ch.build_random(m * 128, 128)
    iwant = walk(idx, 2 * m + steps)
    for _ in range(reps):
        res["l1 pointer"].append(ch.run(2 * m, steps)[0])
        ctx.kernel(PCHASE["ca"], "ichase")(1, 1, [Arg.ptr(darr), Arg.u32(2 * m), Arg.u32(steps), Arg.ptr(out)])
        dev.sync("ichase")
        end, cycles, _, ns = (int(v) for v in dev.download(out, np.uint64, 4))
        ctx.check(end == iwant, f"ichase ended at {end}, expected {iwant}")
        res["l1 index"].append(cycles / steps)
        clock.add(cycles, ns)
    for c, ns in ch.cycles_ns:
        clock.add(c, ns)
    for k, v in res.items():
        _per_launch_series(ctx, k, v, "index_vs_pointer_chase")
    for key, k, what, hop in (
        (
            "mem.latency.shared_index_chase_cycles",
            "shared index",
            "ld.shared.u32 j = s[j] over 1024 u32",
            shared_index_hop(ctx),
        ),
        (
            "mem.latency.l1_hit_index_chase_cycles",
            "l1 index",
            "ld.global.ca.u32 j = a[32 j] over 128 lines (16 KiB)",
            INDEX_VS_POINTER,
        ),
    ):
        v = res[k]
        med, ptr = float(np.median(v)), float(np.median(res[k.replace("index", "pointer")]))
        ctx.median_figure(
            key,
            v,
            "cycles",
            "measured",
            f"{what}, {steps} dependent hops per launch, median of {reps} launches alternated with the pointer "
            f"chase of the same data ({ptr:.1f} cycles): {hop}",
            note=f"index - pointer = {med - ptr:+.1f} cycles per hop",
        )
    ctx.median_figure(
        "mem.latency.l1_hit_pointer_chase_cycles",
        res["l1 pointer"],
        "cycles",
        "measured",
        f"ld.global.ca.u64 pointer chase over the same 128 lines, median of {reps} launches",
    )
    clock.report(ctx, "the L1 chases")
