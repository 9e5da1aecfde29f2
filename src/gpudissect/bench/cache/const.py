"""The cache suite, constant memory (Jia §3.4, Table 3.1, Figs. 3.6-3.7).

Chases through a 64 KiB `__constant__` array with indexed LDC (SASS-checked), one lane at a time:
latency over footprint (L1 and L1.5 levels), over stride (line sizes), on a cold SM (L2), with
1..32 distinct addresses per warp (broadcast vs serialisation), after an instruction-cache thrash
between two scans (does the L1.5 constant cache share storage with an instruction cache), and as FFMA
immediate operands. The probe is const_probe.py's, the immediate-operand path const_imm.py's.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

from ...analysis import staircase
from ...device.compiler import compile_spec
from ...device.cuda import Arg
from ...models import Point
from ...sass.disasm import disassemble_cached, find_tool
from ..context import BenchContext
from ..registry import benchmark
from .const_imm import IMM_SPECS, immediate
from .const_probe import (
    CONST,
    WORDS,
    ConstProbe,
    chain_end,
    const_buffer,
    const_grid,
    distinct_starts,
    seq_chain,
    thrash_spec,
)
from .sources import INSTR_BYTES, ffma_total

LAUNCHES, STEPS = 3, 2048  # launches per point, timed loads per chase
METHOD0 = "one lane, sequential chain through a 64 KiB __constant__ array with indexed LDC (SASS: LDC R, c[0x3][R])"


def thrash_sizes(quick: bool) -> list[int]:
    """FFMA counts of the thrash code between the two scans (after the 2-FFMA baseline)."""
    return [s // INSTR_BYTES for s in const_grid(4096, 512 * 1024, 2 if quick else 4, 128)]


def thrash_prebuilt(target: object, mode: str) -> list:
    """Every thrash build of the mode's grid, known before the benchmark starts: the runner compiles them ahead
    (up to 512 KiB of straight-line FFMA each; built one after another here they took 27 s on a fresh H100)."""
    return [thrash_spec(nt) for nt in thrash_sizes(mode == "quick")]


@benchmark(
    name="const_cache",
    title="Constant caches: levels, lines, broadcast, sharing with the instruction cache",
    axes={
        "footprint": "256 B .. 64 KiB (stride 64 B)",
        "stride": "4 .. 1024 B",
        "distinct addresses": "1..32 per warp",
        "thrash": "0 .. 512 KiB of FFMA code between two scans",
    },
    # the generated builds too: the largest thrash of the quick grid stands for the thrash sizes; every
    # immediate-operand plan (checked before its patch)
    kernels=[CONST, thrash_spec(thrash_sizes(True)[-1]), *IMM_SPECS.values()],
    prebuild=thrash_prebuilt,
    timeout_s=300,
    paper="002 §3.4 Table 3.1, Figs. 3.6-3.7",
)
def const(ctx: BenchContext) -> None:
    p = ConstProbe(ctx)
    l1_cap, thr = _levels(ctx, p)
    ctx.progress(25, 100, "lines")
    line, cold_d = _lines(ctx, p, l1_cap, thr)
    ctx.progress(50, 100, "broadcast")
    _broadcast(ctx, p, l1_cap, line)
    ctx.progress(75, 100, "instruction-cache thrash")
    _thrash(ctx, p, cold_d)
    ctx.progress(90, 100, "immediate operands")
    immediate(ctx, p)
    if p.clock:
        ctx.sm_clock(
            float(np.median(p.clock)),
            f"clock64 over %globaltimer of each timed const_chase, median of {len(p.clock)}",
            (min(p.clock), max(p.clock)),
        )


def _levels(ctx: BenchContext, p: ConstProbe) -> tuple[int | None, float]:
    """Latency over footprint: the L1 and L1.5 levels and capacities. Returns the L1 capacity (None: no
    step) and the step threshold."""
    data: dict[int, list[float]] = {}
    for fp in const_grid(256, WORDS * 4, 3 if ctx.quick else 6, 64):
        n = p.lay(fp, 64)
        data[fp] = [p.chase(n, STEPS) for _ in range(LAUNCHES)]
    xs = sorted(data)
    ys = [float(np.median(data[x])) for x in xs]
    # 6 sigmas of the launch-to-launch spread or of the size-to-size one, whichever is larger: on an H100 one
    # run's sizes alternated 34.04 / 34.15 cycles on the first level while its launches agreed to 0.017, and
    # the launch spread alone (0.10) then split the level at 2 KiB's 34.15
    thr = max(
        staircase.threshold([data[x] for x in xs], k=6.0, floor=2.0 / STEPS * 4),
        6.0 * staircase.neighbour_sigma(ys),
    )
    st = staircase.rising_steps(staircase.find_steps([float(x) for x in xs], ys, thr))
    ctx.series(
        "latency_vs_footprint",
        "footprint",
        "bytes",
        "latency",
        "cycles",
        [ctx.point(x, data[x]) for x in xs],
        plot="logx",
        figure="const_latency",
        stride=64,
        steps=STEPS,
    )
    lv = staircase.levels([float(x) for x in xs], ys, st)
    method = (
        f"{METHOD0}, full warm pass then {STEPS} timed loads, median of {LAUNCHES} launches; "
        f"levels split where the curve moves by > {thr:.2f} cycles (6 sigmas of the launch-to-launch or the "
        "size-to-size spread, the larger)"
    )
    l1_cap = int(st[0].x_last_low) if st else None
    if lv:
        ctx.figure("cache.const.l1_hit_cycles", round(lv[0], 2), "cycles", "derived", f"first level; {method}")
    if l1_cap:
        ctx.figure(
            "cache.const.l1_bytes",
            l1_cap,
            "bytes",
            "derived",
            f"largest footprint on the first level; {method}",
            (st[0].x_last_low, st[0].x_first_high),
        )
    far = [y for x, y in zip(xs, ys) if l1_cap and x >= 8 * l1_cap]
    if far:  # L1 need not be LRU (Jia: it is not), so take L1.5 well past the L1 capacity, not the next level
        ctx.figure(
            "cache.const.l1_5_hit_cycles",
            round(float(np.median(far)), 2),
            "cycles",
            "derived",
            f"median over footprints >= 8 x the L1 capacity; {method}",
            (min(far), max(far)),
        )
    if len(st) >= 2:
        ctx.figure(
            "cache.const.l1_5_bytes",
            int(st[1].x_last_low),
            "bytes",
            "derived",
            f"largest footprint on the second level; {method}",
        )
    else:
        ctx.figure(
            "cache.const.l1_5_bytes",
            f">= {WORDS * 4}",
            "bytes",
            "derived",
            f"no step after the first up to 64 KiB, the most one constant bank (one kernel) can address; {method}",
            note="a lower bound, as in Jia Table 3.1 (>= 64 KiB on V100)",
        )
    return l1_cap, thr


def _lines(ctx: BenchContext, p: ConstProbe, l1_cap: int | None, thr: float) -> tuple[float | None, dict[int, float]]:
    """Line sizes: latency over stride past L1 (warm, L1.5) and on a cold SM (L2). Returns the L1 line
    and the cold-SM latency of each stride."""
    fp = 16 * 1024 if not l1_cap else min(max(8 * l1_cap, 8192), 32 * 1024)
    strides = [4, 8, 16, 32, 64, 128, 256, 512]
    warm_d: dict[int, list[float]] = {}
    for s in strides:
        n = p.lay(fp, s)
        warm_d[s] = [p.chase(n, min(n, STEPS)) for _ in range(LAUNCHES)]
    sx = [float(s) for s in strides]
    sy = [float(np.median(warm_d[s])) for s in strides]
    line = _line_curve(
        ctx,
        "latency_vs_stride_warm",
        [ctx.point(s, warm_d[int(s)]) for s in sx],
        fp,
        sy,
        thr,
        "cache.const.l1_line_bytes",
        f"footprint {fp} B (past L1, within L1.5), strides doubling 4..512 B, warm: while the stride is below the line "
        "the share of L1 misses doubles with it, so does the latency's rise; the line is the stride after which the "
        f"rise stops doubling; {METHOD0}",
    )
    # cold SM: one pass, no warm-up, after one SM read everything (so L2 holds it)
    cold_fp = 32 * 1024
    cold_d: dict[int, float] = {}
    for s in strides + [1024]:
        n = p.lay(cold_fp, s)
        p.warm_l2()
        cold_d[s] = p.cold([0] * 32, min(n, 512))
    cx = [float(s) for s in sorted(cold_d)]
    cy = [cold_d[int(s)] for s in cx]
    _line_curve(
        ctx,
        "latency_vs_stride_cold",
        [Point(s, y) for s, y in zip(cx, cy)],
        cold_fp,
        cy,
        thr,
        "cache.const.l1_5_line_bytes",
        f"one cold pass ({cold_fp} B, no warm-up) on an SM that never read this module's constants, after another SM "
        f"read them all; strides doubling 4..1024 B: the stride after which the latency stops rising (every load then "
        f"misses L1.5 and goes to L2)",
        note="one pass per stride (a cold SM cannot be re-used): no repetitions",
    )
    l2_lat = cold_d[1024]
    ctx.figure(
        "cache.const.l2_hit_cycles",
        round(l2_lat, 2),
        "cycles",
        "measured",
        "cold pass with a 1 KiB stride on a fresh SM after another SM read the array (L2 hit, missing L1 and L1.5)",
    )
    return line, cold_d


def _line_curve(
    ctx: BenchContext,
    name: str,
    pts: list[Point],
    footprint: int,
    ys: list[float],
    thr: float,
    key: str,
    method: str,
    note: str = "",
) -> float | None:
    """A latency-over-doubling-stride curve (points at the strides) and the line size read off it: the
    stride after which the latency's rise stops doubling (staircase.doubling_knee)."""
    ctx.series(name, "stride", "bytes", "latency", "cycles", pts, plot="logx", figure="const_line", footprint=footprint)
    line = staircase.doubling_knee([pt.x for pt in pts], ys, thr)
    ctx.figure(key, int(line) if line else "n/a", "bytes", "derived", method, note=note)
    return line


