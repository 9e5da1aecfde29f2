"""Linear layers n x n x n over types, forward and forward + backward, and the FP8 forward split
into amax/scale, cast and GEMM (000 Figs. 6-7). Called by bench/app/workloads.py with torch imported."""

from __future__ import annotations

import gc
import math
import statistics
from typing import Any

from ..analysis import roofline
from ..errors import GpuDissectError
from ..models import Point
from .deps import set_tf32
from .timing import Timing, time_call

TYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp8_fused")
FP8_KINDS = ("fp8", "fp8_fused")
WHO = {"fp8": "FP8", "fp8_fused": "fused FP8 (delayed scaling)"}
# relative-l2 error allowed against float64 on sampled rows: forward, backward (dX)
TOL = {
    "fp32": (1e-4, 1e-4),
    "tf32": (5e-3, 5e-3),
    "fp16": (1e-2, 1e-2),
    "bf16": (2e-2, 2e-2),
    "fp8": (0.08, 0.12),
    "fp8_fused": (0.08, 0.12),
}
CHECK_ROWS = 4
WHAT = {
    "fp32": "F.linear float32, TF32 off",
    "tf32": "F.linear float32, TF32 on",
    "fp16": "F.linear float16",
    "bf16": "F.linear bfloat16",
    "fp8": "Float8Linear (ours): bf16 in/out, per-tensor current scaling from amax, e4m3 x e4m3 _scaled_mm "
    "with fast accumulation; backward dY in e5m2, dgrad/wgrad with full accumulation",
    "fp8_fused": "Float8FusedLinear (ours): bf16 in/out, x and W each cast to e4m3 by one kernel of ours (one read, "
    "amax recorded), delayed scaling from a 16-step amax history, e4m3 x e4m3 _scaled_mm with fast accumulation; "
    "backward as fp8",
}


def _rel(got: Any, ref: Any) -> float:
    d = float((got.double() - ref).norm())
    r = float(ref.norm())
    return d / r if r > 0 else (0.0 if d == 0 else math.inf)


class LinearCase:
    """Input, weight and output gradient of one (type, n), with the layer's forward / backward."""

    def __init__(self, torch: Any, kind: str, n: int, seed: int):
        from . import float8

        if kind == "fp8_fused":
            from . import float8_fused
        self.torch, self.kind, self.n = torch, kind, n
        base = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16}.get(kind, torch.bfloat16)
        g = torch.Generator(device="cuda")
        g.manual_seed(seed)
        self.x = torch.randn(n, n, device="cuda", dtype=base, generator=g)
        self.w = (torch.randn(n, n, device="cuda", dtype=torch.float32, generator=g) / math.sqrt(n)).to(base)
        self.gy = torch.randn(n, n, device="cuda", dtype=base, generator=g)
        if kind == "fp8":
            self.layer = float8.Float8Linear(self.w)
        elif kind == "fp8_fused":
            self.layer = float8_fused.Float8FusedLinear(self.w)
        else:
            self.layer = torch.nn.Linear(n, n, bias=False, device="cuda", dtype=base)
            with torch.no_grad():
                self.layer.weight.copy_(self.w)
        self.xg = self.x.clone().requires_grad_(True)

    def forward(self) -> Any:
        with self.torch.no_grad():
            return self.layer(self.x)

    def fwd_bwd(self) -> None:
        y = self.layer(self.xg)
        y.backward(self.gy)

    def check(self) -> tuple[float, float]:
        """Relative errors of forward output and input gradient on CHECK_ROWS rows vs float64."""
        t = self.torch
        y = self.forward()
        w64 = self.w.double()
        ref = self.x[:CHECK_ROWS].double() @ w64.t()
        ef = _rel(y[:CHECK_ROWS], ref)
        self.xg.grad = None
        self.layer.weight.grad = None
        self.fwd_bwd()
        dref = self.gy[:CHECK_ROWS].double() @ w64
        eb = _rel(self.xg.grad[:CHECK_ROWS], dref)
        ok = bool(t.isfinite(y).all())
        del y
        return (ef if ok else math.inf), eb


