"""The isa suite, native instructions (Jia et al. 002 §4.1, Table 4.1) on the GPU at hand.

For every instruction a chain x <- op(x, b[k], c[k]) in inline PTX that ptxas turns into that SASS
opcode (kernels/isa_native.cu, one build per instruction). One launch per cell of a warps x ILP grid,
one block per SM on every SM: the (1 warp, ILP 1) cell gives the dependent-issue latency (clock64
cycles per step), the best cell the steady-state throughput (thread instructions per clock per SM).
Where a step needs a second instruction to keep the chain closed (FSETP + FSEL, ISETP + SEL, LG2 +
FADD, the FMUL.RZ that sm_90 puts before MUFU.SIN/COS, STS + LDS), the latency is the step minus the
helper's own latency from its own chain (Jia's method for instructions that cannot be chained alone).
Every final chain value of every thread equals a CPU replay of the chain.

The instruction table is native_ops.py, the CPU replay native_replay.py, what differs on other families
than Hopper's (names, emulations, what an instruction needs) native_arch.py; this module holds the kernel
builds, the launches and the figures. Every GPU times the instructions its PTX has; off Hopper each figure's
note says native or emulated, read from the SASS of the timed loop. scheduler.py reuses the FFMA build.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...analysis import issue_rate as ir
from ...analysis import records
from ...device.cuda import Arg, Buffer
from ...errors import GpuDissectError
from ...models import Point
from ...reference import isa as ref
from ...reference.isa_peaks import UNIT, UnitPeak, unit_peak, why_no_peak
from ..context import BenchContext
from ..registry import KernelSpec, Needs, Param, benchmark
from ..shared import one_block_per_sm_smem, sass_of
from . import native_arch as arch
from . import native_peaks as npk
from .native_ops import BODY, Op, op, ops, table_group
from .native_replay import chain_model, check_words, make_inputs, steps_per_chain

MAX_WARPS = 16  # warps per block at most (MAX_WARPS in isa_native.cu)
REPS = 3  # launches per cell
# instructions whose warps x ILP grid is drawn
HEATMAPS = ("ffma", "dfma", "dfma_ureg", "mufu_ex2", "imad", "shfl", "lds")


def native_spec(o: Op) -> KernelSpec:
    def required(patterns: list[str]) -> dict[str, list[str]]:
        # the peak form's operand pattern where it is timed for throughput: at ILP 1 and 2 each FMA waits for
        # the one before, and ptxas sets no .reuse there (the banks are not what limits those cells)
        req = {f"isa_ilp{i}": patterns + [p for p in REUSED.get(o.key, ()) if i >= REUSED_FROM_ILP] for i in o.ilps}
        if o.key == "ffma":
            req["sched_ffma"] = [r"FFMA ", r"SR_VIRTID"]
        return req

    return KernelSpec(
        "isa_native.cu",
        required([o.pattern]),
        {o.define: 1} | ({"BODY": o.body} if o.body != BODY else {}),
        label=f"isa_native.cu[{o.key}]",
        needs=arch.needs(o),
        required_by_family={f: required(arch.required(o, f)) for f in sorted(arch.families_apart(o))},
    )


# the peak forms: FFMA and HFMA2 name b and c with .reuse (the register file reads x alone), DFMA reads b from
# a uniform register (the constant bank on Volta); CPU tests read every instance of the timed loop
REUSED = {
    "ffma_reuse": (r"FFMA R\d+, R\d+\.reuse, R\d+, R\d+\.reuse",),
    "hfma2_reuse": (r"HFMA2(\.MMA)? R\d+, R\d+, R\d+\.reuse, R\d+\.reuse",),
    "dfma_ureg": (r"DFMA R\d+, R\d+, (UR\d+|c\[0x0\]\[0x[0-9a-f]+\]), R\d+",),
}
REUSED_FROM_ILP = 4
SPECS = {o.key: native_spec(o) for o in ops()}


def one_block_smem(props: dict) -> int:
    """one_block_per_sm_smem for the isa_native.cu kernels, whose 1 KiB static table comes on top."""
    return one_block_per_sm_smem(props, static=1024)


def warps_grid(quick: bool) -> list[int]:
    return [1, 2, 4, 8, 16] if quick else [1, 2, 3, 4, 6, 8, 12, 16]


METHOD = (
    "chain x <- op(x, b[k], c[k]) in inline PTX, 8 operand pairs from a run-time array in registers; "
    f"{BODY} steps per loop iteration, two passes, the 2nd timed with clock64 per warp; one block per SM on "
    "every SM; every thread's final chain values equal a CPU replay; CPU tests count the opcode in the "
    "timed loop body; the loop's own 2 instructions and branch per iteration are inside the span (about "
    "0.1 cycle per step: 4.12 for a 4-cycle FFMA)"
)

Cells = dict[tuple[int, int], ir.Cell]  # (warps, ILP) -> the cell's latency and rate


@benchmark(
    name="native_instructions",
    title="Native instructions: dependent-issue latency and throughput per SM (warps x ILP)",
    axes={
        "instruction": f"{len(ops())} SASS instructions (FP32, FP16/BF16, FP64, INT, MUFU, conversions, warp, "
        "LDS/STS, BAR, DPX)",
        "warps": "1..16 per block (one block per SM)",
        "ilp": "1, 2, 4, 8 independent chains per thread",
    },
    kernels=list(SPECS.values()),
    params={
        "ops": Param(
            None,
            "comma-separated subset of instruction keys (default: all)",
            str,
            lambda v, f: None if all(k in SPECS for k in v.split(",")) else f"known: {', '.join(SPECS)}",
        )
    },
    timeout_s=600,
    needs=Needs((7, 0)),  # every instruction has its own needs (native_arch.NEEDS): a GPU times those it has
    paper="002 §4.1 Table 4.1",
)
def native_instructions(ctx: BenchContext) -> None:
    chosen = [op(k) for k in ctx.params["ops"].split(",")] if ctx.params["ops"] else list(ops())
    runs = {s.name for s in ctx.runnable([SPECS[o.key] for o in chosen])}  # the others recorded as skipped
    chosen = [o for o in chosen if SPECS[o.key].name in runs]
    ctx.precompile([SPECS[o.key] for o in chosen])
    sms = ctx.props["sm_count"]
    iters = 25 if ctx.quick else 65  # not a multiple of 4: the LDS walk (period 256) must not return to its start
    out = ctx.alloc(sms * MAX_WARPS * 8 * 32 * 8)
    rec = ctx.alloc(records.words(sms * MAX_WARPS) * 8)
    results: dict[str, tuple[Cells, str]] = {}
    clocks: list[float] = []  # per instruction: SM clock over all its first launches (long spans weigh most)
    for n, o in enumerate(chosen):
        with ctx.scratch():
            cells, err, mhz = _measure(ctx, o, iters, out, rec)
        clocks.append(mhz)
        if err:
            ctx.soft_check(False, f"{o.key}: {err}")
        results[o.key] = (cells, err)
        ctx.progress(n + 1, len(chosen), o.key)
    mhz = float(np.median(clocks))
    ctx.sm_clock(
        mhz,
        "clock64 cycles / %globaltimer ns summed over every block's timed pass in the first launch "
        "of every cell, per instruction; median over the instructions",
        (min(clocks), max(clocks)),
    )
    t = ctx.target
    _figures(ctx, chosen, results, iters, sass_labels(ctx, chosen), f"sm_{t.major}{t.minor} (this GPU)")


def _measure(ctx: BenchContext, o: Op, iters: int, out: Buffer, rec: Buffer) -> tuple[Cells, str, float]:
    """One instruction over the warps x ILP grid: its cells, the first disagreement with the CPU replay
    ('' when none), and the SM clock in MHz over the first launch of every cell."""
    dev, sms, smem = ctx.device, ctx.props["sm_count"], one_block_smem(ctx.props)
    mod = ctx.module(SPECS[o.key])
    inp = make_inputs(o)
    want = chain_model(o, inp, iters)
    d_ops, d_init = ctx.upload(inp.ops), ctx.upload(inp.init)
    bconst = int(inp.ops[0])  # b[0]'s word: the DFMA_UREG build reads its b from this kernel parameter
    cells: Cells = {}
    err = ""
    cyc_total, ns_total = 0, 0
    for ilp in o.ilps:
        fn = mod.function(f"isa_ilp{ilp}")
        for w in warps_grid(ctx.quick):
            per_warp = steps_per_chain(ilp, iters, o.body) // 2 * ilp * o.count  # instructions per warp, timed pass
            lats, rates = [], []
            for r in range(REPS):
                dev.memset32(out, 0xDEADBEEF)
                fn(
                    sms,
                    32 * w,
                    [
                        Arg.ptr(d_ops),
                        Arg.u32(0),
                        Arg.ptr(d_init),
                        Arg.u32(iters),
                        Arg.ptr(out),
                        Arg.ptr(rec),
                        Arg.u64(bconst),
                    ],
                    smem=smem,
                )
                dev.sync(f"isa {o.key} ilp{ilp} warps{w}")
                rr = dev.download(rec, np.uint64, records.words(sms * w))
                lat, rate = ir.block_rates(rr, w, per_warp)
                lats.append(float(np.median(lat)))
                rates.append(32 * float(np.median(rate)))
                if r == 0:
                    cyc, ns = ir.spans(rr, w)
                    cyc_total, ns_total = cyc_total + int(cyc.sum()), ns_total + int(ns.sum())
                    got = dev.download(out, np.uint64, sms * w * ilp * 32).reshape(-1, ilp, 32)
                    err = err or check_words(o, got, want[ilp])
            cells[(w, ilp)] = ir.Cell(w, ilp, float(np.median(lats)), float(np.median(rates)), min(rates), max(rates))
    return cells, err, cyc_total / max(ns_total, 1) * 1e3


def sass_labels(ctx: BenchContext, chosen: list[Op]) -> dict[str, str]:
    """Per instruction, native or emulated and what the timed loop of its build holds on this GPU. Hopper's
    figures keep the notes they have always had, which say what sm_90 runs (its required SASS pins that);
    elsewhere the label comes first, and replaces the notes that describe sm_90's SASS."""
    t = ctx.target
    if t.family == "hopper":
        return {}
    out = {}
    for o in chosen:
        try:
            text = sass_of(ctx, SPECS[o.key], "isa_ilp1")
        except GpuDissectError:  # a disassembler too new for this architecture: the declared SASS says
            text = None
        out[o.key] = arch.sass_label(text, o, t.family, t.arch)
    return out


