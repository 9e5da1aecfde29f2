"""The cache suite, instruction caches (Jia §3.3, Figs. 3.3-3.5).

Straight-line FFMA sequences of growing length, generated per length (sources.py; built, checked in
SASS to be exactly that many FFMAs between two clock reads with no branch, and launched by
icache_probe.py). One warp runs a sequence several times; the warm passes give cycles per instruction.
The staircase of that inverse throughput over code size shows each instruction-cache level; fine steps
past each capacity show Jia's stages (one per set, one line wide); two warps / two SMs, one thrashing
and one timing, show which level is private to what (icache_privacy.py).
"""

from __future__ import annotations

import numpy as np

from ...analysis import staircase
from ...models import Point
from ..context import BenchContext
from ..registry import KernelSpec, benchmark
from . import icache_privacy as privacy
from .icache_probe import ICACHE, PASSES, Builder, Runner, icache_spec, seq_spec
from .sources import INSTR_BYTES


def _size_grid(lo: int, hi: int, per_octave: int) -> list[int]:
    """Code sizes in bytes, multiples of 8 FFMAs (128 B), geometric."""
    n = int(np.ceil(np.log2(hi / lo) * per_octave)) + 1
    step = 8 * INSTR_BYTES
    return sorted({max(step, int(round(v / step)) * step) for v in np.geomspace(lo, hi, n)})


def staircase_sizes(quick: bool) -> list[int]:
    """The coarse grid of code sizes (bytes) the staircase starts from."""
    return _size_grid(2048, 1024 * 1024, 3 if quick else 6)


