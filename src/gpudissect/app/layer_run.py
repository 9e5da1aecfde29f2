"""A Llama decoder layer's forward latency at the hidden sizes of 000 Table XIV / Fig. 8, in FP32,
BF16 and BF16 with FP8 linears. Called by bench/app/workloads.py with torch imported."""

from __future__ import annotations

import copy
import gc
import math
from typing import Any

from ..analysis import roofline
from ..errors import GpuDissectError
from ..models import Point
from .deps import set_tf32
from .timing import time_call

TYPES = ("fp32", "tf32", "bf16", "fp8", "fp8_eager", "fp8_cached", "fp8_fused", "fp8_fused_ours")
# relative-l2 error of the layer's update (output - input) vs the FP32 layer
TOL = {"tf32": 1e-2, "bf16": 3e-2} | {k: 0.15 for k in TYPES if k.startswith("fp8")}
# the Float8FusedLinear types' GEMM (float8_fused.GEMMS; "auto": ours where it runs, the recipe this library ships)
FUSED_GEMM = {"fp8": "auto", "fp8_fused": "torch", "fp8_fused_ours": "ours"}
WHAT = {
    "fp32": "FP32 (TF32 off)",
    "tf32": "FP32 weights and activations, TF32 GEMMs",
    "bf16": "BF16",
    "fp8": "BF16 with this library's FP8 linear recipe, Float8FusedLinear with gemm=auto (TE's default recipe: "
    "weights and activations cast to e4m3 on every forward, each by one kernel of ours that also records its "
    "amax; delayed scaling from a 16-step amax history; our GEMM where it runs, sm_90a, else torch._scaled_mm)",
    "fp8_eager": "BF16 with Float8Linear (weights and activations cast to e4m3 on every forward by unfused torch "
    "ops with current scaling, as te.Linear's unfused path; the fp8 type before 2026-11-26)",
    "fp8_cached": "BF16 with Float8InferenceLinear (weights cast to e4m3 once, activations on every forward)",
    "fp8_fused": "BF16 with Float8FusedLinear (weights and activations cast to e4m3 on every forward, each by one "
    "kernel of ours that also records its amax; delayed scaling from a 16-step amax history; torch._scaled_mm)",
    "fp8_fused_ours": "BF16 with Float8FusedLinear as fp8_fused, on our GEMM (gpudissect.gemm.matmul e4m3)",
}
# (a, b): the figure app.layer.<h>.<a>_vs_<b>, b's latency over a's
PAIRS = (
    ("fp8", "bf16"),
    ("fp8_eager", "bf16"),
    ("fp8_cached", "bf16"),
    ("fp8_fused", "bf16"),
    ("fp8_fused_ours", "bf16"),
    ("bf16", "fp32"),
    ("bf16", "tf32"),
    ("fp8", "fp8_eager"),
)


def _gemm_ran(layer: Any) -> str:
    """' [GEMM: ours]': the GEMM the layer's Float8FusedLinear modules resolved to (gemm=auto says which)."""
    from .float8_fused import Float8FusedLinear

    ran = sorted({m.gemm for m in layer.modules() if isinstance(m, Float8FusedLinear)})
    return f" [GEMM: {', '.join(ran)}]" if ran else ""


def _rel(a: Any, b: Any) -> float:
    d, r = float((a - b).float().norm()), float(b.float().norm())
    return d / r if r > 0 else math.inf


