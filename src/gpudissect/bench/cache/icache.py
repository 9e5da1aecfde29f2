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

from ...analysis import icache_privacy as priv
from ...analysis import staircase
from ...device.cuda import Arg
from ...device.stream import Stream
from ...models import Point
from ...sass.disasm import disassemble, find_tool
from ..context import BenchContext
from ..registry import KernelSpec, benchmark
from .sources import INSTR_BYTES, build, icache_source, straight_line_problems, thrash_problems

_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
ICACHE = KernelSpec(
    "cache_icache.cu",
    {
        "icache_seq": [r"\bFFMA\b", _CLOCK],
        "icache_observe": [r"\bFFMA\b", _CLOCK, r"ATOMG\.E\.EXCH", r"SR_VIRTID"],
        "icache_thrash": [r"\bFFMA\b", r"ATOMG\.E\.CAS", r"ATOMG\.E\.EXCH", r"SR_VIRTID"],
        "block_smid": [r"SR_VIRTUALSMID"],
        "cluster_smid": [r"SR_VIRTUALSMID"],
    },
)

PASSES = 8  # passes per launch; the first fetches the code, the others are timed warm
METHODS = ("fresh", "reused", "concurrent")  # privacy methods (see _privacy)


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
            for fn in ("icache_seq", "icache_observe"):
                bad = straight_line_problems(funcs[fn], n_measure)
                self.ctx.check(not bad, f"{fn} with {n_measure} FFMAs is not straight-line: {'; '.join(bad)}")
            bad = thrash_problems(funcs["icache_thrash"], n_thrash)
            self.ctx.check(not bad, f"icache_thrash with {n_thrash} FFMAs is not straight-line: {'; '.join(bad)}")
            self.checked += 1
        return cubin

    def many(self, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        with ThreadPoolExecutor(max_workers=8) as ex:
            return dict(zip(pairs, ex.map(lambda p: self.one(*p), pairs)))

    @property
    def sass_note(self) -> str:
        return (
            f"SASS of all {self.checked} builds checked on this machine: exactly the FFMA count between two clock reads, no branch"
            if self.can_check
            else "SASS checked by the CPU tests (no cuobjdump on this machine)"
        )


class Runner:
    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.cyc = self.dev.alloc(8 * (PASSES + 2))
        self.out = self.dev.alloc(4 * 16)
        self.res = self.dev.alloc(8 * 32)  # icache_observe: 16 passes, SM, %warpid, wait flag
        self.flag = self.dev.alloc(16)  # [0] observer/thrasher handshake, [2] thrasher claim (concurrent mode)
        self.tres = self.dev.alloc(8 * 4)
        self._streams: tuple[Stream, ...] | None = None
        self.clock_pairs: list[tuple[int, int]] = []
        self._fns: dict[tuple[int, str], object] = {}

    def fn(self, cubin: bytes, name: str):  # -> Function, one module load per build
        key = (hash(cubin), name)
        if key not in self._fns:
            self._fns[key] = self.dev.load(cubin).function(name)
        return self._fns[key]

    def close(self) -> None:
        for b in (self.cyc, self.out, self.res, self.flag, self.tres):
            self.dev.free(b)
        for st in self._streams or ():
            st.close()

    def seq(self, cubin: bytes, n: int) -> float:
        """Cycles per FFMA: median over the warm passes of one launch of one warp."""
        fn = self.fn(cubin, "icache_seq")
        fn(1, 32, [Arg.f32(1.0), Arg.f32(1.0), Arg.i32(PASSES), Arg.ptr(self.cyc), Arg.ptr(self.out)])
        self.dev.sync("icache_seq")
        cyc = self.dev.download(self.cyc, np.int64, PASSES + 2)
        out = self.dev.download(self.out, np.float32, 8)
        want = np.arange(8) + PASSES * n / 8
        self.ctx.check(
            bool(np.all(out == want)), f"icache_seq({n}): chains hold {out.tolist()}, expected {want.tolist()}"
        )
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

    def fresh(self, cubin: bytes, name: str):  # -> Function
        """The function from a new load of the cubin: its code at new addresses, in no cache yet."""
        return self.dev.load(cubin).function(name)

    def observe(
        self, fn, n: int, o_sm: int, o_warp: int, passes: int, flag: bool = False
    ) -> tuple[list[float], int, int]:
        """Cycles per FFMA of each pass of one observer launch (one block per SM); its SM and %warpid."""
        self.dev.memset32(self.res, 0, 2 * 32)
        fn(self.ctx.props["sm_count"], 256, self._observe_args(n, o_sm, o_warp, passes, flag), smem=self._smem())
        self.dev.sync("icache_observe")
        return self._observed(n, o_sm, passes)

    def _observe_args(self, n: int, o_sm: int, o_warp: int, passes: int, flag: bool) -> list[Arg]:
        return [
            Arg.f32(1.0),
            Arg.f32(1.0),
            Arg.u32(o_sm),
            Arg.i32(o_warp),
            Arg.i32(passes),
            Arg.ptr(self.flag.ptr if flag else 0),
            Arg.ptr(self.res),
            Arg.ptr(self.out),
        ]

    def _observed(self, n: int, o_sm: int, passes: int) -> tuple[list[float], int, int]:
        res = self.dev.download(self.res, np.int64, 32)
        out = self.dev.download(self.out, np.float32, 8)
        self.ctx.check(int(res[16]) == o_sm, f"observer ran on SM {int(res[16])}, asked {o_sm}")
        want = np.arange(8) + passes * n / 8
        self.ctx.check(
            bool(np.all(out == want)), f"icache_observe({n}): chains hold {out.tolist()}, expected {want.tolist()}"
        )
        return [float(res[k]) / n for k in range(passes)], int(res[16]), int(res[17])

    def _thrash_args(self, t_sm: int, claim: bool) -> list[Arg]:
        return [
            Arg.f32(1.0),
            Arg.f32(1.0),
            Arg.u32(t_sm),
            Arg.i32(0),
            Arg.ptr(self.flag.ptr + 8 if claim else 0),
            Arg.ptr(self.flag.ptr if claim else 0),
            Arg.ptr(self.tres),
            Arg.ptr(self.out),
        ]

    def _thrashed(self, t: int, t_sm: int) -> int:
        res = self.dev.download(self.tres, np.int64, 4)
        out = self.dev.download(self.out, np.float32, 16)[8:]
        self.ctx.check(
            int(res[3]) == 1 and int(res[0]) == t_sm,
            f"no thrasher ran on SM {t_sm} (ran: {int(res[3])}, SM {int(res[0])})",
        )
        want = np.arange(8) + t / 8
        self.ctx.check(
            bool(np.all(out == want)), f"icache_thrash({t}): chains hold {out.tolist()}, expected {want.tolist()}"
        )
        return int(res[1])

    def thrash(self, cubin: bytes, t: int, t_sm: int) -> int:
        """Warp 0 of the block on t_sm runs t FFMAs (one block per SM, launched alone); its %warpid."""
        self.dev.memset32(self.tres, 0, 8)
        self.fn(cubin, "icache_thrash")(
            self.ctx.props["sm_count"], 256, self._thrash_args(t_sm, False), smem=self._smem()
        )
        self.dev.sync("icache_thrash")
        return self._thrashed(t, t_sm)

    def concurrent(
        self, o_fn, n: int, o_sm: int, o_warp: int, thr: bytes, t: int, t_sm: int
    ) -> tuple[list[float], int, int, int] | None:
        """Observer kernel (3 passes; waits after pass 0) and thrasher kernel (many small blocks, the first
        on t_sm thrashes) on two streams at once: cycles per FFMA of each pass, observer SM and %warpid,
        thrasher %warpid; None when the handshake failed (the kernels did not overlap)."""
        self.dev.memset32(self.flag, 0, 4)
        self.dev.memset32(self.res, 0, 2 * 32)
        self.dev.memset32(self.tres, 0, 8)
        self.dev.sync("reset of the privacy flags")
        t_fn = self.fn(thr, "icache_thrash")
        for f in (o_fn, t_fn):  # one L1/shared split for both, or the thrasher's blocks cannot join the observer's SM
            f.set_carveout(100)
        # on two streams: Device.launch uses the legacy stream 0, which would serialise the two kernels
        self.streams[0].launch(
            o_fn, self.ctx.props["sm_count"], 256, self._observe_args(n, o_sm, o_warp, 3, True), self._smem()
        )
        self.streams[1].launch(t_fn, 4 * self.ctx.props["sm_count"], 32, self._thrash_args(t_sm, True))
        self.dev.sync("icache_observe + icache_thrash on two streams")
        waits = self.dev.download(self.res, np.int64, 32)[18], self.dev.download(self.tres, np.int64, 4)
        if int(waits[0]) or int(waits[1][2]) or not int(waits[1][3]):
            return None  # the two kernels did not run at the same time (or no thrasher block landed on t_sm)
        passes, sm, warp = self._observed(n, o_sm, 3)
        return passes, sm, warp, self._thrashed(t, t_sm)

    @property
    def streams(self) -> tuple[Stream, ...]:
        if self._streams is None:
            self._streams = (Stream(self.dev), Stream(self.dev))
        return self._streams

    def gpc_groups(self, cubin: bytes) -> list[list[int]]:
        """SMs linked by hosting blocks of one cluster (a cluster never leaves its GPC): GPCs, or parts
        of them where too few clusters landed. One block per SM, 16 waves of clusters of 8, then of 16."""
        linked: list[list[int]] = []
        for cs in (8, 16):
            n = (16 * self.ctx.props["sm_count"]) // cs * cs
            buf = self.dev.alloc(4 * n)
            try:
                self.fn(cubin, "cluster_smid")(
                    n, 32, [Arg.ptr(buf)], smem=self._smem(), cluster=(cs, 1, 1), non_portable_cluster=cs > 8
                )
                self.dev.sync("cluster_smid")
                sm = [int(v) for v in self.dev.download(buf, np.uint32, n)]
            except Exception:  # noqa: BLE001 - a cluster size the GPU cannot place: the other size's groups stand
                continue
            finally:
                self.dev.free(buf)
            linked += [sm[i : i + cs] for i in range(0, n, cs)]
        return priv.merge_groups(linked)


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
    name="icache",
    title="Instruction caches: FFMA-sequence staircase, geometry and privacy",
    axes={
        "code size": "2 KiB .. 1 MiB of straight-line FFMA (log steps), fine 128 B (L0) / 512 B (L1) steps past each capacity",
        "privacy": "thrasher warp / observer warps 0-4 of its SM (sub-core by %warpid), its TPC pair, an SM of its GPC, an SM of "
        "another cluster group; sequential (fresh or re-run code) and concurrent methods",
    },
    kernels=[ICACHE],
    timeout_s=400,
    paper="002 §3.3 Figs. 3.3-3.5, Table 3.1",
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
    ctx.series(
        "ffma_sequence",
        "code size",
        "bytes",
        "inverse throughput",
        "cycles/instr",
        pts,
        plot="logx",
        figure="icache_staircase",
        passes=PASSES,
        launches=launches,
        threshold=thr,
    )
    ctx.progress(50, 100, "levels")
    method = (
        f"one warp, {PASSES} passes per launch over a straight-line FFMA sequence (8 independent chains), median of the "
        f"{PASSES - 1} warm passes, {launches} launches per size; steps > {thr:.4f} cycles/instr "
        f"(6 pooled sigmas of the launch-to-launch spread); {b.sass_note}"
    )
    lv = staircase.levels(xs, ys, steps)
    for name, level in zip(LEVELS, lv):
        on = [y for x, y in zip(xs, ys) if abs(y - level) <= thr]
        ctx.figure(
            f"cache.icache.{name}_cycles_per_instr",
            round(level, 4),
            "cycles/instr",
            "derived",
            method,
            (min(on), max(on)) if on else None,
        )
    caps = [int(s.x_last_low) for s in steps]
    if len(steps) < 2:
        ctx.soft_check(False, f"expected two instruction-cache steps below 1 MiB, found {len(steps)}")
    fine = _geometry(ctx, b, r, steps, thr, launches)
    for name, s in zip(("l0", "l1"), steps):
        if name in fine:  # the fine scan's last point on the level: 128 B / 512 B resolution
            ctx.figure(
                f"cache.icache.{name}_bytes",
                int(fine[name]),
                "bytes",
                "derived",
                f"largest code size on the {name.upper()} level in the fine scan past the coarse step; {method}",
            )
        else:
            ctx.figure(
                f"cache.icache.{name}_bytes",
                int(s.x_last_low),
                "bytes",
                "derived",
                f"largest code size on the {name.upper()} level before the step to {s.y_after:.3f} cycles/instr; {method}",
                (s.x_last_low, s.x_first_high),
                note=f"the step lies between {s.x_last_low:.0f} and {s.x_first_high:.0f} B",
            )
    ctx.progress(75, 100, "privacy")
    if len(caps) >= 2:
        _privacy(ctx, b, r, int(fine.get("l0", caps[0])), caps[1])
    if r.clock_pairs:
        mhz = [c / g * 1000 for c, g in r.clock_pairs if g >= 20_000] or [
            c / g * 1000 for c, g in r.clock_pairs if g > 0
        ]
        ctx.sm_clock(
            float(np.median(mhz)),
            f"clock64 over %globaltimer across all passes of each icache_seq launch, median of {len(mhz)}",
            (min(mhz), max(mhz)),
        )


def _geometry(
    ctx: BenchContext, b: Builder, r: Runner, steps: list[staircase.Step], thr: float, launches: int
) -> dict[str, float]:
    """Jia Fig. 3.4: fine, even steps from each capacity to the first point of the next level;
    stages = sets, stage width = line, ways = capacity / (sets x line). Returns each scanned level's
    capacity at the fine resolution (the last point before the first departure from its level)."""
    caps: dict[str, float] = {}
    plans = [
        ("l0", 128),
        ("l1", 512),
    ]  # (level, step bytes): ~60 builds of ~130 KiB each for L1, cheap enough for quick mode
    for (name, res), st in zip(plans, steps):
        cap = int(st.x_last_low)
        start, stop = (cap // res) * res, int(st.x_first_high) + 4 * res
        sizes = list(range(start, stop + 1, res))
        data = _measure(ctx, b, r, sizes, launches)
        xs, ys, pts = _curve(data)
        ctx.series(
            f"{name}_fine",
            "code size",
            "bytes",
            "inverse throughput",
            "cycles/instr",
            pts,
            plot="line",
            figure=f"icache_{name}_stages",
            step_bytes=res,
        )
        base = float(np.median([y for x, y in zip(xs, ys) if x <= cap])) if any(x <= cap for x in xs) else ys[0]
        fine_cap = xs[0]
        for x, y in zip(xs, ys):
            if abs(y - base) > thr:
                break
            fine_cap = x
        caps[name] = fine_cap
        cap = int(fine_cap)
        geo = staircase.set_geometry(xs, ys, thr, float(cap), float(sizes[-1]))
        how = (
            f"{res} B steps from the {name.upper()} capacity to past the next level: Jia's stages (a sequentially re-read "
            "footprint overflows one more set of an LRU set-associative cache per extra line), stage count = sets, "
            "stage width = line, ways = capacity / (sets x line)"
        )
        if geo is None:
            for what in ("line_bytes", "ways"):
                ctx.figure(
                    f"cache.icache.{name}_{what}",
                    "n/a",
                    "",
                    "derived",
                    how,
                    note="no even stages above the noise: the level does not fill like an LRU set-associative cache at this resolution",
                )
            continue
        ctx.figure(f"cache.icache.{name}_stage_bytes", int(geo.line), "bytes", "derived", f"width of the stages; {how}")
        ctx.figure(f"cache.icache.{name}_stages", geo.stages, "stages", "derived", f"count of the stages; {how}")
        pow2 = geo.stages & (geo.stages - 1) == 0
        if pow2:
            ctx.figure(f"cache.icache.{name}_line_bytes", int(geo.line), "bytes", "derived", how)
            ctx.figure(f"cache.icache.{name}_ways", round(geo.ways, 2), "ways", "derived", how)
        else:
            note = (
                f"{geo.stages} stages of {geo.line:.0f} B: not a power-of-two set count, so the LRU set-associative model "
                "does not fit and no line/ways are claimed"
            )
            for what in ("line_bytes", "ways"):
                ctx.figure(f"cache.icache.{name}_{what}", "n/a", "", "derived", how, note=note)
    return caps


def _privacy(ctx: BenchContext, b: Builder, r: Runner, l0: int, l1: int) -> None:
    """Jia Fig. 3.5, with the observer's and the thrasher's code in two modules (two builds), so no
    observer code sits next to thrash code. Sequential method: observer launch (warms its code),
    thrasher launch, observer launch whose first pass is the value (its second pass: the warm
    reference). Concurrent method: both kernels at once on two streams, the observer waiting between
    its warm pass and its timed pass in its own small loop. Controls per observer: no thrasher, and
    thrashers whose code fits the level together with the observed code."""

    def ffmas(nbytes: float) -> int:
        return max(8, int(nbytes) // INSTR_BYTES // 8 * 8)

    levels = {
        "l0": (
            ffmas(l0 / 2),
            [ffmas(f * l0) for f in (0.125, 0.25)],
            [ffmas(f * l0) for f in (1.5, 2.5) if f * l0 < l1],
        ),
        "l1": (ffmas(min(2 * l0, l1 / 2)), [ffmas(f * l1) for f in (0.125, 0.25)], [ffmas(f * l1) for f in (1.5, 2.5)]),
    }
    obs = b.many(sorted({(n, 8) for n, _, _ in levels.values()}))
    thr = b.many(
        sorted({(8, t) for _, fit, over in levels.values() for t in [8] + fit + over})
    )  # 8: the concurrent no-thrash control
    any_cubin = next(iter(obs.values()))
    sms = r.smids(any_cubin)
    groups = r.gpc_groups(any_cubin)
    # the thrasher on an SM of the largest cluster group whose TPC partner (SMs 2k, 2k+1: an assumption) is in it too
    big = groups[0] if groups else [sms[0]]
    t_sm = next((s for s in big if (s ^ 1) in big), big[0])
    gpc = next((g for g in groups if t_sm in g), [t_sm])
    pair_sm = t_sm ^ 1 if (t_sm ^ 1) in sms else None
    same_gpc = next((s for s in gpc if s not in (t_sm, pair_sm)), None)
    others = [s for g in groups if t_sm not in g for s in g]  # SMs in another cluster group
    far_sm = max(others, key=lambda s: abs(s - t_sm)) if others else None
    near = [(t_sm, w) for w in range(5)]
    farther = [(s, 0) for s in (pair_sm, same_gpc, far_sm) if s is not None]
    placements = {"l0": near + farther, "l1": near[:2] + farther}
    resolution = 2.0  # cycles of clock-read granularity, spread over the observed FFMAs

    def rank(o_sm: int, o_wid: int, t_wid: int) -> int:
        same = o_sm == t_sm
        return priv.rank_of(
            same,
            same and o_wid % 4 == t_wid % 4,
            same and o_wid == t_wid,
            pair_sm is not None and o_sm == pair_sm,
            o_sm in gpc,
        )

    texts: dict[str, dict[str, priv.Verdict]] = {}
    for level, (n, fit, over) in levels.items():
        ts = [0] + fit + over
        texts[level] = {}
        for method in METHODS:
            trials: list[tuple[int, int, float, int | None]] = []  # (observer SM, thrash FFMAs, cycles/FFMA, rank)
            failed = None
            for o_sm, o_warp in placements[level]:
                vals: dict[int, list[float]] = {}
                for t in ts:
                    for _ in range(3):
                        t_wid = None
                        if method == "reused":  # one module for every trial, warmed by two passes each time
                            fn = r.fn(obs[(n, 8)], "icache_observe")
                            r.observe(fn, n, o_sm, o_warp, 2)
                            t_wid = r.thrash(thr[(8, t)], t, t_sm) if t else None
                            (v, _), _, o_wid = r.observe(fn, n, o_sm, o_warp, 2)
                        elif method == "fresh":  # a new load per trial: code run once before the thrash
                            fn = r.fresh(obs[(n, 8)], "icache_observe")
                            r.observe(fn, n, o_sm, o_warp, 1)
                            t_wid = r.thrash(thr[(8, t)], t, t_sm) if t else None
                            (v, _), _, o_wid = r.observe(fn, n, o_sm, o_warp, 2)
                        else:
                            got = r.concurrent(
                                r.fresh(obs[(n, 8)], "icache_observe"),
                                n,
                                o_sm,
                                o_warp,
                                thr[(8, max(t, 8))],
                                max(t, 8),
                                t_sm,
                            )
                            if got is None:
                                failed = f"the observer and thrasher kernels did not overlap (SMs {o_sm}, {t_sm})"
                                break
                            (_, v, _), _, o_wid, t_wid = got
                        vals.setdefault(t, []).append(v)
                        trials.append((o_sm, t, v, rank(o_sm, o_wid, t_wid) if t_wid is not None else None))
                    if failed:
                        break
                if failed:
                    break
                pts = [
                    Point(t * INSTR_BYTES, float(np.median(vals[t])), min(vals[t]), max(vals[t]), len(vals[t]))
                    for t in ts
                ]
                ctx.series(
                    f"{level}_{method}_sm{o_sm}_w{o_warp}",
                    "thrash size",
                    "bytes",
                    "observer inverse throughput",
                    "cycles/instr",
                    pts,
                    plot="line",
                    figure=f"icache_privacy_{level}_{method}",
                    observed_bytes=n * INSTR_BYTES,
                    thrasher_sm=t_sm,
                    observer_sm=o_sm,
                    observer_warp=o_warp,
                )
            if failed:
                texts[level][method] = priv.Verdict({}, {}, 0.0, f"inconclusive: {failed}", False)
                continue
            # one observer per (SM, rank relative to the thrasher in that trial: warp slots change from launch to launch);
            # its controls: every unthrashed or fitting-thrash trial on that SM
            observers = []
            for o_sm, rk in sorted({(o, k) for o, t, _, k in trials if t in over and k is not None}):
                controls = tuple(v for o, t, v, _ in trials if o == o_sm and t in [0] + fit)
                thrashed = tuple(v for o, t, v, k in trials if o == o_sm and k == rk and t in over)
                observers.append(priv.Observer(f"SM {o_sm} {priv.DOMAINS[rk]}", rk, controls, thrashed))
            texts[level][method] = priv.judge(observers, priv.rise_threshold(observers, k=6.0, floor=resolution / n))
    gpc_note = (
        f"thrasher on SM {t_sm}; its TPC pair SM {pair_sm} (SMs 2k, 2k+1 assumed to form a TPC); GPC of SM {t_sm} as linked by "
        f"thread-block clusters of 8 and 16 (a cluster never leaves its GPC): {len(gpc)} SMs; {len(groups)} such groups over "
        f"{sum(map(len, groups))} of {len(sms)} SMs; same-GPC observer SM {same_gpc}; observer in another group SM {far_sm} "
        "(another GPC unless two groups are parts of one)"
    )
    for level, (n, fit, over) in levels.items():
        v = texts[level]
        fresh, con = v["fresh"], v["concurrent"]
        if fresh.conclusive and con.conclusive and fresh.domain == con.domain:
            text = f"{fresh.domain} (both methods agree)"
        elif fresh.conclusive and con.conclusive:
            text = f"inconclusive: the sequential method says {fresh.domain}, the concurrent one {con.domain}"
        elif fresh.conclusive or con.conclusive:
            one, other = ("sequential", "concurrent") if fresh.conclusive else ("concurrent", "sequential")
            text = f"{(fresh if fresh.conclusive else con).domain} (the {one} method; the {other} one is inconclusive)"
        else:
            text = "inconclusive (neither method)"
        method = (
            f"observed sequence {n * INSTR_BYTES} B (within {level.upper()}); thrash sizes {[t * INSTR_BYTES for t in fit]} B "
            f"(controls, fit beside it) and {[t * INSTR_BYTES for t in over]} B (beyond {level.upper()}), 3 repetitions each, plus no "
            f"thrasher; observer and thrasher code in separate modules; sequential: a new load of the observer module per trial, "
            f"an observer launch running it once, the thrasher launch, an observer launch timing its first pass; concurrent: a new "
            f"observer load per trial, both kernels at once on two streams, the observer running its code once, waiting for the "
            f"thrasher, timing the next pass; an observer slowed when the median after the large thrashes exceeds the median of "
            f"its SM's controls by more than 6 pooled robust sigmas of the controls and by more than half the rise of the observer "
            f"nearest the thrasher (eviction costs a level step; smaller significant rises are named as interference); each "
            f"trial's relation from the %warpid of "
            f"both warps (sub-core = %warpid % 4, Jia's mapping); {gpc_note}"
        )
        notes = []
        for m, vd in v.items():
            rises = ", ".join(f"{k}: {vd.rise[k]:+.3f}{' slowed' if vd.slowed[k] else ''}" for k in vd.rise)
            notes.append(f"{m}: {vd.text} [threshold {vd.threshold:.3f} cycles/instr; rises {rises}]")
        ctx.figure(f"cache.icache.{level}_private_to", text, "", "derived", method, note="; ".join(notes))
        ctx.figure(
            f"cache.icache.{level}_reused_code_evicted_by",
            v["reused"].text,
            "",
            "derived",
            "as the sequential method, but one module load for every trial and two passes of the observer before each thrash "
            "(code the observer has re-run many times): which observers a larger thrasher still slows down",
        )
