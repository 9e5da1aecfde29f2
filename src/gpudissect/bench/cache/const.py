"""The cache suite, constant memory (Jia §3.4, Table 3.1, Figs. 3.6-3.7).

Chases through a 64 KiB `__constant__` array with indexed LDC (SASS-checked), one lane at a time:
latency over footprint (L1 and L1.5 levels), over stride (line sizes), on a cold SM (L2), with
1..32 distinct addresses per warp (broadcast vs serialisation), and after an instruction-cache
thrash between two scans (does the L1.5 constant cache share storage with an instruction cache).
"""

from __future__ import annotations

import numpy as np

from ...analysis import staircase
from ...device.cuda import Arg, Buffer, Module
from ...errors import GpuDissectError
from ...models import Point
from ...sass.cubin import Cubin
from ...sass.disasm import disassemble, find_tool
from ..context import BenchContext
from ..registry import KernelSpec, benchmark
from .sources import INSTR_BYTES, build, const_imm_source, const_source, ffma_total, imm_patch, imm_patch_problems

_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
_LDC_INDEXED = r"LDC R\d+, c\[0x3\]\[R\d+\]"
CONST = KernelSpec(
    "cache_const.cu",
    {
        "const_chase": [_LDC_INDEXED, _CLOCK],
        "const_chase_warp": [_LDC_INDEXED, _CLOCK],
        "const_thrash": [_LDC_INDEXED, _CLOCK, r"\bFFMA\b"],
    },
)
WORDS = 16384  # the kernel's __constant__ array: 64 KiB, the most one constant bank holds


def const_buffer(dev, module: Module, name: str = "cdata") -> Buffer:
    """Device address and size of a module's __constant__ symbol."""
    return module.global_buffer(name)


def seq_chain(footprint: int, stride: int) -> tuple[np.ndarray, int]:
    """Word array with a sequential cycle through footprint // stride elements `stride` bytes apart
    (element i -> i + 1, the last back to the first); returns it and the element count."""
    if stride % 4 or stride <= 0:
        raise GpuDissectError("constant chase stride must be a positive multiple of 4 bytes")
    n = footprint // stride
    if n < 2 or n * stride > WORDS * 4:
        raise GpuDissectError(f"constant chase of {n} x {stride} B does not fit 64 KiB")
    w = stride // 4
    words = np.zeros(WORDS, np.uint32)
    idx = np.arange(n, dtype=np.uint32) * w
    words[idx] = np.roll(idx, -1)
    return words, n


