"""The atomics suite, latency (Jia §4.2, Table 4.2): atom on global and shared memory for every op, one
lane and 1..32 lanes contending for one word, red.add in front of a dependent load, and the placement of
the global word: near or far from the timing SM's home L2 partition. Every launch checks the final
memory value (model.simulate).
"""

from __future__ import annotations

import numpy as np

from ...analysis.stats import median_spread
from ...device.cuda import Arg, Buffer
from ...models import Point
from ..context import BenchContext
from ..registry import benchmark
from ..shared import sass_of
from .model import Placement, simulate, split_lines
from .spec import ATOMICS, FLOAT_OPS, OPS

PROBE_LINES, LINE = 64, 128  # candidate words: the first word of 64 consecutive 128 B lines


class Lat:
    """One-block launches of the latency kernels. Global chains use the first word of line `line` of a
    64-line probe set (base); shared chains write their word back to base's first word. The buffers are
    the context's, freed when the benchmark ends."""

    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.base = ctx.alloc(PROBE_LINES * LINE)
        self.dev.memset32(self.base, 0, PROBE_LINES * LINE // 4)
        self.line = 0  # the global chains' word: the first word of this line of base
        self.res = ctx.alloc(8 * (2 * PROBE_LINES + 8))
        self.clock: list[float] = []
        self.sms: set[int] = set()

    @property
    def word(self) -> int:
        return self.base.ptr + self.line * LINE

    def _probe(self, reps: int, steps: int, atomic: bool) -> tuple[list[list[float]], set[int]]:
        fn = self.ctx.kernel(ATOMICS, "probe_lines")
        per: list[list[float]] = [[] for _ in range(PROBE_LINES)]
        sms = set()
        for _ in range(reps):
            self.dev.memset32(self.base, 0, PROBE_LINES * LINE // 4)
            fn(
                1,
                1,
                [
                    Arg.ptr(self.base),
                    Arg.u32(0),
                    Arg.u32(LINE // 4),
                    Arg.u32(PROBE_LINES),
                    Arg.u32(steps),
                    Arg.u32(int(atomic)),
                    Arg.ptr(self.res),
                ],
            )
            self.dev.sync("probe_lines")
            r = self.dev.download(self.res, np.uint64, 2 * PROBE_LINES + 1)
            want = steps - 1 if atomic else 0  # atom returns the value before its add
            self.ctx.check(
                bool(np.all(r[PROBE_LINES + 1 :] == want)),
                f"probe_lines (atomic={atomic}) read {r[PROBE_LINES + 1]}, expected {want}",
            )
            sms.add(int(r[PROBE_LINES]))
            for i in range(PROBE_LINES):
                per[i].append(int(r[i]) / steps)
        self.dev.memset32(self.base, 0, PROBE_LINES * LINE // 4)
        return per, sms

    def probe(self, reps: int, steps: int = 128) -> Placement:
        per, sms = self._probe(reps, steps, True)
        ld, sms_ld = self._probe(reps, steps, False)
        sms |= sms_ld
        self.ctx.check(
            len(sms) == 1, f"the one-block probe launches ran on SMs {sorted(sms)}: no single SM to place for"
        )
        near, far, nc, fc, thr = split_lines(per)
        return Placement(
            sms.pop(), near, far, nc, fc, thr, [float(np.median(v)) for v in per], [float(np.median(v)) for v in ld]
        )

    def run(self, space: str, op: str, lanes: int, warm: int, steps: int) -> float:
        """Cycles per dependent step of lane 0 (all lanes on one word), final value checked."""
        init = 0xFFFFFFFF if op == "min" else 0
        word = self.word if space == "global" else self.base.ptr  # shared: the kernel writes its word back here
        self.dev.upload(np.array([init, 0], np.uint32), Buffer(word, 8))
        fn = self.ctx.kernel(ATOMICS, f"lat_{space}_{op}")
        fn(1, lanes, [Arg.ptr(word), Arg.u32(0), Arg.u32(warm), Arg.u32(steps), Arg.ptr(self.res)])
        self.dev.sync(f"lat_{space}_{op}")
        res = self.dev.download(self.res, np.uint64, 35)
        if space == "global":
            self.sms.add(int(res[34]))
        want = simulate(op, lanes, warm + steps)
        if op in FLOAT_OPS:
            got = float(self.dev.download(word, FLOAT_OPS[op], 1)[0])
        else:
            got = int(self.dev.download(word, np.uint32, 1)[0])
        self.dev.upload(np.zeros(2, np.uint32), Buffer(word, 8))  # the probe expects zeroed lines
        self.ctx.check(got == want, f"lat_{space}_{op} with {lanes} lanes left {got}, expected {want}")
        if int(res[33]) > 0:
            self.clock.append(int(res[0]) / int(res[33]) * 1000)
        return int(res[0]) / steps

    def median(self, space: str, op: str, lanes: int, reps: int, steps: int) -> tuple[float, float, float]:
        """(median, min, max) cycles per step of `reps` chains."""
        return median_spread([self.run(space, op, lanes, 64, steps) for _ in range(reps)])


def lop3_latency(ctx: BenchContext, reps: int) -> tuple[float, float, float]:
    """(median, min, max) cycles of one dependent LOP3 (from two chain lengths, so fixed costs cancel)."""
    dev = ctx.device
    with ctx.scratch():
        inp = ctx.upload(np.concatenate([np.zeros(32, np.uint32), np.ones(32, np.uint32)]))
        res = ctx.alloc(8 * 40)
        fn = ctx.kernel(ATOMICS, "alu_chain")

        def t(steps: int) -> int:
            fn(1, 1, [Arg.ptr(inp), Arg.u32(steps), Arg.ptr(res)])
            dev.sync("alu_chain")
            r = dev.download(res, np.uint64, 2)
            ctx.check(int(r[1]) == 1, f"alu_chain ended at {int(r[1])}, expected 1")
            return int(r[0])

        return median_spread([(t(4096) - t(2048)) / (4 * 2048) for _ in range(reps)])


def shared_float_note(ctx: BenchContext, op: str) -> str:
    """How this GPU runs a shared-memory float add, from the SASS of its chain (the SASS its family declares
    where no disassembler is installed): an LDS + ATOMS.CAST.SPIN retry loop, or a native atom."""
    fn = f"lat_shared_{op}"
    sass = sass_of(ctx, ATOMICS, fn)
    spin = "CAST.SPIN" in sass if sass is not None else any("CAST" in p for p in ATOMICS.required_for(ctx.target)[fn])
    arch = f"sm_{ctx.target.major}{ctx.target.minor}"
    if spin:
        return (
            f"{arch} has no shared-memory float add: ptxas emits an LDS + ATOMS.CAST.SPIN retry loop, "
            "so this is the latency of that loop"
        )
    return f"{arch} adds floats in shared memory natively (no ATOMS.CAST.SPIN retry loop in the chain's SASS)"


@benchmark(
    name="atomic_latency",
    title="Atomic latency: atom on global and shared, 1..32 contending lanes",
    axes={"space": "global, shared", "op": ", ".join(OPS), "lanes on one address": "1, 2, 4, 8, 16, 32"},
    kernels=[ATOMICS],
    timeout_s=200,
    paper="002 §4.2 Table 4.2",
)
def latency(ctx: BenchContext) -> None:
    reps, steps = (3, 1024) if ctx.quick else (7, 4096)
    lop, lop_lo, lop_hi = lop3_latency(ctx, reps)
    ctx.figure(
        "atom.link_lop3_cycles",
        round(lop, 3),
        "cycles",
        "measured",
        "dependent LOP3 chain on per-lane operands, difference of two lengths; subtracted from every atomic chain",
        (lop_lo, lop_hi),
    )
    lat = Lat(ctx)
    place = lat.probe(reps)
    lat.line = place.near
    where = (
        f"the word is the first of line {place.near} of a 64-line probe set, whose dependent atom.add chain from SM "
        f"{place.sm} sits in the fast mode ({place.near_cycles:.1f} cycles per step with the LOP3 link): home L2 "
        f"partition near that SM (ld.relaxed.gpu chain on it: {place.ld[place.near]:.1f} cycles per load)"
        if place.far is not None
        else f"no near/far split among the 64 probed lines from SM {place.sm} "
        f"(line latencies within {place.threshold:.1f} cycles)"
    )
    method = (
        f"one lane, {steps} dependent atoms (inline PTX; each operand made from the previous return by one LOP3, "
        f"subtracted), median of {reps} launches; final memory value checked"
    )
    for space in ("global", "shared"):
        for op in OPS:
            y, lo, hi = lat.median(space, op, 1, reps, steps)
            note = (
                shared_float_note(ctx, op)
                if space == "shared" and op in FLOAT_OPS
                else where
                if space == "global"
                else ""
            )
            ctx.figure(
                f"atom.{space}.{op}.latency_cycles",
                round(y - lop, 2),
                "cycles",
                "derived",
                method,
                (lo - lop, hi - lop),
                note=note,
            )
        if space == "global" and place.far is not None:
            lat.line = place.far
            y, lo, hi = lat.median("global", "add_u32", 1, reps, steps)
            lat.line = place.near
            ctx.figure(
                "atom.global.add_u32.far_latency_cycles",
                round(y - lop, 2),
                "cycles",
                "derived",
                method,
                (lo - lop, hi - lop),
                note=f"the word is the first of line {place.far}, in the slow mode of the probe's atom.add chains from "
                f"SM {place.sm} ({place.far_cycles:.1f} cycles per step): home L2 partition far from that SM "
                f"(ld.relaxed.gpu chain on it: {place.ld[place.far]:.1f} cycles per load)",
            )
        pts = []
        for lanes in (1, 2, 4, 8, 16, 32):
            y, lo, hi = lat.median(space, "add_u32", lanes, reps, steps)
            pts.append(Point(lanes, y - lop, lo - lop, hi - lop, reps))
            if lanes > 1:
                ctx.figure(
                    f"atom.{space}.add_u32.contended_{lanes}_latency_cycles",
                    round(y - lop, 2),
                    "cycles",
                    "derived",
                    f"{lanes} lanes of one warp, each a dependent chain of atom.add on the same word; "
                    "lane 0's cycles per step, LOP3 subtracted",
                )
        ctx.series(
            space,
            "lanes on one address",
            "",
            "latency",
            "cycles",
            pts,
            plot="line",
            figure="atomic_latency_contention",
        )
    _red(ctx, lat, place, reps, steps)
    _placement_figures(ctx, lat, place)
    if lat.clock:
        mhz, lo, hi = median_spread(lat.clock)
        ctx.sm_clock(
            mhz, f"clock64 over %globaltimer around each timed atomic chain, median of {len(lat.clock)}", (lo, hi)
        )


def _red(ctx: BenchContext, lat: Lat, place: Placement, reps: int, steps: int) -> None:
    """red has no return: time red.add + a dependent ld.relaxed.gpu of the same word, against the
    loads alone; on the near word, and the loads alone on the far word."""
    dev = ctx.device
    res = ctx.alloc(64)

    def chain(kernel: str, line: int) -> float:
        word = Buffer(lat.base.ptr + line * LINE, 8)
        dev.memset32(word, 0, 2)
        ctx.kernel(ATOMICS, kernel)(1, 1, [Arg.ptr(word), Arg.u32(0), Arg.u32(64), Arg.u32(steps), Arg.ptr(res)])
        dev.sync(kernel)
        r = dev.download(res, np.uint64, 4)
        want = 64 + steps if kernel == "red_ld_global" else 0
        ctx.check(int(r[2]) == want, f"{kernel} read {int(r[2])}, expected {want}")
        lat.sms.add(int(r[3]))
        dev.memset32(word, 0, 2)
        return int(r[1]) / steps

    pair, load, far = [], [], []
    for _ in range(reps):
        pair.append(chain("red_ld_global", place.near))
        load.append(chain("ld_chain_global", place.near))
        if place.far is not None:
            far.append(chain("ld_chain_global", place.far))
    if far:
        f, f_lo, f_hi = median_spread(far)
        ctx.figure(
            "atom.global.load_relaxed_gpu_far_cycles",
            round(f, 2),
            "cycles",
            "measured",
            f"chain of ld.relaxed.gpu on the far-partition word (line {place.far}) from SM {place.sm}, "
            f"median of {reps}",
            (f_lo, f_hi),
        )
    p, p_lo, p_hi = median_spread(pair)
    ld, ld_lo, ld_hi = median_spread(load)
    ctx.figure(
        "atom.global.red_add_u32_then_load_cycles",
        round(p, 2),
        "cycles",
        "measured",
        f"red.add then a dependent ld.relaxed.gpu of the same word, per pair (includes one LOP3), median of {reps}",
        (p_lo, p_hi),
    )
    ctx.figure(
        "atom.global.load_relaxed_gpu_cycles",
        round(ld, 2),
        "cycles",
        "measured",
        f"chain of ld.relaxed.gpu on the near-partition word of the atomic chains (line {place.near}, SM {place.sm}; "
        f"address formed from the previous value), median of {reps}",
        (ld_lo, ld_hi),
    )
    ctx.figure(
        "atom.global.red_add_u32.extra_cycles",
        round(p - ld, 2),
        "cycles",
        "derived",
        "red+load pair minus the load chain: what a red in front of a dependent load of its word costs",
    )


def _placement_figures(ctx: BenchContext, lat: Lat, place: Placement) -> None:
    """Where the global chains ran and which L2 partition their word's home is, with the evidence."""
    ctx.check(
        lat.sms <= {place.sm},
        f"global chains ran on SMs {sorted(lat.sms)}, the placement was probed from SM {place.sm}",
    )
    ctx.figure(
        "atom.global.timing_sm",
        place.sm,
        "SM",
        "measured",
        "%smid of the one-block launches of every global chain and of the placement probe (all the same, checked)",
    )
    for name, v in (("atom.add chain", place.lat), ("ld.relaxed.gpu chain", place.ld)):
        ctx.series(
            name,
            "line (128 B apart)",
            "",
            "cycles per dependent access",
            "cycles",
            [Point(i, y) for i, y in enumerate(v)],
            plot="line",
            figure="atomic_word_placement",
            sm=place.sm,
            near_line=place.near,
            far_line=place.far,
        )
    if place.far is None:
        text = f"no near/far split among 64 lines from SM {place.sm}: the global figures hold for an unplaced word"
    else:
        n_near = sum(v <= (place.near_cycles + place.far_cycles) / 2 for v in place.lat)
        text = (
            f"SM {place.sm}: {n_near} of 64 lines near-home ({place.near_cycles:.1f} cycles per dependent atom.add "
            f"step), {64 - n_near} far-home ({place.far_cycles:.1f}); atomics on line {place.near} (near), far figure "
            f"on line {place.far}"
        )
    ctx.figure(
        "atom.global.word_placement",
        text,
        "",
        "derived",
        "dependent atom.add chain on each of 64 lines 128 B apart (an atomic is performed at its line's home L2 "
        "partition; ld.relaxed.gpu is not used to place: a far-home line may be read from a near copy), 2-means of "
        "each line's median (3 launches); the modes count when they differ by more than 6 pooled sigmas of the "
        f"launches (threshold {place.threshold:.1f} cycles); the L2 partition hash itself is the memory suite's "
        "(mem.l2.partition_hash_bits): this probe only sorts lines by the side their home lies on for this SM",
    )
