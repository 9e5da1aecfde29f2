"""TLB levels from per-access latencies (Jia et al. §3.8, Fig. 3.12, rebuilt).

A chase with one element per `stride` over n elements, n = 1, 2, ... 64 then log steps; every
access is timed. Each element's own L2 latency (slice and partition distance) differs by tens
of cycles, which moves a plain average whenever elements are added; the curve analysed here is
the mean change of the *same* elements' latencies from one footprint to the next
(analysis.geometry.element_delta_curve), so only what changed for those addresses remains.
A forced-walk control maps the same physical memory at a second virtual range: data warm in L2,
translations cold.
"""

from __future__ import annotations

import numpy as np

from ...analysis import geometry, plateaus
from ...device.cuda import Arg
from ...errors import GpuDissectError
from ...models import Point
from ..context import BenchContext
from ..registry import Param, benchmark, fits_free_memory, parse_size
from ..shared import PCHASE, ClockMeter

ANY_SM = 0xFFFFFFFF
MAX_ELEMENTS = 8192
STEP_FACTOR = 5.0  # a step is real when it exceeds 5 x the curve's noise (run-to-run spread or point scatter)
WALK_MIN = 200  # cycles: a first access this much slower than the same element's second one walked


def element_grid(limit: int, ratio: float = 1.125) -> list[int]:
    """1, 2, ... 64, then geometric steps of `ratio`, up to `limit` elements."""
    g = list(range(1, min(64, limit) + 1))
    x = 64.0
    while True:
        x *= ratio
        if int(round(x)) > limit:
            break
        if int(round(x)) > g[-1]:
            g.append(int(round(x)))
    return g


