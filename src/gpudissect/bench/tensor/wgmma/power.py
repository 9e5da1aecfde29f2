"""wgmma sustained on all SMs: SM clock, power and energy efficiency (Luo et al. Tables XII-XIII)."""

from __future__ import annotations

import time
from typing import Any

from ...context import BenchContext
from ...registry import Needs, Param, benchmark, comma_names, in_range
from .throughput import DENSE_SPECS, Variant, _types_param
from .variants import TYPES, key_of, variant_spec


# ---------------------------------------------------------------------------------------
# Power and energy (Tables XII-XIII)
# ---------------------------------------------------------------------------------------
def _sustain(ctx: BenchContext, v: Variant, mode: str, wgs: int, seconds: float) -> tuple[float, Any, int]:
    """Back-to-back launches for `seconds` on all SMs under NVML sampling (after a warm-up that is not
    sampled): (TFLOPS over the summed event time, telemetry summary, launches)."""
    from ....device.telemetry import Sampler, summarize

    sms, smem = ctx.props["sm_count"], v.smem_one_per_sm()
    _, iters = v.throughput(mode, wgs, 50.0, 1)  # ~50 ms per launch
    warm = min(0.5, seconds / 3)
    t_end = time.monotonic() + warm
    while time.monotonic() < t_end:
        v.launch(mode, sms, wgs, iters, smem)
    total_ms, launches = 0.0, 0
    sampler = Sampler(ctx.props.get("uuid"), period_s=0.02)
    if not sampler.available:
        sampler = Sampler(None, period_s=0.02)
    with sampler as s:
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            total_ms += v.launch(mode, sms, wgs, iters, smem)[0]
            launches += 1
    flops = v.flop_per_mma * v.count(iters) * wgs * sms * launches
    return flops / (total_ms * 1e-3) / 1e12, summarize(s.samples), launches


@benchmark(
    name="wgmma_power",
    title="wgmma sustained on all SMs: SM clock, power, TFLOPS/W, zero vs random operands",
    axes={
        "type": "every dense type at N=256 (+ sparse f16_f32)",
        "operands": "zero, random",
        "mode": "ss (+ rs in full mode)",
    },
    kernels=DENSE_SPECS + [variant_spec("f16_f32", 256, sparse=True)],
    needs=Needs(features=("wgmma",)),  # sm_90a only: not Blackwell, which has tcgen05 instead
    timeout_s=600,
    paper="000 §6.2 Tables XII-XIII",
    params={
        "seconds": Param(
            None,
            "sustained seconds per variant (default 0.5 quick, 1.5 full)",
            float,
            in_range(0.1, 30),
        ),
        "types": Param(tuple(TYPES), "comma-separated dense wgmma types", comma_names, _types_param),
    },
)
def wgmma_power(ctx: BenchContext) -> None:
    seconds = ctx.params["seconds"] or (0.5 if ctx.quick else 1.5)
    modes = ("ss",) if ctx.quick else ("ss", "rs")
    todo = [(t, False) for t in ctx.params["types"]] + [("f16_f32", True)]
    ctx.precompile([variant_spec(t, 256, sp) for t, sp in todo])
    for i, (tname, sparse) in enumerate(todo):
        t = TYPES[tname]
        base = key_of(tname, 256, sparse)
        with ctx.scratch():  # this variant's buffers
            v = Variant(ctx, tname, 256, sparse)
            for mode in modes:
                wgs = v.warpgroups(mode, v.smem_one_per_sm())
                err = v.check(mode, wgs)
                ctx.soft_check(not err, err)
                for data in ("zero", "rand"):
                    pre = f"{base}.{'' if mode == 'ss' else 'rs_'}{data}"
                    if err:
                        ctx.figure(
                            f"{pre}_tflops_per_watt" if not t.integer else f"{pre}_tops_per_watt",
                            0.0,
                            f"{t.unit}/W",
                            "derived",
                            "check failed",
                            None,
                            "failed",
                            err,
                        )
                        continue
                    v.load(data, seed=13)
                    rate, tel, launches = _sustain(ctx, v, mode, wgs, seconds)
                    bad = v.verify_run(ctx.props["sm_count"], wgs, data)
                    ctx.soft_check(not bad, bad)
                    chk = "failed" if bad else "ok"
                    how = (
                        f"{mode}, {launches} back-to-back launches over {seconds:g} s on all SMs after a warm-up; "
                        "NVML sampled every 20 ms"
                    )
                    sfx = t.unit.lower()
                    ctx.figure(
                        f"{pre}_sustained_{sfx}",
                        rate,
                        t.unit,
                        "measured",
                        how + "; rate from CUDA events",
                        check=chk,
                        note=bad,
                    )
                    if tel is None or tel.power_w_median is None:
                        msg = f"{key_of(tname, 256, sparse)} {data}: NVML gave no power samples"
                        ctx.soft_check(False, msg)
                        ctx.figure(f"{pre}_power_w", 0.0, "W", "measured", how, None, "failed", msg)
                        continue
                    ctx.figure(
                        f"{pre}_power_w",
                        tel.power_w_median,
                        "W",
                        "measured",
                        how + "; median power",
                        (tel.power_w_median, tel.power_w_max or tel.power_w_median),
                        chk,
                        bad,
                    )
                    if tel.sm_clock_mhz_median is not None:
                        ctx.figure(
                            f"{pre}_sm_clock_mhz",
                            tel.sm_clock_mhz_median,
                            "MHz",
                            "measured",
                            how + "; median SM clock",
                            (tel.sm_clock_mhz_min, tel.sm_clock_mhz_max),
                            chk,
                            bad,
                        )
                    ctx.figure(
                        f"{pre}_{sfx}_per_watt",
                        round(rate / tel.power_w_median, 4),
                        f"{t.unit}/W",
                        "derived",
                        f"sustained {t.unit} over median NVML power ({mode})",
                        None,
                        chk,
                        f"throttle reasons: {', '.join(tel.throttle_reasons) or 'none'}; {tel.temp_c_max} C max",
                    )
                    ctx.figure(
                        f"{pre}_throttle_reasons",
                        ",".join(tel.throttle_reasons) or "none",
                        "",
                        "measured",
                        how + "; union of NVML clock-event reasons while busy",
                        check=chk,
                    )
        ctx.progress(i + 1, len(todo), f"{'sp ' if sparse else ''}{tname}")