def run_linear(ctx: Any, torch: Any, sizes: list[int], kinds: list[str], reps: int) -> None:
    from ..device.telemetry import Sampler, summarize
    from . import float8
    from .timing import dram_copy_gbps

    dram = None
    if any(k in FP8_KINDS for k in kinds):  # the ceiling a fused one-pass quantisation would run at
        dram, spread, how = dram_copy_gbps(torch, 5)
        ctx.figure("app.linear.dram_copy_gbps", round(dram, 1), "GB/s", "measured", how, spread=spread)

    fwd: dict[str, list[Point]] = {k: [] for k in kinds}
    fb: dict[str, list[Point]] = {k: [] for k in kinds}
    med: dict[tuple[str, int, str], float] = {}
    passed: dict[tuple[str, int], bool] = {}
    split: dict[str, list[Point]] = {"amax + scale": [], "cast": [], "GEMM": [], "other": []}
    total, done = len(sizes) * len(kinds), 0
    for kind in kinds:
        set_tf32(torch, kind == "tf32")
        for n in sizes:
            done += 1
            key = f"app.linear.{kind}.{n}"
            case = None
            try:
                try:
                    case = LinearCase(torch, kind, n, seed=0x11E + n)
                    ef, eb = case.check()
                except torch.OutOfMemoryError:
                    raise
                except (RuntimeError, ValueError, GpuDissectError) as e:
                    if kind != "fp8_fused":
                        raise
                    # our kernel's form fails alone: the other types keep their figures
                    why = str(e).splitlines()[0] if str(e) else type(e).__name__
                    ctx.soft_check(False, f"linear {kind} n={n}: {why}")
                    ctx.figure(f"{key}.tflops", "FAILED", "TFLOPS", "measured", WHAT[kind], check="failed", note=why)
                    continue
                tf, tb = TOL[kind]
                ok = ctx.soft_check(
                    ef <= tf and eb <= tb,
                    f"linear {kind} n={n}: relative error forward {ef:.3g} "
                    f"(tolerance {tf:g}), dX {eb:.3g} (tolerance {tb:g}) vs float64",
                )
                if ok and kind == "tf32":  # an error at FP32 level means TF32 was not used: the label would be wrong
                    ok = ctx.soft_check(
                        ef > TOL["fp32"][0],
                        f"linear tf32 n={n}: forward error {ef:.3g} as small as FP32's: TF32 was apparently not used",
                    )
                passed[(kind, n)] = ok
                note = f"relative-l2 error vs float64 on {CHECK_ROWS} rows: forward {ef:.3g}, dX {eb:.3g}"
                target = 20.0 if ctx.quick else 50.0
                samples: list[Any] = []
                # the check has just run both calls on these tensors (cuBLAS heuristics, allocations, the fused form's
                # first-call amax), and left the input and weight gradients that every later backward adds to: no
                # warm call
                with Sampler(ctx.props.get("uuid"), period_s=0.02) as s:
                    tfw = time_call(torch, case.forward, reps, target, warm=False)
                samples += s.samples
                tfb = time_call(torch, case.fwd_bwd, reps, target, warm=False)
                for t, pts, suffix, bwd in ((tfw, fwd[kind], "tflops", False), (tfb, fb[kind], "fwdbwd_tflops", True)):
                    vals = [roofline.tflops(roofline.linear_flops(n, bwd), m) for m in t.ms]
                    v = statistics.median(vals)
                    med[(kind, n, suffix)] = v
                    ctx.figure(
                        f"{key}.{suffix}",
                        round(v, 2),
                        "TFLOPS",
                        "measured",
                        f"{WHAT[kind]}; x ({n},{n}) . W^T ({n},{n}), {'6' if bwd else '2'}n^3 flops "
                        f"({'forward + dgrad + wgrad' if bwd else 'forward'}) / CUDA-event time over {t.how}, "
                        f"median of {reps}",
                        spread=(min(vals), max(vals)),
                        check="ok" if ok else "failed",
                        note=note,
                    )
                    if ok:
                        pts.append(Point(n, v, min(vals), max(vals), reps, {"how": t.how}))
                ctx.figure(
                    f"{key}.forward_ms",
                    round(tfw.median, 4),
                    "ms",
                    "measured",
                    f"per forward, {tfw.how}",
                    spread=tfw.spread,
                    check="ok" if ok else "failed",
                )
                if kind == "fp8" and ok:
                    _fp8_split(ctx, torch, float8, case, n, tfw, reps, split, dram)
                if kind == "fp8_fused" and ok:
                    _fused_split(ctx, torch, case, n, tfw, reps, dram)
                if kind == "bf16" and ok:
                    _tensor_fraction(ctx, n, med[(kind, n, "tflops")], summarize(samples))
            except torch.OutOfMemoryError as e:
                ctx.figure(f"{key}.tflops", "OOM", "TFLOPS", "measured", WHAT[kind], note=str(e).splitlines()[0])
            finally:
                del case
                gc.collect()
                torch.cuda.empty_cache()
            ctx.progress(done, total, f"linear {kind} n={n}")
    set_tf32(torch, False)
    for groups, y_label, y_unit, plot, figure in (
        (fwd, "forward throughput", "TFLOPS", "logx", "linear_forward"),
        (fb, "forward + backward throughput", "TFLOPS", "logx", "linear_forward_backward"),
        (split, "share of the FP8 forward", "fraction", "bar", "fp8_time_split"),
    ):
        for name, pts in groups.items():
            if pts:
                ctx.series(name, "matrix size n", "", y_label, y_unit, pts, plot=plot, figure=figure)
    for n in sizes:
        for kind in FP8_KINDS:
            for suffix, tag in (("tflops", ""), ("fwdbwd_tflops", "_fwdbwd")):
                a, b = med.get((kind, n, suffix)), med.get(("bf16", n, suffix))
                if a and b:
                    ctx.figure(
                        f"app.linear.{kind}_vs_bf16{tag}.{n}",
                        round(a / b, 3),
                        "ratio",
                        "derived",
                        f"{WHO[kind]} / BF16 {'forward + backward' if tag else 'forward'} throughput at n = {n}, "
                        "same run",
                        check="ok" if passed.get((kind, n)) and passed.get(("bf16", n)) else "failed",
                    )