class TlbChaser:
    """Builds chains over any device range and chases them timing every access; its result buffers
    come from the context (freed when the benchmark ends)."""

    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.claim, self.out = ctx.alloc(4), ctx.alloc(64)
        self.lat = ctx.alloc(4 * max(2 * MAX_ELEMENTS, 2 * 512))  # the forced walk chases 2 x 512
        self.clock = ClockMeter()

    def build(self, base: int, n: int, stride: int, order: np.ndarray | None, value_base: int | None = None) -> None:
        """Chain of n elements `stride` apart at base (through another mapping's addresses when
        value_base is given); order: the element visiting order (None: 0, 1, ..., n-1)."""
        with self.ctx.scratch():
            perm = self.ctx.upload(order.astype(np.uint32)) if order is not None else None
            fn = self.ctx.kernel(PCHASE["cg"], "chain_init_alias")
            fn(
                min((n + 255) // 256, 1024),
                256,
                [
                    Arg.u64(base),
                    Arg.u64(base if value_base is None else value_base),
                    Arg.u64(perm.ptr if perm else 0),
                    Arg.u64(n),
                    Arg.u64(stride),
                ],
            )
            self.dev.sync("chain_init_alias")

    def chase(self, start: int, warm: int, count: int, want_end: int) -> np.ndarray:
        dev = self.dev
        fn = self.ctx.kernel(PCHASE["cg"], "chase_on_sm")
        dev.memset32(self.claim, 0)
        fn(
            1,
            1,
            [
                Arg.u64(start),
                Arg.u64(warm),
                Arg.u32(count),
                Arg.u32(ANY_SM),
                Arg.ptr(self.claim),
                Arg.ptr(self.lat),
                Arg.ptr(self.out),
            ],
            smem=8 * count,
        )
        dev.sync("chase_on_sm")
        end, _, cyc, ns, _ = (int(v) for v in dev.download(self.out, np.uint64, 5))
        self.ctx.check(end == want_end, f"TLB chase ended at {end:#x}, expected {want_end:#x}")
        self.clock.add(cyc, ns)
        return dev.download(self.lat, np.uint32, count).astype(np.float64)


def _sweep(
    ctx: BenchContext, tc: TlbChaser, base: int, stride: int, ns: list[int], rand: bool, reps: int
) -> tuple[list[Point], list[Point], dict[int, np.ndarray]]:
    """Raw mean and element-delta curves of one stride and order; per-access latencies kept for n <= 64."""
    per_rep: list[list[np.ndarray]] = [[] for _ in range(reps)]
    raw: list[Point] = []
    kept: dict[int, np.ndarray] = {}
    for n in ns:
        order = np.random.default_rng(n).permutation(n) if rand else np.arange(n)
        tc.build(base, n, stride, order if rand else None)
        warm = max(2 * n, 4)
        # chase_on_sm keeps 8 bytes of shared memory per timed access: at most what a block may have
        # (every element still read at least once: 8 x MAX_ELEMENTS fits the 64 KiB of the smallest GPU)
        count = min(max(2 * n, 512), 2 * MAX_ELEMENTS, ctx.props["smem_per_block_optin"] // 8)
        elements = order[(warm + np.arange(count)) % n]
        means = []
        for r in range(reps):
            lat = tc.chase(base + int(order[0]) * stride, warm, count, base + int(order[(warm + count) % n]) * stride)
            per_rep[r].append(geometry.per_element_means(lat, elements, n))
            means.append(float(lat.mean()))
            if r == 0 and n <= 64:
                kept[n] = lat
        raw.append(ctx.point(n * stride, means, elements=n))
    curves = np.array([geometry.element_delta_curve(p) for p in per_rep])
    base_lat = float(np.median([p[0].mean() for p in per_rep]))
    delta = [
        Point(
            n * stride,
            base_lat + float(np.median(curves[:, i])),
            base_lat + float(curves[:, i].min()),
            base_lat + float(curves[:, i].max()),
            reps,
            {"elements": n},
        )
        for i, n in enumerate(ns)
    ]
    return raw, delta, kept


@benchmark(
    name="tlb",
    title="TLB levels: entries, entry reach, coverage, miss and walk penalties",
    axes={
        "stride": "64 KiB .. 2 GiB (powers of 2)",
        "elements": "1..64, then x1.125 steps up to 8192 or max_footprint",
        "order": "sequential, random",
        "control": "forced walk: same pages at a second virtual range",
    },
    kernels=[PCHASE["cg"]],
    timeout_s=400,
    paper="002 §3.8 Fig. 3.12",
    params={
        "max_footprint": Param(
            None, "largest footprint (default 60% of free memory, at most 64 GiB)", parse_size, fits_free_memory(0.9)
        )
    },
)
def tlb(ctx: BenchContext) -> None:
    dev = ctx.device
    top = ctx.params["max_footprint"] or min(int(dev.free_memory() * 0.6), 64 << 30)
    top = top // (2 << 20) * (2 << 20)
    strides = [(64 << 10) << i for i in range(16) if ((64 << 10) << i) <= top]
    if ctx.quick:
        strides = strides[::2] + ([strides[-1]] if len(strides) % 2 == 0 else [])
    reps = 3
    tc = TlbChaser(ctx)
    big = ctx.alloc(top)
    steps_seq: dict[int, list[plateaus.Step]] = {}
    flat_to: list[int] = []
    for i, stride in enumerate(strides):
        ns = element_grid(min(top // stride, MAX_ELEMENTS))
        for rand in (False, True):
            raw, delta, kept = _sweep(ctx, tc, big.ptr, stride, ns, rand, reps)
            tag = f"stride {_size(stride)}, {'random' if rand else 'sequential'}"
            ctx.series(
                tag,
                "footprint",
                "bytes",
                "mean latency",
                "cycles",
                raw,
                plot="logx",
                figure="tlb_raw_mean",
                stride=stride,
                order="random" if rand else "sequential",
            )
            ctx.series(
                tag,
                "footprint",
                "bytes",
                "latency change of the same elements (+ 1-element latency)",
                "cycles",
                delta,
                plot="logx",
                figure="tlb_random" if rand else "tlb_sequential",
                stride=stride,
                order="random" if rand else "sequential",
                reps=reps,
            )
            found = plateaus.find_steps(
                [p.extra["elements"] for p in delta],
                [p.y for p in delta],
                [p.y_max - p.y_min for p in delta],
                factor=STEP_FACTOR,
                min_noise=0.2,
            )
            if not rand:
                steps_seq[stride] = found
                if stride in (strides[-1], strides[len(strides) // 2]):
                    for n in (16, 17):
                        if n in kept:
                            ctx.series(
                                f"stride {_size(stride)}, {n} elements",
                                "access",
                                "",
                                "latency",
                                "cycles",
                                [Point(k, float(v)) for k, v in enumerate(kept[n])],
                                plot="line",
                                figure="tlb_per_access",
                                stride=stride,
                            )
            ups = [s for s in found if s.after > s.before]
            if len(ups) <= 1:
                flat_to.append(ns[-1] * stride)
        ctx.progress(i + 1, len(strides) + 1, f"stride {_size(stride)}")
    ctx.free(big)  # before the forced walk maps its own range of up to 2 GiB
    _derive(ctx, steps_seq, flat_to, top)
    _forced_walk(ctx, tc)
    tc.clock.report(ctx, "the TLB chases")


def _size(b: int) -> str:
    return f"{b >> 30} GiB" if b >= 1 << 30 else f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def _derive(ctx: BenchContext, steps_seq: dict[int, list[plateaus.Step]], flat_to: list[int], top: int) -> None:
    how = (
        f"sequential chase, one element per stride, every access timed; curve = mean change of the same elements' "
        f"latencies as elements are added (analysis.geometry.element_delta_curve); a step counts when it exceeds "
        f"{STEP_FACTOR:g} x the noise (median run-to-run spread of 3 launches or the point-to-point scatter, "
        "whichever is larger; analysis.plateaus.find_steps)"
    )
    first = {s: int(st[0].x_after) for s, st in steps_seq.items() if st and st[0].after > st[0].before}
    try:
        g = geometry.tlb_geometry(first)
    except ValueError as e:
        for k in ("l1_entries", "l1_coverage_bytes", "entry_reach_bytes", "l1_miss_penalty_cycles"):
            ctx.figure(f"mem.tlb.{k}", f"n/a ({e})", "", "derived", how, check="failed")
        return
    e, reach = int(g["entries"]), g["reach_bytes"]
    full = [st[0].after - st[0].before for s, st in steps_seq.items() if s in first and s >= reach]
    ctx.figure(
        "mem.tlb.l1_entries",
        e,
        "entries",
        "derived",
        f"{how}; entries = elements before the first step at strides >= the entry reach (smallest over strides)",
        note="first step (elements) per stride: " + ", ".join(f"{_size(s)}: {c}" for s, c in sorted(first.items())),
    )
    ctx.figure(
        "mem.tlb.entry_reach_bytes",
        int(reach),
        "bytes",
        "derived",
        f"{how}; below the reach consecutive elements share an entry, so the first step comes after "
        "entries x reach / stride elements: reach = median of (elements before the step) x stride / entries "
        "over those strides, rounded to a power of two",
    )
    ctx.figure(
        "mem.tlb.l1_coverage_bytes",
        int(e * reach),
        "bytes",
        "derived",
        "mem.tlb.l1_entries x mem.tlb.entry_reach_bytes",
    )
    if full:
        ctx.median_figure(
            "mem.tlb.l1_miss_penalty_cycles",
            full,
            "cycles",
            "derived",
            f"{how}; size of the first step at strides >= the entry reach (every access misses the first "
            "level and hits the next), median over strides",
        )
    second = [(s, st[1]) for s, st in steps_seq.items() if len([x for x in st if x.after > x.before]) >= 2]
    if second:
        s, st = max(second, key=lambda t: t[0])
        ctx.figure(
            "mem.tlb.l2_coverage_bytes",
            int(st.x_before * min(s, reach)),
            "bytes",
            "derived",
            f"{how}; elements before the second step at the {_size(s)} stride x min(stride, entry reach)",
            note=f"{st.before:.0f} -> {st.after:.0f} cycles",
        )
    else:
        reach_to = max(flat_to) if flat_to else top
        ctx.figure(
            "mem.tlb.l2_coverage_bytes",
            f">= {reach_to}",
            "bytes",
            "derived",
            f"{how}; no second step at any stride up to the largest footprint that fits "
            f"({reach_to / 2**30:.1f} GiB, element counts up to {MAX_ELEMENTS})",
        )


def _forced_walk(ctx: BenchContext, tc: TlbChaser) -> None:
    """Same physical pages at two virtual ranges: write the chain through the first (data in L2,
    first range's translations warm), chase through the second from cold translations; the first
    pass against the second pass over the same elements is the walk."""
    dev = ctx.device
    res: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    optin = ctx.props["smem_per_block_optin"]
    for stride, n, key, unit in (
        (32 << 20, 64, "walk_penalty_cycles", "cycles"),
        (2 << 20, 512, "walks_2mib_stride", "walks"),
    ):
        if 8 * 2 * n > optin:  # both passes in one launch, 8 B of shared memory per timed access (<= 8 KiB)
            why = f"{16 * n} B of shared memory per block (this GPU: {optin} B)"
            ctx.figure(f"mem.tlb.{key}", "n/a", unit, "derived", f"the {_size(stride)} forced walk needs {why}")
            continue
        try:
            a, b = dev.alloc_aliased(n * stride)
        except GpuDissectError as e:
            ctx.figure(
                "mem.tlb.walk_penalty_cycles",
                "n/a",
                "cycles",
                "derived",
                f"second mapping of the same pages unavailable (cuMemCreate/cuMemMap): {e}",
            )
            return
        try:
            order = np.random.default_rng(5).permutation(n)
            tc.build(a.ptr, n, stride, order, value_base=b.ptr)
            lat = tc.chase(b.ptr + int(order[0]) * stride, 0, 2 * n, b.ptr + int(order[0]) * stride)
        finally:
            dev.free(a), dev.free(b)
        res[stride] = (lat[:n], lat[n:])
        for name, v in (("first pass (cold translations)", lat[:n]), ("second pass", lat[n:])):
            ctx.series(
                f"stride {_size(stride)}: {name}",
                "access",
                "",
                "latency",
                "cycles",
                [Point(k, float(x)) for k, x in enumerate(v)],
                plot="line",
                figure="tlb_forced_walk",
                stride=stride,
            )
    if 32 << 20 in res:
        _walk_penalty(ctx, *res[32 << 20])
    if 2 << 20 in res:
        _walks(ctx, *res[2 << 20])


def _walk_penalty(ctx: BenchContext, first: np.ndarray, second: np.ndarray) -> None:
    d = first - second
    ctx.figure(
        "mem.tlb.walk_penalty_cycles",
        float(np.median(d)),
        "cycles",
        "measured",
        "64 elements 32 MiB apart in one physical allocation mapped at two virtual ranges (cuMemMap); chain "
        "written through the first range, chased in random order through the second: per element, first "
        "access (translation never cached) minus its second access (next TLB level hit; the first level "
        "cannot hold 64 entries), median over elements; data L2-resident in both",
        (float(np.percentile(d, 10)), float(np.percentile(d, 90))),
    )


def _walks(ctx: BenchContext, f2: np.ndarray, s2: np.ndarray) -> None:
    walks = int(np.sum(f2 - s2 > WALK_MIN))
    ctx.figure(
        "mem.tlb.walks_2mib_stride",
        walks,
        "walks",
        "derived",
        f"the same at a 2 MiB stride (512 elements, 1 GiB, random order): first accesses slower than their "
        f"second by more than {WALK_MIN} cycles (far above the L2 slice spread and the first-level miss); "
        "512 / this = elements one translation fill serves on this mapping (cuMemCreate + cuMemMap; compare "
        "mem.tlb.entry_reach_bytes, measured on cuMemAlloc memory)",
        note=f"{512 / walks:.1f} elements (x 2 MiB) per walk" if walks else "no walk seen",
    )
