"""Our tensor-core GEMM against cuBLAS, rung by rung (issue 13; Yan et al., seed 004, §VI-VII).

Two benchmarks:
- `ladder`: every built rung of kernels/gemm.cu (bf16, n = 8192, and 4096 in full mode) against cuBLAS,
  with the CPI/roofline model's prediction for each rung's tile (analysis/gemm_model.py);
- `vs_cublas`: the best rung on square (bf16, fp16), Yan's rectangular families and Llama-3 projection
  shapes, each checked and timed in alternation with cuBLAS; and fp8 e4m3 at 8192 (the first rung
  with an fp8 build) against torch._scaled_mm.

Method of every point: A (M x K row-major) and B (column-major: stored N x K) random normal; our C and
cuBLAS's C (torch.matmul on the same operands, the same layout) must agree within a stated max-norm
bound, and ours must match a float64 reference on sampled entries; a point that fails either has no
TFLOPS figure. Timing: several operand sets rotated so that no GEMM starts from operands the previous
one left in L2; ours and cuBLAS each timed as a batch between CUDA events, the two sides in alternation
(order swapped every pair); ratio = median over pairs of t_cublas / t_ours; NVML SM clock and power
attributed to each side by the time windows of its batches.

torch is imported lazily (the package does not depend on it); without it the benchmarks end with a
clear message.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...analysis.gemm_model import Machine, abs_errors, predict, with_clock
from ...errors import GpuDissectError
from ...gemm.variants import AUTO, BEST, BEST_FP8, DATA_PARALLEL, FP8_FROM, RUNGS, SMALL_TILE, gemm_flops
from ...models import Point
from ...reference.gemm import RECT_FAMILIES
from ..context import BenchContext
from ..registry import KernelSpec, Param, benchmark

SAMPLE = 256  # entries checked against the float64 reference
U_OUT = {"bf16": 2.0**-8, "fp16": 2.0**-11}  # unit roundoff of the output type
SQUARE_QUICK = (4096, 8192, 16384)
SQUARE_FULL = tuple(range(1024, 16385, 256))  # Yan §VII: 1024..16384 in steps of 256
RECT_W_QUICK = (4096,)
RECT_W_FULL = (2048, 4096, 8192)
# Llama-3 projection shapes (N, K) of one layer, hidden 4096 / 8192, GQA with 8 KV heads of 128:
# fused QKV, attention output, fused gate+up, down (Meta's model cards / config.json).
LLAMA = {
    "8b": {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)},
    "70b": {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672)},
}
LLAMA_TOKENS_QUICK = (4096,)
LLAMA_TOKENS_FULL = (1024, 4096, 16384)

SPECS: list[KernelSpec] = [r.spec(dt) for r in RUNGS.values() for dt in r.dtypes]
FP8_MAX = 448.0  # largest finite e4m3 value
FP8_N = 8192  # the fp8 point of vs_cublas (issue 13 §4)
# Squares also timed in short batches (one GEMM is well under the batch there): ~2 ms per side is shorter than
# the power controller takes to settle on a side's own clock, so both run at one shared operating point
SHORT_BATCH_MS, SHORT_BATCH_PAIRS, SHORT_BATCH_SQUARES = 2.0, 25, (4096, 8192)


def max_norm_bound(dtype: str, k: int) -> float:
    """Allowed max|ours - cuBLAS| / max|cuBLAS|: both round an fp32 sum to the output type (one unit
    roundoff each, relative to the largest entry at most) and sum in different orders (fp32 error
    grows at most like 4 u32 sqrt(K) for random data)."""
    return 2 * U_OUT[dtype] + 4 * 2.0**-24 * math.sqrt(k)


def fp8_bound(k: int) -> float:
    """fp8 e4m3 (bf16 out): allowed max|ours - _scaled_mm| / max|_scaled_mm| and relative-l2 error against
    the float64 product of the dequantised operands. The products are exact in fp32, but Hopper's fp8
    wgmma adds into the accumulator keeping only ~14 mantissa bits (DeepSeek-V3 technical report,
    §3.3.2): allow 2^-13 of the running sum per k32 instruction, adding up in the worst case, plus
    the bf16 rounding of both outputs."""
    return 2 * U_OUT["bf16"] + math.ceil(k / 32) * 2.0**-13


def ref_tolerance(k: int) -> float:
    """Relative-l2 error allowed against the float64 reference on the sampled entries (as tensor_lib)."""
    return max(1e-2, 4 * 2.0**-24 * math.sqrt(k))


def n_sets(m: int, n: int, k: int, l2_bytes: int) -> int:
    """Operand sets to rotate: enough that the sets together exceed twice the L2."""
    per = 2 * (m * k + n * k + m * n)
    return max(2, min(8, math.ceil(2 * l2_bytes / per)))


def shapes_rect(ws: tuple[int, ...]) -> list[tuple[str, int, int, int]]:
    """(key part, M, N, K) of Yan's families [2W,W,W] .. [W,W,4W]; key part "2x1x1.4096"."""
    return [(f"{fm}x{fn}x{fk}.{w}", fm * w, fn * w, fk * w) for w in ws for fm, fn, fk in RECT_FAMILIES]