def _measure(
    ctx: BenchContext, b: Builder, r: Runner, sizes: list[int], launches: int, phase: tuple[str, int, int]
) -> dict[int, list[float]]:
    """Cycles per FFMA of each code size. Every build and every size measured is a progress step (`phase`: its
    name and its share of the benchmark's 0..100): a cold cache compiles ~60 builds of up to 1 MiB of code
    here, which took 105 s without a word on a fresh H200 and tripped the hang watchdog."""
    what, lo, hi = phase
    mid = (lo + hi) // 2
    n_sizes = len(sizes)

    def built(done: int, total: int) -> None:
        ctx.progress(lo + (mid - lo) * done // total, 100, f"{what}: built {done}/{total}")

    specs = b.seqs([s // INSTR_BYTES for s in sizes], built)
    out: dict[int, list[float]] = {}
    for i, s in enumerate(sizes, 1):
        n = s // INSTR_BYTES
        out[s] = [r.seq(specs[n], n) for _ in range(launches)]
        ctx.progress(mid + (hi - mid) * i // n_sizes, 100, f"{what}: measured {i}/{n_sizes} sizes")
    return out


def _seqs(sizes: list[int]) -> list[KernelSpec]:
    """The builds that time each code size (bytes)."""
    return [seq_spec(s // INSTR_BYTES) for s in sizes]


def prebuilt(target: object, mode: str) -> list:
    """The staircase builds, known before the benchmark starts: the runner compiles them ahead."""
    return _seqs(staircase_sizes(mode == "quick"))


FINE = (("l0", 128), ("l1", 512))  # (level, step bytes): ~80 builds of ~130 KiB each for L1, cheap enough for quick


def fine_sizes(step: staircase.Step, res: int) -> list[int]:
    """The fine scan past a coarse step: `res` steps from its last low point to 4 steps past its first high one."""
    start, stop = (int(step.x_last_low) // res) * res, int(step.x_first_high) + 4 * res
    return list(range(start, stop + 1, res))


def _curve(ctx: BenchContext, data: dict[int, list[float]]) -> tuple[list[float], list[float], list[Point]]:
    xs = sorted(data)
    ys = [float(np.median(data[x])) for x in xs]
    pts = [ctx.point(x, data[x]) for x in xs]
    return [float(x) for x in xs], ys, pts


LEVELS = ("l0", "l1", "l2")
# what `sass icache` shows of the generated builds: the whole file (as the privacy experiments build it) with the
# smallest sequence of the quick grid and one near the middle, and the icache_seq build (as the staircase and the
# fine scans build it) of the smallest (every build is checked at run time anyway; the 1 MiB one would cost
# seconds of NVRTC for the same SASS)
_QUICK = staircase_sizes(True)
GENERATED = [icache_spec(s // INSTR_BYTES) for s in (_QUICK[0], _QUICK[len(_QUICK) // 2])] + _seqs(_QUICK[:1])


@benchmark(
    name="icache",
    title="Instruction caches: FFMA-sequence staircase, geometry and privacy",
    axes={
        "code size": "2 KiB .. 1 MiB of straight-line FFMA (log steps), "
        "fine 128 B (L0) / 512 B (L1) steps past each capacity",
        "privacy": "thrasher warp / observer warps 0-4 of its SM (sub-core by %warpid), its TPC pair, "
        "an SM of its GPC, an SM of another cluster group; sequential (fresh or re-run code) and concurrent methods",
    },
    kernels=[ICACHE, *GENERATED],
    prebuild=prebuilt,
    timeout_s=400,
    paper="002 §3.3 Figs. 3.3-3.5, Table 3.1",
)
def icache(ctx: BenchContext) -> None:
    b, r = Builder(ctx), Runner(ctx)
    try:
        _icache(ctx, b, r)
    finally:
        r.close()  # its streams (the buffers go with the benchmark)
        b.close()  # its compile processes


def _icache(ctx: BenchContext, b: Builder, r: Runner) -> None:
    launches = 3
    data = _measure(ctx, b, r, staircase_sizes(ctx.quick), launches, ("staircase", 0, 30))
    xs, ys, _ = _curve(ctx, data)
    reps = [data[x] for x in data]
    resolution = 2.0 / min(data)  # two cycles over the shortest sequence's FFMA count (clock read granularity)
    thr = staircase.threshold(reps, k=6.0, floor=resolution * INSTR_BYTES)
    steps = staircase.rising_steps(staircase.find_steps(xs, ys, thr))
    # refine every step: bisect the gap between its last low and first high point
    for rnd in range(2 if ctx.quick else 3):
        new = []
        for s in steps:
            new += [int(round(v / 128)) * 128 for v in np.linspace(s.x_last_low, s.x_first_high, 5)[1:-1]]
        new = sorted({v for v in new if v not in data})
        if not new:
            break
        b.prefetch(_seqs(new))  # this round's builds first: it waits for them
        if rnd and steps:  # then the L0 scan's, on the workers this round leaves idle: once bisected, its range
            b.prefetch(_seqs(fine_sizes(steps[0], FINE[0][1])))  # only narrows (quick-m: the final one already)
        data.update(_measure(ctx, b, r, new, launches, (f"refining the steps ({rnd + 1})", 30 + 7 * rnd, 37 + 7 * rnd)))
        xs, ys, _ = _curve(ctx, data)
        steps = staircase.rising_steps(staircase.find_steps(xs, ys, thr))
    xs, ys, pts = _curve(ctx, data)
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
        f"one warp, {PASSES} passes per launch over a straight-line FFMA sequence (8 independent chains), median of "
        f"the {PASSES - 1} warm passes, {launches} launches per size; steps > {thr:.4f} cycles/instr "
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
    scans = [(name, res, st, fine_sizes(st, res)) for (name, res), st in zip(FINE, steps)]
    # what the coarse steps decide, queued now in the order it is needed: the L0 scan's builds, the L1 privacy
    # thrashers (the largest builds; they need only the L1 capacity), the L1 scan's; the rest of the privacy
    # builds once the L0 scan gave its capacity. The pool compiles on while the scans measure.
    b.prefetch(_seqs(scans[0][3]) if scans else [])
    if len(caps) >= 2:
        b.prefetch([icache_spec(*p) for p in privacy.thrash_ahead(caps[0], caps[1])])
    b.prefetch(_seqs(scans[1][3]) if len(scans) > 1 else [])
    fine: dict[str, float] = {}
    for k, (name, res, st, sizes) in enumerate(scans):
        fine[name] = _geometry(ctx, b, r, name, res, st, sizes, thr, launches, k)
        if name == "l0" and len(caps) >= 2:
            privacy.prefetch(b, int(fine["l0"]), caps[1])
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
                f"largest code size on the {name.upper()} level "
                f"before the step to {s.y_after:.3f} cycles/instr; {method}",
                (s.x_last_low, s.x_first_high),
                note=f"the step lies between {s.x_last_low:.0f} and {s.x_first_high:.0f} B",
            )
    ctx.progress(75, 100, "privacy")
    if len(caps) >= 2:
        privacy.privacy(ctx, b, r, int(fine.get("l0", caps[0])), caps[1])
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
    ctx: BenchContext,
    b: Builder,
    r: Runner,
    name: str,
    res: int,
    st: staircase.Step,
    sizes: list[int],
    thr: float,
    launches: int,
    k: int,
) -> float:
    """Jia Fig. 3.4 for one level (the k-th step): fine, even steps from its capacity to the first point of the
    next level; stages = sets, stage width = line, ways = capacity / (sets x line). Returns the level's capacity at
    the fine resolution (the last point before the first departure from its level)."""
    cap = int(st.x_last_low)
    data = _measure(ctx, b, r, sizes, launches, (f"{name.upper()} stages", 50 + 12 * k, 62 + 12 * k))
    xs, ys, pts = _curve(ctx, data)
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
    cap = int(fine_cap)
    geo = staircase.set_geometry(xs, ys, thr, float(cap), float(sizes[-1]))
    how = (
        f"{res} B steps from the {name.upper()} capacity to past the next level: Jia's stages (a sequentially "
        "re-read footprint overflows one more set of an LRU set-associative cache per extra line), stage count = "
        "sets, stage width = line, ways = capacity / (sets x line)"
    )
    if geo is None:
        for what in ("line_bytes", "ways"):
            ctx.figure(
                f"cache.icache.{name}_{what}",
                "n/a",
                "",
                "derived",
                how,
                note="no even stages above the noise: "
                "the level does not fill like an LRU set-associative cache at this resolution",
            )
        return fine_cap
    ctx.figure(f"cache.icache.{name}_stage_bytes", int(geo.line), "bytes", "derived", f"width of the stages; {how}")
    ctx.figure(f"cache.icache.{name}_stages", geo.stages, "stages", "derived", f"count of the stages; {how}")
    pow2 = geo.stages & (geo.stages - 1) == 0
    if pow2:
        ctx.figure(f"cache.icache.{name}_line_bytes", int(geo.line), "bytes", "derived", how)
        ctx.figure(f"cache.icache.{name}_ways", round(geo.ways, 2), "ways", "derived", how)
    else:
        note = (
            f"{geo.stages} stages of {geo.line:.0f} B: not a power-of-two set count, so the LRU set-associative "
            "model does not fit and no line/ways are claimed"
        )
        for what in ("line_bytes", "ways"):
            ctx.figure(f"cache.icache.{name}_{what}", "n/a", "", "derived", how, note=note)
    return fine_cap
