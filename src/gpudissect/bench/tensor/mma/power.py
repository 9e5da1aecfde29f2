"""mma.sync power and energy efficiency (Luo et al. Table XII)."""

from __future__ import annotations

import math

import numpy as np

from ...context import BenchContext
from ...registry import Needs, Param, benchmark, in_range
from .common import sm_clock_hz
from .mma import SPECS, MmaRunner, describe, execution_of
from .variants import MmaVariant, check_d, make_inputs

# ---------------------------------------------------------------------------------------
# Power and energy efficiency (Luo et al. Table XII): the largest shape of each type, all SMs
# ---------------------------------------------------------------------------------------
POWER_VARIANTS = [
    MmaVariant("f16", "f32", "m16n8k16"),
    MmaVariant("bf16", "f32", "m16n8k16"),
    MmaVariant("tf32", "f32", "m16n8k8"),
    MmaVariant("e4m3", "f32", "m16n8k32"),
    MmaVariant("s8", "s32", "m16n8k32"),
]
POWER_WARPS, POWER_ILP = 16, 4  # saturates every variant's grid (Sun: >= 8 warps x ILP >= 2)


@benchmark(
    name="mma_power",
    title="mma.sync sustained on all SMs: clock, power, TFLOPS/W (zero vs random)",
    axes={"type/shape": ", ".join(v.key for v in POWER_VARIANTS), "operands": "zero, random"},
    kernels=[SPECS[v] for v in POWER_VARIANTS],
    timeout_s=300,
    needs=Needs(features=("mma_m16n8k16",)),  # the largest shape of each type; e4m3 skipped below sm_89
    paper="000 §6.2 Table XII",
    params={
        "seconds": Param(
            None,
            "sustained seconds per variant and operand kind (default 0.5 quick, 1.5 full)",
            float,
            in_range(0.1, 30, "0.1 .. 30 s"),
        )
    },
)
def mma_power(ctx: BenchContext) -> None:
    from ....device.telemetry import Sampler

    dev = ctx.device
    runs = {s.name for s in ctx.runnable(SPECS[v] for v in POWER_VARIANTS)}  # e4m3 from sm_89: others skipped
    variants = [v for v in POWER_VARIANTS if SPECS[v].name in runs]
    ctx.precompile([SPECS[v] for v in variants])
    seconds = ctx.params.get("seconds") or (0.5 if ctx.quick else 1.5)
    rng = np.random.default_rng(3)
    w, ilp = POWER_WARPS, POWER_ILP
    total = 2 * len(variants)
    for i, v in enumerate(variants):
        what = describe(ctx, v, execution_of(ctx, v))
        for j, mode in enumerate(("zero", "rand")):
            ctx.progress(2 * i + j, total, f"{v.key} {mode}")
            inp = make_inputs(v, rng, "zero" if mode == "zero" else "random")
            pre = f"tc.power.mma.{v.key}.{mode}"
            with ctx.scratch():  # this variant's buffers
                runner = MmaRunner(ctx, v, inp)
                # launches of about 50 ms: calibrate, warm up (untimed, unsampled), then sustain
                runner.launch(w, ilp, 16)  # the first launch also loads the function (lazy loading)
                dev.sync("power calibration")
                t = min(dev.time_ms(lambda: runner.launch(w, ilp, 1024), 2))
                iters = max(1024, int(1024 * 50.0 / max(t, 1e-3)))
                n_launch = max(1, math.ceil(seconds / 0.05))
                # NVML's power reading averages over about a second: sustain 1 s unsampled first, so
                # that the samples hold this variant's power, not the previous one's
                dev.time_ms(lambda: [runner.launch(w, ilp, iters) for _ in range(20)])
                dev.memset32(runner.d, 0xFFFFFFFF)
                with Sampler(ctx.props.get("uuid"), period_s=0.02) as s:
                    ms = dev.time_ms(lambda: [runner.launch(w, ilp, iters) for _ in range(n_launch)])[0]
                err = check_d(inp, runner.outputs(w, ilp), iters)
                clocks = sm_clock_hz(runner.records(w), w)
            ops = "TOPS" if v.a == "s8" else "TFLOPS"
            if err:
                ctx.soft_check(False, f"power {v.key} {mode}: {err}")
                ctx.figure(f"{pre}_tflops", "FAILED", ops, "measured", what, check="failed", note=err[:400])
                continue
            tel = s.summary()
            work = runner.sms * w * ilp * 2 * iters * v.fma_per_mma * 2 * n_launch
            tf = work / (ms * 1e-3) / 1e12
            how = (
                f"{n_launch} back-to-back launches ({ms / 1e3:.2f} s), {runner.sms} blocks x {w} warps, ILP {ilp}, "
                f"{'zero' if mode == 'zero' else 'random'} operands; {what}"
            )
            reasons = ", ".join(tel.throttle_reasons) if tel and tel.throttle_reasons else "none"
            ctx.figure(f"{pre}_tflops", round(tf, 2), ops, "measured", f"event-timed: {how}")
            ctx.figure(
                f"{pre}_kernel_mhz",
                round(float(np.median(clocks)) / 1e6, 1),
                "MHz",
                "measured",
                "SM clock inside the last launch: clock64 cycles / %globaltimer ns, median over SMs",
                (float(clocks.min()) / 1e6, float(clocks.max()) / 1e6),
            )
            if tel is None or tel.power_w_median is None:
                for key, unit in (("watts", "W"), ("tflops_per_watt", f"{ops}/W"), ("sm_mhz", "MHz")):
                    ctx.figure(f"{pre}_{key}", "n/a", unit, "measured", "NVML unavailable: no power or clock samples")
                continue
            note = f"{tel.samples} NVML samples; throttle reasons: {reasons}; power max {tel.power_w_max:.0f} W"
            ctx.figure(
                f"{pre}_watts",
                round(tel.power_w_median, 1),
                "W",
                "measured",
                f"NVML power, median of samples every 20 ms while sustained ({how})",
                note=note,
            )
            ctx.figure(
                f"{pre}_tflops_per_watt",
                round(tf / tel.power_w_median, 3),
                f"{ops}/W",
                "derived",
                f"{pre}_tflops / {pre}_watts",
                note=note,
            )
            if tel.sm_clock_mhz_median is not None:
                ctx.figure(
                    f"{pre}_sm_mhz",
                    round(tel.sm_clock_mhz_median, 1),
                    "MHz",
                    "measured",
                    "NVML SM clock, median of busy samples",
                    (tel.sm_clock_mhz_min, tel.sm_clock_mhz_max),
                    note=note,
                )
    ctx.progress(total, total, "done")