def _broadcast(ctx: BenchContext, p: ConstProbe, l1_cap: int | None, line: float | None) -> None:
    ks = [1, 2, 4, 8, 16, 32] if ctx.quick else list(range(1, 33))
    l1_fp = max(256, (l1_cap or 2048) // 2)
    l1_line = int(line or 64)
    setups = {"l1": (l1_fp, 4), "l1_5": (32 * 1024, l1_line)}
    results: dict[str, list[Point]] = {}
    for level, (fp, stride) in setups.items():
        n = p.lay(fp, stride)
        pts = []
        for k in ks:
            vals = [p.warp(distinct_starts(k, n), n, 256) for _ in range(3)]
            pts.append(ctx.point(k, [x for x in vals if x is not None]))
        results[level] = pts
    # L2: cold SMs, stride 1 KiB so that every load is a new L1.5 line
    n = p.lay(64 * 1024, 1024)
    p.warm_l2()
    pts = []
    for k in [1, 2, 4, 8, 16, 32]:
        steps = max(1, n // k - 1)
        pts.append(ctx.point(k, [p.cold(distinct_starts(k, n), steps)]))
    results["l2"] = pts
    for level, pts in results.items():
        ctx.series(
            level,
            "distinct addresses per warp",
            "",
            "latency per warp load",
            "cycles",
            pts,
            plot="line",
            figure="const_broadcast",
        )
    m = "a warp's lanes in k groups, each group on its own position of the chain (k distinct addresses per load)"
    ctx.figure(
        "cache.const.divergent32_cycles",
        round(results["l1"][-1].y, 2),
        "cycles",
        "measured",
        f"L1 level ({l1_fp} B footprint, warm), 32 distinct addresses; {m}",
    )
    for level in ("l1_5", "l2"):
        ctx.figure(
            f"cache.const.{level}_divergent32_cycles",
            round(results[level][-1].y, 2),
            "cycles",
            "measured",
            f"{level.upper().replace('_', '.')} level, 32 distinct addresses; {m}",
        )
    for level, pts in results.items():
        one, many = pts[0].y, pts[-1].y
        ctx.figure(
            f"cache.const.{level}_serialisation_per_address_cycles",
            round((many - one) / 31, 2),
            "cycles",
            "derived",
            f"(latency with 32 distinct addresses - with 1) / 31 at the {level} level",
        )


def _thrash(ctx: BenchContext, p: ConstProbe, cold_d: dict[int, float]) -> None:
    """Jia Fig. 3.6: scan 32 KiB of constants (L1.5), run n FFMAs, time the second scan."""
    fp, stride = 32 * 1024, 256
    l2_lat = cold_d[stride]  # all-miss reference: a cold pass at the same stride
    words, n = seq_chain(fp, stride)
    can_check = find_tool("cuobjdump") is not None
    pts = []
    sizes = [2] + thrash_sizes(ctx.quick)
    arch = ctx.device.arch

    def build(nt: int) -> int:  # compiled (a cache hit where the runner built it ahead) and its FFMAs counted
        return ffma_total(disassemble_cached(compile_spec(thrash_spec(nt), arch))["const_thrash"])

    counts: dict[int, int] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(len(sizes), (os.cpu_count() or 2) // 2))) as ex:
        # NVRTC and cuobjdump run outside the GIL; without cuobjdump, ctx.module compiles each as it is used
        futures = {ex.submit(build, nt): nt for nt in sizes} if can_check else {}
        for i, fut in enumerate(as_completed(futures), 1):
            counts[futures[fut]] = fut.result()
            ctx.progress(75 + 7 * i // len(futures), 100, f"instruction-cache thrash: built {i}/{len(futures)}")
    with ctx.scratch():
        out = ctx.alloc(16)
        for nt in sizes:
            spec = thrash_spec(nt)
            if can_check:  # ptxas merges identical chains: the code must hold every FFMA asked for
                got = counts[nt]
                ctx.check(got == nt, f"const_thrash holds {got} FFMA, expected {nt}")
            p.dev.upload(words, const_buffer(ctx.module(spec)))
            fn = ctx.kernel(spec, "const_thrash")
            vals = []
            for _ in range(3):
                fn(1, 1, [Arg.u32(n), Arg.f32(1.0), Arg.ptr(p.res), Arg.ptr(out)])
                p.dev.sync("const_thrash")
                cyc, end, _sm = (int(v) for v in p.dev.download(p.res, np.uint64, 3))
                a, b2 = p.dev.download(out, np.float32, 2)
                ctx.check(end == chain_end(n, stride, 0, n), f"const_thrash scan ended at word {end}")
                ctx.check(
                    a == nt / 2 and b2 == 1 + nt / 2,
                    f"const_thrash FFMA chains hold {a}, {b2}, expected {nt / 2}, {1 + nt / 2}",
                )
                vals.append(cyc / n)
            pts.append(ctx.point(nt * INSTR_BYTES, vals))
    ctx.series(
        "second_scan",
        "FFMA code between the scans",
        "bytes",
        "latency",
        "cycles",
        pts,
        plot="logx",
        figure="const_icache_thrash",
        footprint=fp,
        stride=stride,
    )
    base = pts[0].y
    top = max(l2_lat, base + 1e-9)
    miss = [(pt.x, (pt.y - base) / (top - base)) for pt in pts]
    over = [x for x, f in miss if f > 0.5]
    method = (
        f"scan {fp} B of constants (stride {stride} B: every load misses L1), run the FFMA code once, time a second "
        "scan; miss rate = (latency - latency with no code) / "
        f"(cold-SM latency at stride {stride} B, {l2_lat:.0f} cycles, - it)"
    )
    if over:
        text = (
            f"yes: instruction fetch evicts the L1.5 constant cache once the code between the scans exceeds about "
            f"{min(over) / 1024:.0f} KiB (second-scan miss rate > 50%)"
        )
    else:
        text = (
            f"not evicted by up to {pts[-1].x / 1024:.0f} KiB of code: "
            "no sign that L1.5 constant and an instruction-cache level share storage"
        )
    ctx.figure(
        "cache.const.l1_5_shared_with_icache",
        text,
        "",
        "derived",
        method,
        note="miss rates: " + ", ".join(f"{x / 1024:.0f} KiB: {f:.2f}" for x, f in miss),
    )