def _volta_key(o: Op) -> str:
    if o.key.startswith("mufu_"):
        return "isa.latency.mufu_cycles"
    return f"isa.latency.{o.volta or o.key}_cycles"


Bars = dict[tuple[str, str], list[Point]]  # (chart group, series: lat thr volta pascal) -> one bar per instruction


def _figures(
    ctx: BenchContext,
    chosen: list[Op],
    results: dict[str, tuple[Cells, str]],
    iters: int,
    labels: dict[str, str] | None = None,
    this_gpu: str = "sm_90 (this GPU)",
) -> None:
    """Every instruction's figures and the table series; `labels`: per instruction what its SASS ran
    (sass_labels), `this_gpu`: the name of this GPU's bars."""
    # cycles per chain step of the (1 warp, ILP 1) cell: Cell.latency is per instruction
    step_lat = {
        k: cells[(1, 1)].latency * op(k).count for k, (cells, err) in results.items() if not err and (1, 1) in cells
    }
    bars: Bars = defaultdict(list)
    rates: dict[str, float] = {}  # throughput name -> the rate stored under it
    for i, o in enumerate(chosen):
        rate = _instruction_figures(ctx, i, o, results[o.key], step_lat, iters, bars, (labels or {}).get(o.key))
        if rate is not None:
            rates[o.throughput_name] = rate
    for o in chosen:
        cells, err = results[o.key]
        if not err and cells:
            _peak_figures(ctx, o, ir.steady_state(list(cells.values()))[0], rates)
    _table_series(ctx, chosen, bars, this_gpu)
    ok = sum(1 for k, (_, e) in results.items() if not e and op(k).latency)
    ctx.figure(
        "isa.native.instructions_measured",
        ok,
        "",
        "measured",
        "instructions whose chains passed the CPU replay check (latency and throughput figures stored; the "
        "peak forms of FFMA, HFMA2 and DFMA not counted again)",
    )


