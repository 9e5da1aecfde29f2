"""The memory suite, throughput: L1, shared memory, L2 and DRAM per SM and per GPU (Luo Table V;
Jia Tables 3.2, 3.4), and our DRAM copy against the driver's device-to-device copy (dram_copy.py).

Every kernel sums integer-valued data and the sums must equal the host's exactly; footprints follow
the device's L2 size, SM count and free memory.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from ...analysis import records
from ...device.cuda import Arg
from ..context import BenchContext
from ..registry import KernelSpec, Param, benchmark, fits_free_memory, parse_size
from ..shared import PRE_AMPERE, ClockMeter, Required, by_family, family_has, fastest_launch_shape
from .dram_copy import COPY_NEEDS, COPY_VARIANTS, _copy_vs_d2d

_check_footprint = fits_free_memory(0.9)


# ---------------------------------------------------------------------------------------
# Throughput (Table V)
# ---------------------------------------------------------------------------------------
VEC = {"fp32": 1, "fp64": 2, "fp32v4": 4}
LANES_BYTES = {"fp32": (1, 4), "fp64": (1, 8), "fp32v4": (4, 4)}  # scalars per access, bytes per scalar
_BW_SASS = {
    "fp32": (r"LDG\.E\.STRONG\.SM", r"LDS\b", r"LDG\.E\.STRONG\.GPU"),
    "fp64": (r"LDG\.E\.64\.STRONG\.SM", r"LDS\.64", r"LDG\.E\.64\.STRONG\.GPU"),
    "fp32v4": (r"LDG\.E\.128\.STRONG\.SM", r"LDS\.128", r"LDG\.E\.128\.STRONG\.GPU"),
}
# Volta and Turing: .ca loads print their scope as .CTA, shared vector loads as LDS.U.64 / LDS.U.128
_BW_SASS_PRE_AMPERE = {
    "fp32": (r"LDG\.E\.STRONG\.CTA", r"LDS\b"),
    "fp64": (r"LDG\.E\.64\.STRONG\.CTA", r"LDS\.U\.64"),
    "fp32v4": (r"LDG\.E\.128\.STRONG\.CTA", r"LDS\.U\.128"),
}


def _bw_required(w: str, family: str) -> Required:
    l1, smem, l2 = _BW_SASS[w]
    if family in PRE_AMPERE:
        l1, smem = _BW_SASS_PRE_AMPERE[w]
    req = {
        "l1_read": [l1, r"CS2R"],
        "smem_read": [smem, r"CS2R"],
        "l2_read": [l2],
        "dram_read": [r"LDG\.E"],
        "dram_copy": [r"LDG\.E", r"STG\.E"],
        # sm_80 ptxas narrows the .L2::256B prefetch to LTC128B (sm_86 on keeps 256B)
        "dram_copy_stream": [
            r"LDG\.E\.NA\.LTC(128|256)B" if family == "ampere" else r"LDG\.E\.NA\.LTC256B",
            r"STG\.E\.EF",
        ],
        "dram_copy_chunked": [r"LDG\.E", r"STG\.E"],
        "dram_copy_flat": [r"LDG\.E", r"STG\.E"],
        # the evict_last policy is a uniform-register memory descriptor whose
        # upper word reads 0x140 (0x120 evict_first, 0x160 evict_normal); Ampere and Ada ptxas move the
        # whole word, 0x140 with the fraction bits 0xf: 0x14f00000
        "dram_copy_flat_keep": [
            r"UMOV UR\d+, 0x14f00000\b" if family in ("ampere", "ada") else r"UMOV UR\d+, 0x140\b",
            r"LDG\.E(\.64|\.128)? R\d+, desc",
            r"STG\.E",
        ],
        "dram_copy_bulk": [r"UBLKCP\.S\.G", r"UBLKCP\.G\.S", r"SYNCS\.PHASECHK"],
    }
    # a copy kernel the family lacks is not in its build (memory_bandwidth.cu guards it)
    return {fn: pats for fn, pats in req.items() if fn not in COPY_NEEDS or family_has(COPY_NEEDS[fn][0], family)}


BW = {
    w: KernelSpec(
        "memory_bandwidth.cu",
        _bw_required(w, "hopper"),
        {"VEC": VEC[w]},
        label=f"memory_bandwidth.cu[{w}]",
        required_by_family=by_family(lambda fam, w=w: _bw_required(w, fam)),
    )
    for w in _BW_SASS
}
UNROLL = 8
ROWS = 2 * UNROLL - 1  # rows per block in l1_read / smem_read (see memory_bandwidth.cu)
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


REC = records.REC  # words per block of the timing record (analysis/records.py)


def per_sm_rate(rec: np.ndarray, bytes_per_block: float) -> np.ndarray:
    """Bytes per SM-cycle of each SM: its blocks' bytes over the span of their clock intervals."""
    r = records.parse(rec)
    t0, t1, sm = r.t0[:, 0], r.t1[:, 0], r.sm[:, 0]
    out = []
    for s in np.unique(sm):
        on = sm == s
        out.append(on.sum() * bytes_per_block / (t1[on].max() - t0[on].min()))
    return np.array(out)


