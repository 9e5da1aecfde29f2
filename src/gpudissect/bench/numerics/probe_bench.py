"""The `tc_probes` benchmark: every instruction's probes run on the GPU, recorded as series and figures,
a monotonicity check, and (GPUDISSECT_PRESETS_OUT) the presets file the probes imply."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ...models import Point
from ..context import BenchContext
from ..registry import benchmark
from .common import FMT, INSTRS, SPECS, SUITE, Instr, Runner, in_bits, to_values
from .inputs import random_codes
from .probes import Findings, probe_instruction

def _y(v: float | None) -> float:
    """Series values must be finite (the store keeps REALs): non-finite ones are 0 with the truth in
    the point's strings."""
    return float(v) if v is not None and math.isfinite(v) else 0.0


def probe_points(f: Findings) -> list[Point]:
    pts = []
    for i, p in enumerate(f.probes):
        m = p.matches()
        pts.append(Point(i, _y(p.got), extra={
            "label": f"{p.param}: {p.label}", "param": p.param,
            "inputs": f"a={p.a if p.raw_a is None else [hex(x) for x in p.raw_a]} b={p.b} c={p.c}",
            "predictions": "; ".join(f"{h}={v!r}" for h, v in p.predictions.items()),
            "hardware": f"0x{(p.got_bits or 0):X} ({p.got!r})",
            "verdict": "/".join(m) if m else "none"}))
    return pts


def findings_row(f: Findings) -> dict[str, Any]:
    return {**{k: f.decided.get(k) for k in ("block_size", "align_frac_bits", "align_ref", "align_rounding", "normalize",
                                             "c_position", "out_rounding", "subnormal_in", "subnormal_out")},
            "notes": f.notes, "specials": f.specials}


def write_presets(ctx: BenchContext, found: dict[Instr, Findings]) -> None:
    path = os.environ.get("GPUDISSECT_PRESETS_OUT")
    if not path:
        return
    arch = f"sm_{ctx.props['cc_major']}{ctx.props.get('cc_minor', 0)}"
    entry = {}
    for ins, f in found.items():
        undecided = sorted(k for k in ("block_size", "align_frac_bits", "align_rounding", "normalize")
                           if f.decided.get(k) is None)
        if f.hyp.c_position == "last":  # C fused into the last block: the model has no such mode
            undecided.append("c_position=last")
        entry[ins.ptx] = {**f.params(), "_verified": not undecided, "_undecided": undecided,
                          "_source": f"tc_probes on {ctx.props.get('name', arch)}", "_notes": f.notes,
                          "_specials": f.specials, "_c_position": f.hyp.c_position}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    status = "measured by gpudissect numerics/tc_probes (bench/numerics.py); _verified is false where a probe was undecided"
    Path(path).write_text(json.dumps({"_status": status, arch: entry}, indent=1, sort_keys=True))


def _instrs(runner: Runner) -> list[Instr]:
    return [i for i in INSTRS if runner.supported(i)]


REQUIRED_KEYS = {  # summary keys of the issue: instruction key -> params reported
    "mma.f16_f32": ("block_size", "align_frac_bits", "out_rounding"),
    "wgmma.f16_f32": ("block_size", "align_frac_bits", "out_rounding"),
    "wgmma.f16_f16": ("out_rounding",), "wgmma.bf16_f32": ("align_frac_bits",),
    "wgmma.tf32_f32": ("align_frac_bits",), "wgmma.e4m3_f32": ("block_size", "align_frac_bits", "out_rounding"),
}


