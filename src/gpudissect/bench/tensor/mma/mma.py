"""mma.sync / mma.sp latency and throughput over the (#warps, ILP) grid (Sun et al. §4-6)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ....device.cuda import Arg
from ....errors import GpuDissectError
from ....models import Point
from ...context import BenchContext
from ...registry import Facts, KernelSpec, Needs, Param, benchmark, comma_names
from ...shared import by_family, one_block_per_sm_smem, sass_of
from . import lowering
from .common import (
    AT_PEAK,
    LATENCY_UNROLL,
    REC,
    Cell,
    ChainFit,
    arch_peak,
    chain_cycles,
    chain_iters,
    chain_method,
    convergence,
    grid,
    measure_chain,
    per_block,
    sm_clock_hz,
)
from .fragments import BITS, FLOAT
from .lowering import Execution, sass_patterns
from .variants import CHAINS, MmaInputs, MmaVariant, all_variants, check_combination, check_d, make_inputs


# ---------------------------------------------------------------------------------------
# Kernel specs with the SASS each variant must hold on each family (lowering.py; `gpudissect sass`)
# ---------------------------------------------------------------------------------------
def _required(v: MmaVariant, family: str) -> dict[str, list[str]]:
    # a family that cannot run the variant keeps Hopper's patterns (nothing is checked there)
    pats = sass_patterns(v, family if family in lowering.runs_on(v) else lowering.HOPPER)
    return {f"mma_ilp{i}": pats for i in range(1, 7)}


def mma_spec(v: MmaVariant) -> KernelSpec:
    return KernelSpec(
        "tensor_mma.cu",
        _required(v, lowering.HOPPER),
        lowering.defines(v),
        label=f"tensor_mma.cu[{v.family}.{v.key}]",
        needs=lowering.needs_of(v),
        required_by_family=by_family(lambda fam: _required(v, fam)),
    )


DENSE_VARIANTS = all_variants(False)
SPARSE_VARIANTS = all_variants(True)
SPECS = {v: mma_spec(v) for v in DENSE_VARIANTS + SPARSE_VARIANTS}


# ---------------------------------------------------------------------------------------
# Running one variant over the (#warps, ILP) grid
# ---------------------------------------------------------------------------------------
class MmaRunner:
    """Device buffers of one variant and its launches (one block per SM, on every SM). The buffers come
    from ctx.upload / ctx.alloc: make the runner inside `with ctx.scratch():` to free them after it."""

    def __init__(self, ctx: BenchContext, v: MmaVariant, inp: MmaInputs):
        self.ctx, self.v, self.inp = ctx, v, inp
        p = ctx.props
        self.sms = p["sm_count"]
        self.smem = one_block_per_sm_smem(p)
        self.spec = SPECS[v]
        self.cbytes = 8 if BITS[v.c] == 64 else 4
        self.ab_dtype = np.uint64 if v.a == "f64" else np.uint32
        self.bufs = [
            ctx.upload(inp.a_words.astype(self.ab_dtype)),
            ctx.upload(inp.b_words.astype(self.ab_dtype)),
            ctx.upload(inp.b2_words.astype(self.ab_dtype)),
            ctx.upload(inp.c_words.astype(np.uint64 if self.cbytes == 8 else np.uint32)),
            ctx.upload(inp.e_words),
        ]
        _, _, nc = v.regs()
        self.nc = nc
        self.d = ctx.alloc(self.sms * 16 * CHAINS * nc * 32 * self.cbytes)
        self.rec = ctx.alloc(self.sms * 16 * REC * 8)

    def launch(self, warps: int, ilp: int, iters: int, blocks: int | None = None) -> None:
        fn = self.ctx.kernel(self.spec, f"mma_ilp{ilp}")
        args = [Arg.ptr(b) for b in self.bufs] + [Arg.u32(iters), Arg.ptr(self.d), Arg.ptr(self.rec)]
        fn(blocks or self.sms, 32 * warps, args, smem=self.smem)

    def outputs(self, warps: int, ilp: int, blocks: int | None = None) -> np.ndarray:
        n = (blocks or self.sms) * warps * ilp * self.nc * 32
        dt = np.uint64 if self.cbytes == 8 else np.uint32
        return self.ctx.device.download(self.d, dt, n).reshape(-1, warps, ilp, self.nc, 32)

    def records(self, warps: int, blocks: int | None = None) -> np.ndarray:
        return self.ctx.device.download(self.rec, np.uint64, (blocks or self.sms) * warps * REC)

    def run(self, warps: int, ilp: int, iters: int, check: bool) -> tuple[np.ndarray, np.ndarray, str]:
        """One launch: per-SM latency and throughput; '' or what was wrong with D."""
        self.ctx.device.memset32(self.d, 0xFFFFFFFF)  # NaN / -1 poison: an unwritten D cannot pass
        self.launch(warps, ilp, iters)
        self.ctx.device.sync(f"{self.v.family} {self.v.key}")
        lat, thr, _ = per_block(self.records(warps), warps, 2 * iters, ilp * self.v.fma_per_mma)
        err = check_d(self.inp, self.outputs(warps, ilp), iters) if check else ""
        return lat, thr, err

    def chain(self, iters: int, check: bool) -> tuple[float, str]:
        """One launch of one warp with one chain per SM: the cycles between its clock reads (median over SMs)
        and '' or what was wrong with D."""
        self.ctx.device.memset32(self.d, 0xFFFFFFFF)
        self.launch(1, 1, iters)
        self.ctx.device.sync(f"{self.v.family} {self.v.key}")
        cycles = float(np.median(chain_cycles(self.records(1), 1)))
        return cycles, check_d(self.inp, self.outputs(1, 1), iters) if check else ""


def sweep(run: Any, warps_list: list[int], ilps: list[int], reps: int) -> tuple[dict[tuple[int, int], Cell], str]:
    """run(warps, ilp, check) -> (per-SM latency, per-SM throughput, error). The first repetition of
    every cell checks every output; the first error ends the sweep."""
    cells: dict[tuple[int, int], Cell] = {}
    for w in warps_list:
        for ilp in ilps:
            lats, thrs = [], []
            for rep in range(reps):
                lat, thr, err = run(w, ilp, rep == 0)
                if err:
                    return cells, f"{w} warps, ILP {ilp}: {err}"
                lats.append(float(np.median(lat)))
                thrs.append(float(np.median(thr)))
            cells[(w, ilp)] = Cell(
                w, ilp, float(np.median(lats)), float(np.median(thrs)), min(thrs), max(thrs), min(lats), max(lats)
            )
    return cells, ""


def heatmaps(ctx: BenchContext, name: str, figure: str, cells: dict[tuple[int, int], Cell], unit: str) -> None:
    pts = [
        Point(c.warps, c.thr, c.thr_lo, c.thr_hi, 1, {"ilp": c.ilp, "latency_cycles": c.latency})
        for c in cells.values()
    ]
    ctx.series(
        f"{name} throughput", "warps", "", "throughput", unit, pts, plot="heatmap", figure=f"{figure}.throughput"
    )
    pts = [Point(c.warps, c.latency, c.lat_lo, c.lat_hi, 1, {"ilp": c.ilp}) for c in cells.values()]
    ctx.series(
        f"{name} latency", "warps", "", "latency", "cycles/step", pts, plot="heatmap", figure=f"{figure}.latency"
    )


def conv_note(conv: dict[str, Any], unit: str) -> str:
    parts = [f"({w},{c.ilp}): {c.latency:.1f} cycles, {c.thr:.1f} {unit}" for w, c in conv["per_warps"].items()]
    return "Table 3 points (#warps,ILP): " + "; ".join(parts) if parts else ""


def failed_figures(ctx: BenchContext, pre: str, units: Iterable[tuple[str, str]], what: str, err: str) -> None:
    """The figures of a variant whose outputs were wrong: FAILED (no number from wrong results), the error
    as their note."""
    for key, unit in units:
        ctx.figure(f"{pre}.{key}", "FAILED", unit, "measured", what, check="failed", note=err[:400])


LATENCY_UNITS = (("latency_cycles", "cycles"), ("latency_fixed_cycles", "cycles"), ("latency_span_cycles", "cycles"))


def latency_figures(
    ctx: BenchContext, pre: str, fit: ChainFit, cell: Cell, what: str, span_method: str, body: str = ""
) -> None:
    """The completion latency net of the loop (the slope of the chain-length sweep: 1 warp, ILP 1, one block
    per SM), the fixed cost the sweep removed (its intercept), and the span over the grid's own chain length
    divided by its steps (the 1 warp, ILP 1 cell: what latency_cycles was before the sweep). body: how the
    timed loop is unrolled, for the method."""
    reps = len(fit.slopes)
    lengths = f"{len(fit.steps)} chain lengths of {', '.join(map(str, fit.steps))} steps"
    where = "1 warp, ILP 1" + (f", {body}" if body else "") + ", one block per SM on all SMs, median over SMs"
    ctx.figure(
        f"{pre}.latency_cycles",
        round(fit.per_step, 2),
        "cycles",
        "measured",
        chain_method(what, lengths, where, reps),
        (min(fit.slopes), max(fit.slopes)),
        note=f"fixed cost {fit.fixed:.0f} cycles, the line within {fit.residual:.1f} cycles of every point; "
        f"span / steps over the grid's chain: {cell.latency:.2f} (latency_span_cycles)",
    )
    ctx.figure(
        f"{pre}.latency_fixed_cycles",
        round(fit.fixed, 1),
        "cycles",
        "measured",
        "intercept of latency_cycles' line: the cycles between the two clock reads that do not grow with the "
        "chain (loop entry, the first pass through the unrolled body, exit, result stores)",
        (min(fit.intercepts), max(fit.intercepts)),
    )
    ctx.figure(
        f"{pre}.latency_span_cycles",
        round(cell.latency, 2),
        "cycles",
        "measured",
        f"{span_method}; the fixed cost / steps on top of latency_cycles (the form latency_cycles had before it "
        "became the slope of a chain-length sweep)",
        (cell.lat_lo, cell.lat_hi),
    )


def peak_figure(ctx: BenchContext, key: str, cell: Cell, unit: str, method: str, note: str = "") -> None:
    """The peak throughput: the best cell of the grid."""
    ctx.figure(key, round(cell.thr, 2), unit, "measured", method, (cell.thr_lo, cell.thr_hi), note=note)


def convergence_figure(ctx: BenchContext, pre: str, conv: dict[str, Any], peak: str, unit: str) -> None:
    """Where the grid converges (Sun's Tables 3/6/9): the smallest #warps x ILP within 5% of the `peak`."""
    pt = conv["point"]
    ctx.figure(
        f"{pre}.convergence_warps_ilp",
        f"{pt.warps},{pt.ilp}",
        "",
        "derived",
        f"smallest #warps x ILP within 5% of the peak {peak}",
        note=conv_note(conv, unit),
    )


def iters_for(quick: bool) -> int:
    """Loop iterations of the grid's launches (a multiple of LATENCY_UNROLL: the (1, 1) cell runs whole bodies)."""
    return 128 if quick else 512


def latency_body(v: MmaVariant, family: str) -> str:
    """How mma_ilp1's timed loop is unrolled on the family, for the latency's method."""
    if lowering.latency_unrolled(v, family):
        return (
            f"the timed loop unrolled {LATENCY_UNROLL} times: {2 * LATENCY_UNROLL} dependent mma and one loop-back "
            "(counter, test, branch) per loop body"
        )
    return "the timed loop as the compiler unrolls it (each mma is many SASS instructions here)"


def execution_of(ctx: BenchContext, v: MmaVariant) -> Execution:
    """How the variant runs on this GPU, from the SASS of the cubin that runs (native or emulated)."""
    return lowering.execution(v, sass_of(ctx, SPECS[v], "mma_ilp1"), ctx.target.family)


def describe(ctx: BenchContext, v: MmaVariant, ex: Execution) -> str:
    """The instruction a figure measures and how this GPU ran it (from its SASS)."""
    xor = "; operands XORed with a run-time zero per chain" if lowering.opaque(v, ctx.target.family) else ""
    return f"{v.ptx} ({ctx.target.arch} SASS: {ex.text}{xor})"


SUBPARTITIONS = 4  # SM sub-partitions (one warp scheduler and one tensor core each) per SM, Volta on


def limit_note(
    fma_per_mma: int, cells: dict[tuple[int, int], Cell], peak: float, ex: Execution, long_rate: float
) -> str:
    """Why the grid's best rate stays below the peak, from the grid itself: the interval between two mma of
    one SM sub-partition at the best cell against the one the peak needs, whether more warps or chains
    raise the rate (saturated: the instruction's issue limit), emulation, and the long launch's rate."""
    pk = max(cells.values(), key=lambda c: c.thr)
    big = max(cells.values(), key=lambda c: (c.warps * c.ilp, c.warps))
    near = [c for c in cells.values() if c.thr >= 0.95 * pk.thr]
    first = min(near, key=lambda c: (c.warps * c.ilp, c.warps))
    busy = min(SUBPARTITIONS, pk.warps)  # warps are dealt to the sub-partitions round-robin
    every, need = busy * fma_per_mma / pk.thr, SUBPARTITIONS * fma_per_mma / peak
    parts = [
        f"{pk.thr / peak:.1%} of the peak, a measured limit: at the best cell ({pk.warps} warps, ILP {pk.ilp}) each "
        f"of the {busy} busy SM sub-partitions completes one mma every {every:.2f} cycles (on average), where the "
        f"peak needs one every {need:.2f} on each of {SUBPARTITIONS}"
    ]
    if big.thr >= 0.95 * pk.thr and first.warps * first.ilp < big.warps * big.ilp:
        parts.append(
            f"the rate is flat from {first.warps} warps x ILP {first.ilp} to the grid's largest cell ({big.warps} "
            f"warps x ILP {big.ilp}, {big.thr / pk.thr:.0%} of the best; {len(near)} of {len(cells)} cells within "
            "5%): more warps or independent chains do not raise it, so the limit is the instruction's issue "
            "interval, not its latency or too few warps in flight"
        )
    else:
        parts.append(
            f"the grid's largest cell ({big.warps} warps x ILP {big.ilp}) reaches {big.thr / pk.thr:.0%} of the "
            "best: the grid does not saturate the instruction, whose rate is bound by its latency and the warps "
            "and chains the grid can hold"
        )
    if not ex.native:
        parts.append(
            f"ptxas emulates the instruction on this GPU ({ex.text}): the rate counts the multiply-accumulates of "
            "the emulated instruction"
        )
    parts.append(f"the long launch at the best cell ran at {long_rate:.0f} FMA/clk/SM ({long_rate / peak:.1%})")
    return "; ".join(parts)


def variant_figures(
    ctx: BenchContext,
    v: MmaVariant,
    runner: MmaRunner,
    cells: dict[tuple[int, int], Cell],
    err: str,
    ex: Execution,
    fit: ChainFit | None = None,
) -> None:
    """Latency (net of the loop), peak, convergence, TFLOPS (event-timed long run at the peak cell), % of peak
    and the ratio to it (with the measured limit where it is below AT_PEAK)."""
    pre = f"tc.{v.family}.{v.key}"
    ops = "tops" if v.a in ("s8", "u8", "s4", "u4", "b1") else "tflops"
    what = describe(ctx, v, ex)
    most = lowering.max_warps(v, ctx.target.family)
    if err or (1, 1) not in cells or fit is None:
        units = (*LATENCY_UNITS, ("peak_fma_per_clk_sm", "FMA/clk/SM"), (f"peak_{ops}", ops.upper()))
        failed_figures(ctx, pre, units, what, err)
        ctx.soft_check(False, f"{v.family} {v.key}: {err}")
        return
    heatmaps(ctx, v.key, f"{v.family}.{v.key}", cells, "FMA/clk/SM")
    latency_figures(
        ctx,
        pre,
        fit,
        cells[(1, 1)],
        f"dependent {what}",
        f"1 warp, ILP 1, dependent {what} (clock64 around 2 x {iters_for(ctx.quick)} steps, median over SMs)",
        latency_body(v, ctx.target.family),
    )
    conv = convergence(cells)
    pk = conv["peak"]
    peak_figure(
        ctx,
        f"{pre}.peak_fma_per_clk_sm",
        pk,
        "FMA/clk/SM",
        f"best cell of the #warps x ILP grid ({pk.warps} warps, ILP {pk.ilp}); m*n*k = {v.fma_per_mma} FMA per "
        f"warp instruction{' (logical K: dense-equivalent)' if v.sparse else ''}; per-block clock64 span, one "
        "block per SM on all SMs, median over SMs" + (f"; at most {most} warps" if most < 16 else ""),
    )
    convergence_figure(ctx, pre, conv, "throughput", "FMA/clk/SM")
    # Long event-timed launch at the peak cell: clock from cycles / time, TFLOPS from both
    target_s = 0.01 if ctx.quick else 0.03
    clock_guess = ctx.props["sm_clock_khz"] * 1e3
    per_iter_cycles = 2 * pk.warps * pk.ilp * v.fma_per_mma / pk.thr
    long_iters = max(iters_for(ctx.quick), int(target_s * clock_guess / per_iter_cycles))
    from ....device.telemetry import Sampler

    ms, clocks, thr_long = [], [], []
    with Sampler(ctx.props.get("uuid")) as s:
        for rep in range(3):
            ctx.device.memset32(runner.d, 0xFFFFFFFF)
            ms.append(ctx.device.time_ms(lambda: runner.launch(pk.warps, pk.ilp, long_iters))[0])
            rec = runner.records(pk.warps)
            clocks.append(float(np.median(sm_clock_hz(rec, pk.warps))))
            thr_long.append(float(np.median(per_block(rec, pk.warps, 2 * long_iters, pk.ilp * v.fma_per_mma)[1])))
            if rep == 0:
                e2 = check_d(runner.inp, runner.outputs(pk.warps, pk.ilp), long_iters)
                if e2:
                    failed_figures(ctx, pre, [(f"peak_{ops}", ops.upper())], what, e2)
                    ctx.soft_check(False, f"{v.family} {v.key} long run: {e2}")
                    return
    tel = s.summary()
    clock = float(np.median(clocks))
    work = runner.sms * pk.warps * pk.ilp * 2 * long_iters * v.fma_per_mma * 2
    ev = [work / (t * 1e-3) / 1e12 for t in ms]
    tflops = pk.thr * 2 * runner.sms * clock / 1e12
    nv = f"; NVML SM clock median {tel.sm_clock_mhz_median:.0f} MHz" if tel and tel.sm_clock_mhz_median else ""
    ctx.figure(
        f"{pre}.peak_{ops}",
        round(tflops, 2),
        ops.upper(),
        "derived",
        f"peak FMA/clk/SM x 2 x {runner.sms} SMs x SM clock ({clock / 1e6:.0f} MHz: clock64 cycles / %globaltimer ns "
        f"over a {float(np.median(ms)):.1f} ms launch at {pk.warps} warps, ILP {pk.ilp})",
        note=f"that launch: {np.median(thr_long):.1f} FMA/clk/SM, event-timed all-SM rate {np.median(ev):.2f} "
        f"{ops.upper()} ({min(ev):.2f}..{max(ev):.2f}){nv}",
    )
    ctx.figure(
        f"{pre}.sm_clock_mhz",
        round(clock / 1e6, 1),
        "MHz",
        "measured",
        "clock64 cycles / %globaltimer ns of each block over the long launch, median over SMs",
        (min(clocks) / 1e6, max(clocks) / 1e6),
    )
    peak = arch_peak(ctx.props, v.a, v.sparse, v.c, ex.ran_as)
    if peak is not None:
        ctx.figure(
            f"{pre}.arch_peak_fma_per_clk_sm",
            peak.fma_per_clk_sm,
            "FMA/clk/SM",
            "assumed",
            f"{'2:4 sparse' if v.sparse else 'dense'} tensor rate of this GPU: {peak.source}",
        )
        ctx.figure(
            f"{pre}.pct_peak",
            round(100 * pk.thr / peak.fma_per_clk_sm, 2),
            "%",
            "derived",
            f"peak FMA/clk/SM over the assumed {peak.fma_per_clk_sm:g} FMA/clk/SM",
        )
        ratio = pk.thr / peak.fma_per_clk_sm
        long_rate = float(np.median(thr_long))
        ctx.figure(
            f"{pre}.peak_ratio",
            round(ratio, 4),
            "ratio",
            "derived",
            f"peak_fma_per_clk_sm over this GPU's {'2:4 sparse' if v.sparse else 'dense'} tensor rate "
            f"for the type, {peak.fma_per_clk_sm:g} FMA/clk/SM ({peak.source})",
            note=limit_note(v.fma_per_mma, cells, peak.fma_per_clk_sm, ex, long_rate) if ratio < AT_PEAK else "",
        )
    else:
        ctx.figure(
            f"{pre}.pct_peak",
            "n/a",
            "%",
            "derived",
            f"no published per-SM {v.a} tensor rate for this GPU ({ctx.props.get('name', '?')}, "
            f"compute capability {ctx.target.major}.{ctx.target.minor}): no fraction of another GPU's peak",
        )
        ctx.figure(
            f"{pre}.peak_ratio",
            "n/a",
            "ratio",
            "derived",
            f"no published per-SM {v.a} tensor rate for this GPU: no ratio to another GPU's peak",
        )


def _only(text: str) -> list[str]:
    return list(comma_names(text))


def _check_only(sparse: bool) -> Any:
    def check(value: list[str], facts: Facts) -> str | None:
        for key in value:
            types, _, shape = key.partition(".")
            try:
                check_combination(types, shape, sparse)
            except GpuDissectError as e:
                return str(e)
        return None

    return check


def run_variants(ctx: BenchContext, variants: list[MmaVariant]) -> None:
    if ctx.params.get("only"):
        wanted = set(ctx.params["only"])
        variants = [v for v in variants if v.key in wanted]
    runs = {s.name for s in ctx.runnable([SPECS[v] for v in variants])}  # the others recorded as skipped
    if variants and not runs:
        ctx.skip(f"none of the variants asked for runs on {ctx.target}")
    variants = [v for v in variants if SPECS[v].name in runs]
    ctx.precompile([SPECS[v] for v in variants])
    warps_list, ilps = grid(ctx.quick)
    reps, iters = (3 if ctx.quick else 5), iters_for(ctx.quick)
    rng = np.random.default_rng(11)
    for i, v in enumerate(variants):
        ctx.progress(i, len(variants), f"{v.family} {v.key}")
        ex = execution_of(ctx, v)
        # fully random floating-point inputs, one short launch, within tolerance
        if v.a in FLOAT:
            with ctx.scratch():
                rr = MmaRunner(ctx, v, make_inputs(v, rng, "random"))
                _, _, err = rr.run(4, 2, 1, True)
            if err:
                variant_figures(ctx, v, rr, {}, f"random inputs: {err}", ex)
                continue
        with ctx.scratch():  # one variant's buffers at a time
            runner = MmaRunner(ctx, v, make_inputs(v, rng, "exact"))
            ws = [w for w in warps_list if w <= lowering.max_warps(v, ctx.target.family)]
            cells, err = sweep(lambda w, ilp, chk: runner.run(w, ilp, iters, chk), ws, ilps, reps)
            fit = None
            if not err:
                fit, err = measure_chain(runner.chain, chain_iters(ctx.quick), lambda it: 2 * it, reps)
            variant_figures(ctx, v, runner, cells, err, ex, fit)
    ctx.progress(len(variants), len(variants), "done")


@benchmark(
    name="mma_latency_throughput",
    title="mma.sync: latency and throughput of every type and shape",
    axes={
        "type/shape": ", ".join(v.key for v in DENSE_VARIANTS),
        "warps": "1,2,4,6,8,12,16 (quick: 1,4,8,16)",
        "ILP": "1..6 (quick: 1,2,4)",
    },
    kernels=[SPECS[v] for v in DENSE_VARIANTS],
    params={
        "only": Param(
            None, "comma-separated variants to run, e.g. f16_f32.m16n8k16 (default: all)", _only, _check_only(False)
        )
    },
    timeout_s=600,
    needs=Needs(features=("mma_m8n8k4",)),  # every GPU from Volta on: each variant needs what lowering.py says
    paper="001 §4-5 Fig. 4, 6, 7, Table 3; 000 §6.2 Tables VII, VIII",
)
def mma_latency_throughput(ctx: BenchContext) -> None:
    run_variants(ctx, DENSE_VARIANTS)


@benchmark(
    name="mma_sparse",
    title="mma.sp (2:4 sparse): latency and throughput of every type and shape",
    axes={
        "type/shape": ", ".join(v.key for v in SPARSE_VARIANTS),
        "warps": "1,2,4,6,8,12,16 (quick: 1,4,8,16)",
        "ILP": "1..6 (quick: 1,2,4)",
    },
    kernels=[SPECS[v] for v in SPARSE_VARIANTS],
    params={
        "only": Param(
            None, "comma-separated variants to run, e.g. f16_f32.m16n8k32 (default: all)", _only, _check_only(True)
        )
    },
    timeout_s=600,
    needs=Needs(features=("mma_sparse",)),
    paper="001 §6 Fig. 10, 11, Table 6; 000 §6.2 Table VIII",
)
def mma_sparse(ctx: BenchContext) -> None:
    run_variants(ctx, SPARSE_VARIANTS)
