"""Our tensor-core GEMM against cuBLAS, rung by rung (issue 13; Yan et al., seed 004, §VI): `ladder` times
every built rung of kernels/gemm.cu (bf16, n = 8192, and 4096 in full mode) against cuBLAS, with the
CPI/roofline model's prediction for each rung's tile (analysis/gemm_model.py). How a point is checked
and timed: cases.py. A GPU without wgmma (anything but sm_90a) runs rung 1 and skips the others by name.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from ...analysis.gemm_model import Machine, abs_errors, predict, with_clock
from ...gemm.variants import RUNGS
from ...models import Point
from ..context import BenchContext
from ..registry import KernelSpec, benchmark
from .cases import _free, _import_torch, _measure, _method, _ratio_figure, _telemetry_note, _tflops, _tflops_figure

SPECS: list[KernelSpec] = [r.spec(dt) for r in RUNGS.values() for dt in r.dtypes]


def summary_path(cc: tuple[int, int] | None = None) -> Path | None:
    """Stored figures of this GPU the model reads: $GPUDISSECT_GEMM_MODEL_INPUTS, else the committed
    results/h100-sxm5-80gb/summary.json of the tree the run starts from, an H100's: only for a GPU of
    compute capability 9.0 (`cc`; None: not known), never another GPU's figures."""
    env = os.environ.get("GPUDISSECT_GEMM_MODEL_INPUTS")
    if not env and cc not in (None, (9, 0)):
        return None
    p = Path(env) if env else Path.cwd() / "results" / "h100-sxm5-80gb" / "summary.json"
    return p if p.is_file() else None


def _machine(ctx: BenchContext, mhz: float | None) -> tuple[Machine | None, str]:
    cc = (int(ctx.props["cc_major"]), int(ctx.props["cc_minor"])) if "cc_major" in ctx.props else None
    path = summary_path(cc)
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
    needs=RUNGS[1].needs,  # rung 1 (mma.sync) runs from compute capability 8.0; rungs 2+ need sm_90a
    paper="004 §VI (blocking-size model, Table VI) moved to Hopper; issue 13 §2",
    torch=True,
)
def ladder(ctx: BenchContext) -> None:
    runs = {s.name for s in ctx.runnable(ctx.bench.kernels)}  # the rungs this GPU can run; the others skipped
    torch = _import_torch()
    rungs = [r for r in RUNGS.values() if r.spec("bf16").name in runs]
    sizes = (8192,) if ctx.quick else (4096, 8192)
    pairs, target = (5, 15.0) if ctx.quick else (15, 40.0)
    measured: dict[tuple[int, int], tuple[float, float | None]] = {}  # (rung, n) -> (TFLOPS, SM MHz)
    pts: list[Point] = []
    total, done = len(rungs) * len(sizes), 0
    for n in sizes:
        for r in rungs:
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
            _tflops_figure(ctx, key, tf, f"{r.what}. " + _method(case, out, pairs), _telemetry_note(out))
            _ratio_figure(ctx, f"gemm.ladder.{r.number}.vs_cublas_{n}", out, "median of per-pair t_cublas / t_ours")
            if n == 8192:
                pts.append(ctx.point(r.number, tf, label=f"{r.number} {r.name}"))
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