def shapes_llama(tokens: tuple[int, ...]) -> list[tuple[str, int, int, int]]:
    """(key part, M = tokens, N, K) of the Llama-3 projections; key part "8b.qkv.4096"."""
    return [
        (f"{model}.{proj}.{t}", t, n, k)
        for t in tokens
        for model, projs in LLAMA.items()
        for proj, (n, k) in projs.items()
    ]


def tally(
    sq_pts: dict[str, list[Point]], ratios: dict[str, list[float]], group: str, dt: str, point: Point, ratio: float
) -> None:
    """File one measured shape: square bf16/fp16 points draw the square curve, rect/Llama ratios make
    their medians; the lone e4m3 square has its own figures only."""
    if group == "square":
        if dt in sq_pts:
            sq_pts[dt].append(point)
    else:
        ratios[group].append(ratio)


def summary_path() -> Path | None:
    """Stored figures of this GPU the model reads: $GPUDISSECT_GEMM_MODEL_INPUTS, else the committed
    results/h100-sxm5-80gb/summary.json of the tree the run starts from."""
    env = os.environ.get("GPUDISSECT_GEMM_MODEL_INPUTS")
    p = Path(env) if env else Path.cwd() / "results" / "h100-sxm5-80gb" / "summary.json"
    return p if p.is_file() else None


# ---------------------------------------------------------------------------------------
def _import_torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise GpuDissectError(
            f"the gemm suite needs PyTorch with CUDA (cuBLAS is reached through torch, "
            f"and the operands are torch tensors): {e}; install torch, or skip this suite"
        ) from None
    if not torch.cuda.is_available():
        raise GpuDissectError(f"torch {torch.__version__} sees no CUDA device (a CPU-only build?)")
    return torch


@dataclass
class Outcome:
    ok: bool
    why: str
    ours_ms: list[float] = field(default_factory=list)
    cublas_ms: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    tel: dict[str, dict[str, float]] = field(default_factory=dict)  # side -> {"mhz", "watts"}
    iters: int = 0  # GEMMs per timed batch

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


