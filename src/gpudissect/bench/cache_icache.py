"""The cache suite, instruction caches (Jia §3.3, Figs. 3.3-3.5).

Straight-line FFMA sequences of growing length, generated per length (bench/icache_source.py) and
checked in SASS to be exactly that many FFMAs between two clock reads with no branch. One warp runs a
sequence several times; the warm passes give cycles per instruction. The staircase of that inverse
throughput over code size shows each instruction-cache level; fine steps past each capacity show
Jia's stages (one per set, one line wide); two warps / two SMs, one thrashing and one timing, show
which level is private to what.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..analysis import staircase
from ..device.cuda import Arg
from ..device.sass import disassemble, find_tool
from ..models import Point
from .context import BenchContext
from .icache_source import INSTR_BYTES, build, icache_source, straight_line_problems
from .registry import KernelSpec, benchmark

SUITE = "cache"
_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
ICACHE = KernelSpec("icache.cu", {"icache_seq": [r"\bFFMA\b", _CLOCK], "icache_pair": [r"\bFFMA\b", _CLOCK, r"ATOMG\.E\.EXCH"],
                                      "block_smid": [r"SR_VIRTUALSMID"]})

PASSES = 8  # passes per launch; the first fetches the code, the others are timed warm


class Builder:
    """Compiles generated icache sources (in parallel threads) and checks their SASS where cuobjdump
    exists on the machine; the CPU tests check the generator on every CI run."""

    def __init__(self, ctx: BenchContext):
        self.ctx, self.arch = ctx, ctx.device.arch
        self.can_check = find_tool("cuobjdump") is not None
        self.checked = 0

    def one(self, n_measure: int, n_thrash: int = 8) -> bytes:
        cubin = build(icache_source(n_measure, n_thrash), f"icache_{n_measure}_{n_thrash}.cu", self.arch)
        if self.can_check:
            funcs = disassemble(cubin)
            for fn, thrash in (("icache_seq", None), ("icache_pair", n_thrash)):
                bad = straight_line_problems(funcs[fn], n_measure, thrash)
                self.ctx.check(not bad, f"{fn} with {n_measure} FFMAs is not straight-line: {'; '.join(bad)}")
            self.checked += 1
        return cubin

    def many(self, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        with ThreadPoolExecutor(max_workers=8) as ex:
            return dict(zip(pairs, ex.map(lambda p: self.one(*p), pairs)))

    @property
    def sass_note(self) -> str:
        return (f"SASS of all {self.checked} builds checked on this machine: exactly the FFMA count between two clock reads, no branch"
                if self.can_check else "SASS checked by the CPU tests (no cuobjdump on this machine)")


class Runner:
    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.cyc = self.dev.alloc(8 * (PASSES + 2))
        self.out = self.dev.alloc(4 * 16)
        self.res = self.dev.alloc(8 * 4)
        self.flag = self.dev.alloc(16)
        self.clock_pairs: list[tuple[int, int]] = []
        self._fns: dict[tuple[int, str], object] = {}

    def fn(self, cubin: bytes, name: str):  # -> Function, one module load per build
        key = (hash(cubin), name)
        if key not in self._fns:
            self._fns[key] = self.dev.load(cubin).function(name)
        return self._fns[key]

    def close(self) -> None:
        for b in (self.cyc, self.out, self.res, self.flag):
            self.dev.free(b)

    def seq(self, cubin: bytes, n: int) -> float:
        """Cycles per FFMA: median over the warm passes of one launch of one warp."""
        fn = self.fn(cubin, "icache_seq")
        fn(1, 32, [Arg.f32(1.0), Arg.f32(1.0), Arg.i32(PASSES), Arg.ptr(self.cyc), Arg.ptr(self.out)])
        self.dev.sync("icache_seq")
        cyc = self.dev.download(self.cyc, np.int64, PASSES + 2)
        out = self.dev.download(self.out, np.float32, 8)
        want = np.arange(8) + PASSES * n / 8
        self.ctx.check(bool(np.all(out == want)), f"icache_seq({n}): chains hold {out.tolist()}, expected {want.tolist()}")
        self.clock_pairs.append((int(cyc[PASSES]), int(cyc[PASSES + 1])))
        return float(np.median(cyc[1:PASSES])) / n

    def smids(self, cubin: bytes) -> list[int]:
        """SM of each block of a one-block-per-SM launch (as icache_pair is launched)."""
        n = self.ctx.props["sm_count"]
        buf = self.dev.alloc(4 * n)
        try:
            self.fn(cubin, "block_smid")(n, 32, [Arg.ptr(buf)], smem=self._smem())
            self.dev.sync("block_smid")
            return [int(v) for v in self.dev.download(buf, np.uint32, n)]
        finally:
            self.dev.free(buf)

    def _smem(self) -> int:
        # one block per SM: each asks for more than half an SM's shared memory
        return min(self.ctx.props["smem_per_sm"] // 2 + 1024, self.ctx.props["smem_per_block_optin"])

    def pair(self, cubin: bytes, n: int, n_thrash: int, t_sm: int, o_sm: int, ob_warp: int) -> tuple[float, int, int]:
        """Observer's cycles per FFMA after the thrasher ran n_thrash FFMAs; observer SM, thrasher SM."""
        fn = self.fn(cubin, "icache_pair")
        self.dev.memset32(self.flag, 0, 4)
        self.dev.memset32(self.res, 0, 8)
        fn(self.ctx.props["sm_count"], 256, [Arg.f32(1.0), Arg.f32(1.0), Arg.u32(t_sm), Arg.u32(o_sm), Arg.i32(ob_warp),
                                             Arg.ptr(self.flag), Arg.ptr(self.res), Arg.ptr(self.out)], smem=self._smem())
        self.dev.sync("icache_pair")
        res = self.dev.download(self.res, np.int64, 4)
        out = self.dev.download(self.out, np.float32, 16)
        self_mode = t_sm == o_sm and ob_warp == 0
        self.ctx.check(int(res[3]) == 0, f"icache_pair: a warp waited in vain (SMs {t_sm}, {o_sm})")
        base = np.arange(8)
        t_want = base + ((2 * n + n_thrash) / 8 if self_mode else (n + n_thrash) / 8)
        ok = bool(np.all(out[:8] == t_want)) and (self_mode or bool(np.all(out[8:] == base + 2 * n / 8)))
        self.ctx.check(ok, f"icache_pair({n},{n_thrash},{t_sm},{o_sm},{ob_warp}): chains {out.tolist()}")
        return float(res[0]) / n, int(res[1]), int(res[2])


