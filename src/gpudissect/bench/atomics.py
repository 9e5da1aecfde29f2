"""The atomics suite (Jia §4.2, Table 4.2, Fig. 4.1): latency of atom/red on global and shared memory,
with and without contention, and red.add throughput in Jia's contention scenarios up to the whole GPU.

All atomics are inline PTX at addresses ptxas cannot prove warp-uniform: for a uniform address ptxas
aggregates a full warp's adds itself (VOTE + SHFL scan + one atom), which would hide what the
hardware does. The SASS checks say so for every kernel. Every launch checks the final memory values.
"""

from __future__ import annotations

import numpy as np

from ..device.cuda import Arg
from ..errors import GpuDissectError
from ..models import Point
from .context import BenchContext
from .registry import KernelSpec, benchmark

SUITE = "atomics"
_CLOCK = r"CS2R(\.32)? R\d+, SR_CLOCKLO"
OPS = {"add_u32": "ADD", "add_f32": r"ADD\.F32", "add_f64": r"ADD\.F64", "cas": "CAS", "exch": "EXCH", "max": "MAX", "min": "MIN"}
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


class Lat:
    def __init__(self, ctx: BenchContext):
        self.ctx, self.dev = ctx, ctx.device
        self.word = self.dev.alloc(64)
        self.res = self.dev.alloc(8 * 40)
        self.clock: list[float] = []

    def close(self) -> None:
        self.dev.free(self.word)
        self.dev.free(self.res)

    def run(self, space: str, op: str, lanes: int, warm: int, steps: int) -> float:
        """Cycles per dependent step of lane 0 (all lanes on one word), final value checked."""
        init = 0xFFFFFFFF if op == "min" else 0
        self.dev.upload(np.array([init, 0], np.uint32), self.word)
        fn = self.ctx.kernel(ATOMICS, f"lat_{space}_{op}")
        fn(1, lanes, [Arg.ptr(self.word), Arg.u32(0), Arg.u32(warm), Arg.u32(steps), Arg.ptr(self.res)])
        self.dev.sync(f"lat_{space}_{op}")
        res = self.dev.download(self.res, np.uint64, 34)
        want = simulate(op, lanes, warm + steps)
        if op in FLOAT_OPS:
            got = float(self.dev.download(self.word, FLOAT_OPS[op], 1)[0])
        else:
            got = int(self.dev.download(self.word, np.uint32, 1)[0])
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
    suite=SUITE, name="atomic_latency", title="Atomic latency: atom on global and shared, 1..32 contending lanes",
    axes={"space": "global, shared", "op": ", ".join(OPS), "lanes on one address": "1, 2, 4, 8, 16, 32"},
    kernels=[ATOMICS], timeout_s=200, paper="002 §4.2 Table 4.2",
)
def latency(ctx: BenchContext) -> None:
    reps, steps = (3, 1024) if ctx.quick else (7, 4096)
    lop, lop_lo, lop_hi = lop3_latency(ctx, reps)
    ctx.figure("atom.link_lop3_cycles", round(lop, 3), "cycles", "measured",
               "dependent LOP3 chain on per-lane operands, difference of two lengths; subtracted from every atomic chain", (lop_lo, lop_hi))
    lat = Lat(ctx)
    try:
        method = (f"one lane, {steps} dependent atoms (inline PTX; each operand made from the previous return by one LOP3, "
                  f"subtracted), median of {reps} launches; final memory value checked")
        for space in ("global", "shared"):
            for op in OPS:
                y, lo, hi = lat.median(space, op, 1, reps, steps)
                note = ("sm_90 has no shared-memory float add: ptxas emits an LDS + ATOMS.CAST.SPIN retry loop, "
                        "so this is the latency of that loop" if space == "shared" and op in FLOAT_OPS else
                        "one word whose home L2 partition relative to the timing SM is not chosen: the latency holds "
                        "for that placement (a far-partition access costs ~180 cycles more, see l2_fine_pchase)"
                        if space == "global" else "")
                ctx.figure(f"atom.{space}.{op}.latency_cycles", round(y - lop, 2), "cycles", "derived", method, (lo - lop, hi - lop),
                           note=note)
            pts = []
            for lanes in (1, 2, 4, 8, 16, 32):
                y, lo, hi = lat.median(space, "add_u32", lanes, reps, steps)
                pts.append(Point(lanes, y - lop, lo - lop, hi - lop, reps))
                if lanes > 1:
                    ctx.figure(f"atom.{space}.add_u32.contended_{lanes}_latency_cycles", round(y - lop, 2), "cycles", "derived",
                               f"{lanes} lanes of one warp, each a dependent chain of atom.add on the same word; lane 0's cycles per step, LOP3 subtracted")
            ctx.series(space, "lanes on one address", "", "latency", "cycles", pts, plot="line", figure="atomic_latency_contention")
        _red(ctx, reps, steps, lop)
    finally:
        lat.close()
    if lat.clock:
        ctx.sm_clock(float(np.median(lat.clock)), f"clock64 over %globaltimer around each timed atomic chain, median of {len(lat.clock)}",
                     (min(lat.clock), max(lat.clock)))


