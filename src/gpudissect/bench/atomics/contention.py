"""The atomics suite (Jia §4.2, Table 4.2, Fig. 4.1): latency of atom/red on global and shared memory,
with and without contention, and red.add throughput in Jia's contention scenarios up to the whole GPU.

All atomics are inline PTX at addresses ptxas cannot prove warp-uniform: for a uniform address ptxas
aggregates a full warp's adds itself (VOTE + SHFL scan + one atom), which would hide what the
hardware does. The SASS checks say so for every kernel. Every launch checks the final memory values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...analysis import clustering
from ...device.cuda import Arg, Buffer
from ...errors import GpuDissectError
from ...models import Point
from ..context import BenchContext
from ..registry import KernelSpec, benchmark

_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
OPS = {
    "add_u32": "ADD",
    "add_f32": r"ADD\.F32",
    "add_f64": r"ADD\.F64",
    "cas": "CAS",
    "exch": "EXCH",
    "max": "MAX",
    "min": "MIN",
}
_NO_AGG = r"\A(?![\s\S]*\b(VOTE|VOTEU|POPC|UPOPC|SHFL)\b)"  # no compiler-side warp aggregation anywhere


def _lat_required() -> dict[str, list[str]]:
    req: dict[str, list[str]] = {}
    for op, sass in OPS.items():
        req[f"lat_global_{op}"] = [rf"ATOMG\.E\.{sass}", _CLOCK, _NO_AGG]
        # sm_90 has no shared-memory float add: ptxas emits an LDS + ATOMS.CAST.SPIN retry loop
        shared = r"ATOMS\.CAST\.SPIN" + (r"\.64" if op == "add_f64" else "") if op in FLOAT_OPS else rf"ATOMS\.{sass}"
        req[f"lat_shared_{op}"] = [shared, _CLOCK, _NO_AGG]
    req["red_ld_global"] = [r"REDG\.E\.ADD", r"LDG\.E\.STRONG\.GPU", _NO_AGG]
    req["ld_chain_global"] = [r"LDG\.E\.STRONG\.GPU", _CLOCK]
    req["probe_lines"] = [r"LDG\.E\.STRONG\.GPU", r"ATOMG\.E\.ADD", _CLOCK, r"SR_VIRTUALSMID", _NO_AGG]
    req["alu_chain"] = [r"LOP3\.LUT R\d+, R\d+, R\d+, R\d+, 0xea", _CLOCK]
    req["red_contend_u32"] = [r"REDG\.E\.ADD\.STRONG\.GPU", _CLOCK, _NO_AGG]
    req["red_contend_f32"] = [r"REDG\.E\.ADD\.F32", _CLOCK, _NO_AGG]
    return req


FLOAT_OPS = {"add_f32": np.float32, "add_f64": np.float64}
ATOMICS = KernelSpec("atomics.cu", _lat_required())


def simulate(op: str, lanes: int, total_steps: int) -> int | float:
    """Final value of the word after `lanes` lanes each ran `total_steps` steps of the chain."""
    if op in ("add_u32", "add_f32", "add_f64"):
        return lanes * total_steps
    if lanes != 1:
        raise ValueError(f"{op} chains run on one lane")
    if op in ("max", "min"):
        return 1 if total_steps else (0 if op == "max" else 0xFFFFFFFF)
    word, o = 0, (1 if op == "cas" else 0)
    for _ in range(total_steps):
        if op == "cas":
            old = word
            if word == (o ^ 1):
                word = o
            o = old
        else:  # exch
            old, word = word, o ^ 1
            o = old
    return word


PROBE_LINES, LINE = 64, 128  # candidate words: the first word of 64 consecutive 128 B lines


@dataclass
class Placement:
    """Near and far candidate lines for the SM the one-block launches run on, from a chain of
    dependent atom.add on each line (an atomic is performed at its line's home L2 partition): two
    latency modes, the home partition near or far; the same lines' ld.relaxed.gpu chains beside."""

    sm: int
    near: int  # line index
    far: int | None  # None when no two modes separate
    near_cycles: float
    far_cycles: float | None
    threshold: float
    lat: list[float]  # per line: atom.add chain, cycles per step (LOP3 link not subtracted)
    ld: list[float]  # per line: ld.relaxed.gpu chain, cycles per load


def split_lines(
    per_line: list[list[float]], k: float = 6.0, floor: float = 2.0
) -> tuple[int, int | None, float, float | None, float]:
    """(near line, far line or None, near median, far median, threshold) from each line's repeated
    per-load latencies: 2-means over the line medians; the modes count only when their centres differ
    by more than k pooled sigmas of the repetitions (at least `floor` cycles). The chosen lines are
    the members nearest each mode's median."""
    med = np.array([float(np.median(v)) for v in per_line])
    dev = [x - float(np.median(v)) for v in per_line for x in v]
    thr = max(k * float(np.sqrt(np.mean(np.square(dev)))) if dev else 0.0, floor)
    lo, hi = clustering.kmeans_1d(med, 2) if len(set(med.round(6))) > 1 else (None, None)
    if lo is None or hi is None or hi.median - lo.median <= thr:
        i = int(np.argmin(np.abs(med - np.median(med))))
        return i, None, float(med[i]), None, thr
    cut = (lo.hi + hi.lo) / 2
    near_ids = [i for i in range(len(med)) if med[i] <= cut]
    far_ids = [i for i in range(len(med)) if med[i] > cut]
    n = min(near_ids, key=lambda i: abs(med[i] - lo.median))
    f = min(far_ids, key=lambda i: abs(med[i] - hi.median))
    return n, f, float(med[n]), float(med[f]), thr


class Lat:
    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.base = self.dev.alloc(PROBE_LINES * LINE)
        self.dev.memset32(self.base, 0, PROBE_LINES * LINE // 4)
        self.line = 0  # the global chains' word: the first word of this line of base
        self.res = self.dev.alloc(8 * (2 * PROBE_LINES + 8))
        self.clock: list[float] = []
        self.sms: set[int] = set()

    @property
    def word(self) -> int:
        return self.base.ptr + self.line * LINE

    def close(self) -> None:
        self.dev.free(self.base)
        self.dev.free(self.res)

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
        v = [self.run(space, op, lanes, 64, steps) for _ in range(reps)]
        return float(np.median(v)), min(v), max(v)


def lop3_latency(ctx: BenchContext, reps: int) -> tuple[float, float, float]:
    """Cycles of one dependent LOP3 (from two chain lengths, so fixed costs cancel)."""
    dev = ctx.device
    inp = dev.upload(np.concatenate([np.zeros(32, np.uint32), np.ones(32, np.uint32)]))
    res = dev.alloc(8 * 40)
    fn = ctx.kernel(ATOMICS, "alu_chain")
    try:

        def t(steps: int) -> int:
            fn(1, 1, [Arg.ptr(inp), Arg.u32(steps), Arg.ptr(res)])
            dev.sync("alu_chain")
            r = dev.download(res, np.uint64, 2)
            ctx.check(int(r[1]) == 1, f"alu_chain ended at {int(r[1])}, expected 1")
            return int(r[0])

        vals = [(t(4096) - t(2048)) / (4 * 2048) for _ in range(reps)]
    finally:
        dev.free(inp)
        dev.free(res)
    return float(np.median(vals)), min(vals), max(vals)


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
    try:
        place = lat.probe(reps)
        lat.line = place.near
        where = (
            f"the word is the first of line {place.near} of a 64-line probe set, whose dependent atom.add chain from SM "
            f"{place.sm} sits in the fast mode ({place.near_cycles:.1f} cycles per step with the LOP3 link): home L2 partition "
            f"near that SM (ld.relaxed.gpu chain on it: {place.ld[place.near]:.1f} cycles per load)"
            if place.far is not None
            else f"no near/far split among the 64 probed lines from SM {place.sm} (line latencies within {place.threshold:.1f} cycles)"
        )
        method = (
            f"one lane, {steps} dependent atoms (inline PTX; each operand made from the previous return by one LOP3, "
            f"subtracted), median of {reps} launches; final memory value checked"
        )
        for space in ("global", "shared"):
            for op in OPS:
                y, lo, hi = lat.median(space, op, 1, reps, steps)
                note = (
                    "sm_90 has no shared-memory float add: ptxas emits an LDS + ATOMS.CAST.SPIN retry loop, "
                    "so this is the latency of that loop"
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
                    note=f"the word is the first of line {place.far}, in the slow mode of the probe's atom.add chains from SM "
                    f"{place.sm} ({place.far_cycles:.1f} cycles per step): home L2 partition far from that SM "
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
                        f"{lanes} lanes of one warp, each a dependent chain of atom.add on the same word; lane 0's cycles per step, LOP3 subtracted",
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
    finally:
        lat.close()
    if lat.clock:
        ctx.sm_clock(
            float(np.median(lat.clock)),
            f"clock64 over %globaltimer around each timed atomic chain, median of {len(lat.clock)}",
            (min(lat.clock), max(lat.clock)),
        )


def _red(ctx: BenchContext, lat: Lat, place: Placement, reps: int, steps: int) -> None:
    """red has no return: time red.add + a dependent ld.relaxed.gpu of the same word, against the
    loads alone; on the near word, and the loads alone on the far word."""
    dev = ctx.device
    res = dev.alloc(64)

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

    try:
        pair, load, far = [], [], []
        for _ in range(reps):
            pair.append(chain("red_ld_global", place.near))
            load.append(chain("ld_chain_global", place.near))
            if place.far is not None:
                far.append(chain("ld_chain_global", place.far))
    finally:
        dev.free(res)
    if far:
        ctx.figure(
            "atom.global.load_relaxed_gpu_far_cycles",
            round(float(np.median(far)), 2),
            "cycles",
            "measured",
            f"chain of ld.relaxed.gpu on the far-partition word (line {place.far}) from SM {place.sm}, median of {reps}",
            (min(far), max(far)),
        )
    p, ld = float(np.median(pair)), float(np.median(load))
    ctx.figure(
        "atom.global.red_add_u32_then_load_cycles",
        round(p, 2),
        "cycles",
        "measured",
        f"red.add then a dependent ld.relaxed.gpu of the same word, per pair (includes one LOP3), median of {reps}",
        (min(pair), max(pair)),
    )
    ctx.figure(
        "atom.global.load_relaxed_gpu_cycles",
        round(ld, 2),
        "cycles",
        "measured",
        f"chain of ld.relaxed.gpu on the near-partition word of the atomic chains (line {place.near}, SM {place.sm}; "
        f"address formed from the previous value), median of {reps}",
        (min(load), max(load)),
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
            f"SM {place.sm}: {n_near} of 64 lines near-home ({place.near_cycles:.1f} cycles per dependent atom.add step), "
            f"{64 - n_near} far-home ({place.far_cycles:.1f}); atomics on line {place.near} (near), far figure on line {place.far}"
        )
    ctx.figure(
        "atom.global.word_placement",
        text,
        "",
        "derived",
        "dependent atom.add chain on each of 64 lines 128 B apart (an atomic is performed at its line's home L2 partition; "
        "ld.relaxed.gpu is not used to place: a far-home line may be read from a near copy), 2-means of each line's median "
        f"(3 launches); the modes count when they differ by more than 6 pooled sigmas of the launches (threshold "
        f"{place.threshold:.1f} cycles); the L2 partition hash itself is the memory suite's (mem.l2.partition_hash_bits): "
        "this probe only sorts lines by the side their home lies on for this SM",
    )


# ---------------------------------------------------------------------------------------
# Throughput
# ---------------------------------------------------------------------------------------
ALL = 1 << 31  # share larger than any thread count: every thread on word 0


class Contend:
    def __init__(self, ctx: BenchContext, max_words: int, max_blocks: int):
        self.ctx, self.dev = ctx, ctx.device
        self.buf = self.dev.alloc(4 * max_words)
        self.times = self.dev.alloc(32 * max_blocks)
        self.max_words = max_words
        self.clock: list[float] = []

    def close(self) -> None:
        self.dev.free(self.buf)
        self.dev.free(self.times)

    def run(
        self, blocks: int, threads: int, share: int, stride: int, iters: int, f32: bool = False
    ) -> dict[str, float]:
        total_threads = blocks * threads
        words = ((total_threads - 1) // share) * stride + 1
        self.ctx.check(words <= self.max_words, f"{words} words exceed the buffer")
        self.dev.memset32(self.buf, 0, words)
        name = "red_contend_f32" if f32 else "red_contend_u32"
        val = Arg.f32(1.0) if f32 else Arg.u32(1)
        self.ctx.kernel(ATOMICS, name)(
            blocks,
            threads,
            [
                Arg.ptr(self.buf),
                Arg.u32(min(share, 0xFFFFFFFF)),
                Arg.u32(stride),
                Arg.u32(iters),
                val,
                Arg.ptr(self.times),
            ],
        )
        self.dev.sync(name)
        got = self.dev.download(self.buf, np.float32 if f32 else np.uint32, words).astype(np.int64)
        idx = (np.arange(total_threads, dtype=np.int64) // share) * stride
        want = np.bincount(idx, minlength=words) * iters
        bad = int(np.count_nonzero(got != want))
        self.ctx.check(
            bad == 0, f"{name}(blocks={blocks}, threads={threads}, share={share}, stride={stride}): {bad} words wrong"
        )
        t = self.dev.download(self.times, np.int64, 4 * blocks).reshape(blocks, 4)
        ns = float(t[:, 3].max() - t[:, 2].min())
        cyc = (t[:, 1] - t[:, 0]).astype(float)
        dur = (t[:, 3] - t[:, 2]).astype(float)
        long = dur >= 50_000  # %globaltimer ticks coarsely: only long blocks give the clock
        if np.any(long):
            self.clock.append(float(np.median(cyc[long] / dur[long] * 1000)))
        ops = float(total_threads * iters)
        return {
            "ops": ops,
            "ns": ns,
            "gops": ops / ns,
            "gbps": 4 * ops / ns,
            "warps": max(1, total_threads // 32),
            "iters": iters,
        }

    @property
    def mhz(self) -> float:
        if not self.clock:
            raise GpuDissectError("no red_contend launch lasted long enough to measure the SM clock")
        return float(np.median(self.clock))

    def per_clk(self, r: dict[str, float]) -> float:
        return r["ops"] / (r["ns"] * self.mhz / 1000)

    def cycles_per_warp_instr(self, r: dict[str, float]) -> float:
        return r["ns"] * self.mhz / 1000 / (r["iters"] * r["warps"])

    def calibrate(self) -> None:
        """A long launch (distinct words) whose blocks measure the SM clock for every conversion."""
        self.run(self.ctx.props["sm_count"], 1024, 1, 1, 2048)


@benchmark(
    name="atomic_throughput",
    title="red.add throughput under Jia's contention scenarios, 1 thread to the whole GPU",
    axes={
        "scenario": "S1/S2: one block, R threads per address (neighbouring / one line per group); S3: B blocks on one address; "
        "S4: B blocks, one address per block; warp merging probes",
        "contending threads": "1 .. 2 x SMs x 1024",
    },
    kernels=[ATOMICS],
    timeout_s=200,
    paper="002 §4.2 Fig. 4.1",
)
def throughput(ctx: BenchContext) -> None:
    sms = ctx.props["sm_count"]
    max_blocks = 2 * sms
    c = Contend(ctx, max_words=max_blocks * 1024 * 32 + 64, max_blocks=max_blocks)
    iters = 64 if ctx.quick else 256
    try:
        c.calibrate()
        serial = _scenarios(ctx, c, sms, max_blocks, iters)
        _merging(ctx, c, serial)
    finally:
        c.close()
    ctx.sm_clock(
        c.mhz,
        f"clock64 over %globaltimer per block of every red_contend launch whose blocks ran >= 50 us, median of {len(c.clock)}",
        (min(c.clock), max(c.clock)),
    )


def _scenarios(ctx: BenchContext, c: Contend, sms: int, max_blocks: int, iters: int) -> float:
    """Jia's scenarios; returns the GPU-wide one-word update rate (ops/clk)."""
    rs = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    blocks = sorted({1, 2, 4, 8, 16, 32, 64, sms // 2, sms, max_blocks})
    how = (
        "ops per clock = all red.add of the launch / (first %globaltimer start to last end, in SM cycles at the clock "
        "the blocks measured); every word's final count checked"
    )
    for name, stride in (("s1_neighbouring", 1), ("s2_line_per_group", 32)):
        pts = [Point(r, c.per_clk(c.run(1, 1024, r, stride, iters))) for r in rs]
        ctx.series(
            name,
            "threads per address (R)",
            "",
            "throughput",
            "ops/clk",
            pts,
            plot="logx",
            figure="atomic_throughput_block",
            iters=iters,
            stride_bytes=4 * stride,
        )
    s3, s4 = [], []
    for b in blocks:
        s3.append(Point(b * 1024, c.per_clk(c.run(b, 1024, ALL, 1, iters))))
        s4.append(Point(b * 1024, c.per_clk(c.run(b, 1024, 1024, 32, iters))))
    ctx.series(
        "s3_one_address",
        "contending threads",
        "",
        "throughput",
        "ops/clk",
        s3,
        plot="logx",
        figure="atomic_throughput_gpu",
    )
    ctx.series(
        "s4_address_per_block",
        "contending threads",
        "",
        "throughput",
        "ops/clk",
        s4,
        plot="logx",
        figure="atomic_throughput_gpu",
    )
    dist = c.run(max_blocks, 1024, 1, 1, iters)
    ctx.series(
        "distinct_neighbouring",
        "contending threads",
        "",
        "throughput",
        "ops/clk",
        [Point(b * 1024, c.per_clk(c.run(b, 1024, 1, 1, iters))) for b in blocks],
        plot="logx",
        figure="atomic_throughput_gpu",
    )
    ctx.figure(
        "atom.global.distinct_address.ops_per_clk_sm",
        round(c.per_clk(dist) / sms, 3),
        "ops/clk/SM",
        "measured",
        f"{max_blocks} blocks x 1024 threads, every thread its own word (neighbouring words), {iters} red.add each; {how}; divided by {sms} SMs",
    )
    ctx.figure(
        "atom.global.distinct_address.gbps",
        round(dist["gbps"], 1),
        "GB/s",
        "derived",
        "the same, as 4-byte updates per second",
    )
    warp = c.run(max_blocks, 1024, 32, 32, iters)
    ctx.figure(
        "atom.global.same_address_warp.ops_per_clk",
        round(c.per_clk(warp), 2),
        "ops/clk",
        "measured",
        f"{max_blocks} blocks x 1024 threads, the 32 lanes of each warp on one word, warps on separate 128 B lines; {how}",
    )
    gpu = c.run(max_blocks, 1024, ALL, 1, iters)
    ctx.figure(
        "atom.global.same_address_gpu.ops_per_clk",
        round(c.per_clk(gpu), 2),
        "ops/clk",
        "measured",
        f"{max_blocks} blocks x 1024 threads all on one word; {how}",
    )
    f32_iters = max(1, min(iters, (1 << 24) // (max_blocks * 1024)))  # sums of 1.0 stay exact below 2^24
    f = c.run(max_blocks, 1024, ALL, 1, f32_iters, f32=True)
    ctx.figure(
        "atom.global.add_f32.same_address_gpu.gops",
        round(f["gops"], 2),
        "Gops/s",
        "measured",
        f"{max_blocks} blocks x 1024 threads, red.add.f32 of 1.0 on one word, {f32_iters} each (the sum stays exact); "
        "updates per ns from %globaltimer; final sum checked exactly",
    )
    ctx.figure(
        "atom.global.add_f32.same_address_gpu.ops_per_clk",
        round(c.per_clk(f), 2),
        "ops/clk",
        "derived",
        "the same per SM clock",
    )
    return c.per_clk(gpu)


def _merging(ctx: BenchContext, c: Contend, serial_rate: float) -> None:
    """Does a warp's same-address red cost about one update? One warp alone (so nothing else
    competes): 32 lanes on one word, 32 lanes on 32 words of one line, 32 lanes on 32 lines, 1 lane.
    Two predictions for 32 lanes on one word: merged (about one lane's time) or applied one by one at
    the rate one word takes updates GPU-wide (32 / that rate); the measurement is set against both."""
    n = 4096
    cases = {
        "one_lane": (1, ALL, 1),
        "warp_same_word": (32, ALL, 1),
        "warp_one_line": (32, 1, 1),
        "warp_32_lines": (32, 1, 32),
    }
    per: dict[str, float] = {}
    for name, (threads, share, stride) in cases.items():
        vals = [c.cycles_per_warp_instr(c.run(1, threads, share, stride, n)) for _ in range(3)]
        per[name] = float(np.median(vals))
        ctx.figure(
            f"atom.global.merge.{name}_cycles_per_instr",
            round(per[name], 2),
            "cycles",
            "measured",
            f"one warp alone, {n} back-to-back red.add per lane, launch span in SM cycles / instructions",
            (min(vals), max(vals)),
        )
    same, one = per["warp_same_word"], per["one_lane"]
    serial = 32 / serial_rate
    merged = abs(np.log(same / one)) < abs(np.log(same / serial))
    text = (
        f"{'yes' if merged else 'no'}: a warp's 32 same-word red.add take {same:.1f} cycles per instruction; merged into one "
        f"update they would take about one lane's {one:.1f}, applied one by one at the GPU-wide one-word rate "
        f"({serial_rate:.2f} updates/clk) {serial:.1f}; the measurement is nearer the {'first' if merged else 'second'}"
    )
    ctx.figure(
        "atom.global.same_address_warp.merged",
        text,
        "",
        "derived",
        "one warp alone issuing red.add (inline PTX, no compiler aggregation in SASS), against the two predictions",
        note=f"32 words of one line: {per['warp_one_line']:.1f}, 32 lines: {per['warp_32_lines']:.1f} cycles per instruction",
    )
