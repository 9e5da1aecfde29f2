"""The memory suite, geometry: shared-memory bank conflicts (Sun §7 Table 10), the L1 size for each
shared-memory carve-out, and the line and sector sizes of L1 and L2 (Jia §3.1-3.2).
"""

from __future__ import annotations

import math

import numpy as np

from ...analysis import geometry
from ...device.cuda import Arg
from ...models import Point
from ..context import BenchContext
from ..registry import KernelSpec, benchmark
from ..shared import PCHASE, PRE_AMPERE, Chaser, ClockMeter, by_family, capacity_search, flush_l2

# ---------------------------------------------------------------------------------------
# 5. Shared-memory bank conflicts
# ---------------------------------------------------------------------------------------


def _bank_required(family: str) -> dict[str, list[str]]:
    u64 = r"LDS\.U\.64" if family in PRE_AMPERE else r"LDS\.64"  # Volta and Turing print LDS.U.64
    return {"bank_u32": [r"LDS\b", r"CS2R"], "bank_u64": [u64, r"CS2R"]}


BANK = KernelSpec("memory_bank.cu", _bank_required("hopper"), required_by_family=by_family(_bank_required))


def conflict_ways(stride: int, width: int, banks: int = 32) -> int:
    """Sun et al.'s way count (Table 10): the most distinct 4-byte-bank rows one bank serves for a
    warp-wide access. A conflict-free 64-bit access touches every bank twice, so it counts as 2-way,
    as Sun counts it; u32 and u64 rows then compare like with like."""
    words = width // 4
    rows: dict[int, set[int]] = {}
    for t in range(32):
        for w in range(words):
            word = t * stride * words + w
            rows.setdefault(word % banks, set()).add(word // banks)
    return max(len(r) for r in rows.values())


@benchmark(
    name="bank_conflicts",
    title="ld.shared latency under N-way bank conflicts",
    axes={"width": "u32, u64", "stride": "1, 2, 4, 8, 16, 32 elements"},
    kernels=[BANK],
    paper="001 Table 10; 002 Fig. 3.9",
)
def bank_conflicts(ctx: BenchContext) -> None:
    dev, steps = ctx.device, 1024
    out = ctx.alloc(34 * 8)
    clock = ClockMeter()
    for width, fname in ((4, "bank_u32"), (8, "bank_u64")):
        fn = ctx.kernel(BANK, fname)
        pts = []
        for stride in (1, 2, 4, 8, 16, 32):
            vals = []
            for _ in range(5):
                fn(1, 32, [Arg.u32(stride), Arg.u32(steps), Arg.ptr(out)], smem=32 * stride * width)
                dev.sync(fname)
                res = dev.download(out, np.uint64, 34)
                clock.add(int(res[32]), int(res[33]))
                ctx.check(bool(np.all(res[:32] == 1)), f"{fname} stride {stride}: a lane left its own element")
                vals.append(int(res[32]) / steps)
            ways = conflict_ways(stride, width)
            pts.append(ctx.point(ways, vals, stride=stride))
        name = f"u{width * 8}"
        seen = set()
        for pt in pts:
            if pt.x in seen:
                continue  # u64 strides 16 and 32 are both 32-way
            seen.add(pt.x)
            ctx.figure(
                f"mem.bank.{name}.latency_{int(pt.x)}way_cycles",
                pt.y,
                "cycles",
                "measured",
                f"one warp, dependent ld.shared.{name} with lane stride {pt.extra['stride']}; ways counted as "
                "Sun Table 10 does (most 4-byte-bank rows one bank serves: conflict-free u64 = 2-way)",
                (pt.y_min, pt.y_max),
            )
        ctx.series(name, "conflict ways", "", "latency", "cycles", pts, plot="line", figure="bank_conflicts")
        if width == 4:
            ctx.figure(
                "mem.bank.latency_32way_cycles", pts[-1].y, "cycles", "measured", "u32, all 32 lanes in one bank"
            )
    clock.report(ctx, "the bank-conflict chases")


# ---------------------------------------------------------------------------------------
# 6. Geometry: L1 size per carve-out, line and sector sizes, TLBs
# ---------------------------------------------------------------------------------------
@benchmark(
    name="l1_carveout",
    title="L1 size as a function of the shared-memory carve-out",
    axes={
        "shared_kib": "0 .. max shared per block (the carve-out launched)",
        "footprint": "4 KiB upward until L1 is left, then 2 KiB steps",
    },
    kernels=[PCHASE["ca"]],
    paper="002 Table 3.3",
)
def l1_carveout(ctx: BenchContext) -> None:
    optin, per_sm = ctx.props["smem_per_block_optin"], ctx.props["smem_per_sm"]
    kib = [0, 32, 64, 100, 132, 164, 196] if not ctx.quick else [0, 64, 132, 196]
    kib = [k for k in kib if k * 1024 <= optin] + [optin // 1024]
    ch = Chaser(ctx, "ca", 2 * (per_sm + (64 << 10)))
    fn = ctx.kernel(PCHASE["ca"], "pchase")
    try:
        for i, k in enumerate(kib):
            smem = k * 1024
            fn.set_carveout(min(100, math.ceil(100 * smem / per_sm)))

            def measure(fp: int) -> Point:
                n = ch.build_random(fp, 128)
                return ch.point(fp, n, 2048, 3, smem=smem)

            pts, cap = capacity_search(measure, 4096, ch.buf.nbytes // 2, factor=1.3, fine=8, align=2048)
            ctx.series(
                f"{k} KiB shared",
                "footprint",
                "bytes",
                "latency",
                "cycles",
                pts,
                plot="logx",
                figure="l1_vs_carveout",
                shared_bytes=smem,
            )
            ctx.figure(
                f"mem.carveout.smem_{k}kb.l1_bytes",
                cap if cap else "n/a",
                "bytes",
                "derived",
                f".ca chase (128 B stride) with {smem} B of dynamic shared memory launched; largest footprint "
                "within 10% of the L1 hit latency",
                check="ok" if cap else "failed",
            )
            ctx.progress(i + 1, len(kib), f"{k} KiB shared")
    finally:
        fn.set_carveout(0)  # later launches of the chase kernel get the default carve-out back
    clock = ClockMeter()
    for c, ns in ch.cycles_ns:
        clock.add(c, ns)
    clock.report(ctx, "the timed chases")


@benchmark(
    name="cache_lines",
    title="Sector and line sizes of L1 and L2",
    axes={"level": "L1 (.ca), L2 (.cg)", "stride": "8 B fine chase; 32..512 B tag-capacity chase"},
    kernels=[PCHASE["ca"], PCHASE["cg"]],
    timeout_s=400,
    paper="002 §3.1 (line sizes); Mei & Chu",
)
def cache_lines(ctx: BenchContext) -> None:
    l2 = ctx.props["l2_bytes"]
    n = 2048
    lat = ctx.alloc(n * 4)
    # Sectors: a sequential 8-byte-stride chase over data cached one level down misses once per fetch.
    for op, level in (("ca", "l1"), ("cg", "l2")):
        ch = Chaser(ctx, op, max(n * 8, 3 * l2))
        ch.build_sequential(n, 8)
        if op == "cg":
            flush_l2(ctx, 2 * l2)  # .cg: fetched from DRAM; .ca: from L2
        v = ch.fine(0, n, lat)
        ch.close()  # before the next chain buffer
        ctx.series(
            f"{level} cold 8-byte steps",
            "byte offset",
            "bytes",
            "latency",
            "cycles",
            [Point(8 * i, float(x)) for i, x in enumerate(v[:512])],
            plot="line",
            figure=f"{level}_sector",
        )
        ctx.figure(
            f"mem.sector.{level}_bytes",
            geometry.miss_period_bytes(v, 8),
            "bytes",
            "derived",
            "most common distance between slow accesses of a cold sequential 8-byte chase",
        )
    # Lines: elements `s` apart; how many fit before the latency jumps (tag-limited capacity).
    strides = [32, 64, 128, 256, 512]
    clock = ClockMeter()
    for op, level, cap in (("ca", "l1", ctx.props["smem_per_sm"] + (32 << 10)), ("cg", "l2", l2)):
        counts: list[float] = []
        limit = 8 * cap // 32  # enough elements to overflow even with 32-byte lines
        ch = Chaser(ctx, op, limit * 32 + 4096) if level == "l1" else Chaser(ctx, op, 4 * cap + 4096)
        # Quick mode's L2 searches end at their first point clearly above the level (full mode waits for a
        # second) and bisect the fine points for the first departure instead of measuring all six: an L2 point
        # costs three walks over its whole chain at L2-to-DRAM latency (0.1-0.6 s each). The capacity is the
        # same wherever the latency, once it has left the level, does not come back to it: so in every
        # committed run (tests/bench/test_chase_replay.py). L1's chains are short (0.5 s in all).
        quick = ctx.quick and level == "l2"
        for s in strides:
            top = min(limit, (ch.buf.nbytes - 4096) // s)

            def measure(c: int, s: int = s) -> Point:
                ch.build_random(c * s, s)
                return ch.point(c, c, 2048, 3)

            pts, knee = capacity_search(
                measure, max(cap // (16 * s), 64), top, factor=1.5, fine=6, confirm=1 if quick else 2, bisect=quick
            )
            ctx.series(
                f"{level} stride {s}",
                "elements",
                "",
                "latency",
                "cycles",
                pts,
                plot="logx",
                figure=f"{level}_tag_capacity",
                stride=s,
            )
            counts.append(float(knee) if knee else float("nan"))
            ctx.progress(len(counts) + (5 if level == "l2" else 0), 10, f"{level} stride {s}")
        ch.close()  # before the next level's chain buffer
        for c, ns in ch.cycles_ns:
            clock.add(c, ns)
        ok = all(math.isfinite(c) for c in counts)
        how = "smallest stride from which the element capacity stops falling"
        if quick:
            how += "; quick mode: each search ends at its first point > 1.25 x the level and bisects its fine points"
        ctx.figure(
            f"mem.line.{level}_bytes",
            geometry.line_size_from_tag_capacity(strides, counts) if ok else "n/a",
            "bytes",
            "derived",
            how,
            check="ok" if ok else "failed",
            note=f"element capacities per stride {dict(zip(strides, counts))}",
        )
    clock.report(ctx, "the timed chases")
