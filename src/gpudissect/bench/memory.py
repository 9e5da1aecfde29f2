"""The memory suite: latency, geometry and throughput of every level (Luo §4, Jia ch. 3, Sun §7).

Sizes come from the device (L2 size, SM count, shared-memory limits) and from earlier curves,
never from constants about a particular GPU.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from ..analysis import geometry, plateaus
from ..device.cuda import Arg
from ..models import Point
from .chase import PCHASE, Chaser, ClockMeter, capacity_of_level, capacity_search, flush_l2, log_grid
from .context import BenchContext
from .registry import KernelSpec, Param, benchmark, fits_free_memory, multiple_of, parse_size

SUITE = "memory"
ALL_OPS = [PCHASE[op] for op in ("ca", "cg", "default")]


_check_stride = multiple_of(8, "each chain element is a 64-bit address")
_check_footprint = fits_free_memory(0.9)


# ---------------------------------------------------------------------------------------
# 1. Traditional P-chase: latency over footprint, with levels and sizes detected
# ---------------------------------------------------------------------------------------
@benchmark(
    suite=SUITE, name="pchase_latency", title="Latency vs footprint (traditional P-chase)",
    axes={"cache_op": "ca, cg, default", "footprint": "4 KiB .. max_footprint (default 4 x L2), log steps + fine steps at every knee"},
    kernels=ALL_OPS,
    params={
        "stride": Param(128, "bytes between chain elements (multiple of 8)", parse_size, _check_stride),
        "max_footprint": Param(None, "largest footprint (default 4 x L2)", parse_size, _check_footprint),
        "steps": Param(4096, "timed loads per launch", int, lambda v, f: None if 64 <= v <= 1 << 24 else "64 .. 16M"),
    },
    timeout_s=400, paper="000 §4.1 Fig. 2 / Table III; 002 §3.1",
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
        try:
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
        finally:
            ch.close()
            for c, ns in ch.cycles_ns:
                clock.add(c, ns)
        xs = sorted(pts)
        curves[op] = (xs, [pts[x] for x in xs])
        ctx.series(op, "footprint", "bytes", "latency", "cycles", [pts[x] for x in xs], plot="logx",
                   figure="latency_vs_footprint", stride=stride, steps=steps, reps=reps)
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
        ctx.figure("mem.latency.l1_hit_cycles", low.level, "cycles", "derived",
                   f"lowest plateau of the .ca curve; {method}", (min(on), max(on)), check, note)
        cap = capacity_of_level(pts, low.level)
        if cap is not None and cap < xs[-1]:
            ctx.figure("mem.size.l1_bytes", cap, "bytes", "derived",
                       "largest .ca footprint within 10% of the L1 hit latency (default carve-out)", check=check, note=note)
    xs, pts = curves["cg"]
    ys = [p.y for p in pts]
    pl = plateaus.find_plateaus(xs, ys)
    knees = plateaus.find_knees(xs, ys)
    if pl:
        first = pl[0]
        ctx.figure("mem.latency.l2_hit_cycles", first.level, "cycles", "derived",
                   f"first plateau of the .cg curve (L1 bypassed); {method}")
        last = pl[-1]
        if len(pl) >= 2:
            ctx.figure("mem.latency.dram_cycles", last.level, "cycles", "derived",
                       f"last plateau of the .cg curve (footprint >= {last.x_first / 2**20:.0f} MiB)")
    if len(pl) >= 2:
        # The knee is where the curve crosses halfway between the plateaus on either side of it,
        # interpolated in log(footprint): a grid-independent point, unlike "the last grid point
        # before the rise" (which moved 49.4 -> 42.5 MiB between the quick and the full grid).
        knee_how = ("footprint where the .cg curve crosses halfway between the {a} plateau ({lo:.0f} cycles) and the "
                    "{b} plateau ({hi:.0f} cycles), interpolated linearly in log2(footprint) between the grid points "
                    "around the crossing (analysis.plateaus.capacity_by_midpoint)")
        lo, hi = pl[-2].level, pl[-1].level
        tail = [(x, y) for x, y in zip(xs, ys) if x >= pl[-2].x_first]
        try:
            ctx.figure("mem.size.l2_bytes", round(plateaus.capacity_by_midpoint(*zip(*tail), lo, hi)), "bytes", "derived",
                       knee_how.format(a="next-to-last", b="last (DRAM)", lo=lo, hi=hi), note=f"device reports {l2} bytes")
        except ValueError as e:
            ctx.figure("mem.size.l2_bytes", "n/a", "bytes", "derived", str(e), check="failed")
        if len(pl) >= 3:
            lo2, hi2 = pl[0].level, pl[1].level
            try:
                head = [(x, y) for x, y in zip(xs, ys) if x <= pl[1].x_last]
                ctx.figure("mem.size.l2_partition_knee_bytes", round(plateaus.capacity_by_midpoint(*zip(*head), lo2, hi2)),
                           "bytes", "derived", knee_how.format(a="first (L2 hit)", b="second", lo=lo2, hi=hi2))
            except ValueError:
                pass
    del knees
    ctx.figure("mem.size.l2_reported_bytes", l2, "bytes", "assumed", "device attribute L2_CACHE_SIZE")


# ---------------------------------------------------------------------------------------
# 2. Shared-memory latency
# ---------------------------------------------------------------------------------------
@benchmark(
    suite=SUITE, name="shared_latency", title="Shared-memory load latency (chase)",
    axes={"elements": "1024 u32, random single cycle"}, kernels=[PCHASE["ca"]],
    paper="000 Table III row Shared Memory",
)
def shared_latency(ctx: BenchContext) -> None:
    dev, n, steps = ctx.device, 1024, 8192
    rng = np.random.default_rng(7)
    perm = rng.permutation(n)
    chain = np.empty(n, np.uint32)
    chain[perm] = np.roll(perm, -1)  # element perm[i] -> perm[i+1]
    dchain, out = dev.upload(chain), dev.alloc(32)
    fn = ctx.kernel(PCHASE["ca"], "smem_pchase")
    clock = ClockMeter()
    vals = []
    for _ in range(7):
        fn(1, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u64(steps), Arg.ptr(out)], smem=n * 4)
        dev.sync("smem_pchase")
        end, cycles, ns = (int(v) for v in dev.download(out, np.uint64, 3))
        ctx.check(end == _chain_end(chain, n + steps), f"shared chase ended at {end}, expected {_chain_end(chain, n + steps)}")
        vals.append(cycles / steps)
        clock.add(cycles, ns)
    dev.free(dchain), dev.free(out)
    ctx.series("ld.shared.u32", "repetition", "", "latency", "cycles",
               [Point(i, v) for i, v in enumerate(vals)], plot="line", figure="shared_latency")
    ctx.figure("mem.latency.shared_cycles", float(np.median(vals)), "cycles", "measured",
               f"median of 7 launches, {steps} dependent ld.shared.u32 each (pointer chase: the loaded value is "
               "the next address)", (min(vals), max(vals)))
    clock.report(ctx, "the shared-memory chases")


def _chain_end(chain: np.ndarray, hops: int) -> int:
    idx = 0
    for _ in range(hops % len(chain)):
        idx = int(chain[idx])
    return idx


INDEX_VS_POINTER = ("a pointer chase loads the next address itself, so nothing sits between dependent loads; the "
                    "papers' index chase (j = a[j]) adds the scaled-index address arithmetic (one IMAD/LEA) to every hop")


@benchmark(
    suite=SUITE, name="index_chase", title="Index chase (j = a[j], the papers' form) beside the pointer chase",
    axes={"level": "shared memory (1024 u32), L1 hit (.ca, 128 elements 128 B apart)", "form": "pointer, index"},
    kernels=[PCHASE["ca"]], paper="000 Table III rows L1 Cache / Shared Memory; 003 Table IV",
)
def index_chase(ctx: BenchContext) -> None:
    dev, steps, reps = ctx.device, 8192, 7
    clock = ClockMeter()
    rng = np.random.default_rng(7)
    # shared memory: the same random single cycle through 1024 u32, as indices and as addresses
    n = 1024
    perm = rng.permutation(n)
    chain = np.empty(n, np.uint32)
    chain[perm] = np.roll(perm, -1)
    dchain, out = dev.upload(chain), dev.alloc(64)
    res: dict[str, list[float]] = {"shared pointer": [], "shared index": [], "l1 pointer": [], "l1 index": []}
    want = _chain_end(chain, n + steps)
    for _ in range(reps):  # alternate the two forms so clock drift cannot favour one
        for form, fname in (("pointer", "smem_pchase"), ("index", "smem_ichase")):
            ctx.kernel(PCHASE["ca"], fname)(1, 32, [Arg.ptr(dchain), Arg.u32(n), Arg.u64(steps), Arg.ptr(out)], smem=n * 4)
            dev.sync(fname)
            end, cycles = (int(v) for v in dev.download(out, np.uint64, 2))
            ctx.check(end == want, f"{fname} ended at {end}, expected {want}")
            res[f"shared {form}"].append(cycles / steps)
    dev.free(dchain)
    # L1: 128 elements 128 B apart (16 KiB, far inside L1), random single cycle
    m = 128
    perm = rng.permutation(m)
    idx = np.empty(m, np.uint32)
    idx[perm] = np.roll(perm, -1)
    arr = np.zeros(m * 32, np.uint32)
    arr[np.arange(m) * 32] = idx
    darr = dev.upload(arr)
    ch = Chaser(ctx, "ca", m * 128)
    try:
        ch.build_random(m * 128, 128)
        iwant = _chain_end(idx, 2 * m + steps)
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
    finally:
        ch.close()
        dev.free(darr), dev.free(out)
    for k, v in res.items():
        ctx.series(k, "repetition", "", "latency", "cycles", [Point(i, x) for i, x in enumerate(v)], plot="line",
                   figure="index_vs_pointer_chase")
    for key, k, what in (("mem.latency.shared_index_chase_cycles", "shared index", "ld.shared.u32 j = s[j] over 1024 u32"),
                         ("mem.latency.l1_hit_index_chase_cycles", "l1 index", "ld.global.ca.u32 j = a[32 j] over 128 lines (16 KiB)")):
        v = res[k]
        other = res[k.replace("index", "pointer")]
        ctx.figure(key, float(np.median(v)), "cycles", "measured",
                   f"{what}, {steps} dependent hops per launch, median of {reps} launches alternated with the pointer "
                   f"chase of the same data ({float(np.median(other)):.1f} cycles): {INDEX_VS_POINTER}", (min(v), max(v)),
                   note=f"index - pointer = {float(np.median(v)) - float(np.median(other)):+.1f} cycles per hop")
    ctx.figure("mem.latency.l1_hit_pointer_chase_cycles", float(np.median(res["l1 pointer"])), "cycles", "measured",
               f"ld.global.ca.u64 pointer chase over the same 128 lines, median of {reps} launches",
               (min(res["l1 pointer"]), max(res["l1 pointer"])))
    clock.report(ctx, "the L1 chases")


# ---------------------------------------------------------------------------------------
# 4. Throughput (Table V)
# ---------------------------------------------------------------------------------------
VEC = {"fp32": 1, "fp64": 2, "fp32v4": 4}
LANES_BYTES = {"fp32": (1, 4), "fp64": (1, 8), "fp32v4": (4, 4)}  # scalars per access, bytes per scalar
_BW_SASS = {
    "fp32": (r"LDG\.E\.STRONG\.SM", r"LDS\b", r"LDG\.E\.STRONG\.GPU"),
    "fp64": (r"LDG\.E\.64\.STRONG\.SM", r"LDS\.64", r"LDG\.E\.64\.STRONG\.GPU"),
    "fp32v4": (r"LDG\.E\.128\.STRONG\.SM", r"LDS\.128", r"LDG\.E\.128\.STRONG\.GPU"),
}
BW = {
    w: KernelSpec("bandwidth.cu", {"l1_read": [s[0], r"CS2R"], "smem_read": [s[1], r"CS2R"], "l2_read": [s[2]],
                                   "dram_read": [r"LDG\.E"], "dram_copy": [r"LDG\.E", r"STG\.E"],
                                   "dram_copy_stream": [r"LDG\.E\.NA\.LTC256B", r"STG\.E\.EF"],
                                   "dram_copy_chunked": [r"LDG\.E", r"STG\.E"],
                                   "dram_copy_flat": [r"LDG\.E", r"STG\.E"],
                                   # the evict_last policy is a uniform-register memory descriptor whose
                                   # upper word reads 0x140 (0x120 evict_first, 0x160 evict_normal)
                                   "dram_copy_flat_keep": [r"UMOV UR\d+, 0x140\b", r"LDG\.E(\.64|\.128)? R\d+, desc",
                                                           r"STG\.E"],
                                   "dram_copy_bulk": [r"UBLKCP\.S\.G", r"UBLKCP\.G\.S", r"SYNCS\.PHASECHK"]},
                  {"VEC": VEC[w]}, label=f"bandwidth.cu[{w}]")
    for w, s in _BW_SASS.items()
}
# fp32.v4 copy kernels with 4 and 16 accesses in flight per thread, tried beside the default 8
COPY_VARIANTS = {u: KernelSpec("bandwidth.cu", {"dram_copy": [r"LDG\.E\.128", r"STG\.E\.128"],
                                                "dram_copy_chunked": [r"LDG\.E\.128", r"STG\.E\.128"]},
                               {"VEC": 4, "UNROLL": u}, label=f"bandwidth.cu[fp32v4,unroll{u}]") for u in (4, 16)}
UNROLL = 8
ROWS = 2 * UNROLL - 1  # rows per block in l1_read / smem_read (see bandwidth.cu)
BLOCK = {"fp32": 1024, "fp64": 1024, "fp32v4": 512}  # the kernel's compile-time BLOCK


def hash_values(start: int, count: int) -> np.ndarray:
    """Host copy of the fill kernel's values: (i * 2654435761 >> 13) & 3."""
    i = np.arange(start, start + count, dtype=np.uint64)
    return ((i * np.uint64(2654435761)) >> np.uint64(13)) & np.uint64(3)