class Case:
    """Operands, both GEMMs, the checks and the alternating timing of one (rung, dtype, M, N, K)."""

    def __init__(self, torch: Any, rung: int, dtype: str, m: int, n: int, k: int, l2: int):
        from ...gemm.launch import prepare

        self.torch, self.rung, self.dtype, self.m, self.n, self.k = torch, rung, dtype, m, n, k
        g = torch.Generator(device="cuda")
        g.manual_seed(0x6E3 + m + 3 * n + 7 * k)
        self.sets = n_sets(m, n, k, l2)
        if dtype == "e4m3":
            # random normal quantised the usual way: per-tensor scale = amax / 448, operand = x / scale
            qa, qb = (self._quantised(torch, g, rows, k) for rows in (m, n))
            self.a, self.sa = [x for x, _ in qa], [s for _, s in qa]
            self.bt, self.sb = [x for x, _ in qb], [s for _, s in qb]
            cdt = torch.bfloat16
        else:
            cdt = torch.bfloat16 if dtype == "bf16" else torch.float16
            self.a = [torch.randn((m, k), generator=g, device="cuda", dtype=cdt) for _ in range(self.sets)]
            self.bt = [torch.randn((n, k), generator=g, device="cuda", dtype=cdt) for _ in range(self.sets)]
        self.c = [torch.empty((m, n), device="cuda", dtype=cdt) for _ in range(self.sets)]
        self.cb = [torch.empty((m, n), device="cuda", dtype=cdt) for _ in range(self.sets)]
        scales = list(zip(self.sa, self.sb)) if dtype == "e4m3" else [(None, None)] * self.sets
        self.launches = [
            prepare(
                rung,
                dtype,
                a.data_ptr(),
                bt.data_ptr(),
                c.data_ptr(),
                m,
                n,
                k,
                sa.data_ptr() if sa is not None else 0,
                sb.data_ptr() if sb is not None else 0,
            )
            for a, bt, c, (sa, sb) in zip(self.a, self.bt, self.c, scales)
        ]
        self.rung = self.launches[0].rung  # AUTO resolved: the rung that runs
        self.stream = torch.cuda.current_stream().cuda_stream

    def _quantised(self, torch: Any, g: Any, rows: int, k: int) -> list[tuple[Any, Any]]:
        out = []
        for _ in range(self.sets):
            x = torch.randn((rows, k), generator=g, device="cuda", dtype=torch.float32)
            scale = (x.abs().max() / FP8_MAX).reshape(())
            out.append(((x / scale).to(torch.float8_e4m3fn), scale.float()))
            del x
        return out

    def dequantised(self, which: str, rows: Any) -> Any:
        """Rows of A or of B^T (set 0) in float64, fp8 operands times their scale."""
        x = (self.a if which == "a" else self.bt)[0]
        if self.dtype != "e4m3":
            return x[rows].double()
        # gather the bytes (indexing kernels need not exist for float8), then widen
        x = x.view(self.torch.uint8)[rows].view(self.torch.float8_e4m3fn).double()
        return x * float((self.sa if which == "a" else self.sb)[0])

    def ours(self, i: int) -> None:
        self.launches[i % self.sets](self.stream)

    def cublas(self, i: int) -> None:
        j = i % self.sets
        if self.dtype == "e4m3":
            # cuBLAS's fp8 GEMM with the tensor cores' own accumulation (fast accum), as ours does
            r = self.torch._scaled_mm(
                self.a[j],
                self.bt[j].t(),
                scale_a=self.sa[j],
                scale_b=self.sb[j],
                out_dtype=self.torch.bfloat16,
                use_fast_accum=True,
            )
            self.cb[j] = r[0] if isinstance(r, tuple) else r  # torch < 2.4 returned (out, amax)
            return
        self.torch.matmul(self.a[j], self.bt[j].t(), out=self.cb[j])

    def check(self) -> tuple[bool, str, float, float]:
        """(ok, why, max-norm error vs cuBLAS, rel-l2 error vs float64 on sampled entries), set 0."""
        torch = self.torch
        self.ours(0)
        self.cublas(0)
        torch.cuda.synchronize()
        c, cb = self.c[0].float(), self.cb[0].float()
        if not bool(torch.isfinite(c).all()):
            return False, "non-finite values in our output", math.inf, math.inf
        err_cb = float((c - cb).abs().max()) / max(float(cb.abs().max()), 1e-30)
        g = torch.Generator(device="cuda")
        g.manual_seed(0xC0FFEE)
        ii = torch.randint(0, self.m, (SAMPLE,), generator=g, device="cuda")
        jj = torch.randint(0, self.n, (SAMPLE,), generator=g, device="cuda")
        ref = (self.dequantised("a", ii) * self.dequantised("b", jj)).sum(dim=1)
        got = self.c[0][ii, jj].double()
        err_ref = float(((got - ref) ** 2).sum().sqrt() / (ref**2).sum().sqrt())
        if self.dtype == "e4m3":
            b_cb = b_ref = fp8_bound(self.k)
        else:
            b_cb, b_ref = max_norm_bound(self.dtype, self.k), ref_tolerance(self.k)
        ok = err_cb <= b_cb and err_ref <= b_ref
        why = (
            f"max|ours - cuBLAS| / max|cuBLAS| = {err_cb:.3g} (bound {b_cb:.3g}); relative-l2 vs float64"
            f"{' of the dequantised operands' if self.dtype == 'e4m3' else ''} on "
            f"{SAMPLE} sampled entries = {err_ref:.3g} (bound {b_ref:.3g})"
        )
        return ok, why, err_cb, err_ref

    def _batch(self, side: str, iters: int, start: int) -> tuple[float, float, float]:
        """(ms per GEMM, host t0, host t1) of `iters` GEMMs of one side between CUDA events."""
        torch = self.torch
        fn = self.ours if side == "ours" else self.cublas
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.monotonic()
        e0.record()
        for i in range(iters):
            fn(start + i)
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1) / iters, t0, time.monotonic()

    def compare(self, pairs: int, target_ms: float, uuid: str | None) -> Outcome:
        from ...device.telemetry import Sampler, summarize

        ok, why, _, _ = self.check()
        if not ok:
            return Outcome(False, why)
        one = min(self._batch("ours", 1, 0)[0] for _ in range(2))
        iters = max(1, min(100, round(target_ms / max(one, 1e-3))))
        self._batch("cublas", iters, 0)  # warm cuBLAS's heuristics and workspace
        out = Outcome(True, why, iters=iters)
        windows: dict[str, list[tuple[float, float]]] = {"ours": [], "cublas": []}
        with Sampler(uuid, period_s=0.01) as s:
            for p in range(pairs):
                order = ("ours", "cublas") if p % 2 == 0 else ("cublas", "ours")
                got = {}
                for side in order:
                    ms, t0, t1 = self._batch(side, iters, p)
                    got[side] = ms
                    windows[side].append((t0, t1))
                out.ours_ms.append(got["ours"])
                out.cublas_ms.append(got["cublas"])
                out.ratios.append(got["cublas"] / got["ours"])
        for side, win in windows.items():
            tel = summarize([x for x in s.samples if any(a <= x.t <= b for a, b in win)])
            if tel is not None and tel.sm_clock_mhz_median is not None:
                out.tel[side] = {"mhz": tel.sm_clock_mhz_median, "watts": tel.power_w_median or float("nan")}
        return out