def union_window(rec: np.ndarray) -> tuple[float, float]:
    """(ns, SM clock in GHz) of one launch: %globaltimer from the earliest block start to the
    latest block end (the time every byte was moved in), and the clock the blocks ran at
    (their clock64 cycles over their %globaltimer ns, median over blocks)."""
    r = records.parse(rec)
    ns = float(r.g1.max() - r.g0.min())
    dur = (r.g1 - r.g0)[:, 0]
    ok = dur > 0
    ghz = float(np.median((r.t1 - r.t0)[ok, 0] / dur[ok])) if ok.any() else float("nan")
    return ns, ghz


def _fill(ctx: BenchContext, spec: KernelSpec, buf: Any, scalars: int) -> None:
    ctx.kernel(spec, "fill")(ctx.props["sm_count"] * 8, 256, [Arg.ptr(buf), Arg.u64(scalars)])
    ctx.device.sync("fill")


def _sums(ctx: BenchContext, buf: Any, w: str, count: int) -> np.ndarray:
    return ctx.device.download(buf, np.float64 if w == "fp64" else np.float32, count).astype(np.float64)


@benchmark(
    name="bandwidth",
    title="Throughput of L1, shared memory, L2 and DRAM",
    axes={"level": "l1, shared, l2, dram (+ copy vs device-to-device)", "access": "fp32, fp64, fp32.v4"},
    kernels=list(BW.values()) + list(COPY_VARIANTS.values()),
    timeout_s=400,
    paper="000 Table V; 002 Tables 3.2, 3.4",
    params={"dram_bytes": Param(None, "DRAM buffer size (default max(8 x L2, 2 GiB))", parse_size, _check_footprint)},
)
def bandwidth(ctx: BenchContext) -> None:
    p = ctx.props
    reps = 5 if ctx.quick else 11
    dram_peak = 2 * p["mem_clock_khz"] * 1e3 * p["mem_bus_bits"] / 8 / 1e9  # GB/s, double data rate
    best: dict[str, tuple[float, str]] = {}
    clock = ClockMeter()
    for i, (w, spec) in enumerate(BW.items()):
        with ctx.scratch():  # one width's buffers: the per-block regions are freed before the L2 ones
            _l1_shared(ctx, w, spec, reps, best, 3 * i)
        with ctx.scratch():
            _l2(ctx, w, spec, reps, best, clock)
        ctx.progress(3 * i + 3, 13, f"l2 {w}")

    _dram(ctx, reps, dram_peak, best)
    for level, unit in (
        ("l1", "bytes_per_clk_sm"),
        ("shared", "bytes_per_clk_sm"),
        ("l2", "bytes_per_clk"),
        ("dram", "gbps"),
        ("l2_gbps", ""),
    ):
        if level in best:
            v, w = best[level]
            key = "mem.bw.l2_gbps" if level == "l2_gbps" else f"mem.bw.{level}_{unit}"
            ctx.figure(
                key,
                v,
                {"gbps": "GB/s", "bytes_per_clk": "bytes/clk", "": "GB/s"}.get(unit, "bytes/clk/SM"),
                "derived",
                f"best of fp32 / fp64 / fp32.v4 ({w})"
                + ("; per clock of the SM clock measured in the same kernels" if unit.startswith("bytes") else ""),
            )
    clock.report(ctx, "the L2 bandwidth launches (union windows)")