def chain_end(n: int, stride: int, start_elem: int, steps: int) -> int:
    return ((start_elem + steps) % n) * (stride // 4)


class ConstProbe:
    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.mod = ctx.module(CONST)
        self.cbuf = const_buffer(self.dev, self.mod)
        self.ctx.check(self.cbuf.nbytes == WORDS * 4, f"cdata is {self.cbuf.nbytes} bytes, expected {WORDS * 4}")
        self.res = self.dev.alloc(8 * 64)
        self.starts = self.dev.alloc(4 * 32)
        self.used_sms: set[int] = set()
        self.clock: list[float] = []
        self.layout: tuple[int, int] | None = None

    def close(self) -> None:
        self.dev.free(self.res)
        self.dev.free(self.starts)

    def lay(self, footprint: int, stride: int) -> int:
        words, n = seq_chain(footprint, stride)
        self.dev.upload(words, self.cbuf)
        self.layout = (n, stride)
        return n

    def chase(self, warm: int, steps: int) -> float:
        """Cycles per load of one lane over the laid chain (after `warm` untimed loads)."""
        n, stride = self.layout  # type: ignore[misc]
        self.ctx.kernel(CONST, "const_chase")(1, 1, [Arg.u32(0), Arg.u32(warm), Arg.u32(steps), Arg.ptr(self.res)])
        self.dev.sync("const_chase")
        end, cyc, sm, ns = (int(v) for v in self.dev.download(self.res, np.uint64, 4))
        want = chain_end(n, stride, 0, warm + steps)
        self.ctx.check(end == want, f"constant chase ended at word {end}, expected {want}")
        self.used_sms.add(sm)
        if ns >= 20_000:  # %globaltimer ticks coarsely: only long chases give the clock
            self.clock.append(cyc / ns * 1000)
        return cyc / steps

    def warp(self, starts_elem: list[int], warm: int, steps: int, target_sm: int | None = None) -> float | None:
        """Cycles per warp-wide load with lane l starting at element starts_elem[l]; None when no
        block ran on target_sm."""
        n, stride = self.layout  # type: ignore[misc]
        w = stride // 4
        self.dev.upload(np.array([s * w for s in starts_elem], np.uint32), self.starts)
        self.dev.memset32(self.res, 0, 2 * 64)
        fn = self.ctx.kernel(CONST, "const_chase_warp")
        args = [
            Arg.ptr(self.starts),
            Arg.u32(warm),
            Arg.u32(steps),
            Arg.u32(0xFFFFFFFF if target_sm is None else target_sm),
            Arg.ptr(self.res),
        ]
        if target_sm is None:
            fn(1, 32, args)
        else:  # one block per SM: each asks for more than half an SM's shared memory
            smem = min(self.ctx.props["smem_per_sm"] // 2 + 1024, self.ctx.props["smem_per_block_optin"])
            fn(self.ctx.props["sm_count"], 32, args, smem=smem)
        self.dev.sync("const_chase_warp")
        res = self.dev.download(self.res, np.uint64, 34)
        if target_sm is not None and int(res[32]) == 0:
            return None
        for lane, s in enumerate(starts_elem):
            want = chain_end(n, stride, s, warm + steps)
            self.ctx.check(int(res[lane]) == want, f"lane {lane} ended at word {int(res[lane])}, expected {want}")
        self.used_sms.add(int(res[33]))
        return float(res[32]) / steps

    def cold(self, starts_elem: list[int], steps: int) -> float:
        """A pass with no warm-up on an SM that never ran this module's constants: L2 (or DRAM)."""
        for sm in range(self.ctx.props["sm_count"] - 1, -1, -1):
            if sm in self.used_sms:
                continue
            self.used_sms.add(sm)
            v = self.warp(starts_elem, 0, steps, sm)
            if v is not None:
                return v
        raise GpuDissectError("no unused SM left for a cold constant pass")

    def warm_l2(self) -> None:
        """Read the whole array once on one SM, so that it is in L2 for the cold passes."""
        n, stride = self.layout  # type: ignore[misc]
        self.chase(0, n)


def _grid(lo: int, hi: int, per_octave: int, align: int) -> list[int]:
    n = int(np.ceil(np.log2(hi / lo) * per_octave)) + 1
    return sorted({int(round(v / align)) * align for v in np.geomspace(lo, hi, n)})


@benchmark(
    name="const_cache",
    title="Constant caches: levels, lines, broadcast, sharing with the instruction cache",
    axes={
        "footprint": "256 B .. 64 KiB (stride 64 B)",
        "stride": "4 .. 1024 B",
        "distinct addresses": "1..32 per warp",
        "thrash": "0 .. 512 KiB of FFMA code between two scans",
    },
    kernels=[CONST],
    timeout_s=300,
    paper="002 §3.4 Table 3.1, Figs. 3.6-3.7",
)
def const(ctx: BenchContext) -> None:
    p = ConstProbe(ctx)
    try:
        _const(ctx, p)
    finally:
        p.close()


def _const(ctx: BenchContext, p: ConstProbe) -> None:
    launches, steps = 3, 2048
    method0 = "one lane, sequential chain through a 64 KiB __constant__ array with indexed LDC (SASS: LDC R, c[0x3][R])"
    # 1. latency over footprint (stride 64 B)
    data: dict[int, list[float]] = {}
    for fp in _grid(256, WORDS * 4, 3 if ctx.quick else 6, 64):
        n = p.lay(fp, 64)
        data[fp] = [p.chase(n, steps) for _ in range(launches)]
    xs = sorted(data)
    ys = [float(np.median(data[x])) for x in xs]
    thr = staircase.threshold([data[x] for x in xs], k=6.0, floor=2.0 / steps * 4)
    st = staircase.rising_steps(staircase.find_steps([float(x) for x in xs], ys, thr))
    ctx.series(
        "latency_vs_footprint",
        "footprint",
        "bytes",
        "latency",
        "cycles",
        [Point(x, y, min(data[x]), max(data[x]), launches) for x, y in zip(xs, ys)],
        plot="logx",
        figure="const_latency",
        stride=64,
        steps=steps,
    )
    lv = staircase.levels([float(x) for x in xs], ys, st)
    method = f"{method0}, full warm pass then {steps} timed loads, median of {launches} launches; levels split where the curve moves by > {thr:.2f} cycles (6 pooled sigmas)"
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
    ctx.progress(25, 100, "lines")
    # 2. line sizes: latency over stride past L1 (warm, L1.5) and on a cold SM (L2)
    fp = 16 * 1024 if not l1_cap else min(max(8 * l1_cap, 8192), 32 * 1024)
    strides = [4, 8, 16, 32, 64, 128, 256, 512]
    warm_d: dict[int, list[float]] = {}
    for s in strides:
        n = p.lay(fp, s)
        warm_d[s] = [p.chase(n, min(n, steps)) for _ in range(launches)]
    sx = [float(s) for s in strides]
    sy = [float(np.median(warm_d[s])) for s in strides]
    ctx.series(
        "latency_vs_stride_warm",
        "stride",
        "bytes",
        "latency",
        "cycles",
        [Point(s, y, min(warm_d[int(s)]), max(warm_d[int(s)]), launches) for s, y in zip(sx, sy)],
        plot="logx",
        figure="const_line",
        footprint=fp,
    )
    line = staircase.doubling_knee(sx, sy, thr)
    ctx.figure(
        "cache.const.l1_line_bytes",
        int(line) if line else "n/a",
        "bytes",
        "derived",
        f"footprint {fp} B (past L1, within L1.5), strides doubling 4..512 B, warm: while the stride is below the line the "
        f"share of L1 misses doubles with it, so does the latency's rise; the line is the stride after which the rise "
        f"stops doubling; {method0}",
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
    ctx.series(
        "latency_vs_stride_cold",
        "stride",
        "bytes",
        "latency",
        "cycles",
        [Point(s, y) for s, y in zip(cx, cy)],
        plot="logx",
        figure="const_line",
        footprint=cold_fp,
    )
    l15_line = staircase.doubling_knee(cx, cy, thr)
    ctx.figure(
        "cache.const.l1_5_line_bytes",
        int(l15_line) if l15_line else "n/a",
        "bytes",
        "derived",
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
    ctx.progress(50, 100, "broadcast")
    _broadcast(ctx, p, l1_cap, line)
    ctx.progress(75, 100, "instruction-cache thrash")
    _thrash(ctx, p, cold_d)
    ctx.progress(90, 100, "immediate operands")
    _immediate(ctx, p)
    if p.clock:
        ctx.sm_clock(
            float(np.median(p.clock)),
            f"clock64 over %globaltimer of each timed const_chase, median of {len(p.clock)}",
            (min(p.clock), max(p.clock)),
        )


def distinct_starts(k: int, n: int) -> list[int]:
    """Lane l starts at element (l % k) * (n // k): k groups, n // k elements apart, so the k groups
    load k distinct addresses at every step of a sequential chain."""
    if not 1 <= k <= 32 or n < k:
        raise ValueError("need 1 <= k <= 32 and n >= k")
    return [(lane % k) * (n // k) for lane in range(32)]


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
            v = [x for x in vals if x is not None]
            pts.append(Point(k, float(np.median(v)), min(v), max(v), len(v)))
        results[level] = pts
    # L2: cold SMs, stride 1 KiB so that every load is a new L1.5 line
    n = p.lay(64 * 1024, 1024)
    p.warm_l2()
    pts = []
    for k in [1, 2, 4, 8, 16, 32]:
        steps = max(1, n // k - 1)
        v = p.cold(distinct_starts(k, n), steps)
        pts.append(Point(k, v, v, v, 1))
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
    sizes = [s // INSTR_BYTES for s in _grid(4096, 512 * 1024, 2 if ctx.quick else 4, 128)]
    fp, stride = 32 * 1024, 256
    l2_lat = cold_d[stride]  # all-miss reference: a cold pass at the same stride
    words, n = seq_chain(fp, stride)
    can_check = find_tool("cuobjdump") is not None
    pts = []
    out = p.dev.alloc(16)
    try:
        for nt in [2] + sizes:
            cubin = build(const_source(nt), f"const_thrash_{nt}.cu", p.dev.arch)
            if can_check:  # ptxas merges identical chains: the code must hold every FFMA asked for
                got = ffma_total(disassemble(cubin)["const_thrash"])
                ctx.check(got == nt, f"const_thrash holds {got} FFMA, expected {nt}")
            mod = p.dev.load(cubin)
            p.dev.upload(words, const_buffer(p.dev, mod))
            fn = mod.function("const_thrash")
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
            pts.append(Point(nt * INSTR_BYTES, float(np.median(vals)), min(vals), max(vals), 3))
    finally:
        p.dev.free(out)
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
        f"scan {fp} B of constants (stride {stride} B: every load misses L1), run the FFMA code once, time a second scan; "
        f"miss rate = (latency - latency with no code) / (cold-SM latency at stride {stride} B, {l2_lat:.0f} cycles, - it)"
    )
    if over:
        text = (
            f"yes: instruction fetch evicts the L1.5 constant cache once the code between the scans exceeds about "
            f"{min(over) / 1024:.0f} KiB (second-scan miss rate > 50%)"
        )
    else:
        text = f"not evicted by up to {pts[-1].x / 1024:.0f} KiB of code: no sign that L1.5 constant and an instruction-cache level share storage"
    ctx.figure(
        "cache.const.l1_5_shared_with_icache",
        text,
        "",
        "derived",
        method,
        note="miss rates: " + ", ".join(f"{x / 1024:.0f} KiB: {f:.2f}" for x, f in miss),
    )


IMM_PLANS = {  # level: (byte offsets of the chain's constants, register operand instead)
    "register": ([0] * 512, True),
    "l1": ([(i % 16) * 64 for i in range(512)], False),  # 16 lines of 64 B (1 KiB), re-read
    "l1_5": ([i * 64 for i in range(512)], False),  # 512 lines (32 KiB): past L1, within L1.5
    "l2": ([i * 1024 for i in range(64)], False),  # 64 lines 1 KiB apart (64 KiB), on a cold SM
}


def imm_build(level: str, arch: str, can_check: bool) -> tuple[bytes, list[int]]:
    """The const_imm cubin of one plan, patched to c[0x3][imm] operands (not the register plan) and,
    where cuobjdump exists, checked to read as asked."""
    offsets, reg = IMM_PLANS[level]
    cubin = build(const_imm_source(offsets, reg), f"const_imm_{level}.cu", arch)
    if reg:
        return cubin, offsets
    if not can_check:
        raise GpuDissectError("no cuobjdump on this machine: the immediate-operand patch cannot be built or checked")
    c = Cubin(cubin)
    changes, got = imm_patch(c.words("const_imm"), disassemble(cubin)["const_imm"])
    if got != offsets:
        raise GpuDissectError(f"const_imm_{level}: the chain's constants are not in the order asked")
    patched = c.with_words("const_imm", changes)
    bad = imm_patch_problems(disassemble(patched)["const_imm"], offsets)
    if bad:
        raise GpuDissectError(f"const_imm_{level} after the patch: {'; '.join(bad)}")
    return patched, offsets


def _immediate(ctx: BenchContext, p: ConstProbe) -> None:
    """Jia's immediate-operand path: a dependent chain of FFMA x, x, c[0x3][imm], y, one constant per
    FFMA, straight-line between two clock reads (sm_90 ptxas emits ULDC + FFMA-UR; the cubin is patched
    to the constant-bank form and its SASS re-checked). Per FFMA: the FFMA's own latency plus any stall
    on the constant operand."""
    can_check = find_tool("cuobjdump") is not None
    how = (
        "dependent chain x = x * c[0x3][imm] + y, one FFMA per constant, straight-line between two clock reads; sm_90 ptxas "
        "emits ULDC UR, c[0x3][imm] + FFMA R, R, UR, R, so the cubin is patched: every FFMA rewritten to its constant-bank "
        "form (the form sm_80 ptxas emits, which nvdisasm decodes alike for sm_90) with stall 4 (ptxas' own FFMA distance), "
        "the timed region packed with them, every ULDC of bank 3 made a NOP; the patched SASS is checked to hold exactly the "
        "chain's FFMA c[0x3][imm] and no load of bank 3"
    )
    res, out = p.dev.alloc(8 * 32), p.dev.alloc(64)
    vals: dict[str, list[float]] = {}
    try:
        for level in IMM_PLANS:
            try:
                cubin, offsets = imm_build(level, p.dev.arch, can_check)
            except (GpuDissectError, ValueError) as e:
                ctx.figure(
                    f"cache.const.imm_{level}_cycles_per_ffma", "n/a", "", "derived", how, check="failed", note=str(e)
                )
                continue
            mod = p.dev.load(cubin)
            cb = const_buffer(p.dev, mod, "cf")
            p.dev.upload(np.ones(WORDS, np.float32), cb)
            fn = mod.function("const_imm")
            n = len(offsets)

            def launch(passes: int, sm: int | None) -> tuple[list[float], int] | None:
                p.dev.memset32(res, 0, 2 * 32)
                args = [
                    Arg.f32(0.0),
                    Arg.f32(1.0),
                    Arg.i32(passes),
                    Arg.u32(0xFFFFFFFF if sm is None else sm),
                    Arg.ptr(res),
                    Arg.ptr(out),
                ]
                if sm is None:
                    fn(1, 1, args)
                else:
                    fn(
                        ctx.props["sm_count"],
                        1,
                        args,
                        smem=min(ctx.props["smem_per_sm"] // 2 + 1024, ctx.props["smem_per_block_optin"]),
                    )
                p.dev.sync(f"const_imm_{level}")
                r = p.dev.download(res, np.int64, 17)
                if int(r[0]) == 0:
                    return None
                x = float(p.dev.download(out, np.float32, 1)[0])
                ctx.check(x == passes * n, f"const_imm_{level}: the chain holds {x}, expected {passes * n}")
                return [float(r[k]) / n for k in range(passes)], int(r[16])

            if level == "l2":  # one cold pass on each of 3 SMs that never read this module's bank, after SM a read it
                _, sm_a = launch(1, None)  # type: ignore[misc]
                p.used_sms.add(sm_a)
                got = []
                for sm in [s for s in range(ctx.props["sm_count"] - 1, -1, -1) if s not in p.used_sms][:3]:
                    p.used_sms.add(sm)
                    r = launch(1, sm)
                    if r is not None:
                        got.append(r[0][0])
                vals[level] = got
            else:
                got = []
                for _ in range(3):
                    r = launch(3, None)
                    got += r[0][1:] if r else []
                vals[level] = got
    finally:
        p.dev.free(res)
        p.dev.free(out)
    where = {
        "register": "the multiplier in a register (the FFMA's own latency), warm passes",
        "l1": "16 constants 64 B apart (1 KiB) re-read, warm passes 2-3 of 3, 3 launches",
        "l1_5": "512 constants 64 B apart (32 KiB: past the 2 KiB L1, within L1.5), warm passes 2-3 of 3, 3 launches",
        "l2": "64 constants 1 KiB apart, first pass on each of 3 SMs that never read this module's constants, after another SM "
        "read them all (L2 hits; the SM's instruction fetch of the 1 KiB of code is cold as well)",
    }
    for level, v in vals.items():
        if not v:
            continue
        ctx.figure(
            f"cache.const.imm_{level}_cycles_per_ffma",
            round(float(np.median(v)), 2),
            "cycles",
            "measured",
            f"{where[level]}; {how}" if level != "register" else f"{where[level]}; the same chain shape, not patched",
            (min(v), max(v)),
        )
    if "register" in vals and vals["register"]:
        reg = float(np.median(vals["register"]))
        for level in ("l1", "l1_5", "l2"):
            if vals.get(level):
                ctx.figure(
                    f"cache.const.imm_{level}_extra_cycles",
                    round(float(np.median(vals[level])) - reg, 2),
                    "cycles",
                    "derived",
                    f"cycles per FFMA with a c[0x3][imm] operand at this level minus the register-operand chain's ({reg:.2f}): "
                    "the stall the constant operand adds to a dependent FFMA",
                )