def _fp8_split(
    ctx: Any,
    torch: Any,
    float8: Any,
    case: LinearCase,
    n: int,
    tfw: Timing,
    reps: int,
    split: dict[str, list[Point]],
    dram_gbps: float | None,
) -> None:
    """Fig. 6: each phase of the FP8 forward timed alone (same inputs, CUDA-graph batches)."""
    x, w = case.x, case.w
    sx, sw = float8.phase_amax_scale(x, w)
    xq, wq = float8.phase_cast(x, w, sx, sw)
    target = 10.0 if ctx.quick else 30.0
    t_amax = time_call(torch, lambda: float8.phase_amax_scale(x, w), reps, target)
    t_cast = time_call(torch, lambda: float8.phase_cast(x, w, sx, sw), reps, target)
    t_gemm = time_call(torch, lambda: float8.phase_gemm(xq, wq, torch.bfloat16), reps, target)
    parts = {"amax + scale": t_amax.median, "cast": t_cast.median, "GEMM": t_gemm.median}
    whole = tfw.median
    parts["other"] = max(0.0, whole - sum(parts.values()))
    key = f"app.linear.fp8.{n}"
    how = f"each phase alone over {t_gemm.how} (x and W both scaled and cast), median of {reps}"
    for phase, t, what in (
        ("amax_scale", t_amax, "amax of x and W (torch.linalg.vector_norm inf, one reduction each) + fp8_max/amax"),
        ("cast", t_cast, "x*scale -> e4m3 and W*scale -> e4m3 (multiply, convert) + 1/scale"),
        ("gemm", t_gemm, "torch._scaled_mm e4m3 x e4m3 -> bf16, fast accumulation"),
    ):
        ctx.figure(f"{key}.{phase}_ms", round(t.median, 5), "ms", "measured", f"{what}; {how}", spread=t.spread)
    ctx.figure(
        f"{key}.quant_fraction",
        round(roofline.outside_fraction(whole, t_gemm.median), 4),
        "fraction",
        "derived",
        f"(whole forward {whole:.4g} ms - GEMM alone {t_gemm.median:.4g} ms) / whole forward: the "
        "share of the FP8 forward outside its GEMM (amax, scale, casts, launch gaps)",
    )
    ctx.figure(
        f"{key}.phase_sum_vs_forward",
        round(sum(v for k, v in parts.items() if k != "other") / whole, 3),
        "ratio",
        "derived",
        "sum of the phases timed alone / the whole forward timed as one",
    )
    if dram_gbps:
        # one fused pass per tensor would read it twice (amax, cast) and write 1 byte per element
        ideal = 2 * n * n * (2 * case.x.element_size() + 1) / (dram_gbps * 1e9) * 1e3
        ctx.figure(
            f"{key}.quant_vs_ideal",
            round((t_amax.median + t_cast.median) / ideal, 2),
            "ratio",
            "derived",
            f"(amax + scale + cast time) / ({2 * case.x.element_size() + 1} bytes per element of x and W at the "
            f"measured DRAM copy rate {dram_gbps:.0f} GB/s = {ideal:.3g} ms): how far the unfused eager "
            "quantisation is from reading each tensor twice and writing it once",
        )
        _quant_bound(ctx, key, n, case.x.element_size(), t_gemm.median, dram_gbps)
    for name, v in parts.items():
        split[name].append(Point(n, v / whole, extra={"label": str(n), "ms": v}))


def one_pass_ms(n: int, in_bytes: int, dram_gbps: float) -> float:
    """ms to read x and W (n x n each) once and write their e4m3 copies once at the DRAM copy rate."""
    from .fp8cast import one_pass_bytes

    return 2 * one_pass_bytes(n * n, in_bytes) / (dram_gbps * 1e9) * 1e3


