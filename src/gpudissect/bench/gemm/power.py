"""Our GEMM and cuBLAS each alone under the power cap (issue 13 §3: "the SM clock and power recorded for
both; a power-capped comparison is not a win").

`vs_cublas` alternates the two sides every 15-40 ms, faster than NVML refreshes clock and power, so it
records the operating point both shared. Here each side runs alone for turns of 1.5 s (quick) or 2 s
(full), sides alternating turn by turn, operand sets rotated as in vs_cublas; the first half of a turn
lets clock and power settle, the second half is timed between CUDA events with NVML sampled every
20 ms. Per side: TFLOPS, the NVML SM clock and board power (medians over turns), and from them TFLOPS per
SM-GHz (the speed at equal clock) and per watt. A side that wins only by drawing less power gets a
lower clock under the cap, and these two figures say which of the two it is.
"""

from __future__ import annotations

import math
import statistics
import time

from ...gemm.variants import AUTO, BEST, DATA_PARALLEL, RUNGS
from ..context import BenchContext
from ..registry import benchmark
from .cases import Case, _free, _import_torch, _tflops, prove_sass

SIZES = (4096, 8192)


def efficiency(tflops: float, sm_mhz: float, watts: float) -> tuple[float, float]:
    """(TFLOPS per SM-GHz, TFLOPS per watt); NaN where NVML gave no clock or power."""
    per_ghz = tflops / (sm_mhz / 1e3) if sm_mhz > 0 else math.nan
    per_w = tflops / watts if watts > 0 else math.nan
    return per_ghz, per_w


def _solo(case: Case, side: str, seconds: float, uuid: str | None) -> tuple[float, float, float]:
    """(TFLOPS, NVML SM MHz, W) of one side run alone for `seconds` (timed over the second half)."""
    from ...device.telemetry import Sampler

    torch = case.torch
    run = case.ours if side == "ours" else case.cublas
    i = 0
    settle = time.monotonic() + seconds / 2
    while time.monotonic() < settle:
        for _ in range(10):
            run(i)
            i += 1
        torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    count = 0
    with Sampler(uuid, period_s=0.02) as smp:
        e0.record()
        stop = time.monotonic() + seconds / 2
        while time.monotonic() < stop:
            for _ in range(10):
                run(i + count)
                count += 1
            torch.cuda.synchronize()
        e1.record()
        e1.synchronize()
    tel = smp.summary()
    tf = _tflops(case.m, case.n, case.k, e0.elapsed_time(e1) / count)
    mhz = tel.sm_clock_mhz_median if tel is not None and tel.sm_clock_mhz_median else math.nan
    watts = tel.power_w_median if tel is not None and tel.power_w_median else math.nan
    return tf, mhz, watts


@benchmark(
    name="power_split",
    title="Our GEMM and cuBLAS each alone under the power cap: clock, power, TFLOPS per GHz and per watt",
    axes={"size": "4096, 8192 (bf16)", "side": "ours (the public default's rung for the shape), cuBLAS"},
    # rung 1: the public default where the TMA rungs cannot run
    kernels=[RUNGS[r].spec("bf16") for r in (BEST, DATA_PARALLEL, 1)],
    timeout_s=300,
    needs=RUNGS[1].needs,
    paper="issue 13 §3 (clock and power of both sides; a power-capped comparison is not a win)",
    torch=True,
)
def power_split(ctx: BenchContext) -> None:
    ctx.runnable(ctx.bench.kernels)  # records the builds this GPU cannot run; Case runs the public default's rung
    torch = _import_torch()
    turns, seconds = (2, 1.5) if ctx.quick else (3, 2.0)
    uuid = ctx.props.get("uuid")
    for done, n in enumerate(SIZES, 1):
        case = None
        try:
            case = Case(torch, AUTO, "bf16", n, n, n, int(ctx.props["l2_bytes"]))  # the public default's rung
            prove_sass(ctx, case.rung, "bf16")
            ok, why, _, _ = case.check()
            ctx.soft_check(ok, f"rung {case.rung} bf16 {n}^3: {why}")
            base = f"gemm.power.bf16.{n}"
            if not ok:
                ctx.figure(
                    f"{base}.per_ghz_vs_cublas", "n/a", "ratio", "derived", "check failed", check="failed", note=why
                )
                continue
            got: dict[str, list[tuple[float, float, float]]] = {"ours": [], "cublas": []}
            for t in range(turns):
                for side in ("ours", "cublas") if t % 2 == 0 else ("cublas", "ours"):
                    got[side].append(_solo(case, side, seconds, uuid))
            how = (
                f"{n}^3 bf16, rung {case.rung} (the public default's) vs torch.matmul (cuBLAS) on {case.sets} rotated "
                f"operand sets, each side alone for {turns} turns of {seconds:g} s (sides alternating), timed by CUDA "
                "events over the second half of each turn with NVML sampled every 20 ms; "
                f"medians over turns; checked: {why}"
            )
            eff: dict[str, tuple[float, float]] = {}
            for side, vals in got.items():
                tf, mhz, w = (statistics.median(v[j] for v in vals) for j in range(3))
                per_ghz, per_w = efficiency(tf, mhz, w)
                eff[side] = (per_ghz, per_w)
                ctx.figure(
                    f"{base}.{side}_tflops",
                    round(tf, 1),
                    "TFLOPS",
                    "measured",
                    how,
                    spread=(min(v[0] for v in vals), max(v[0] for v in vals)),
                )
                for key, val, unit, what in (
                    (f"{side}_sm_mhz", mhz, "MHz", "NVML SM clock"),
                    (f"{side}_watts", w, "W", "NVML board power"),
                    (f"{side}_tflops_per_ghz", per_ghz, "TFLOPS/GHz", "TFLOPS / NVML SM GHz"),
                    (f"{side}_tflops_per_watt", per_w, "TFLOPS/W", "TFLOPS / NVML board W"),
                ):
                    if math.isfinite(val):
                        ctx.figure(
                            f"{base}.{key}",
                            round(val, 3 if unit == "TFLOPS/W" else 1),
                            unit,
                            "measured" if unit in ("MHz", "W") else "derived",
                            f"{what}; {how}",
                        )
            for key, j, what in (
                ("per_ghz_vs_cublas", 0, "speed at equal SM clock"),
                ("per_watt_vs_cublas", 1, "TFLOPS per watt"),
            ):
                a, b = eff["ours"][j], eff["cublas"][j]
                if math.isfinite(a) and math.isfinite(b) and b > 0:
                    ctx.figure(
                        f"{base}.{key}",
                        round(a / b, 3),
                        "ratio",
                        "derived",
                        f"ours / cuBLAS, {what} (> 1: ours better); {how}",
                    )
            ctx.progress(
                done, len(SIZES), f"{n}: ours {eff['ours'][0]:.0f} vs cuBLAS {eff['cublas'][0]:.0f} TFLOPS/GHz"
            )
        except Exception as e:  # noqa: BLE001 - one failing size must not hide the other
            ctx.soft_check(False, f"bf16 {n}^3: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        finally:
            _free(torch, case)