@cache
def hash_sum(count: int, chunk: int = 1 << 24) -> int:
    return int(sum(int(hash_values(s, min(chunk, count - s)).sum()) for s in range(0, count, chunk)))


def rotation_reads(iters: int, warm: bool) -> np.ndarray:
    """How often each of the ROWS rows is read: iteration `it` reads rows (it & 7) .. (it & 7) + 7."""
    counts = np.zeros(ROWS, np.int64) + (1 if warm else 0)
    first = np.arange(iters) & (UNROLL - 1)
    for k in range(UNROLL):
        np.add.at(counts, first + k, 1)
    return counts


REC = 5  # per-block record: clock64 start/end, SM, %globaltimer start/end (bandwidth.cu record())


def per_sm_rate(rec: np.ndarray, bytes_per_block: float) -> np.ndarray:
    """Bytes per SM-cycle of each SM: its blocks' bytes over the span of their clock intervals."""
    r = rec.reshape(-1, REC).astype(np.int64)
    out = []
    for sm in np.unique(r[:, 2]):
        on = r[r[:, 2] == sm]
        span = on[:, 1].max() - on[:, 0].min()
        out.append(len(on) * bytes_per_block / span)
    return np.array(out)


def union_window(rec: np.ndarray) -> tuple[float, float]:
    """(ns, SM clock in GHz) of one launch: %globaltimer from the earliest block start to the
    latest block end (the time every byte was moved in), and the clock the blocks ran at
    (their clock64 cycles over their %globaltimer ns, median over blocks)."""
    r = rec.reshape(-1, REC).astype(np.int64)
    ns = float(r[:, 4].max() - r[:, 3].min())
    dur = r[:, 4] - r[:, 3]
    ok = dur > 0
    ghz = float(np.median((r[ok, 1] - r[ok, 0]) / dur[ok])) if ok.any() else float("nan")
    return ns, ghz