def _size_grid(lo: int, hi: int, per_octave: int) -> list[int]:
    """Code sizes in bytes, multiples of 8 FFMAs (128 B), geometric."""
    n = int(np.ceil(np.log2(hi / lo) * per_octave)) + 1
    step = 8 * INSTR_BYTES
    return sorted({max(step, int(round(v / step)) * step) for v in np.geomspace(lo, hi, n)})


def _measure(ctx: BenchContext, b: Builder, r: Runner, sizes: list[int], launches: int) -> dict[int, list[float]]:
    cubins = b.many([(s // INSTR_BYTES, 8) for s in sizes])
    out: dict[int, list[float]] = {}
    for s in sizes:
        n = s // INSTR_BYTES
        out[s] = [r.seq(cubins[(n, 8)], n) for _ in range(launches)]
    return out


def _curve(data: dict[int, list[float]]) -> tuple[list[float], list[float], list[Point]]:
    xs = sorted(data)
    ys = [float(np.median(data[x])) for x in xs]
    pts = [Point(x, y, min(data[x]), max(data[x]), len(data[x])) for x, y in zip(xs, ys)]
    return [float(x) for x in xs], ys, pts


LEVELS = ("l0", "l1", "l2")


@benchmark(
    suite=SUITE, name="icache", title="Instruction caches: FFMA-sequence staircase, geometry and privacy",
    axes={"code size": "2 KiB .. 1 MiB of straight-line FFMA (log steps), fine 128 B / 512 B steps past each capacity",
          "privacy": "thrasher warp 0 / observer: itself, warp 4 (same sub-core), warp 1 (other sub-core), a warp on another SM"},
    kernels=[ICACHE], timeout_s=400, paper="002 §3.3 Figs. 3.3-3.5, Table 3.1",
)
def icache(ctx: BenchContext) -> None:
    b, r = Builder(ctx), Runner(ctx)
    try:
        _icache(ctx, b, r)
    finally:
        r.close()


def _icache(ctx: BenchContext, b: Builder, r: Runner) -> None:
    launches = 3
    data = _measure(ctx, b, r, _size_grid(2048, 1024 * 1024, 3 if ctx.quick else 6), launches)
    ctx.progress(30, 100, "staircase")
    xs, ys, _ = _curve(data)
    reps = [data[x] for x in data]
    resolution = 2.0 / min(data)  # two cycles over the shortest sequence's FFMA count (clock read granularity)
    thr = staircase.threshold(reps, k=6.0, floor=resolution * INSTR_BYTES)
    steps = staircase.rising_steps(staircase.find_steps(xs, ys, thr))
    # refine every step: bisect the gap between its last low and first high point
    for _ in range(2 if ctx.quick else 3):
        new = []
        for s in steps:
            new += [int(round(v / 128)) * 128 for v in np.linspace(s.x_last_low, s.x_first_high, 5)[1:-1]]
        new = sorted({v for v in new if v not in data})
        if not new:
            break
        data.update(_measure(ctx, b, r, new, launches))
        xs, ys, _ = _curve(data)
        steps = staircase.rising_steps(staircase.find_steps(xs, ys, thr))
    xs, ys, pts = _curve(data)
    ctx.series("ffma_sequence", "code size", "bytes", "inverse throughput", "cycles/instr", pts, plot="logx",
               figure="icache_staircase", passes=PASSES, launches=launches, threshold=thr)
    ctx.progress(50, 100, "levels")
    method = (f"one warp, {PASSES} passes per launch over a straight-line FFMA sequence (8 independent chains), median of the "
              f"{PASSES - 1} warm passes, {launches} launches per size; steps > {thr:.4f} cycles/instr "
              f"(6 pooled sigmas of the launch-to-launch spread); {b.sass_note}")
    lv = staircase.levels(xs, ys, steps)
    for name, level in zip(LEVELS, lv):
        on = [y for x, y in zip(xs, ys) if abs(y - level) <= thr]
        ctx.figure(f"cache.icache.{name}_cycles_per_instr", round(level, 4), "cycles/instr", "derived", method,
                   (min(on), max(on)) if on else None)
    caps = [int(s.x_last_low) for s in steps]
    if len(steps) < 2:
        ctx.soft_check(False, f"expected two instruction-cache steps below 1 MiB, found {len(steps)}")
    fine = _geometry(ctx, b, r, steps, thr, launches)
    for name, s in zip(("l0", "l1"), steps):
        if name in fine:  # the fine scan's last point on the level: 128 B / 512 B resolution
            ctx.figure(f"cache.icache.{name}_bytes", int(fine[name]), "bytes", "derived",
                       f"largest code size on the {name.upper()} level in the fine scan past the coarse step; {method}")
        else:
            ctx.figure(f"cache.icache.{name}_bytes", int(s.x_last_low), "bytes", "derived",
                       f"largest code size on the {name.upper()} level before the step to {s.y_after:.3f} cycles/instr; {method}",
                       (s.x_last_low, s.x_first_high), note=f"the step lies between {s.x_last_low:.0f} and {s.x_first_high:.0f} B")
    ctx.progress(75, 100, "privacy")
    if len(caps) >= 2:
        _privacy(ctx, b, r, caps[0], caps[1], thr)
    if r.clock_pairs:
        mhz = [c / g * 1000 for c, g in r.clock_pairs if g >= 20_000] or [c / g * 1000 for c, g in r.clock_pairs if g > 0]
        ctx.sm_clock(float(np.median(mhz)), f"clock64 over %globaltimer across all passes of each icache_seq launch, median of {len(mhz)}",
                     (min(mhz), max(mhz)))


def _geometry(ctx: BenchContext, b: Builder, r: Runner, steps: list[staircase.Step], thr: float, launches: int) -> dict[str, float]:
    """Jia Fig. 3.4: fine, even steps from each capacity to the first point of the next level;
    stages = sets, stage width = line, ways = capacity / (sets x line). Returns each scanned level's
    capacity at the fine resolution (the last point before the first departure from its level)."""
    caps: dict[str, float] = {}
    plans = [("l0", 128)]  # (level, step bytes)
    if not ctx.quick:
        plans.append(("l1", 512))
    for (name, res), st in zip(plans, steps):
        cap = int(st.x_last_low)
        start, stop = (cap // res) * res, int(st.x_first_high) + 4 * res
        sizes = list(range(start, stop + 1, res))
        data = _measure(ctx, b, r, sizes, launches)
        xs, ys, pts = _curve(data)
        ctx.series(f"{name}_fine", "code size", "bytes", "inverse throughput", "cycles/instr", pts, plot="line",
                   figure=f"icache_{name}_stages", step_bytes=res)
        base = float(np.median([y for x, y in zip(xs, ys) if x <= cap])) if any(x <= cap for x in xs) else ys[0]
        fine_cap = xs[0]
        for x, y in zip(xs, ys):
            if abs(y - base) > thr:
                break
            fine_cap = x
        caps[name] = fine_cap
        cap = int(fine_cap)
        geo = staircase.set_geometry(xs, ys, thr, float(cap), float(sizes[-1]))
        how = (f"{res} B steps from the {name.upper()} capacity to past the next level: Jia's stages (a sequentially re-read "
               "footprint overflows one more set of an LRU set-associative cache per extra line), stage count = sets, "
               "stage width = line, ways = capacity / (sets x line)")
        if geo is None:
            for what in ("line_bytes", "ways"):
                ctx.figure(f"cache.icache.{name}_{what}", "n/a", "", "derived", how,
                           note="no even stages above the noise: the level does not fill like an LRU set-associative cache at this resolution")
            continue
        ctx.figure(f"cache.icache.{name}_stage_bytes", int(geo.line), "bytes", "derived", f"width of the stages; {how}")
        ctx.figure(f"cache.icache.{name}_stages", geo.stages, "stages", "derived", f"count of the stages; {how}")
        pow2 = geo.stages & (geo.stages - 1) == 0
        if pow2:
            ctx.figure(f"cache.icache.{name}_line_bytes", int(geo.line), "bytes", "derived", how)
            ctx.figure(f"cache.icache.{name}_ways", round(geo.ways, 2), "ways", "derived", how)
        else:
            note = (f"{geo.stages} stages of {geo.line:.0f} B: not a power-of-two set count, so the LRU set-associative model "
                    "does not fit and no line/ways are claimed")
            for what in ("line_bytes", "ways"):
                ctx.figure(f"cache.icache.{name}_{what}", "n/a", "", "derived", how, note=note)
    return caps


def _privacy(ctx: BenchContext, b: Builder, r: Runner, l0: int, l1: int, thr: float) -> None:
    """Jia Fig. 3.5. The observer's sequence is warmed, the thrasher (warp 0 of the block on one SM)
    runs a sequence of growing length, the observer times its sequence once. For L0 the observed
    sequence fits L0 (l0/2); for L1 it is larger than L0 and fits L1, as in Jia."""
    def ffmas(nbytes: float) -> int:
        return max(8, int(nbytes) // INSTR_BYTES // 8 * 8)

    tests = {
        "l0": (ffmas(l0 / 2), [ffmas(f * l0) for f in (0.25, 0.5, 1.5, 2.5) if f * l0 < l1]),
        "l1": (ffmas(min(2 * l0, l1 / 2)), [ffmas(f * l1) for f in (0.25, 0.5, 1.5, 2.5)]),
    }
    cubins = b.many(sorted({(n, t) for n, ts in tests.values() for t in ts}))
    sms = r.smids(next(iter(cubins.values())))
    t_sm = sms[0]
    # SM ids 2k and 2k+1 are taken as one TPC (the usual numbering; an assumption, said in the method)
    pair_sm = t_sm ^ 1 if (t_sm ^ 1) in sms else None
    far_sm = max(sms, key=lambda s: abs(s - t_sm))
    modes = {"l0": {"self": (t_sm, 0), "same_subcore": (t_sm, 4), "other_subcore": (t_sm, 1)},
             "l1": {"self": (t_sm, 0), "other_subcore": (t_sm, 1), "far_sm": (far_sm, 0)}}
    if pair_sm is not None:
        modes["l1"]["pair_sm"] = (pair_sm, 0)
    rows: dict[tuple[str, str], list[Point]] = {}
    for level, (n, ts) in tests.items():
        for mode, (o_sm, warp) in modes[level].items():
            pts = []
            for t in ts:
                vals = []
                for _ in range(3):
                    v, osm, tsm = r.pair(cubins[(n, t)], n, t, t_sm, o_sm, warp)
                    ctx.check((osm, tsm) == (o_sm, t_sm), f"observer/thrasher ran on SMs {osm}/{tsm}, asked {o_sm}/{t_sm}")
                    vals.append(v)
                pts.append(Point(t * INSTR_BYTES, float(np.median(vals)), min(vals), max(vals), 3))
            rows[(level, mode)] = pts
            ctx.series(f"{level}_{mode}", "thrash size", "bytes", "observer inverse throughput", "cycles/instr", pts, plot="logx",
                       figure=f"icache_privacy_{level}", observed_bytes=n * INSTR_BYTES, thrasher_sm=t_sm, observer_sm=o_sm,
                       observer_warp=warp)

    def rises(level: str, mode: str, beyond: int) -> bool | None:
        if (level, mode) not in rows:
            return None
        pts = rows[(level, mode)]
        base = min(p.y for p in pts if p.x <= beyond)
        # one timed pass is noisier than the staircase's medians: ask for 3 thresholds
        return any(p.y - base > 3 * thr for p in pts if p.x > beyond)

    l0_self, l0_same, l0_other = (rises("l0", m, l0) for m in ("self", "same_subcore", "other_subcore"))
    l1_self, l1_other, l1_pair, l1_far = (rises("l1", m, l1) for m in ("self", "other_subcore", "pair_sm", "far_sm"))
    # An SM-private cache cannot be thrashed from a distant SM. If that observer slows down too, the
    # curves cannot tell which level is private to what (see `why`).
    artifact = bool(l1_far)
    why = ("inconclusive: a warp on a distant SM slowed down as much as the thrasher's neighbours, which no SM-private "
           "cache explains; cause not identified (candidates: the observers' spin-wait, laid out just before the thrash "
           "code, with instruction prefetch during the wait; or a level shared wider than one SM)")
    if artifact:
        text = why
    elif not l0_self:
        text = "inconclusive (thrashing beyond L0 did not slow the thrasher itself)"
    elif l0_same and not l0_other:
        text = "sub-core (warps w and w+4 share it, w and w+1 do not)"
    elif l0_same and l0_other:
        text = "SM: warps 0, 1 and 4 of one block all slow down when warp 0 thrashes past L0"
    else:
        text = "warp? (not shared even by warps w and w+4)"
    method = ("thrasher warp 0, observer warp 4 (same sub-core if sub-core = warp % 4, Jia's Volta mapping) or warp 1 of the "
              f"same block; observed sequence {tests['l0'][0] * INSTR_BYTES} B, warmed; thrash 0.25..2.5 x L0; the observer times one "
              "pass; a rise of more than 3 staircase thresholds over the points at or below L0 counts")
    ctx.figure("cache.icache.l0_private_to", text, "", "derived", method,
               note=f"rises beyond L0 - thrasher itself: {l0_self}, warp 4: {l0_same}, warp 1: {l0_other}")
    if artifact:
        l1_text = why
    elif not l1_self:
        l1_text = "inconclusive (thrashing beyond L1 did not slow the thrasher itself)"
    elif not l1_other:
        l1_text = "sub-core? (warp 1 of the same SM does not slow down)"
    elif l1_pair:
        l1_text = "TPC (the SM pair 2k, 2k+1 shares it; a distant SM is unaffected)"
    else:
        l1_text = "SM (shared by its sub-cores; neither the neighbouring nor a distant SM is affected)"
    ctx.figure("cache.icache.l1_private_to", l1_text, "", "derived",
               f"observed sequence {tests['l1'][0] * INSTR_BYTES} B (past L0, within L1), thrash 0.25..2.5 x L1 by warp 0 of the block on "
               f"SM {t_sm}; observers: the thrasher, warp 1 of its block, warp 0 on SM {pair_sm} (same TPC if SMs 2k, 2k+1 form one) "
               f"and on SM {far_sm}; one block per SM forced by shared memory",
               note=f"rises beyond L1 - thrasher itself: {l1_self}, warp 1: {l1_other}, SM {pair_sm}: {l1_pair}, SM {far_sm}: {l1_far}; "
                    "the next level (unified L2) is not thrashed: that would take tens of MiB of code")