def _instruction_figures(
    ctx: BenchContext,
    i: int,
    o: Op,
    result: tuple[Cells, str],
    step_lat: dict[str, float],
    iters: int,
    bars: Bars,
    label: str | None = None,
) -> float | None:
    """The latency and throughput figures of instruction `o` (bar `i` of its charts, added to `bars`),
    and its warps x ILP heatmap where it has one; the rate stored (None: failed). A peak form (Op.latency
    False) stores its throughput only. `label` (None on sm_90): what the timed loop ran here."""
    cells, err = result
    # the note: sm_90's as it has always read; elsewhere the SASS that ran first, then the note unless it
    # describes sm_90's SASS
    o_note = o.note if label is None else "; ".join(x for x in (label, "" if o.sass_note else o.note) if x)
    lk, tk = f"isa.latency.{o.key}_cycles", f"isa.throughput.{o.throughput_name}_per_clk_sm"
    missing = [h for h in o.helpers if h not in step_lat]
    if err or (1, 1) not in cells or missing:
        why = err or f"helper chain(s) {', '.join(missing)} not measured or failed"
        if o.latency:
            ctx.figure(lk, "FAILED", "cycles", "measured", METHOD, check="failed", note=why[:300])
        ctx.figure(tk, "FAILED", "instr/clk/SM", "measured", METHOD, check="failed", note=why[:300])
        return None
    helpers = [step_lat[h] for h in o.helpers]
    lat = ir.helper_corrected(step_lat[o.key], o.count, helpers)
    how = (
        f"1 warp, ILP 1: clock64 cycles per step / {o.count} instruction(s) per step"
        + (
            f", minus the helper chain(s) {', '.join(o.helpers)} ({', '.join(f'{h:.2f}' for h in helpers)} cycles)"
            if o.helpers
            else ""
        )
        + f", median over SMs of 3 launches ({steps_per_chain(1, iters) // 2} steps). "
        + METHOD
    )
    vk = _volta_key(o)
    volta = ref.VOLTA_LATENCY.get(vk)
    note = "; ".join(x for x in (o_note, f"Jia Table 4.1 V100: {volta:g} cycles" if volta else "") if x)
    if o.latency:
        ctx.figure(lk, round(lat, 2), "cycles", "measured" if not o.helpers else "derived", how, note=note)
    best, start = ir.steady_state(list(cells.values()))
    ctx.figure(
        tk,
        round(best.rate, 2),
        "instr/clk/SM",
        "measured",
        f"thread instructions (warp instructions x 32) per SM clock, best cell of warps {warps_grid(ctx.quick)}"
        f" x ILP {list(o.ilps)} ({best.warps} warps, ILP {best.ilp}; within 3% from {start.warps} warps x ILP "
        f"{start.ilp}): all the block's instructions over its clock64 span, median over SMs, median of 3. "
        + _form(o)
        + METHOD
        + _no_peak(ctx, o),
        (best.rate_lo, best.rate_hi),
        note=o_note,
    )
    label, g = {"label": o.key}, table_group(o.key)
    if o.latency:
        bars[(g, "lat")].append(Point(i, lat, None, None, 3, dict(label)))
    bars[(g, "thr")].append(Point(i, best.rate, best.rate_lo, best.rate_hi, 3, dict(label)))
    if volta:
        bars[(g, "volta")].append(Point(i, volta, None, None, 1, dict(label)))
    pascal = ref.PASCAL_LATENCY.get(vk)
    if pascal:
        bars[(g, "pascal")].append(Point(i, pascal, None, None, 1, dict(label)))
    if o.key in HEATMAPS:
        grid = [
            Point(c.warps, c.rate, c.rate_lo, c.rate_hi, 3, {"ilp": c.ilp, "latency_cycles": c.latency})
            for c in cells.values()
        ]
        ctx.series(
            f"{o.key} throughput",
            "warps",
            "",
            "throughput",
            "instr/clk/SM",
            grid,
            plot="heatmap",
            figure=f"sweep.{o.key}",
        )
    return best.rate