def run_all_probes(ctx: BenchContext, runner: Runner, record: bool) -> dict[Instr, Findings]:
    found: dict[Instr, Findings] = {}
    todo = _instrs(runner)
    for i, ins in enumerate(todo):
        ctx.progress(i, len(todo), f"probes {ins.key}")
        f = probe_instruction(runner, ins)
        found[ins] = f
        if not record:
            continue
        ctx.series(f"probes.{ins.key}", "probe", "", "D", "value", probe_points(f), plot="bar",
                   figure=f"probes.{ins.key}", instruction=ins.ptx, findings=json.dumps(findings_row(f), default=str))
        for param in ("block_size", "align_frac_bits", "align_ref", "align_rounding", "normalize", "c_position",
                      "out_rounding", "subnormal_in", "subnormal_out"):
            val = f.decided.get(param)
            required = param in REQUIRED_KEYS.get(ins.key, ())
            if val is None and not required:
                continue
            note = f.notes.get(param, "")
            if val is None and param == "out_rounding" and note.startswith("n/a"):
                ctx.figure(f"num.{ins.key}.{param}", "n/a", "", "measured", "tc_probes: crafted inputs", note=note)
                continue
            ok = val is not None
            ctx.figure(f"num.{ins.key}.{param}", val if ok else "undecided", "bits" if param == "align_frac_bits" else "",
                       "measured", "tc_probes: crafted inputs, predictions of each hypothesis vs hardware",
                       check="ok" if ok else "failed", note=note)
            if required and not ok:
                ctx.soft_check(False, f"{ins.key}.{param}: {note}")
    return found


def subnormal_summary(found: dict[Instr, Findings]) -> str:
    vals = {f"{ins.key}": f.decided.get("subnormal_in") or "undecided" for ins, f in found.items()}
    kinds = set(vals.values())
    return kinds.pop() if len(kinds) == 1 else ", ".join(f"{k}={v}" for k, v in vals.items())


def monotonicity(runner: Runner, ins: Instr, rng: np.random.Generator, n: int = 4096) -> tuple[int, int, str]:
    """Random dots (exponents within +-3: cancellation), then the same with a_0 one code larger in
    magnitude and a_0 b_0 > 0: a monotone sum never decreases. Returns (violations, pairs, an example)."""
    a = random_codes(ins.a, (n, ins.k), rng, "narrow", FMT[ins.a][2])
    b = random_codes(ins.a, (n, ins.k), rng, "narrow", FMT[ins.a][2])
    c = random_codes(ins.c, (n,), rng, "narrow", FMT[ins.c][2])
    sign = np.uint32(1 << (in_bits(ins.a) - 1))
    a[:, 0] &= ~sign
    b[:, 0] &= ~sign
    a2 = a.copy()
    a2[:, 0] += np.uint32(1 << 13 if ins.a == "tf32" else 1)
    ok = np.isfinite(to_values(ins.a, a2[:, 0]))
    a, b, c, a2 = a[ok], b[ok], c[ok], a2[ok]
    v1 = to_values(ins.c, runner.dots(ins, a, b, c))
    v2 = to_values(ins.c, runner.dots(ins, a2, b, c))
    fin = np.isfinite(v1) & np.isfinite(v2)
    bad = np.flatnonzero(fin & (v2 < v1))
    ex = ""
    if bad.size:
        i = bad[0]
        ex = (f"a={[hex(x) for x in a[i]]} b={[hex(x) for x in b[i]]} c={c[i]:#x}: D={v1[i]!r}, "
              f"with a0={a2[i, 0]:#x}: D={v2[i]!r}")
    return int(bad.size), int(fin.sum()), ex


@benchmark(
    suite=SUITE, name="tc_probes",
    title="Tensor-core arithmetic decided by crafted inputs (block size, alignment bits and rounding, output rounding, subnormals, specials)",
    axes={"instruction": "mma.sync m16n8k16/k8 (f16, bf16, tf32); wgmma m64n8k* (f16, bf16, tf32, e4m3, e5m2) on sm_90"},
    kernels=list(SPECS.values()), timeout_s=300, min_cc=(8, 0),
    paper="beyond 001 §8: probes in the style of Fasi et al. (2021) / Mikaitis et al.",
)
def tc_probes(ctx: BenchContext) -> None:
    runner = Runner(ctx)
    found = run_all_probes(ctx, runner, record=True)
    rng = np.random.default_rng(7)
    for ins in found:
        viol, pairs, ex = monotonicity(runner, ins, rng)
        ctx.figure(f"num.{ins.key}.monotonic_violations", viol, "pairs", "measured",
                   f"{pairs} dot pairs, a_0 raised by one code (a_0 b_0 > 0); D must not decrease", note=ex)
    ctx.figure("num.subnormal_inputs", subnormal_summary(found), "", "measured",
               "tc_probes: subnormal A or B times a power of two, product normal in D")
    write_presets(ctx, found)
