"""Our best GEMM rung against cuBLAS (issue 13 §3-4; Yan et al., seed 004, §VII): `vs_cublas` times
square (bf16, fp16), Yan's rectangular families and Llama-3 projection shapes, each checked and timed
in alternation with cuBLAS, and fp8 e4m3 at 8192 (the first rung with an fp8 build) against
torch._scaled_mm; squares at 4096 and 8192 again in short batches, at one shared operating point. How a
point is checked and timed: cases.py. On a GPU without wgmma (anything but sm_90a) every point runs rung 1
(mma.sync), the public default there, and the fp8 point, which has no build without wgmma, is skipped by name.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from ...capability import Target
from ...gemm.variants import AUTO, BEST, BEST_FP8, DATA_PARALLEL, FP8_FROM, RUNGS, SMALL_TILE, public_rung
from ...models import Point
from ...reference.gemm import RECT_FAMILIES
from ..context import BenchContext
from ..registry import Param, benchmark
from .cases import (
    Case,
    Outcome,
    _free,
    _import_torch,
    _measure,
    _method,
    _ratio_figure,
    _telemetry_note,
    _tflops,
    _tflops_figure,
)

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
FP8_N = 8192  # the fp8 point of vs_cublas (issue 13 §4)
# Squares also timed in short batches (one GEMM is well under the batch there): ~2 ms per side is shorter than
# the power controller takes to settle on a side's own clock, so both run at one shared operating point
SHORT_BATCH_MS, SHORT_BATCH_PAIRS, SHORT_BATCH_SQUARES = 2.0, 25, (4096, 8192)


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


def _check_rung(v: int, facts: Any) -> str | None:
    if v != AUTO and v not in RUNGS:
        return f"must be {AUTO} (the public default's per-shape choice) or a built rung: {', '.join(map(str, RUNGS))}"
    if v != AUTO and "cc_major" in facts:
        why = RUNGS[v].needs.why_not(Target(int(facts["cc_major"]), int(facts["cc_minor"])))
        if why:
            return f"rung {v} cannot run on this GPU: it {why}"
    return None


@benchmark(
    name="vs_cublas",
    title="Our best GEMM rung against cuBLAS: square, Yan's rectangles, Llama-3 layers",
    axes={
        "dtype": "bf16, fp16; e4m3 at 8192 (vs torch._scaled_mm)",
        "shape": "square 4096/8192/16384 (full: 1024..16384), [2W,W,W]..[W,W,4W], Llama-3 8B/70B",
    },
    # rung 1 last: the public default where the TMA rungs cannot run (and --set rung=1 anywhere)
    kernels=[RUNGS[r].spec(dt) for r in RUNGS if r >= 2 for dt in RUNGS[r].dtypes]
    + [RUNGS[1].spec(dt) for dt in RUNGS[1].dtypes],
    timeout_s=900,
    needs=RUNGS[1].needs,
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
    torch=True,
)
def vs_cublas(ctx: BenchContext) -> None:
    runs = {s.name for s in ctx.runnable(ctx.bench.kernels)}  # records the builds this GPU cannot run
    torch = _import_torch()
    rung = int(ctx.params.get("rung") or AUTO)
    if rung == AUTO and (public := public_rung(ctx.target, "bf16")) != AUTO:
        rung = public  # no TMA rung runs here: every bf16/fp16 point runs the public default's rung
        ctx.figure(
            "gemm.vs_cublas.rung",
            rung,
            "",
            "measured",
            f"the public default on this GPU, which cannot run the TMA rungs: rung {rung} ({RUNGS[rung].what})",
        )
    elif rung == AUTO:
        ctx.figure(
            "gemm.vs_cublas.rung",
            "auto",
            "",
            "measured",
            f"the public default, per shape (gemm.variants.pick_rung): rung {BEST} ({RUNGS[BEST].name}) where its "
            f"rule splits some tiles along K, rung {DATA_PARALLEL} (the same kernel without the stream-K code) where "
            f"it splits none, rung {SMALL_TILE} ({RUNGS[SMALL_TILE].name}) where rung {BEST}'s tile pairs fill at most "
            "4 waves and their last is at most 60 % full, a wide tile (rungs 11-13) where one fills the waves and "
            "that pick does not; fp8 alike; each point's method names the rung it ran",
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
    rung_fp8 = rung if rung >= FP8_FROM or rung == AUTO else BEST_FP8  # AUTO: fp8 picks per shape as bf16
    # last: a kernel that traps poisons the CUDA context, so the new fp8 build cannot cost the others (only
    # where an fp8 build runs: its skip is recorded above)
    if RUNGS[rung_fp8 or BEST_FP8].spec("e4m3").name in runs:
        jobs += [("square", "e4m3", str(FP8_N), FP8_N, FP8_N, FP8_N)]
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
        _tflops_figure(ctx, f"{base}.tflops", tf, _method(case, out, pairs), _telemetry_note(out))
        _tflops_figure(
            ctx,
            f"{base}.cublas_tflops",
            tc,
            f"{'torch._scaled_mm' if dt == 'e4m3' else 'torch.matmul'} on the same operands, timed in "
            "alternation with ours",
        )
        _ratio_figure(ctx, f"{base}.vs_cublas", out, "median of per-pair t_cublas / t_ours (> 1: ours faster)")
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
        tally(sq_pts, ratios, group, dt, ctx.point(n, tf, cublas=statistics.median(tc)), out.ratio)
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