def run_layers(ctx: Any, torch: Any, hiddens: list[int], kinds: list[str], batch: int, seq: int, reps: int) -> None:
    from . import float8
    from .layer import build_layer

    if any(k in FUSED_GEMM for k in kinds):
        from . import float8_fused

    set_tf32(torch, False)
    lat: dict[str, list[Point]] = {k: [] for k in kinds}
    ms_of: dict[tuple[int, str], float] = {}
    ok_of: dict[tuple[int, str], bool] = {}
    total, done = len(hiddens) * len(kinds), 0
    for h in hiddens:
        ffn, heads = roofline.LAYER_TABLE_XIV[h]
        flops = roofline.layer_flops(h, ffn, heads, batch, seq)
        models: dict[str, Any] = {}
        try:
            ref_layer = build_layer(h, ffn, heads, torch.float32, "cuda", seed=h)
            g = torch.Generator(device="cuda")
            g.manual_seed(h)
            x32 = torch.randn(batch, seq, h, device="cuda", generator=g)
            with torch.no_grad():
                ref = ref_layer(x32) - x32  # the layer's update; the residual would hide its error
            models["fp32"] = ref_layer
            if any(k in kinds for k in ("bf16", "fp8_eager", "fp8_cached", *FUSED_GEMM)):
                models["bf16"] = copy.deepcopy(ref_layer).to(torch.bfloat16)
            if "fp8_eager" in kinds:
                models["fp8_eager"] = copy.deepcopy(models["bf16"])
                float8.swap_linears(models["fp8_eager"], float8.Float8Linear.from_linear)
            if "fp8_cached" in kinds:
                models["fp8_cached"] = copy.deepcopy(models["bf16"])
                float8.swap_linears(models["fp8_cached"], float8.Float8InferenceLinear.from_linear)
            for kind, gemm in FUSED_GEMM.items():
                if kind in kinds:
                    models[kind] = copy.deepcopy(models["bf16"])
                    float8.swap_linears(
                        models[kind], lambda lin, gemm=gemm: float8_fused.Float8FusedLinear.from_linear(lin, gemm=gemm)
                    )
            models["tf32"] = ref_layer
            for kind in kinds:
                done += 1
                layer = models[kind]
                x = x32 if kind in ("fp32", "tf32") else x32.to(torch.bfloat16)
                set_tf32(torch, kind == "tf32")
                try:
                    with torch.no_grad():
                        if kind in FUSED_GEMM:  # check the delayed path: the second call scales from the first's amax
                            layer(x)
                        err = _rel(layer(x).float() - x.float(), ref) if kind != "fp32" else 0.0
                except torch.OutOfMemoryError:
                    raise
                except (RuntimeError, ValueError, GpuDissectError) as e:
                    if kind not in FUSED_GEMM:
                        raise
                    # our kernels' form fails alone: the forms measured before and after it keep their figures
                    why = str(e).splitlines()[0] if str(e) else type(e).__name__
                    ctx.soft_check(False, f"layer {h} {kind}: {why}")
                    ok_of[(h, kind)] = False
                    ctx.figure(
                        f"app.layer.{h}.{kind}.ms", "FAILED", "ms", "measured", WHAT[kind], check="failed", note=why
                    )
                    continue
                finally:
                    set_tf32(torch, False)
                tol = TOL.get(kind, 0.0)
                ok = ctx.soft_check(
                    err <= tol or kind == "fp32",
                    f"layer {h} {kind}: update differs from FP32 by {err:.3g} (tolerance {tol:g})",
                )
                if ok and kind == "tf32":  # no difference from FP32 would mean TF32 was not used
                    ok = ctx.soft_check(err > 1e-5, f"layer {h} tf32: update equals FP32's ({err:.3g}): TF32 not used")

                def fwd(layer: Any = layer, x: Any = x) -> Any:
                    with torch.no_grad():
                        return layer(x)

                set_tf32(torch, kind == "tf32")
                t = time_call(torch, fwd, reps, 30.0 if ctx.quick else 100.0, graph=False, max_iters=50)
                set_tf32(torch, False)
                m = t.median
                ms_of[(h, kind)] = m
                ok_of[(h, kind)] = ok
                key = f"app.layer.{h}.{kind}"
                note = "" if kind == "fp32" else f"relative-l2 error of the layer update vs FP32: {err:.3g}"
                method = (
                    f"decoder layer hidden {h}, MLP {ffn}, {heads} heads (Table XIV), input ({batch}, {seq}, {h}), "
                    f"{WHAT[kind]}{_gemm_ran(layer) if kind in FUSED_GEMM else ''}; forward latency, CUDA events "
                    f"over {t.how} (eager, as the paper's TE layer), "
                    f"median of {reps}"
                )
                ctx.figure(
                    f"{key}.ms",
                    round(m, 4),
                    "ms",
                    "measured",
                    method,
                    spread=t.spread,
                    check="ok" if ok else "failed",
                    note=note,
                )
                ctx.figure(
                    f"{key}.tflops",
                    round(roofline.tflops(flops, m), 2),
                    "TFLOPS",
                    "derived",
                    f"{flops / 1e12:.3g} TFLOP per forward (linear 2MNK + causal attention) / median latency",
                    check="ok" if ok else "failed",
                )
                if ok:
                    lat[kind].append(Point(h, m, t.spread[0], t.spread[1], reps, {"label": str(h)}))
                ctx.progress(done, total, f"layer {h} {kind}: {m:.3f} ms")
        except torch.OutOfMemoryError as e:
            for kind in kinds:
                if (h, kind) not in ok_of:  # neither timed nor already failed
                    ctx.figure(f"app.layer.{h}.{kind}.ms", "OOM", "ms", "measured", "", note=str(e).splitlines()[0])
        finally:
            models.clear()
            gc.collect()
            torch.cuda.empty_cache()
    for kind, pts in lat.items():
        if pts:
            ctx.series(kind, "hidden size", "", "forward latency", "ms", pts, plot="bar", figure="layer_latency")
    for h in hiddens:
        for a, b in PAIRS:
            if (h, a) in ms_of and (h, b) in ms_of:
                ctx.figure(
                    f"app.layer.{h}.{a}_vs_{b}",
                    round(ms_of[(h, b)] / ms_of[(h, a)], 3),
                    "ratio",
                    "derived",
                    f"speedup of {a} over {b}: {b} latency / {a} latency, same run",
                    check="ok" if ok_of[(h, a)] and ok_of[(h, b)] else "failed",
                )