def _form(o: Op) -> str:
    """What a row's throughput is: a peak form, or the 8-pair form of an instruction that has one."""
    if not o.latency:
        return f"Peak form of {o.thr_name}: {o.note}. "
    if o.thr_name:
        return (
            f"The 8-operand-pair form of {o.key}, whose throughput is isa.throughput.{o.key}_per_clk_sm (its peak "
            "form); this one meets the register banks (its peak_ratio note gives the reads). "
        )
    return ""


def _no_peak(ctx: BenchContext, o: Op) -> str:
    """'; no ratio to peak: <why>' for an instruction whose unit has a tabled peak elsewhere but not here."""
    cc = (ctx.target.major, ctx.target.minor)
    if o.instruction not in UNIT or unit_peak(o.instruction, cc) is not None:
        return ""
    return "; no ratio to peak: " + why_no_peak(o.instruction, cc)


def _loop_sass(ctx: BenchContext, o: Op, ilp: int) -> str | None:
    """The SASS of the row's isa_ilp<ilp> as built for this GPU, None where it cannot be read here."""
    try:
        return sass_of(ctx, SPECS[o.key], f"isa_ilp{ilp}")
    except GpuDissectError:
        return None


def _peak_figures(ctx: BenchContext, o: Op, best: ir.Cell, rates: dict[str, float]) -> None:
    """isa.throughput.<name>_peak_ratio: the stored rate over its unit's per-SM peak on this GPU's compute
    capability (reference/isa_peaks.py), both per SM clock; below AT_PEAK the note gives the measured reason:
    the register-bank reads of the timed loop's SASS at the best cell's ILP, and the peak form's rate."""
    cc = (ctx.target.major, ctx.target.minor)
    peak: UnitPeak | None = unit_peak(o.instruction, cc)
    name = o.throughput_name
    if peak is None:  # the throughput's method says why (_no_peak)
        return
    ratio = best.rate / peak.per_clk_sm
    note = ""
    if ratio < npk.AT_PEAK:
        text = _loop_sass(ctx, o, best.ilp)
        reads = npk.loop_reads(text, o.pattern) if text else None
        why = (
            npk.reads_note(reads, o.instruction.upper(), npk.issue_interval(peak.per_clk_sm))
            if reads
            else "its timed loop's SASS cannot be read here (no disassembler)"
        )
        other = rates.get(o.instruction) if o.thr_name and o.latency else None
        beside = f"; its peak form measured {other:.2f}/clk/SM ({other / peak.per_clk_sm:.3f})" if other else ""
        note = (
            f"{ratio:.1%} of the peak, a measured limit: at the best cell ({best.warps} warps, ILP {best.ilp}) "
            f"{why}{beside}"
        )
    ctx.figure(
        f"isa.throughput.{name}_peak_ratio",
        round(ratio, 4),
        "ratio",
        "derived",
        f"isa.throughput.{name}_per_clk_sm / the per-SM peak of its unit, {peak.describe()}; both per SM clock "
        "(the rate counts clock64 cycles of the same kernel)",
        note=note,
    )


def _table_series(ctx: BenchContext, chosen: list[Op], bars: Bars, this_gpu: str) -> None:
    """Per chart group (in table order): the latency bars of this GPU, V100 and P100, then its throughput."""
    for g in dict.fromkeys(table_group(o.key) for o in chosen):
        for what, name in (
            ("lat", this_gpu),
            ("volta", "V100 (Jia Table 4.1)"),
            ("pascal", "P100 (Jia Table 4.1)"),
        ):
            if bars.get((g, what)):
                ctx.series(
                    name,
                    "instruction",
                    "",
                    "latency",
                    "cycles",
                    bars[(g, what)],
                    plot="bar",
                    figure=f"latency_table.{g}",
                )
        if bars.get((g, "thr")):
            ctx.series(
                this_gpu,
                "instruction",
                "",
                "throughput",
                "instr/clk/SM",
                bars[(g, "thr")],
                plot="bar",
                figure=f"throughput_table.{g}",
            )