def _red(ctx: BenchContext, reps: int, steps: int, lop: float) -> None:
    """red has no return: time red.add + a dependent ld.relaxed.gpu of the same word, against the
    loads alone."""
    dev = ctx.device
    word, res = dev.alloc(64), dev.alloc(64)
    try:
        pair, load = [], []
        for _ in range(reps):
            dev.memset32(word, 0, 2)
            ctx.kernel(ATOMICS, "red_ld_global")(1, 1, [Arg.ptr(word), Arg.u32(0), Arg.u32(64), Arg.u32(steps), Arg.ptr(res)])
            dev.sync("red_ld_global")
            r = dev.download(res, np.uint64, 3)
            ctx.check(int(r[2]) == 64 + steps, f"red+ld chain read {int(r[2])}, expected {64 + steps}")
            pair.append(int(r[1]) / steps)
            ctx.kernel(ATOMICS, "ld_chain_global")(1, 1, [Arg.ptr(word), Arg.u32(0), Arg.u32(64), Arg.u32(steps), Arg.ptr(res)])
            dev.sync("ld_chain_global")
            r = dev.download(res, np.uint64, 3)
            ctx.check(int(r[2]) == 64 + steps, f"load chain read {int(r[2])}, expected {64 + steps}")
            load.append(int(r[1]) / steps)
    finally:
        dev.free(word)
        dev.free(res)
    p, ld = float(np.median(pair)), float(np.median(load))
    ctx.figure("atom.global.red_add_u32_then_load_cycles", round(p, 2), "cycles", "measured",
               f"red.add then a dependent ld.relaxed.gpu of the same word, per pair (includes one LOP3), median of {reps}", (min(pair), max(pair)))
    ctx.figure("atom.global.load_relaxed_gpu_cycles", round(ld, 2), "cycles", "measured",
               "chain of ld.relaxed.gpu on one word (address formed from the previous value)", (min(load), max(load)))
    ctx.figure("atom.global.red_add_u32.extra_cycles", round(p - ld, 2), "cycles", "derived",
               "red+load pair minus the load chain: what a red in front of a dependent load of its word costs")


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

    def run(self, blocks: int, threads: int, share: int, stride: int, iters: int, f32: bool = False) -> dict[str, float]:
        total_threads = blocks * threads
        words = ((total_threads - 1) // share) * stride + 1
        self.ctx.check(words <= self.max_words, f"{words} words exceed the buffer")
        self.dev.memset32(self.buf, 0, words)
        name = "red_contend_f32" if f32 else "red_contend_u32"
        val = Arg.f32(1.0) if f32 else Arg.u32(1)
        self.ctx.kernel(ATOMICS, name)(blocks, threads, [Arg.ptr(self.buf), Arg.u32(min(share, 0xFFFFFFFF)), Arg.u32(stride),
                                                         Arg.u32(iters), val, Arg.ptr(self.times)])
        self.dev.sync(name)
        got = self.dev.download(self.buf, np.float32 if f32 else np.uint32, words).astype(np.int64)
        idx = (np.arange(total_threads, dtype=np.int64) // share) * stride
        want = np.bincount(idx, minlength=words) * iters
        bad = int(np.count_nonzero(got != want))
        self.ctx.check(bad == 0, f"{name}(blocks={blocks}, threads={threads}, share={share}, stride={stride}): {bad} words wrong")
        t = self.dev.download(self.times, np.int64, 4 * blocks).reshape(blocks, 4)
        ns = float(t[:, 3].max() - t[:, 2].min())
        cyc = (t[:, 1] - t[:, 0]).astype(float)
        dur = (t[:, 3] - t[:, 2]).astype(float)
        long = dur >= 50_000  # %globaltimer ticks coarsely: only long blocks give the clock
        if np.any(long):
            self.clock.append(float(np.median(cyc[long] / dur[long] * 1000)))
        ops = float(total_threads * iters)
        return {"ops": ops, "ns": ns, "gops": ops / ns, "gbps": 4 * ops / ns, "warps": max(1, total_threads // 32), "iters": iters}

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
    suite=SUITE, name="atomic_throughput", title="red.add throughput under Jia's contention scenarios, 1 thread to the whole GPU",
    axes={"scenario": "S1/S2: one block, R threads per address (neighbouring / one line per group); S3: B blocks on one address; "
                      "S4: B blocks, one address per block; warp merging probes",
          "contending threads": "1 .. 2 x SMs x 1024"},
    kernels=[ATOMICS], timeout_s=200, paper="002 §4.2 Fig. 4.1",
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
    ctx.sm_clock(c.mhz, f"clock64 over %globaltimer per block of every red_contend launch whose blocks ran >= 50 us, median of {len(c.clock)}",
                 (min(c.clock), max(c.clock)))


def _scenarios(ctx: BenchContext, c: Contend, sms: int, max_blocks: int, iters: int) -> float:
    """Jia's scenarios; returns the GPU-wide one-word update rate (ops/clk)."""
    rs = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    blocks = sorted({1, 2, 4, 8, 16, 32, 64, sms // 2, sms, max_blocks})
    how = ("ops per clock = all red.add of the launch / (first %globaltimer start to last end, in SM cycles at the clock "
           "the blocks measured); every word's final count checked")
    for name, stride in (("s1_neighbouring", 1), ("s2_line_per_group", 32)):
        pts = [Point(r, c.per_clk(c.run(1, 1024, r, stride, iters))) for r in rs]
        ctx.series(name, "threads per address (R)", "", "throughput", "ops/clk", pts, plot="logx", figure="atomic_throughput_block",
                   iters=iters, stride_bytes=4 * stride)
    s3, s4 = [], []
    for b in blocks:
        s3.append(Point(b * 1024, c.per_clk(c.run(b, 1024, ALL, 1, iters))))
        s4.append(Point(b * 1024, c.per_clk(c.run(b, 1024, 1024, 32, iters))))
    ctx.series("s3_one_address", "contending threads", "", "throughput", "ops/clk", s3, plot="logx", figure="atomic_throughput_gpu")
    ctx.series("s4_address_per_block", "contending threads", "", "throughput", "ops/clk", s4, plot="logx", figure="atomic_throughput_gpu")
    dist = c.run(max_blocks, 1024, 1, 1, iters)
    ctx.series("distinct_neighbouring", "contending threads", "", "throughput", "ops/clk",
               [Point(b * 1024, c.per_clk(c.run(b, 1024, 1, 1, iters))) for b in blocks], plot="logx", figure="atomic_throughput_gpu")
    ctx.figure("atom.global.distinct_address.ops_per_clk_sm", round(c.per_clk(dist) / sms, 3), "ops/clk/SM", "measured",
               f"{max_blocks} blocks x 1024 threads, every thread its own word (neighbouring words), {iters} red.add each; {how}; divided by {sms} SMs")
    ctx.figure("atom.global.distinct_address.gbps", round(dist["gbps"], 1), "GB/s", "derived", "the same, as 4-byte updates per second")
    warp = c.run(max_blocks, 1024, 32, 32, iters)
    ctx.figure("atom.global.same_address_warp.ops_per_clk", round(c.per_clk(warp), 2), "ops/clk", "measured",
               f"{max_blocks} blocks x 1024 threads, the 32 lanes of each warp on one word, warps on separate 128 B lines; {how}")
    gpu = c.run(max_blocks, 1024, ALL, 1, iters)
    ctx.figure("atom.global.same_address_gpu.ops_per_clk", round(c.per_clk(gpu), 2), "ops/clk", "measured",
               f"{max_blocks} blocks x 1024 threads all on one word; {how}")
    f32_iters = max(1, min(iters, (1 << 24) // (max_blocks * 1024)))  # sums of 1.0 stay exact below 2^24
    f = c.run(max_blocks, 1024, ALL, 1, f32_iters, f32=True)
    ctx.figure("atom.global.add_f32.same_address_gpu.gops", round(f["gops"], 2), "Gops/s", "measured",
               f"{max_blocks} blocks x 1024 threads, red.add.f32 of 1.0 on one word, {f32_iters} each (the sum stays exact); "
               "updates per ns from %globaltimer; final sum checked exactly")
    ctx.figure("atom.global.add_f32.same_address_gpu.ops_per_clk", round(c.per_clk(f), 2), "ops/clk", "derived", "the same per SM clock")
    return c.per_clk(gpu)


def _merging(ctx: BenchContext, c: Contend, serial_rate: float) -> None:
    """Does a warp's same-address red cost about one update? One warp alone (so nothing else
    competes): 32 lanes on one word, 32 lanes on 32 words of one line, 32 lanes on 32 lines, 1 lane.
    Two predictions for 32 lanes on one word: merged (about one lane's time) or applied one by one at
    the rate one word takes updates GPU-wide (32 / that rate); the measurement is set against both."""
    n = 4096
    cases = {"one_lane": (1, ALL, 1), "warp_same_word": (32, ALL, 1), "warp_one_line": (32, 1, 1), "warp_32_lines": (32, 1, 32)}
    per: dict[str, float] = {}
    for name, (threads, share, stride) in cases.items():
        vals = [c.cycles_per_warp_instr(c.run(1, threads, share, stride, n)) for _ in range(3)]
        per[name] = float(np.median(vals))
        ctx.figure(f"atom.global.merge.{name}_cycles_per_instr", round(per[name], 2), "cycles", "measured",
                   f"one warp alone, {n} back-to-back red.add per lane, launch span in SM cycles / instructions", (min(vals), max(vals)))
    same, one = per["warp_same_word"], per["one_lane"]
    serial = 32 / serial_rate
    merged = abs(np.log(same / one)) < abs(np.log(same / serial))
    text = (f"{'yes' if merged else 'no'}: a warp's 32 same-word red.add take {same:.1f} cycles per instruction; merged into one "
            f"update they would take about one lane's {one:.1f}, applied one by one at the GPU-wide one-word rate "
            f"({serial_rate:.2f} updates/clk) {serial:.1f}; the measurement is nearer the {'first' if merged else 'second'}")
    ctx.figure("atom.global.same_address_warp.merged", text, "", "derived",
               "one warp alone issuing red.add (inline PTX, no compiler aggregation in SASS), against the two predictions",
               note=f"32 words of one line: {per['warp_one_line']:.1f}, 32 lines: {per['warp_32_lines']:.1f} cycles per instruction")