def _quant_bound(ctx: Any, key: str, n: int, in_bytes: int, gemm_ms: float, dram_gbps: float) -> None:
    """The quant_fraction the forward would have with its casts at one DRAM pass and nothing else outside the
    GEMM: the bound its quant_fraction stands beside."""
    one = one_pass_ms(n, in_bytes, dram_gbps)
    ctx.figure(
        f"{key}.quant_fraction_bound",
        round(one / (one + gemm_ms), 4),
        "fraction",
        "derived",
        f"one DRAM pass over x and W ({in_bytes} bytes read + 1 written per element at the measured copy rate "
        f"{dram_gbps:.0f} GB/s = {one:.3g} ms) / (that + the GEMM alone {gemm_ms:.4g} ms): the quant_fraction of "
        "a forward whose quantisation reads each tensor once and writes it once, with no gaps",
    )


def _fused_split(
    ctx: Any, torch: Any, case: LinearCase, n: int, tfw: Timing, reps: int, dram_gbps: float | None
) -> None:
    """The fused FP8 forward's two phases timed alone: both one-pass casts, then the GEMM (same inputs,
    CUDA-graph batches), and the casts against one DRAM pass."""
    from . import float8_fused

    x, w, gemm = case.x, case.w, case.layer.gemm
    sx, sw = float8_fused.CastState(x.device), float8_fused.CastState(x.device)
    xq, wq = float8_fused.phase_cast(x, w, sx, sw)
    target = 10.0 if ctx.quick else 30.0
    t_cast = time_call(torch, lambda: float8_fused.phase_cast(x, w, sx, sw), reps, target)
    t_gemm = time_call(torch, lambda: float8_fused.phase_gemm(xq, wq, torch.bfloat16, gemm), reps, target)
    key = f"app.linear.fp8_fused.{n}"
    how = f"each phase alone over {t_gemm.how}, median of {reps}"
    for phase, t, what in (
        (
            "cast",
            t_cast,
            "x and W each to e4m3 by one kernel of ours (one read, amax and history updated, delayed scale)",
        ),
        ("gemm", t_gemm, f"{'torch._scaled_mm' if gemm == 'torch' else 'our GEMM'} e4m3 x e4m3 -> bf16"),
    ):
        ctx.figure(f"{key}.{phase}_ms", round(t.median, 5), "ms", "measured", f"{what}; {how}", spread=t.spread)
    whole = tfw.median
    ctx.figure(
        f"{key}.quant_fraction",
        round(roofline.outside_fraction(whole, t_gemm.median), 4),
        "fraction",
        "derived",
        f"(whole forward {whole:.4g} ms - GEMM alone {t_gemm.median:.4g} ms) / whole forward: the share of the "
        "fused FP8 forward outside its GEMM (the two casts, launch gaps), as app.linear.fp8.<n>.quant_fraction",
    )
    if dram_gbps:
        eb = x.element_size()
        one = one_pass_ms(n, eb, dram_gbps)
        ctx.figure(
            f"{key}.quant_vs_one_pass",
            round(t_cast.median / one, 3),
            "ratio",
            "derived",
            f"both casts {t_cast.median:.4g} ms / one DRAM pass over x and W ({eb} bytes read + 1 written per "
            f"element at the measured copy rate {dram_gbps:.0f} GB/s = {one:.3g} ms); 1 = at the bound (below 1: "
            "the tensors came partly from L2, which holds them between graph replays at small n)",
        )
        _quant_bound(ctx, key, n, eb, t_gemm.median, dram_gbps)


def _tensor_fraction(ctx: Any, n: int, tflops: float, tel: Any) -> None:
    """BF16 forward throughput as a fraction of this GPU's dense BF16 tensor peak at the measured SM clock
    (the key keeps its first name, from Hopper's wgmma peak, on every GPU)."""
    from ..analysis.roofline import tensor_peak_tflops
    from ..reference.peaks import fma_per_clk_sm, peaks_for, tensor_source

    pk = peaks_for(ctx.props)  # the run's own GPU; None for one without a peak record
    rate = fma_per_clk_sm(pk, "bf16")
    clock = tel.sm_clock_mhz_median if tel is not None else None
    key = f"app.linear.bf16.{n}.fraction_of_wgmma_peak"
    if pk is None or rate is None or not clock:
        why = "no peak record for this GPU" if pk is None else "no dense BF16 tensor rate" if rate is None else ""
        ctx.figure(key, f"n/a: {why or 'no NVML clock'}", "fraction", "derived", "")
        return
    peak = tensor_peak_tflops(rate, int(ctx.props["sm_count"]), clock)
    ctx.figure(
        key,
        round(tflops / peak, 4),
        "fraction",
        "derived",
        f"BF16 linear forward {tflops:.1f} TFLOPS / dense BF16 tensor peak at the SM clock NVML read during that "
        f"timing ({clock:.0f} MHz): {rate:g} FMA/clk/SM x 2 x {ctx.props['sm_count']} SMs = {peak:.1f} "
        f"TFLOPS ({tensor_source(pk, 'bf16')})",
    )
