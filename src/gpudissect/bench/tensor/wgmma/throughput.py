"""Device side of the wgmma benchmarks and `wgmma_throughput`, `wgmma_sparse`, `wgmma_n_sweep`:
latency and throughput, SS/RS, zero/random operands (Luo et al. Tables IX-XI).

Latency is net of the fixed cost of a launch: one warpgroup's chain runs at three lengths and the latency is the
slope of its clock64 span over the chain's wgmmas (mma/common.py fit_chain). A per-clock rate below 95% of the
GPU's peak gets the measured limit in its peak_ratio note (limit_note).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ....device.cuda import Arg
from ....errors import GpuDissectError
from ....models import Point
from ....reference.peaks import fma_per_clk_sm, peaks_for, tensor_source
from ...context import BenchContext
from ...registry import Facts, Needs, Param, benchmark, comma_ints, comma_names, one_of
from ...shared import one_block_per_sm_smem
from ..mma.common import AT_PEAK, ChainFit, chain_method, fit_chain
from .layout import read_d
from .operands import CHECK_SMEM, OFF_A, OFF_B, Operands, compare, diagnose, make_operands
from .variants import (
    _FLOAT_NS,
    SPARSE_TYPES,
    TYPES,
    M,
    _names,
    b_row_bytes,
    kdim,
    key_of,
    shape_of,
    unroll_for,
    validate,
    variant_spec,
)


# ---------------------------------------------------------------------------------------
# Device side
# ---------------------------------------------------------------------------------------
@dataclass
class Rate:
    """One timed configuration: event-timed rate, clock64-timed FMA/clk/SM, clock derived from both."""

    per_s: list[float]  # TFLOPS (TOPS) per repetition, from CUDA events
    fma_clk_sm: list[float]  # per repetition: median over SMs of FMA per clock
    clock_mhz: float  # median block span in cycles over the event time

    @property
    def value(self) -> float:
        return float(np.median(self.per_s))

    @property
    def fma(self) -> float:
        return float(np.median(self.fma_clk_sm))


class Variant:
    """One compiled variant on the device, with its operand buffers (from ctx.alloc: make the variant
    inside `with ctx.scratch():` to free them after it)."""

    def __init__(self, ctx: BenchContext, tname: str, n: int, sparse: bool):
        self.ctx, self.tname, self.n, self.sparse = ctx, tname, n, sparse
        self.t = validate(tname, n, sparse=sparse)
        self.spec = variant_spec(tname, n, sparse)
        self.fns = {m: ctx.kernel(self.spec, f"wg_{m}") for m in ("ss", "rs")}
        self.k = kdim(tname, sparse)
        self.nacc = self.t.nacc(n)
        self.unroll = unroll_for(n)
        self.img_bytes = OFF_B + n * b_row_bytes(sparse)
        self.img = ctx.alloc(self.img_bytes)
        self.afrag, self.meta = ctx.alloc(128 * 16), ctx.alloc(128 * 4)
        self.rec = ctx.alloc(ctx.props["sm_count"] * 3 * 8)
        self.dout = None
        self.dout_bytes = 0
        self.ops: Operands | None = None

    @property
    def flop_per_mma(self) -> float:
        return 2.0 * M * self.n * self.k

    def load(self, data: str, seed: int = 1) -> Operands:
        self.ops = make_operands(self.tname, self.n, self.sparse, data, seed)
        dev = self.ctx.device
        dev.upload(self.ops.img, self.img)
        dev.upload(self.ops.afrag, self.afrag)
        dev.upload(self.ops.meta, self.meta)
        return self.ops

    def warpgroups(self, mode: str, smem: int, want: int = 4) -> int:
        """Most warpgroups (<= want) one block of this kernel can hold on an SM."""
        fn = self.fns[mode]
        if smem > 48 * 1024:
            fn.allow_dynamic_smem(smem)  # the occupancy calculator honours the opt-in
        for w in range(max(1, want), 0, -1):
            if self.ctx.device.occupancy(fn, 128 * w, smem) >= 1:
                return w
        raise GpuDissectError(f"{self.spec.name}: one warpgroup does not fit an SM")

    def smem_one_per_sm(self) -> int:
        """Dynamic shared memory that keeps a second block off the SM: one block per SM, each SM's
        clock span covers exactly its warpgroups."""
        return one_block_per_sm_smem(self.ctx.props, at_least=self.img_bytes)

    def _ensure_dout(self, grid: int, wgs: int) -> None:
        need = grid * wgs * 128 * self.nacc * 4
        if need > self.dout_bytes:
            self.ctx.free(self.dout)  # the smaller one, if any
            self.dout, self.dout_bytes = self.ctx.alloc(need), need

    def launch(self, mode: str, grid: int, wgs: int, iters: int, smem: int, reps: int = 1) -> list[float]:
        self._ensure_dout(grid, wgs)
        fn = self.fns[mode]
        args = [
            Arg.ptr(self.img),
            Arg.u32(self.img_bytes),
            Arg.u32(OFF_A),
            Arg.u32(OFF_B),
            Arg.u64(self.ops.tpl_a),
            Arg.u64(self.ops.tpl_b),
            Arg.ptr(self.afrag),
            Arg.ptr(self.meta),
            Arg.u32(iters),
            Arg.ptr(self.dout),
            Arg.ptr(self.rec),
        ]
        ms = self.ctx.device.time_ms(lambda: fn(grid, 128 * wgs, args, smem=smem), reps)
        self.ctx.device.sync(self.spec.name)
        return ms

    def regs(self, grid: int, wgs: int) -> np.ndarray:
        return self.ctx.device.download(self.dout, np.uint32, grid * wgs * 128 * self.nacc).reshape(
            grid * wgs, 128, self.nacc
        )

    def spans(self, grid: int) -> tuple[np.ndarray, np.ndarray]:
        r = self.ctx.device.download(self.rec, np.uint64, grid * 3).reshape(grid, 3).astype(np.int64)
        return r[:, 1] - r[:, 0], r[:, 2]

    def count(self, iters: int) -> int:
        return 1 + iters * self.unroll  # wgmmas per warpgroup

    # ---- checks ----------------------------------------------------------------------
    def check(self, mode: str, wgs: int) -> str:
        """'' if D equals the reference on exact random operands: one warpgroup, one wgmma (scale-d
        = 0 over poisoned registers), then every SM busy with one commit group; else what differs."""
        dev, sms = self.ctx.device, self.ctx.props["sm_count"]
        ops = self.load("exact", seed=7)
        want = ops.reference()
        for grid, w, iters, smem in ((1, 1, 0, CHECK_SMEM), (sms, wgs, 1, self.smem_one_per_sm())):
            self._ensure_dout(grid, w)
            dev.memset32(self.dout, 0xFFFFFFFF)  # poison: an unwritten register cannot pass
            self.launch(mode, grid, w, iters, smem)
            got = read_d(self.regs(grid, w), self.tname, self.n)
            cnt = self.count(iters)
            for i in range(got.shape[0]):
                diff = compare(got[i], cnt * want)
                if diff:
                    where = f"grid {grid} x {w} warpgroups, warpgroup {i}, {cnt} wgmma"
                    return f"{self.spec.name} {mode}: {where}: {diff}{diagnose(ops, mode, got[i], cnt)}"
        return ""

    def verify_run(self, grid: int, wgs: int, data: str) -> str:
        """After a timed run: zero operands give D = 0 everywhere; random ones give the same D in
        every warpgroup, finite for float accumulators, and none left poisoned."""
        regs = self.regs(grid, wgs)
        if data == "zero":
            return (
                ""
                if not regs.any()
                else f"{self.spec.name}: zero operands but D != 0 in {int((regs != 0).sum())} registers"
            )
        if (regs == 0xFFFFFFFF).all(axis=(1, 2)).any():
            return f"{self.spec.name}: a warpgroup left its accumulators unwritten"
        same = (regs == regs[0]).all(axis=(1, 2))
        if not same.all():
            return f"{self.spec.name}: warpgroup {int(np.argmin(same))} computed a different D than warpgroup 0"
        if self.t.d != "s32" and not np.isfinite(read_d(regs[:1], self.tname, self.n)).all():
            return f"{self.spec.name}: non-finite accumulators with random operands"
        return ""

    # ---- measurements ---------------------------------------------------------------
    def latency(self, mode: str, iters: Sequence[int], reps: int, data: str) -> tuple[ChainFit | None, str]:
        """One warpgroup's chain of dependent wgmmas (same accumulators) at each number of iterations, every
        length once per repetition: the line through its clock64 span over the chain's wgmmas (slope: cycles
        per wgmma net of the loop; intercept: the fixed cost); '' or what was wrong with D (checked in the
        first repetition)."""
        rows = []
        for rep in range(reps):
            row = []
            for it in iters:
                self.launch(mode, 1, 1, it, self.img_bytes)
                span, _ = self.spans(1)
                row.append(float(span[0]))
                bad = self.verify_run(1, 1, data) if rep == 0 else ""
                if bad:
                    return None, f"latency chain of {self.count(it)} wgmma: {bad}"
            rows.append(row)
        return fit_chain([self.count(it) for it in iters], rows), ""

    def throughput(self, mode: str, wgs: int, target_ms: float, reps: int) -> tuple[Rate, int]:
        """All SMs, one block of `wgs` warpgroups each; iterations sized to `target_ms` per launch."""
        sms, smem = self.ctx.props["sm_count"], self.smem_one_per_sm()
        iters = 16
        while True:
            ms = min(self.launch(mode, sms, wgs, iters, smem))
            if ms >= target_ms / 4 or iters >= 1 << 26:
                break
            iters *= 4
        iters = int(min(max(iters * target_ms / max(ms, 1e-3), 1), (1 << 31) // self.unroll))
        per_s, fma, clocks = [], [], []
        for _ in range(reps):
            (ms,) = self.launch(mode, sms, wgs, iters, smem)
            span, sm = self.spans(sms)
            mmas = self.count(iters) * wgs
            per_s.append(self.flop_per_mma * mmas * sms / (ms * 1e-3) / 1e12)
            fma.append(float(np.median(mmas * self.flop_per_mma / 2 / span)))
            clocks.append(float(np.median(span)) / (ms * 1e3))
        return Rate(per_s, fma, float(np.median(clocks))), iters


def peak_fma(ctx: BenchContext, tname: str, sparse: bool) -> float | None:
    """The per-SM tensor rate of this type on the run's own GPU (reference/peaks.py); None for a GPU without a
    record, a type without a published rate, and .b1 (not in the table the figures compare with)."""
    t = TYPES[tname]
    if t.peak is None:
        return None
    return fma_per_clk_sm(peaks_for(ctx.props), t.a, sparse=sparse, acc=t.d)


def _assumed_peaks(ctx: BenchContext) -> None:
    peaks = peaks_for(ctx.props)
    if peaks is None:
        return
    for p in ("f16", "tf32", "fp8", "int8"):
        v = fma_per_clk_sm(peaks, p)
        if v is not None:
            ctx.figure(f"tc.wgmma.peak.{p}_dense_fma_per_clk_sm", v, "FMA/clk/SM", "assumed", tensor_source(peaks, p))


def _wgs_param(v: int, facts: Facts) -> str | None:
    return None if 0 <= v <= 8 else "0 (automatic: as many as fit, up to 4) or 1 .. 8"


_types_param = one_of(TYPES, "wgmma type(s)")


def _sparse_types_param(v: tuple[str, ...], facts: Facts) -> str | None:
    bad = [t for t in v if t not in SPARSE_TYPES]
    return f"no sparse wgmma for {', '.join(bad)}; valid: {_names(SPARSE_TYPES)}" if bad else None


def reps_of(quick: bool) -> int:
    return 3 if quick else 5


def lat_iters(quick: bool) -> tuple[int, ...]:
    """Iterations (groups of WG_UNROLL wgmmas) of the latency sweep; the last is the chain whose span over its
    wgmmas the latency was before the sweep (latency_span_cycles)."""
    return (16, 32, 64) if quick else (64, 128, 256)


@dataclass
class Measured:
    """One mode x data of a variant: the latency line, the throughput, what failed."""

    fit: ChainFit | None
    rate: Rate | None
    err: str


def _measure_matrix(
    ctx: BenchContext, v: Variant, modes: tuple[str, ...], datas: tuple[str, ...], wgs_want: int
) -> tuple[dict[tuple[str, str], Measured], dict[str, int]]:
    """Latency and throughput of one variant for each mode x data, after the exact check of each
    mode: ({(mode, data): Measured}, {mode: warpgroups per SM})."""
    quick = ctx.quick
    reps = reps_of(quick)
    target = 4.0 if quick else 20.0
    out, used = {}, {}
    for mode in modes:
        wgs = used[mode] = v.warpgroups(mode, v.smem_one_per_sm(), wgs_want or 4)
        err = v.check(mode, wgs)
        ok = ctx.soft_check(not err, err)
        for data in datas:
            if not ok:
                out[(mode, data)] = Measured(None, None, err)
                continue
            v.load(data, seed=11)
            fit, bad = v.latency(mode, lat_iters(quick), reps, data)
            rate = None
            if not bad:
                rate, _ = v.throughput(mode, wgs, target, reps)
                bad = v.verify_run(ctx.props["sm_count"], wgs, data)
            ctx.soft_check(not bad, bad)
            out[(mode, data)] = Measured(fit, rate, bad)
    return out, used


def _samples_figure(
    ctx: BenchContext, key: str, samples: list[float], unit: str, method: str, check: str, note: str
) -> None:
    """A measured figure from its samples (median, min..max); a failed check before any sample gives
    0.0 without a spread (recorded as FAILED)."""
    if samples:
        ctx.median_figure(key, samples, unit, "measured", method, check, note)
    else:
        ctx.figure(key, 0.0, unit, "measured", method, None, check, note)


def limit_note(fma: float, m: Measured, peak: float, wgs: int, others: dict[str, Measured]) -> str:
    """Why a wgmma's rate stays below the peak, from what the benchmark measured: how many cycles one wgmma
    holds the SM's tensor cores at that rate, how many its multiply-accumulates need at the peak, one
    warpgroup's dependent-chain latency and the other operand source's rate (SS: A in shared memory, RS: A in
    registers)."""
    assert m.rate is not None
    every, need = fma / m.rate.fma, fma / peak
    parts = [
        f"{m.rate.fma / peak:.1%} of the peak, a measured limit: with {wgs} warpgroups per SM issuing back to back "
        f"the SM completes one wgmma every {every:.1f} cycles, where its {fma:g} multiply-accumulates need "
        f"{need:.1f} at the peak"
    ]
    if m.fit is not None:
        lat = m.fit.per_step
        parts.append(f"one warpgroup's chain of dependent wgmmas takes {lat:.1f} cycles per wgmma")
        if abs(every - lat) <= 0.05 * lat:
            parts.append(
                "the warpgroups do not overlap: each wgmma holds the tensor cores for its whole latency, "
                f"{every - need:.1f} cycles more than its arithmetic"
            )
    for mode, o in sorted(others.items()):
        if o.rate is not None and not o.err:
            parts.append(
                f"the {mode} form of the same wgmma runs one every {fma / o.rate.fma:.1f} cycles "
                f"({o.rate.fma / peak:.1%})"
            )
    return "; ".join(parts)


def _emit(
    ctx: BenchContext,
    tname: str,
    n: int,
    sparse: bool,
    res: dict[tuple[str, str], Measured],
    wgs: dict[str, int],
    reps: int,
    headline_latency: bool = True,
) -> None:
    base = key_of(tname, n, sparse)
    t = TYPES[tname]
    unit, suffix = t.unit, t.unit.lower()
    peak = peak_fma(ctx, tname, sparse)
    what = f"wgmma{'.sp' if sparse else ''}.{shape_of(tname, n, sparse)}.{t.d}.{t.a}.{t.a}"
    fma = M * n * kdim(tname, sparse)
    for (mode, data), m in res.items():
        fit, rate, err = m.fit, m.rate, m.err
        chk = "failed" if err else "ok"
        p = f"{base}.{mode}_{data}"
        if fit or err:
            lengths = f"chains of {', '.join(map(str, fit.steps))} wgmmas" if fit else "several chain lengths"
            headline = headline_latency and mode == "ss" and data == "zero"
            method = chain_method(
                f"{what} {mode}",
                lengths,
                "one warpgroup, same accumulators",
                len(fit.slopes) if fit else reps,
                "latency_fixed_cycles" if headline else "in the note",
            )
            note = err or (
                f"fixed cost {fit.fixed:.0f} cycles; span / wgmmas of the longest chain {fit.span():.2f}" if fit else ""
            )
            _samples_figure(ctx, f"{p}_latency_cycles", list(fit.slopes) if fit else [], "cycles", method, chk, note)
            if headline:
                ctx.figure(
                    f"{base}.latency_cycles",
                    round(fit.per_step, 2) if fit else 0.0,
                    "cycles",
                    "measured",
                    f"ss, zero operands: {method}",
                    (min(fit.slopes), max(fit.slopes)) if fit else None,
                    chk,
                    note,
                )
                ctx.figure(
                    f"{base}.latency_fixed_cycles",
                    round(fit.fixed, 1) if fit else 0.0,
                    "cycles",
                    "measured",
                    "ss, zero operands: intercept of latency_cycles' line, the cycles between the clock reads that "
                    "do not grow with the chain (fence, the first wgmma's operand fetch, the last wait, the barrier)",
                    (min(fit.intercepts), max(fit.intercepts)) if fit else None,
                    chk,
                    err,
                )
                ctx.figure(
                    f"{base}.latency_span_cycles",
                    round(fit.span(), 2) if fit else 0.0,
                    "cycles",
                    "measured",
                    f"{what} ss, zero operands: clock64 span of one warpgroup's chain of "
                    f"{fit.steps[-1] if fit else '?'} dependent wgmmas over its length, the fixed cost spread over "
                    "the chain (the form latency_cycles had before it became the slope of a chain-length sweep)",
                    None,
                    chk,
                    err,
                )
        if rate is None and not err:
            continue
        w = wgs.get(mode, 0)
        note = err or (
            f"{rate.fma:.0f} FMA/clk/SM (clock64), SM clock {rate.clock_mhz:.0f} MHz "
            f"(block cycles / event time), {w} warpgroups per SM"
        )
        _samples_figure(
            ctx,
            f"{p}_{suffix}",
            rate.per_s if rate else [],
            unit,
            f"{what} {mode}: all SMs, one block of {w} warpgroups each issuing back-to-back wgmmas; "
            "2*M*N*K per wgmma over CUDA-event time, median of launches",
            chk,
            note,
        )
        _samples_figure(
            ctx,
            f"{p}_fma_per_clk_sm",
            rate.fma_clk_sm if rate else [],
            "FMA/clk/SM",
            "multiply-accumulates per SM per clock: each block's clock64 span, median over SMs",
            chk,
            err,
        )
        if peak:
            src = f"{t.peak}{', sparse x2' if sparse else ''}"
            ctx.figure(
                f"{p}_pct_peak",
                round(100 * rate.fma / peak, 2) if rate else 0.0,
                "%",
                "derived",
                f"FMA/clk/SM over the assumed peak of {peak:g} FMA/clk/SM ({src})",
                None,
                chk,
                err,
            )
            ratio = rate.fma / peak if rate else 0.0
            others = {o: x for (o, d), x in res.items() if d == data and o != mode}
            ctx.figure(
                f"{p}_peak_ratio",
                round(ratio, 4),
                "ratio",
                "derived",
                f"{mode}_{data}_fma_per_clk_sm over this GPU's per-SM tensor rate for the type, {peak:g} FMA/clk/SM "
                f"({src})",
                None,
                chk,
                err or (limit_note(fma, m, peak, w, others) if ratio < AT_PEAK else ""),
            )


def _series(ctx: BenchContext, name: str, rows: list[tuple[str, float, float, float]], unit: str, figure: str) -> None:
    pts = [Point(i, v, lo, hi, extra={"label": label}) for i, (label, v, lo, hi) in enumerate(rows)]
    if pts:
        ctx.series(name, "variant", "", "throughput", unit, pts, plot="bar", figure=figure)


def _run_types(ctx: BenchContext, names: tuple[str, ...], sparse: bool, figure: str) -> None:
    modes, datas = ("ss", "rs"), ("zero", "rand")
    variants = [(t, 256) for t in names]
    ctx.precompile([variant_spec(t, n, sparse) for t, n in variants])
    if not sparse:  # once per run: figure keys are unique
        _assumed_peaks(ctx)
    bars: dict[tuple[str, str], list] = {}
    for i, (tname, n) in enumerate(variants):
        with ctx.scratch():  # one variant's buffers at a time
            v = Variant(ctx, tname, n, sparse)
            res, wgs = _measure_matrix(ctx, v, modes, datas, ctx.params["warpgroups"])
        _emit(ctx, tname, n, sparse, res, wgs, reps_of(ctx.quick))
        for (mode, data), m in res.items():
            rate = m.rate
            if rate is not None and not m.err:
                bars.setdefault((mode, data), []).append(
                    (f"{tname} {shape_of(tname, n, sparse)}", rate.value, min(rate.per_s), max(rate.per_s))
                )
        ctx.progress(i + 1, len(variants), f"{'sp ' if sparse else ''}{tname}")
    for (mode, data), rows in bars.items():
        _series(ctx, f"{mode}_{data}", rows, "TFLOPS or TOPS", figure)


DENSE_SPECS = [variant_spec(t, 256) for t in TYPES]
SWEEP_SPECS = [variant_spec("f16_f32", n) for n in _FLOAT_NS if n != 256]
SPARSE_SPECS = [variant_spec(t, 256, sparse=True) for t in SPARSE_TYPES]
_WGS = Param(0, "warpgroups per SM (one block per SM); 0 = as many as fit, up to 4", int, _wgs_param)


@benchmark(
    name="wgmma_throughput",
    title="Dense wgmma m64n256k*: latency and throughput, SS/RS, zero/random operands",
    axes={"type": _names(TYPES), "mode": "ss (A, B in shared memory), rs (A in registers)", "operands": "zero, random"},
    kernels=DENSE_SPECS,
    needs=Needs(features=("wgmma",)),  # sm_90a only: not Blackwell, which has tcgen05 instead
    timeout_s=400,
    paper="000 §6.2 Table IX",
    params={
        "types": Param(tuple(TYPES), "comma-separated wgmma types", comma_names, _types_param),
        "warpgroups": _WGS,
    },
)
def wgmma_throughput(ctx: BenchContext) -> None:
    _run_types(ctx, ctx.params["types"], False, "wgmma_dense")


@benchmark(
    name="wgmma_sparse",
    title="Sparse wgmma.sp m64n256k*: latency and throughput, SS/RS, zero/random operands",
    axes={"type": _names(SPARSE_TYPES), "mode": "ss, rs", "operands": "zero, random (2:4 structure, valid metadata)"},
    kernels=SPARSE_SPECS,
    needs=Needs(features=("wgmma",)),  # sm_90a only: not Blackwell, which has tcgen05 instead
    timeout_s=400,
    paper="000 §6.2 Table X",
    params={
        "types": Param(tuple(SPARSE_TYPES), "comma-separated sparse wgmma types", comma_names, _sparse_types_param),
        "warpgroups": _WGS,
    },
)
def wgmma_sparse(ctx: BenchContext) -> None:
    _run_types(ctx, ctx.params["types"], True, "wgmma_sparse")


def _ns_param(v: tuple[int, ...], facts: Facts) -> str | None:
    bad = [n for n in v if n not in _FLOAT_NS]
    return f"N={', '.join(map(str, bad))} not valid for f16_f32 wgmma; valid: {_names(_FLOAT_NS)}" if bad else None


@benchmark(
    name="wgmma_n_sweep",
    title="wgmma.m64nNk16.f32.f16.f16 over N: latency and throughput (SS and RS)",
    axes={
        "N": "8 .. 256 step 8 (quick: 8, 16, 32, 64, 128, 256)",
        "mode": "ss, rs",
        "operands": "zero (+ random in full mode)",
    },
    kernels=SWEEP_SPECS + [variant_spec("f16_f32", 256)],
    needs=Needs(features=("wgmma",)),  # sm_90a only: not Blackwell, which has tcgen05 instead
    timeout_s=500,
    paper="000 §6.2 Table XI",
    params={
        "ns": Param(None, "comma-separated N values (default: mode's list)", comma_ints, _ns_param),
        "warpgroups": _WGS,
    },
)
def wgmma_n_sweep(ctx: BenchContext) -> None:
    tname = "f16_f32"
    ns = ctx.params["ns"] or ((8, 16, 32, 64, 128, 256) if ctx.quick else _FLOAT_NS)
    datas = ("zero", "rand") if not ctx.quick else ("zero",)
    ctx.precompile([variant_spec(tname, n) for n in ns])
    curves: dict[tuple[str, str, str], list[Point]] = {}
    for i, n in enumerate(ns):
        with ctx.scratch():
            v = Variant(ctx, tname, n, False)
            res, wgs = _measure_matrix(ctx, v, ("ss", "rs"), datas, ctx.params["warpgroups"])
        if n != 256:  # N = 256 figures belong to wgmma_throughput (keys are unique in a run)
            _emit(ctx, tname, n, False, res, wgs, reps_of(ctx.quick), headline_latency=False)
        for (mode, data), m in res.items():
            rate = m.rate
            if m.err or rate is None or m.fit is None:
                continue
            curves.setdefault((mode, data, "lat"), []).append(ctx.point(n, m.fit.slopes))
            curves.setdefault((mode, data, "tput"), []).append(ctx.point(n, rate.per_s, fma_per_clk_sm=rate.fma))
        ctx.progress(i + 1, len(ns), f"N={n}")
    for (mode, data, what), pts in curves.items():
        if what == "lat":
            ctx.series(f"{mode}_{data}", "N", "", "latency", "cycles", pts, plot="line", figure="wgmma_n_latency")
        else:
            ctx.series(f"{mode}_{data}", "N", "", "throughput", "TFLOPS", pts, plot="line", figure="wgmma_n_throughput")