def _tflops(m: int, n: int, k: int, ms: float) -> float:
    return gemm_flops(m, n, k) / (ms * 1e-3) / 1e12


def _method(case: Case, out: Outcome, pairs: int) -> str:
    other = (
        "torch._scaled_mm (cuBLAS fp8, use_fast_accum=True: the tensor cores' accumulation, as ours; "
        "per-tensor scales amax/448, bf16 out)"
        if case.dtype == "e4m3"
        else "torch.matmul (cuBLAS)"
    )
    return (
        f"{case.m}x{case.n}x{case.k} {case.dtype}, rung {case.rung} ({RUNGS[case.rung].name}) vs "
        f"{other} on the same operands; {case.sets} operand sets rotated; CUDA events around "
        f"batches, {pairs} alternating pairs; TFLOPS = 2MNK / median time; ratio = median of per-pair "
        f"t_cublas / t_ours; checked: {out.why}"
    )


def _telemetry_note(out: Outcome) -> str:
    parts = [f"{side}: {v['mhz']:.0f} MHz, {v['watts']:.0f} W" for side, v in out.tel.items()]
    if not parts:
        return "no NVML samples"
    # NVML refreshes clock and power more slowly than the sides alternate (batches of ~15-40 ms), so
    # the two medians mostly coincide: they give the operating point both ran at, not a per-side split
    return (
        "NVML (sampled every 10 ms) in each side's batches: "
        + "; ".join(parts)
        + " (NVML refreshes slower than the alternation: the shared operating point)"
    )