def _fill(ctx: BenchContext, spec: KernelSpec, buf: Any, scalars: int) -> None:
    ctx.kernel(spec, "fill")(ctx.props["sm_count"] * 8, 256, [Arg.ptr(buf), Arg.u64(scalars)])
    ctx.device.sync("fill")


def _sums(ctx: BenchContext, buf: Any, w: str, count: int) -> np.ndarray:
    return ctx.device.download(buf, np.float64 if w == "fp64" else np.float32, count).astype(np.float64)


@benchmark(
    suite=SUITE, name="bandwidth", title="Throughput of L1, shared memory, L2 and DRAM",
    axes={"level": "l1, shared, l2, dram (+ copy vs device-to-device)", "access": "fp32, fp64, fp32.v4"},
    kernels=list(BW.values()) + list(COPY_VARIANTS.values()), timeout_s=400, paper="000 Table V; 002 Tables 3.2, 3.4",
    params={"dram_bytes": Param(None, "DRAM buffer size (default max(8 x L2, 2 GiB))", parse_size, _check_footprint)},
)
def bandwidth(ctx: BenchContext) -> None:
    dev, p = ctx.device, ctx.props
    sms, l2 = p["sm_count"], p["l2_bytes"]
    reps = 5 if ctx.quick else 11
    peak_smem = 32 * 4  # 32 banks x 4 bytes per clock: the architectural peak of L1/shared per SM
    dram_peak = 2 * p["mem_clock_khz"] * 1e3 * p["mem_bus_bits"] / 8 / 1e9  # GB/s, double data rate
    best: dict[str, tuple[float, str]] = {}
    clock = ClockMeter()
    steps = 0
    for w, spec in BW.items():
        lanes, sb = LANES_BYTES[w]
        acc_bytes, block = lanes * sb, BLOCK[w]
        row_scalars = block * lanes
        region = ROWS * block * acc_bytes  # per block: fits L1 and shared memory
        data = dev.alloc(sms * region)
        sums, rec = dev.alloc(sms * block * 8), dev.alloc(sms * REC * 8)
        _fill(ctx, spec, data, sms * region // sb)
        rowsums = hash_values(0, sms * region // sb).reshape(sms, ROWS, row_scalars).sum(axis=2)
        for level, fname in (("l1", "l1_read"), ("shared", "smem_read")):
            fn = ctx.kernel(spec, fname)
            if level == "l1":
                fn.set_carveout(0)  # as much L1 as the SM has
            iters = 512 if ctx.quick else 2048
            want = rowsums @ rotation_reads(iters, warm=level == "l1")
            smem = region if level == "shared" else 0
            rates, ok = [], True
            for _ in range(reps):
                dev.memset32(sums, 0xFFFFFFFF)  # NaN poison: an unwritten sum cannot pass
                fn(sms, block, [Arg.ptr(data), Arg.u32(iters), Arg.u32(UNROLL - 1), Arg.ptr(sums), Arg.ptr(rec)], smem=smem)
                dev.sync(fname)
                got = _sums(ctx, sums, w, sms * block).reshape(sms, block).sum(axis=1)
                ok &= ctx.soft_check(np.array_equal(got, want.astype(np.float64)),
                                     f"{level} {w}: sums differ from the data read ({_first_diff(got, want)})")
                rates.append(np.median(per_sm_rate(dev.download(rec, np.uint64, sms * REC), iters * UNROLL * block * acc_bytes)))
            _bw_figure(ctx, level, w, rates, "bytes/clk/SM", peak_smem, "32 banks x 4 B per clock", ok)
            if ok:
                best[level] = max(best.get(level, (0.0, "")), (float(np.median(rates)), w))
            steps += 1
            ctx.progress(steps, 13, f"{level} {w}")
        dev.free(data), dev.free(sums), dev.free(rec)

        # L2: a quarter of the L2, all SMs, .cg
        block = 1024
        n_acc = (l2 // 4) // acc_bytes // (UNROLL * block) * (UNROLL * block)
        data = dev.alloc(n_acc * acc_bytes)
        sums, rec = dev.alloc(sms * block * 8), dev.alloc(sms * REC * 8)
        _fill(ctx, spec, data, n_acc * lanes)
        total = hash_sum(n_acc * lanes)
        fn = ctx.kernel(spec, "l2_read")
        iters = 2
        fn(sms, block, [Arg.ptr(data), Arg.u64(n_acc), Arg.u32(1), Arg.ptr(sums), Arg.ptr(rec)])  # warm L2
        rates, gbps, ev_gbps, sum_rates, ok = [], [], [], [], True
        total_bytes = sms * n_acc * acc_bytes * iters
        for _ in range(reps):
            dev.memset32(sums, 0xFFFFFFFF)
            ms = dev.time_ms(lambda: fn(sms, block, [Arg.ptr(data), Arg.u64(n_acc), Arg.u32(iters), Arg.ptr(sums), Arg.ptr(rec)]))[0]
            got = _sums(ctx, sums, w, sms * block).reshape(sms, block).sum(axis=1)
            want = np.full(sms, total * iters, np.float64)
            ok &= ctx.soft_check(np.array_equal(got, want), f"l2 {w}: sums differ from the data read ({_first_diff(got, want)})")
            r = dev.download(rec, np.uint64, sms * REC)
            ns, ghz = union_window(r)
            clock.add(int(ns * ghz), int(ns))
            gbps.append(total_bytes / ns)
            rates.append(total_bytes / (ns * ghz))
            sum_rates.append(per_sm_rate(r, n_acc * acc_bytes * iters).sum())
            ev_gbps.append(total_bytes / ms / 1e6)
        union = ("all SMs streaming L2/4 with .cg loads; bytes over the union window of the launch (%globaltimer from "
                 "the earliest block start to the latest block end)")
        _bw_figure(ctx, "l2", w, rates, "bytes/clk", None, "", ok,
                   method=f"{union}, per clock of the SM clock measured in the same blocks (clock64 / %globaltimer)")
        ctx.figure(f"mem.bw.l2.{w}_gbps", float(np.median(gbps)), "GB/s", "measured", union, (min(gbps), max(gbps)),
                   check="ok" if ok else "failed")
        ctx.figure(f"mem.bw.l2.{w}_event_gbps", float(np.median(ev_gbps)), "GB/s", "measured",
                   "the same launches timed by CUDA events (launch overhead included)", (min(ev_gbps), max(ev_gbps)),
                   check="ok" if ok else "failed")
        ctx.figure(f"mem.bw.l2.{w}_sum_of_sm_rates_bytes_per_clk", float(np.median(sum_rates)), "bytes/clk", "derived",
                   "the old method, kept for comparison: per-SM bytes per own-clock span, summed over SMs (windows "
                   "need not overlap, so this overstates)", check="ok" if ok else "failed")
        if ok:
            best["l2_gbps"] = max(best.get("l2_gbps", (0.0, "")), (float(np.median(gbps)), w))
        if ok:
            best["l2"] = max(best.get("l2", (0.0, "")), (float(np.median(rates)), w))
        dev.free(data), dev.free(sums), dev.free(rec)
        steps += 1
        ctx.progress(steps, 13, f"l2 {w}")

    _dram(ctx, reps, dram_peak, best)
    for level, unit in (("l1", "bytes_per_clk_sm"), ("shared", "bytes_per_clk_sm"), ("l2", "bytes_per_clk"), ("dram", "gbps"),
                        ("l2_gbps", "")):
        if level in best:
            v, w = best[level]
            key = "mem.bw.l2_gbps" if level == "l2_gbps" else f"mem.bw.{level}_{unit}"
            ctx.figure(key, v, {"gbps": "GB/s", "bytes_per_clk": "bytes/clk", "": "GB/s"}.get(unit, "bytes/clk/SM"),
                       "derived", f"best of fp32 / fp64 / fp32.v4 ({w})"
                       + ("; per clock of the SM clock measured in the same kernels" if unit.startswith("bytes") else ""))
    clock.report(ctx, "the L2 bandwidth launches (union windows)")


def _first_diff(got: np.ndarray, want: np.ndarray) -> str:
    bad = np.flatnonzero(got != want)
    return f"{len(bad)} blocks differ, block {bad[0]}: got {got[bad[0]]:.0f}, want {want[bad[0]]:.0f}" if len(bad) else "equal"


def _bw_figure(ctx: BenchContext, level: str, w: str, rates: list[float], unit: str,
               peak: float | None, peak_what: str, ok: bool = True,
               method: str = "clock64 per block, grouped by %smid; median over SMs, median over launches") -> None:
    suffix = {"bytes/clk/SM": "bytes_per_clk_sm", "bytes/clk": "bytes_per_clk"}[unit]
    med = float(np.median(rates))
    note = f"{100 * med / peak:.1f}% of {peak:g} {unit} ({peak_what})" if peak else ""
    ctx.figure(f"mem.bw.{level}.{w}_{suffix}", med, unit, "measured", method, (min(rates), max(rates)),
               check="ok" if ok else "failed", note=note)
    if peak and ok:
        ctx.figure(f"mem.bw.{level}.{w}_pct_peak", round(100 * med / peak, 2), "%", "derived", f"of {peak:g} {unit} ({peak_what})")


def _tune(dev: Any, sms: int, launch: Any, max_block: int = 1024) -> tuple[int, int]:
    """The (blocks per SM, threads per block) at which `launch(grid, block)` runs fastest;
    `max_block` is the kernel's own limit (its register use may forbid 1024 threads)."""
    timed = []
    for per_sm in (1, 2, 4, 8):
        for block in (256, 512, 1024):
            if per_sm * block > 2048 or block > max_block:
                continue
            launch(sms * per_sm, block)
            timed.append((min(dev.time_ms(lambda: launch(sms * per_sm, block), 2)), per_sm, block))
    _, per_sm, block = min(timed)
    return per_sm, block


def _dram(ctx: BenchContext, reps: int, peak_gbps: float, best: dict[str, tuple[float, str]]) -> None:
    dev, p = ctx.device, ctx.props
    sms = p["sm_count"]
    nbytes = ctx.params["dram_bytes"] or max(8 * p["l2_bytes"], 2 << 30)
    nbytes = min(nbytes, int(dev.free_memory() * 0.4)) // (1 << 20) * (1 << 20)
    pts = []
    sums = dev.alloc(sms * 2048 * 8)
    for w, spec in BW.items():
        lanes, sb = LANES_BYTES[w]
        n_acc = nbytes // (lanes * sb)
        src, dst = dev.alloc(nbytes), dev.alloc(nbytes)
        _fill(ctx, spec, src, n_acc * lanes)
        total = hash_sum(n_acc * lanes)
        read = ctx.kernel(spec, "dram_read")

        def do_read(grid: int, block: int, buf: Any = src) -> None:
            read(grid, block, [Arg.ptr(buf), Arg.u64(n_acc), Arg.ptr(sums)])

        per_sm, block = _tune(dev, sms, do_read, read.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"))
        dev.memset32(sums, 0)
        ms = dev.time_ms(lambda: do_read(sms * per_sm, block), reps)
        got = _sums(ctx, sums, w, sms * per_sm * block).sum()
        ctx.check(got == total, f"dram read {w}: sum {got} != {total}")
        gb = [nbytes / m / 1e6 for m in ms]
        ctx.figure(f"mem.bw.dram.{w}_gbps", float(np.median(gb)), "GB/s", "measured",
                   f"event-timed tiled read of {nbytes >> 20} MiB (>= 8 x L2), median of {reps}; "
                   f"launch tuned: {per_sm} blocks/SM x {block} threads", (min(gb), max(gb)),
                   note=f"{100 * np.median(gb) / peak_gbps:.1f}% of {peak_gbps:.0f} GB/s (2 x memory clock x bus width)")
        best["dram"] = max(best.get("dram", (0.0, "")), (float(np.median(gb)), w))
        pts.append(Point(len(pts), float(np.median(gb)), min(gb), max(gb), reps, {"label": f"read {w}"}))
        if w == "fp32v4":
            pts += _copy_vs_d2d(ctx, spec, src, dst, nbytes, n_acc, reps,
                                lambda: _check_copy(ctx, do_read, sms * per_sm, block, dst, sums, total), len(pts))
        dev.free(src), dev.free(dst)
        ctx.progress(10 + len(pts), 13, f"dram {w}")
    dev.free(sums)
    ctx.figure("mem.bw.dram_peak_gbps", round(peak_gbps, 1), "GB/s", "assumed",
               "2 x memory clock x bus width / 8 (device attributes)")
    ctx.series("dram", "kernel", "", "bandwidth", "GB/s", pts, plot="bar", figure="dram_bandwidth")


COPY_PAIRS = 9  # alternating (our copy, cuMemcpyDtoD) timings behind the target ratio


def _check_copy(ctx: BenchContext, do_read: Any, grid: int, block: int, dst: Any, sums: Any, total: int) -> None:
    ctx.device.memset32(sums, 0)
    do_read(grid, block, dst)
    got = _sums(ctx, sums, "fp32v4", grid * block).sum()
    ctx.check(got == total, "dram copy: the destination does not hold the source")


def _copy_candidates(ctx: BenchContext, spec: KernelSpec, src: Any, dst: Any, nbytes: int,
                     n_acc: int) -> list[tuple[str, Any]]:
    """Each of our copy kernels at its best launch shape, as (description, launch)."""
    dev, p = ctx.device, ctx.props
    sms, out = p["sm_count"], []
    tiled = [(spec, 8, k) for k in ("dram_copy", "dram_copy_stream", "dram_copy_chunked")]
    tiled += [(v, u, k) for u, v in COPY_VARIANTS.items() for k in ("dram_copy", "dram_copy_chunked")]
    for cspec, unroll, kname in tiled:  # persistent: blocks loop over tiles
        kern = ctx.kernel(cspec, kname)

        def do_copy(grid: int, blk: int, kern: Any = kern) -> None:
            kern(grid, blk, [Arg.ptr(src), Arg.ptr(dst), Arg.u64(n_acc)])

        cper, cblock = _tune(dev, sms, do_copy, kern.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"))
        out.append((f"{kname}, unroll {unroll}, {cper} blocks/SM x {cblock} threads",
                    lambda f=do_copy, g=sms * cper, b=cblock: f(g, b)))
    for kname in ("dram_copy_flat", "dram_copy_flat_keep"):  # one access per thread, one block per blk accesses
        flat = ctx.kernel(spec, kname)
        for blk in (256, 512, 1024):
            if blk <= flat.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"):
                grid = -(-n_acc // blk)
                out.append((f"{kname}, {grid} blocks x {blk} threads, one access each",
                            lambda f=flat, g=grid, b=blk: f(g, b, [Arg.ptr(src), Arg.ptr(dst), Arg.u64(n_acc)])))
    bulk = ctx.kernel(spec, "dram_copy_bulk")  # the bulk-copy engine, one thread per CTA
    for chunk in (8 << 10, 16 << 10, 32 << 10):
        smem = 4 * chunk  # COPY_STAGES pieces in flight
        for per_sm in (1, 2, 3):
            if per_sm * smem <= p["smem_per_sm"] - per_sm * 1024 and nbytes % chunk == 0:
                out.append((f"dram_copy_bulk, {chunk >> 10} KiB pieces, {per_sm} CTAs/SM",
                            lambda c=chunk, m=smem, g=sms * per_sm: bulk(
                                g, 32, [Arg.ptr(src), Arg.ptr(dst), Arg.u64(nbytes), Arg.u32(c)], smem=m)))
    return out


def _copy_vs_d2d(ctx: BenchContext, spec: KernelSpec, src: Any, dst: Any, nbytes: int, n_acc: int, reps: int,
                 verify: Any, x0: int) -> list[Point]:
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
    d2d_launch = lambda: dev.copy_dtod(dst, src, nbytes)  # noqa: E731
    ms_d = dev.time_ms(d2d_launch, reps)
    pairs = dev.alternate_ms(launch, d2d_launch, COPY_PAIRS)
    ratios = [d / c for c, d in pairs]
    cp = [2 * nbytes / m / 1e6 for m in ms_c]
    d2d = [2 * nbytes / m / 1e6 for m in ms_d]
    ctx.figure("mem.bw.dram.copy_gbps", float(np.median(cp)), "GB/s", "measured",
               f"our fastest fp32.v4 copy ({desc}), bytes read + written, median of {reps}; "
               f"chosen among {len(timed)} kernel/launch candidates", (min(cp), max(cp)))
    ctx.figure("mem.bw.dram.d2d_copy_gbps", float(np.median(d2d)), "GB/s", "measured",
               f"driver cuMemcpyDtoD of the same buffers, bytes read + written, median of {reps}", (min(d2d), max(d2d)))
    ctx.figure("mem.bw.dram.copy_vs_d2d", round(float(np.median(ratios)), 4), "ratio", "derived",
               f"our copy / cuMemcpyDtoD timed in alternation, {COPY_PAIRS} pairs, median of the per-pair ratios",
               (min(ratios), max(ratios)), note="target >= 1")
    ctx.figure("mem.bw.dram.copy_vs_d2d_sequential", round(float(np.median(cp) / np.median(d2d)), 4), "ratio",
               "derived", "mem.bw.dram.copy_gbps / mem.bw.dram.d2d_copy_gbps, each timed on its own")
    return [Point(x0, float(np.median(cp)), min(cp), max(cp), reps, {"label": "copy (ours)"}),
            Point(x0 + 1, float(np.median(d2d)), min(d2d), max(d2d), reps, {"label": "cuMemcpyDtoD"})]


# ---------------------------------------------------------------------------------------
# 5. Shared-memory bank conflicts
# ---------------------------------------------------------------------------------------
BANK = KernelSpec("bank.cu", {"bank_u32": [r"LDS\b", r"CS2R"], "bank_u64": [r"LDS\.64", r"CS2R"]})


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
    suite=SUITE, name="bank_conflicts", title="ld.shared latency under N-way bank conflicts",
    axes={"width": "u32, u64", "stride": "1, 2, 4, 8, 16, 32 elements"}, kernels=[BANK],
    paper="001 Table 10; 002 Fig. 3.9",
)
def bank_conflicts(ctx: BenchContext) -> None:
    dev, steps = ctx.device, 1024
    out = dev.alloc(34 * 8)
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
            pts.append(Point(ways, float(np.median(vals)), min(vals), max(vals), 5, {"stride": stride}))
        name = f"u{width * 8}"
        seen = set()
        for pt in pts:
            if pt.x in seen:
                continue  # u64 strides 16 and 32 are both 32-way
            seen.add(pt.x)
            ctx.figure(f"mem.bank.{name}.latency_{int(pt.x)}way_cycles", pt.y, "cycles", "measured",
                       f"one warp, dependent ld.shared.{name} with lane stride {pt.extra['stride']}; ways counted as "
                       "Sun Table 10 does (most 4-byte-bank rows one bank serves: conflict-free u64 = 2-way)",
                       (pt.y_min, pt.y_max))
        ctx.series(name, "conflict ways", "", "latency", "cycles", pts, plot="line", figure="bank_conflicts")
        if width == 4:
            ctx.figure("mem.bank.latency_32way_cycles", pts[-1].y, "cycles", "measured", "u32, all 32 lanes in one bank")
    dev.free(out)
    clock.report(ctx, "the bank-conflict chases")


# ---------------------------------------------------------------------------------------
# 6. Geometry: L1 size per carve-out, line and sector sizes, TLBs
# ---------------------------------------------------------------------------------------
@benchmark(
    suite=SUITE, name="l1_carveout", title="L1 size as a function of the shared-memory carve-out",
    axes={"shared_kib": "0 .. max shared per block (the carve-out launched)", "footprint": "4 KiB upward until L1 is left, then 2 KiB steps"},
    kernels=[PCHASE["ca"]], paper="002 Table 3.3",
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
            ctx.series(f"{k} KiB shared", "footprint", "bytes", "latency", "cycles", pts, plot="logx",
                       figure="l1_vs_carveout", shared_bytes=smem)
            ctx.figure(f"mem.carveout.smem_{k}kb.l1_bytes", cap if cap else "n/a", "bytes", "derived",
                       f".ca chase (128 B stride) with {smem} B of dynamic shared memory launched; largest footprint "
                       "within 10% of the L1 hit latency", check="ok" if cap else "failed")
            ctx.progress(i + 1, len(kib), f"{k} KiB shared")
    finally:
        ch.close()
        fn.set_carveout(0)
    clock = ClockMeter()
    for c, ns in ch.cycles_ns:
        clock.add(c, ns)
    clock.report(ctx, "the timed chases")


@benchmark(
    suite=SUITE, name="cache_lines", title="Sector and line sizes of L1 and L2",
    axes={"level": "L1 (.ca), L2 (.cg)", "stride": "8 B fine chase; 32..512 B tag-capacity chase"},
    kernels=[PCHASE["ca"], PCHASE["cg"]], timeout_s=400, paper="002 §3.1 (line sizes); Mei & Chu",
)
def cache_lines(ctx: BenchContext) -> None:
    dev, l2 = ctx.device, ctx.props["l2_bytes"]
    n = 2048
    lat = dev.alloc(n * 4)
    # Sectors: a sequential 8-byte-stride chase over data cached one level down misses once per fetch.
    for op, level in (("ca", "l1"), ("cg", "l2")):
        ch = Chaser(ctx, op, max(n * 8, 3 * l2))
        try:
            ch.build_sequential(n, 8)
            if op == "cg":
                flush_l2(ctx, 2 * l2)  # .cg: fetched from DRAM; .ca: from L2
            v = ch.fine(0, n, lat)
        finally:
            ch.close()
        ctx.series(f"{level} cold 8-byte steps", "byte offset", "bytes", "latency", "cycles",
                   [Point(8 * i, float(x)) for i, x in enumerate(v[:512])], plot="line", figure=f"{level}_sector")
        ctx.figure(f"mem.sector.{level}_bytes", geometry.miss_period_bytes(v, 8), "bytes", "derived",
                   "most common distance between slow accesses of a cold sequential 8-byte chase")
    dev.free(lat)
    # Lines: elements `s` apart; how many fit before the latency jumps (tag-limited capacity).
    strides = [32, 64, 128, 256, 512]
    clock = ClockMeter()
    for op, level, cap in (("ca", "l1", ctx.props["smem_per_sm"] + (32 << 10)), ("cg", "l2", l2)):
        counts: list[float] = []
        limit = 8 * cap // 32  # enough elements to overflow even with 32-byte lines
        ch = Chaser(ctx, op, limit * 32 + 4096) if level == "l1" else Chaser(ctx, op, 4 * cap + 4096)
        try:
            for s in strides:
                top = min(limit, (ch.buf.nbytes - 4096) // s)

                def measure(c: int, s: int = s) -> Point:
                    ch.build_random(c * s, s)
                    return ch.point(c, c, 2048, 3)

                pts, knee = capacity_search(measure, max(cap // (16 * s), 64), top, factor=1.5, fine=6)
                ctx.series(f"{level} stride {s}", "elements", "", "latency", "cycles", pts, plot="logx",
                           figure=f"{level}_tag_capacity", stride=s)
                counts.append(float(knee) if knee else float("nan"))
                ctx.progress(len(counts) + (5 if level == "l2" else 0), 10, f"{level} stride {s}")
        finally:
            ch.close()
            for c, ns in ch.cycles_ns:
                clock.add(c, ns)
        ok = all(math.isfinite(c) for c in counts)
        ctx.figure(f"mem.line.{level}_bytes", geometry.line_size_from_tag_capacity(strides, counts) if ok else "n/a",
                   "bytes", "derived", "smallest stride from which the element capacity stops falling",
                   check="ok" if ok else "failed", note=f"element capacities per stride {dict(zip(strides, counts))}")
    clock.report(ctx, "the timed chases")