def _l1_shared(
    ctx: BenchContext, w: str, spec: KernelSpec, reps: int, best: dict[str, tuple[float, str]], step: int
) -> None:
    """L1 and shared-memory throughput per SM with `w` accesses: every block re-reads its own region."""
    dev, sms = ctx.device, ctx.props["sm_count"]
    peak_smem = 32 * 4  # 32 banks x 4 bytes per clock: the architectural peak of L1/shared per SM
    lanes, sb = LANES_BYTES[w]
    acc_bytes, block = lanes * sb, BLOCK[w]
    row_scalars = block * lanes
    region = ROWS * block * acc_bytes  # per block: fits L1 and shared memory
    data = ctx.alloc(sms * region)
    sums, rec = ctx.alloc(sms * block * 8), ctx.alloc(sms * REC * 8)
    _fill(ctx, spec, data, sms * region // sb)
    rowsums = hash_values(0, sms * region // sb).reshape(sms, ROWS, row_scalars).sum(axis=2)
    for level, fname in (("l1", "l1_read"), ("shared", "smem_read")):
        if level == "shared" and region > ctx.props["smem_per_block_optin"]:
            # the block's rows are a compile-time shape: a GPU with less shared memory per block skips this width
            ctx.skip_variant(
                f"{spec.variant}: smem_read",
                f"needs {region} B of shared memory per block (this GPU: {ctx.props['smem_per_block_optin']} B)",
            )
            continue
        fn = ctx.kernel(spec, fname)
        if level == "l1":
            fn.set_carveout(0)  # as much L1 as the SM has
        iters = 512 if ctx.quick else 2048
        want = rowsums @ rotation_reads(iters, warm=level == "l1")
        smem = region if level == "shared" else 0
        rates, ok = [], True
        for _ in range(reps):
            dev.memset32(sums, 0xFFFFFFFF)  # NaN poison: an unwritten sum cannot pass
            fn(
                sms,
                block,
                [Arg.ptr(data), Arg.u32(iters), Arg.u32(UNROLL - 1), Arg.ptr(sums), Arg.ptr(rec)],
                smem=smem,
            )
            dev.sync(fname)
            got = _sums(ctx, sums, w, sms * block).reshape(sms, block).sum(axis=1)
            ok &= ctx.soft_check(
                np.array_equal(got, want.astype(np.float64)),
                f"{level} {w}: sums differ from the data read ({_first_diff(got, want)})",
            )
            rates.append(
                np.median(per_sm_rate(dev.download(rec, np.uint64, sms * REC), iters * UNROLL * block * acc_bytes))
            )
        _bw_figure(ctx, level, w, rates, "bytes/clk/SM", peak_smem, "32 banks x 4 B per clock", ok)
        if ok:
            best[level] = max(best.get(level, (0.0, "")), (float(np.median(rates)), w))
        step += 1
        ctx.progress(step, 13, f"{level} {w}")


def _l2(
    ctx: BenchContext, w: str, spec: KernelSpec, reps: int, best: dict[str, tuple[float, str]], clock: ClockMeter
) -> None:
    """L2 throughput with `w` accesses: a quarter of the L2, all SMs, .cg."""
    dev, sms, l2 = ctx.device, ctx.props["sm_count"], ctx.props["l2_bytes"]
    lanes, sb = LANES_BYTES[w]
    acc_bytes, block = lanes * sb, 1024
    n_acc = (l2 // 4) // acc_bytes // (UNROLL * block) * (UNROLL * block)
    data = ctx.alloc(n_acc * acc_bytes)
    sums, rec = ctx.alloc(sms * block * 8), ctx.alloc(sms * REC * 8)
    _fill(ctx, spec, data, n_acc * lanes)
    total = hash_sum(n_acc * lanes)
    fn = ctx.kernel(spec, "l2_read")
    iters = 2
    fn(sms, block, [Arg.ptr(data), Arg.u64(n_acc), Arg.u32(1), Arg.ptr(sums), Arg.ptr(rec)])  # warm L2
    rates, gbps, ev_gbps, sum_rates, ok = [], [], [], [], True
    total_bytes = sms * n_acc * acc_bytes * iters
    for _ in range(reps):
        dev.memset32(sums, 0xFFFFFFFF)
        ms = dev.time_ms(
            lambda: fn(sms, block, [Arg.ptr(data), Arg.u64(n_acc), Arg.u32(iters), Arg.ptr(sums), Arg.ptr(rec)])
        )[0]
        got = _sums(ctx, sums, w, sms * block).reshape(sms, block).sum(axis=1)
        want = np.full(sms, total * iters, np.float64)
        ok &= ctx.soft_check(
            np.array_equal(got, want), f"l2 {w}: sums differ from the data read ({_first_diff(got, want)})"
        )
        r = dev.download(rec, np.uint64, sms * REC)
        ns, ghz = union_window(r)
        clock.add(int(ns * ghz), int(ns))
        gbps.append(total_bytes / ns)
        rates.append(total_bytes / (ns * ghz))
        sum_rates.append(per_sm_rate(r, n_acc * acc_bytes * iters).sum())
        ev_gbps.append(total_bytes / ms / 1e6)
    union = (
        "all SMs streaming L2/4 with .cg loads; bytes over the union window of the launch (%globaltimer from "
        "the earliest block start to the latest block end)"
    )
    _bw_figure(
        ctx,
        "l2",
        w,
        rates,
        "bytes/clk",
        None,
        "",
        ok,
        method=f"{union}, per clock of the SM clock measured in the same blocks (clock64 / %globaltimer)",
    )
    ctx.median_figure(f"mem.bw.l2.{w}_gbps", gbps, "GB/s", "measured", union, check="ok" if ok else "failed")
    ctx.median_figure(
        f"mem.bw.l2.{w}_event_gbps",
        ev_gbps,
        "GB/s",
        "measured",
        "the same launches timed by CUDA events (launch overhead included)",
        check="ok" if ok else "failed",
    )
    ctx.figure(
        f"mem.bw.l2.{w}_sum_of_sm_rates_bytes_per_clk",
        float(np.median(sum_rates)),
        "bytes/clk",
        "derived",
        "the old method, kept for comparison: per-SM bytes per own-clock span, summed over SMs (windows "
        "need not overlap, so this overstates)",
        check="ok" if ok else "failed",
    )
    if ok:
        best["l2_gbps"] = max(best.get("l2_gbps", (0.0, "")), (float(np.median(gbps)), w))
    if ok:
        best["l2"] = max(best.get("l2", (0.0, "")), (float(np.median(rates)), w))


def _first_diff(got: np.ndarray, want: np.ndarray) -> str:
    bad = np.flatnonzero(got != want)
    return (
        f"{len(bad)} blocks differ, block {bad[0]}: got {got[bad[0]]:.0f}, want {want[bad[0]]:.0f}"
        if len(bad)
        else "equal"
    )


def _bw_figure(
    ctx: BenchContext,
    level: str,
    w: str,
    rates: list[float],
    unit: str,
    peak: float | None,
    peak_what: str,
    ok: bool = True,
    method: str = "clock64 per block, grouped by %smid; median over SMs, median over launches",
) -> None:
    suffix = {"bytes/clk/SM": "bytes_per_clk_sm", "bytes/clk": "bytes_per_clk"}[unit]
    med = float(np.median(rates))
    note = f"{100 * med / peak:.1f}% of {peak:g} {unit} ({peak_what})" if peak else ""
    ctx.median_figure(
        f"mem.bw.{level}.{w}_{suffix}", rates, unit, "measured", method, check="ok" if ok else "failed", note=note
    )
    if peak and ok:
        ctx.figure(
            f"mem.bw.{level}.{w}_pct_peak",
            round(100 * med / peak, 2),
            "%",
            "derived",
            f"of {peak:g} {unit} ({peak_what})",
        )


def _dram(ctx: BenchContext, reps: int, peak_gbps: float, best: dict[str, tuple[float, str]]) -> None:
    dev, p = ctx.device, ctx.props
    sms = p["sm_count"]
    nbytes = ctx.params["dram_bytes"] or max(8 * p["l2_bytes"], 2 << 30)
    nbytes = min(nbytes, int(dev.free_memory() * 0.4)) // (1 << 20) * (1 << 20)
    pts = []
    sums = ctx.alloc(sms * 2048 * 8)
    for w, spec in BW.items():
        lanes, sb = LANES_BYTES[w]
        n_acc = nbytes // (lanes * sb)
        with ctx.scratch():  # this width's source and destination
            src, dst = ctx.alloc(nbytes), ctx.alloc(nbytes)
            _fill(ctx, spec, src, n_acc * lanes)
            total = hash_sum(n_acc * lanes)
            read = ctx.kernel(spec, "dram_read")

            def do_read(grid: int, block: int, buf: Any = src) -> None:
                read(grid, block, [Arg.ptr(buf), Arg.u64(n_acc), Arg.ptr(sums)])

            per_sm, block = fastest_launch_shape(
                dev, sms, do_read, read.attribute("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK")
            )
            dev.memset32(sums, 0)
            ms = dev.time_ms(lambda: do_read(sms * per_sm, block), reps)
            got = _sums(ctx, sums, w, sms * per_sm * block).sum()
            ctx.check(got == total, f"dram read {w}: sum {got} != {total}")
            gb = [nbytes / m / 1e6 for m in ms]
            med = float(np.median(gb))
            ctx.median_figure(
                f"mem.bw.dram.{w}_gbps",
                gb,
                "GB/s",
                "measured",
                f"event-timed tiled read of {nbytes >> 20} MiB (>= 8 x L2), median of {reps}; "
                f"launch tuned: {per_sm} blocks/SM x {block} threads",
                note=f"{100 * med / peak_gbps:.1f}% of {peak_gbps:.0f} GB/s (2 x memory clock x bus width)",
            )
            best["dram"] = max(best.get("dram", (0.0, "")), (med, w))
            pts.append(ctx.point(len(pts), gb, label=f"read {w}"))
            if w == "fp32v4":
                pts += _copy_vs_d2d(
                    ctx,
                    spec,
                    src,
                    dst,
                    nbytes,
                    n_acc,
                    reps,
                    lambda: _check_copy(ctx, do_read, sms * per_sm, block, dst, sums, total),
                    len(pts),
                )
        ctx.progress(10 + len(pts), 13, f"dram {w}")
    ctx.figure(
        "mem.bw.dram_peak_gbps",
        round(peak_gbps, 1),
        "GB/s",
        "assumed",
        "2 x memory clock x bus width / 8 (device attributes)",
    )
    ctx.series("dram", "kernel", "", "bandwidth", "GB/s", pts, plot="bar", figure="dram_bandwidth")


def _check_copy(ctx: BenchContext, do_read: Any, grid: int, block: int, dst: Any, sums: Any, total: int) -> None:
    """The copy comparison's check: the read kernel's sum over the destination must be the source's."""
    ctx.device.memset32(sums, 0)
    do_read(grid, block, dst)
    got = _sums(ctx, sums, "fp32v4", grid * block).sum()
    ctx.check(got == total, "dram copy: the destination does not hold the source")