def _measure(
    ctx: BenchContext, torch: Any, rung: int, dtype: str, m: int, n: int, k: int, pairs: int, target_ms: float
) -> tuple[Case | None, Outcome]:
    case = None
    try:
        case = Case(torch, rung, dtype, m, n, k, int(ctx.props["l2_bytes"]))
        out = case.compare(pairs, target_ms, ctx.props.get("uuid"))
    except Exception as e:  # noqa: BLE001 - one failing point must not hide the others
        out = Outcome(False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    ctx.soft_check(out.ok, f"rung {rung} {dtype} {m}x{n}x{k}: {out.why}")
    return case, out


def _free(torch: Any, case: Case | None) -> None:
    del case
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except RuntimeError:  # a kernel that trapped left the context unusable: the later points fail and say so
        pass


def _short_batches(ctx: BenchContext, case: Case, base: str) -> None:
    """The same pair of GEMMs alternating in ~2 ms batches: under the power cap a side's clock follows
    its own power draw only in batches long enough for the controller to settle (the headline ratio's),
    so the two ratios apart show how much of a difference is speed at equal clock and how much is power."""
    try:
        out = case.compare(SHORT_BATCH_PAIRS, SHORT_BATCH_MS, ctx.props.get("uuid"))
    except Exception as e:  # noqa: BLE001 - a failure here must not cost the headline point
        out = Outcome(False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    key = f"{base}.vs_cublas_short_batches"
    if not out.ok:
        ctx.figure(key, "n/a", "ratio", "measured", "short batches", check="failed", note=out.why)
        return
    batch = out.iters * statistics.median(out.ours_ms)  # ms of ours per batch
    ctx.figure(
        key,
        round(out.ratio, 3),
        "ratio",
        "measured",
        f"median of per-pair t_cublas / t_ours over {SHORT_BATCH_PAIRS} alternating pairs of ~{batch:.1f} ms "
        "batches (one shared operating point: the speed at equal clock), against the 40 ms batches (15 ms in "
        "quick mode) of vs_cublas, in which each side's clock settles to its own power under the cap",
        spread=(min(out.ratios), max(out.ratios)),
        note=_telemetry_note(out),
    )


def _machine(ctx: BenchContext, mhz: float | None) -> tuple[Machine | None, str]:
    path = summary_path()
    if path is None:
        return None, "no stored figures of this GPU found (set GPUDISSECT_GEMM_MODEL_INPUTS to a summary.json)"
    try:
        figs = json.loads(path.read_text())
        mach = Machine.from_summary(figs, int(ctx.props["sm_count"]))
    except (OSError, ValueError, KeyError) as e:
        return None, f"model inputs unusable ({path}): {e}"
    if mhz:
        mach = with_clock(mach, mhz)
    return mach, f"inputs from {path.name} ({', '.join(f'{k}={v}' for k, v in mach.sources.items())})"


@benchmark(
    name="ladder",
    title="GEMM ladder: what each Hopper technique buys, against cuBLAS and the model",
    axes={"rung": ", ".join(f"{r.number} {r.name}" for r in RUNGS.values()), "size": "8192 (full: 4096 too)"},
    kernels=[s for s in SPECS if ".bf16]" in s.label],
    timeout_s=600,
    min_cc=(9, 0),
    paper="004 §VI (blocking-size model, Table VI) moved to Hopper; issue 13 §2",
)
def ladder(ctx: BenchContext) -> None:
    torch = _import_torch()
    sizes = (8192,) if ctx.quick else (4096, 8192)
    pairs, target = (5, 15.0) if ctx.quick else (15, 40.0)
    measured: dict[tuple[int, int], tuple[float, float | None]] = {}  # (rung, n) -> (TFLOPS, SM MHz)
    pts: list[Point] = []
    total, done = len(RUNGS) * len(sizes), 0
    for n in sizes:
        for r in RUNGS.values():
            done += 1
            case, out = _measure(ctx, torch, r.number, "bf16", n, n, n, pairs, target)
            key = f"gemm.ladder.{r.number}.tflops_{n}"
            if not out.ok:
                ctx.figure(key, "n/a", "TFLOPS", "measured", f"rung {r.number} {r.name}", check="failed", note=out.why)
                ctx.progress(done, total, f"rung {r.number} n={n}: failed")
                _free(torch, case)
                continue
            tf = [_tflops(n, n, n, ms) for ms in out.ours_ms]
            med = statistics.median(tf)
            measured[(r.number, n)] = (med, out.tel["ours"]["mhz"] if "ours" in out.tel else None)
            ctx.figure(
                key,
                round(med, 1),
                "TFLOPS",
                "measured",
                f"{r.what}. " + _method(case, out, pairs),
                spread=(min(tf), max(tf)),
                note=_telemetry_note(out),
            )
            ctx.figure(
                f"gemm.ladder.{r.number}.vs_cublas_{n}",
                round(out.ratio, 3),
                "ratio",
                "measured",
                "median of per-pair t_cublas / t_ours",
                spread=(min(out.ratios), max(out.ratios)),
            )
            if n == 8192:
                pts.append(Point(r.number, med, min(tf), max(tf), pairs, {"label": f"{r.number} {r.name}"}))
            ctx.progress(done, total, f"rung {r.number} n={n}: {med:.0f} TFLOPS, x{out.ratio:.3f} of cuBLAS")
            _free(torch, case)
    if pts:
        ctx.series(
            "measured",
            "rung",
            "",
            "throughput",
            "TFLOPS",
            pts,
            plot="bar",
            figure="gemm_ladder",
            what="bf16 8192^3, median over pairs",
        )
    _model_figures(ctx, measured)


def _model_figures(ctx: BenchContext, measured: dict[tuple[int, int], tuple[float, float | None]]) -> None:
    """Each rung predicted at the SM clock NVML showed while it ran (the H100 is often power-capped
    during these GEMMs, which the per-clock model does not see otherwise)."""
    mach, how = _machine(ctx, None)
    if mach is None:
        ctx.figure("gemm.model.median_abs_error", f"n/a: {how}", "fraction", "derived", "model vs ladder")
        return
    pairs: list[tuple[float, float]] = []
    pred_pts: list[Point] = []
    for (rung, n), (tf, mhz) in sorted(measured.items()):
        at = with_clock(mach, mhz) if mhz else mach
        p = predict(at, RUNGS[rung].tile_config(), n, n, n)
        pairs.append((p.tflops, tf))
        ctx.figure(
            f"gemm.model.{rung}.predicted_tflops_{n}",
            round(p.tflops, 1),
            "TFLOPS",
            "derived",
            f"CPI/roofline model at {at.clock_mhz:.0f} MHz "
            f"({'NVML median while the rung ran' if mhz else 'stored clock figure'}); {how}",
            note=f"bound: {p.bound}; cycles per k-block: "
            + ", ".join(f"{k} {v:.0f}" for k, v in p.cycles_per_kblock.items()),
        )
        ctx.figure(
            f"gemm.model.{rung}.bound_{n}", p.bound, "", "derived", "resource with the largest cycles per k-block"
        )
        if n == 8192:
            pred_pts.append(Point(rung, p.tflops, extra={"label": f"{rung} {RUNGS[rung].name}"}))
    if pred_pts:
        ctx.series(
            "predicted",
            "rung",
            "",
            "throughput",
            "TFLOPS",
            pred_pts,
            plot="bar",
            figure="gemm_ladder",
            what="CPI/roofline model (analysis/gemm_model.py)",
        )
    errs = abs_errors(pairs)
    if errs:
        ctx.figure(
            "gemm.model.median_abs_error",
            round(statistics.median(errs), 3),
            "fraction",
            "derived",
            f"median over {len(errs)} measured rung/size points of |predicted - measured| / measured; {how}",
            spread=(min(errs), max(errs)),
        )


def _check_rung(v: int, _facts: Any) -> str | None:
    if v == AUTO or (v in RUNGS and v >= 2):
        return None
    return f"must be {AUTO} (the public default's per-shape choice) or a built TMA rung: {', '.join(str(r) for r in RUNGS if r >= 2)}"


@benchmark(
    name="vs_cublas",
    title="Our best GEMM rung against cuBLAS: square, Yan's rectangles, Llama-3 layers",
    axes={
        "dtype": "bf16, fp16; e4m3 at 8192 (vs torch._scaled_mm)",
        "shape": "square 4096/8192/16384 (full: 1024..16384), [2W,W,W]..[W,W,4W], Llama-3 8B/70B",
    },
    kernels=[RUNGS[r].spec(dt) for r in RUNGS if r >= 2 for dt in RUNGS[r].dtypes],
    timeout_s=900,
    min_cc=(9, 0),
    params={
        "rung": Param(
            AUTO,
            f"ladder rung to compare with cuBLAS (default {AUTO}: the public matmul's per-shape "
            f"choice, rung {BEST}, {DATA_PARALLEL} or {SMALL_TILE})",
            int,
            _check_rung,
        )
    },
    paper="004 §VII (square and rectangular families, Figs. 6-9); issue 13 §3-4",
)
def vs_cublas(ctx: BenchContext) -> None:
    torch = _import_torch()
    rung = int(ctx.params.get("rung") or AUTO)
    if rung == AUTO:
        ctx.figure(
            "gemm.vs_cublas.rung",
            "auto",
            "",
            "measured",
            f"the public default, per shape (gemm.variants.pick_rung): rung {BEST} ({RUNGS[BEST].name}) where its "
            f"rule splits some tiles along K, rung {DATA_PARALLEL} (the same kernel without the stream-K code) where "
            f"it splits none, rung {SMALL_TILE} ({RUNGS[SMALL_TILE].name}) where rung {BEST}'s tile pairs fill at most "
            "3 waves and their last is at most 60 % full; each point's method names the rung it ran",
        )
    else:
        ctx.figure(
            "gemm.vs_cublas.rung",
            rung,
            "",
            "measured",
            f"the rung every bf16/fp16 vs_cublas point ran: {RUNGS[rung].what}",
        )
    pairs, target = (5, 15.0) if ctx.quick else (11, 40.0)
    squares = SQUARE_QUICK if ctx.quick else SQUARE_FULL
    jobs: list[tuple[str, str, str, int, int, int]] = [
        ("square", dt, str(n), n, n, n) for dt in ("bf16", "fp16") for n in squares
    ]
    jobs += [("rect", "bf16", lbl, m, n, k) for lbl, m, n, k in shapes_rect(RECT_W_QUICK if ctx.quick else RECT_W_FULL)]
    jobs += [
        ("llama", "bf16", lbl, m, n, k)
        for lbl, m, n, k in shapes_llama(LLAMA_TOKENS_QUICK if ctx.quick else LLAMA_TOKENS_FULL)
    ]
    # last: a kernel that traps poisons the CUDA context, so the new fp8 build cannot cost the others
    jobs += [("square", "e4m3", str(FP8_N), FP8_N, FP8_N, FP8_N)]
    rung_fp8 = rung if rung >= FP8_FROM else BEST_FP8
    ratios: dict[str, list[float]] = {"rect": [], "llama": []}
    sq_pts: dict[str, list[Point]] = {"bf16": [], "fp16": []}
    for i, (group, dt, lbl, m, n, k) in enumerate(jobs, 1):
        case, out = _measure(ctx, torch, rung_fp8 if dt == "e4m3" else rung, dt, m, n, k, pairs, target)
        base = f"gemm.{dt}.{lbl}" if group == "square" else f"gemm.{group}.{lbl}"
        if not out.ok:
            ctx.figure(f"{base}.tflops", "n/a", "TFLOPS", "measured", f"{lbl} {dt}", check="failed", note=out.why)
            ctx.figure(f"{base}.vs_cublas", "n/a", "ratio", "measured", f"{lbl} {dt}", check="failed", note=out.why)
            ctx.progress(i, len(jobs), f"{lbl} {dt}: failed")
            _free(torch, case)
            continue
        tf = [_tflops(m, n, k, ms) for ms in out.ours_ms]
        tc = [_tflops(m, n, k, ms) for ms in out.cublas_ms]
        ctx.figure(
            f"{base}.tflops",
            round(statistics.median(tf), 1),
            "TFLOPS",
            "measured",
            _method(case, out, pairs),
            spread=(min(tf), max(tf)),
            note=_telemetry_note(out),
        )
        ctx.figure(
            f"{base}.cublas_tflops",
            round(statistics.median(tc), 1),
            "TFLOPS",
            "measured",
            f"{'torch._scaled_mm' if dt == 'e4m3' else 'torch.matmul'} on the same operands, timed in "
            "alternation with ours",
            spread=(min(tc), max(tc)),
        )
        ctx.figure(
            f"{base}.vs_cublas",
            round(out.ratio, 3),
            "ratio",
            "measured",
            "median of per-pair t_cublas / t_ours (> 1: ours faster)",
            spread=(min(out.ratios), max(out.ratios)),
        )
        for side, v in out.tel.items():
            ctx.figure(
                f"{base}.{side}_sm_clock_mhz",
                round(v["mhz"], 1),
                "MHz",
                "measured",
                "NVML median in this side's batches",
            )
            if math.isfinite(v["watts"]):
                ctx.figure(
                    f"{base}.{side}_power_watts",
                    round(v["watts"], 1),
                    "W",
                    "measured",
                    "NVML median in this side's batches",
                )
        if group == "square" and dt != "e4m3" and n in SHORT_BATCH_SQUARES:
            _short_batches(ctx, case, base)
        tally(
            sq_pts,
            ratios,
            group,
            dt,
            Point(n, statistics.median(tf), min(tf), max(tf), pairs, {"cublas": statistics.median(tc)}),
            out.ratio,
        )
        ctx.progress(i, len(jobs), f"{lbl} {dt}: {statistics.median(tf):.0f} TFLOPS, x{out.ratio:.3f} of cuBLAS")
        _free(torch, case)
    for dt, pts in sq_pts.items():
        if pts:
            ctx.series(
                f"ours {dt}", "matrix size n", "", "throughput", "TFLOPS", pts, plot="logx", figure="gemm_square"
            )
            ctx.series(
                f"cuBLAS {dt}",
                "matrix size n",
                "",
                "throughput",
                "TFLOPS",
                [Point(p.x, p.extra["cublas"]) for p in pts],
                plot="logx",
                figure="gemm_square",
            )
    for group, rs in ratios.items():
        if rs:
            ctx.figure(
                f"gemm.{group}.median_vs_cublas",
                round(statistics.median(rs), 3),
                "ratio",
                "derived",
                f"median over {len(rs)} shapes of the per-shape ratio",
                spread=(min(rs), max(rs)),
            )
