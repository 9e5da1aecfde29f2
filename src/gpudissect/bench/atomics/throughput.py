"""The atomics suite, throughput (Jia §4.2, Fig. 4.1): red.add in Jia's contention scenarios from one
block to twice the SM count, distinct and shared words, f32 adds, and whether a warp's same-word adds
cost about one update. Every launch checks every word's final count.
"""

from __future__ import annotations

import numpy as np

from ...analysis.stats import median_spread
from ...device.cuda import Arg
from ...errors import GpuDissectError
from ...models import Point
from ..context import BenchContext
from ..registry import benchmark
from .spec import ATOMICS

ALL = 1 << 31  # share larger than any thread count: every thread on word 0


class Contend:
    """red_contend launches: `share` consecutive threads per word, words `stride` apart. Every block
    records its clock64 and %globaltimer span, which gives the SM clock the per-clock rates use. The
    buffers are the context's, freed when the benchmark ends."""

    def __init__(self, ctx: BenchContext, max_words: int, max_blocks: int):
        self.ctx, self.dev = ctx, ctx.device
        self.buf = ctx.alloc(4 * max_words)
        self.times = ctx.alloc(32 * max_blocks)
        self.max_words, self.max_blocks = max_words, max_blocks
        self.clock: list[float] = []

    def run(
        self, blocks: int, threads: int, share: int, stride: int, iters: int, f32: bool = False
    ) -> dict[str, float]:
        total_threads = blocks * threads
        words = ((total_threads - 1) // share) * stride + 1
        self.ctx.check(words <= self.max_words, f"{words} words exceed the buffer")
        self.ctx.check(blocks <= self.max_blocks, f"{blocks} blocks exceed the timing buffer ({self.max_blocks})")
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
        "scenario": "S1/S2: one block, R threads per address (neighbouring / one line per group); "
        "S3: B blocks on one address; S4: B blocks, one address per block; warp merging probes",
        "contending threads": "1 .. 2 x SMs x 1024",
    },
    kernels=[ATOMICS],
    timeout_s=200,
    paper="002 §4.2 Fig. 4.1",
)
def throughput(ctx: BenchContext) -> None:
    sms = ctx.props["sm_count"]
    max_blocks = 2 * sms
    # the buffers hold the largest launch of any scenario: the fixed block counts (up to 64) exceed
    # 2 x SMs on a GPU of fewer than 32 SMs
    most = max(scenario_blocks(sms))
    c = Contend(ctx, max_words=most * 1024 * 32 + 64, max_blocks=most)
    iters = 64 if ctx.quick else 256
    c.calibrate()
    serial = _scenarios(ctx, c, sms, max_blocks, iters)
    _merging(ctx, c, serial)
    ctx.sm_clock(
        c.mhz,
        "clock64 over %globaltimer per block of every red_contend launch whose blocks ran >= 50 us, "
        f"median of {len(c.clock)}",
        (min(c.clock), max(c.clock)),
    )


def scenario_blocks(sms: int) -> list[int]:
    """The block counts of the GPU-wide scenarios (S3, S4, distinct words): powers of two to 64, then
    half, all and twice the SMs."""
    return sorted({1, 2, 4, 8, 16, 32, 64, sms // 2, sms, 2 * sms} - {0})


def _scenarios(ctx: BenchContext, c: Contend, sms: int, max_blocks: int, iters: int) -> float:
    """Jia's scenarios; returns the GPU-wide one-word update rate (ops/clk)."""
    rs = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    blocks = scenario_blocks(sms)
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
        f"{max_blocks} blocks x 1024 threads, every thread its own word (neighbouring words), {iters} red.add each; "
        f"{how}; divided by {sms} SMs",
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
        f"{max_blocks} blocks x 1024 threads, the 32 lanes of each warp on one word, "
        f"warps on separate 128 B lines; {how}",
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
        per[name], lo, hi = median_spread(
            [c.cycles_per_warp_instr(c.run(1, threads, share, stride, n)) for _ in range(3)]
        )
        ctx.figure(
            f"atom.global.merge.{name}_cycles_per_instr",
            round(per[name], 2),
            "cycles",
            "measured",
            f"one warp alone, {n} back-to-back red.add per lane, launch span in SM cycles / instructions",
            (lo, hi),
        )
    same, one = per["warp_same_word"], per["one_lane"]
    serial = 32 / serial_rate
    merged = abs(np.log(same / one)) < abs(np.log(same / serial))
    text = (
        f"{'yes' if merged else 'no'}: a warp's 32 same-word red.add take {same:.1f} cycles per instruction; merged "
        f"into one update they would take about one lane's {one:.1f}, applied one by one at the GPU-wide one-word rate "
        f"({serial_rate:.2f} updates/clk) {serial:.1f}; the measurement is nearer the {'first' if merged else 'second'}"
    )
    ctx.figure(
        "atom.global.same_address_warp.merged",
        text,
        "",
        "derived",
        "one warp alone issuing red.add (inline PTX, no compiler aggregation in SASS), against the two predictions",
        note=f"32 words of one line: {per['warp_one_line']:.1f}, "
        f"32 lines: {per['warp_32_lines']:.1f} cycles per instruction",
    )
