"""The `tc_probes` benchmark: every instruction's probes run on the GPU, recorded as series and figures,
a monotonicity check, and (GPUDISSECT_PRESETS_OUT) the presets file the probes imply."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from ...exportschema import dumps
from ...models import Point
from ..context import BenchContext
from ..registry import Needs, benchmark
from .common import CHAIN_INSTRS, FMT, INSTRS, SPECS, Instr, in_bits, to_values
from .findings import Findings, probe_instruction
from .inputs import random_codes
from .multiblock import CHAIN_MODES, ChainFindings, probe_chain
from .runner import Runner
from .targets import Implementation, implementations, runnable_instrs


def _y(v: float | None) -> float:
    """Series values must be finite (the store keeps REALs): non-finite ones are 0 with the truth in
    the point's strings."""
    return float(v) if v is not None and math.isfinite(v) else 0.0


def probe_points(f: Findings | ChainFindings) -> list[Point]:
    pts = []
    for i, p in enumerate(f.probes):
        m = p.matches()
        pts.append(
            Point(
                i,
                _y(p.got),
                extra={
                    "label": f"{p.param}: {p.label}",
                    "param": p.param,
                    "inputs": f"a={p.a if p.raw_a is None else [hex(x) for x in p.raw_a]} b={p.b} c={p.c}",
                    "predictions": "; ".join(f"{h}={v!r}" for h, v in p.predictions.items()),
                    "hardware": f"0x{(p.got_bits or 0):X} ({p.got!r})",
                    "verdict": "/".join(m) if m else "none",
                },
            )
        )
    return pts


RECORDED = (
    "block_size",
    "align_frac_bits",
    "align_ref",
    "align_rounding",
    "normalize",
    "c_position",
    "out_rounding",
    "subnormal_in",
    "subnormal_out",
    "block_interleave",
    "inter_block",
    "c_add",
    "in_convert",
)


def findings_row(f: Findings) -> dict[str, Any]:
    return {
        **{k: f.decided.get(k) for k in RECORDED if k in f.decided or k in RECORDED[:9]},
        "notes": f.notes,
        "specials": f.specials,
        "perm": f.perm,
    }


CHAIN_TEXT = {
    "separate": "D rounded into the accumulator format between instructions (each D is the next C)",
    "wide:f32/rne": "the sum kept in f32 (rne) between instructions, rounded to the accumulator once",
    "wide:f32/rtz": "the sum kept in f32 (rtz) between instructions, rounded to the accumulator once",
    "exact": "the sum kept exactly between instructions",
    "fused": "the chain fused into one block",
}


def chain_summary(cf: ChainFindings) -> str:
    return (
        f"{cf.mode}: {CHAIN_TEXT[cf.mode]} (chain of {cf.ins.chain}; {cf.note})" if cf.mode else f"undecided: {cf.note}"
    )


def write_presets(
    ctx: BenchContext,
    found: dict[Instr, Findings],
    chains: dict[Instr, ChainFindings] | None = None,
    impl: dict[Instr, Implementation] | None = None,
) -> None:
    path = os.environ.get("GPUDISSECT_PRESETS_OUT")
    if not path:
        return
    arch = f"sm_{ctx.props['cc_major']}{ctx.props.get('cc_minor', 0)}"
    entry = {}
    for ins, f in found.items():
        undecided = sorted(
            k for k in ("block_size", "align_frac_bits", "align_rounding", "normalize") if f.decided.get(k) is None
        )
        if f.hyp.c_position == "last":  # C fused into the last block: the model has no such mode
            undecided.append("c_position=last")
        if f.hyp.block_size < ins.k:  # several blocks: their layout and the sum between them must be known
            undecided += [k for k in ("block_interleave", "inter_block") if f.decided.get(k) is None]
            if f.decided.get("inter_block") == "exact":
                undecided.append("inter_block=exact")
        if f.hyp.c_position == "separate" and f.decided.get("c_add") not in ("ieee_rne", "fused"):
            undecided.append("c_add")
        entry[ins.ptx] = {
            **f.params(),
            "_verified": not undecided,
            "_undecided": undecided,
            "_source": f"tc_probes on {ctx.props.get('name', arch)}",
            "_notes": f.notes,
            "_specials": f.specials,
            "_c_position": f.hyp.c_position,
        }
        if impl and ins in impl:  # native or emulated, from the SASS that ran
            entry[ins.ptx]["_implementation"] = f"{impl[ins].label} ({impl[ins].note})"
        chain = next((cf for ci, cf in (chains or {}).items() if ci.single == ins), None)
        if chain is not None:
            entry[ins.ptx]["_chain"] = chain_summary(chain)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    status = (
        "measured by gpudissect numerics/tc_probes (bench/numerics/); _verified is false where a probe was "
        "undecided; _chain: what the chain probes found between chained instructions"
    )
    Path(path).write_text(dumps({"_status": status, arch: entry}, indent=1, sort_keys=True))


def probe_todo(ctx: BenchContext) -> tuple[list[Instr], list[Instr]]:
    """(instructions, chains of them) this GPU runs; every other variant is recorded as skipped, with the
    reason (wgmma: sm_90a only; fp8 mma.sync: compute capability 8.9)."""
    chains = [ci for ci in CHAIN_INSTRS if ci.single in INSTRS]
    todo = runnable_instrs(ctx, [*INSTRS, *chains])
    return [i for i in todo if i.chain == 1], [i for i in todo if i.chain > 1]


REQUIRED_KEYS = {  # summary keys of the issue: instruction key -> params reported
    "mma.f16_f32": ("block_size", "align_frac_bits", "out_rounding"),
    "wgmma.f16_f32": ("block_size", "align_frac_bits", "out_rounding"),
    "wgmma.f16_f16": ("out_rounding",),
    "wgmma.bf16_f32": ("align_frac_bits",),
    "wgmma.tf32_f32": ("align_frac_bits",),
    "wgmma.e4m3_f32": ("block_size", "align_frac_bits", "out_rounding"),
}


def run_all_probes(ctx: BenchContext, runner: Runner, todo: list[Instr], record: bool) -> dict[Instr, Findings]:
    found: dict[Instr, Findings] = {}
    for i, ins in enumerate(todo):
        ctx.progress(i, len(todo), f"probes {ins.key}")
        f = probe_instruction(runner, ins)
        found[ins] = f
        if not record:
            continue
        ctx.series(
            f"probes.{ins.key}",
            "probe",
            "",
            "D",
            "value",
            probe_points(f),
            plot="bar",
            figure=f"probes.{ins.key}",
            instruction=ins.ptx,
            findings=json.dumps(findings_row(f), default=str),
        )
        for param in RECORDED:
            if param in RECORDED[9:] and param not in f.decided:
                continue  # asked only of instructions with several blocks / fp8 inputs
            val = f.decided.get(param)
            required = param in REQUIRED_KEYS.get(ins.key, ())
            if val is None and not required:
                continue
            note = f.notes.get(param, "")
            if val is None and param == "out_rounding" and note.startswith("n/a"):
                ctx.figure(f"num.{ins.key}.{param}", "n/a", "", "measured", "tc_probes: crafted inputs", note=note)
                continue
            ok = val is not None
            ctx.figure(
                f"num.{ins.key}.{param}",
                val if ok else "undecided",
                "bits" if param == "align_frac_bits" else "",
                "measured",
                "tc_probes: crafted inputs, predictions of each hypothesis vs hardware",
                check="ok" if ok else "failed",
                note=note,
            )
            if required and not ok:
                ctx.soft_check(False, f"{ins.key}.{param}: {note}")
    return found


def run_chain_probes(
    ctx: BenchContext, runner: Runner, found: dict[Instr, Findings], chains_todo: list[Instr], record: bool
) -> dict[Instr, ChainFindings]:
    """Chains of CHAIN instructions of every single-block instruction that ran, probed with what its own
    probes found."""
    chains: dict[Instr, ChainFindings] = {}
    todo = [ci for ci in chains_todo if ci.single in found]
    for i, ci in enumerate(todo):
        ctx.progress(i, len(todo), f"chain probes {ci.key}")
        cf = probe_chain(runner, ci, found[ci.single].hyp)
        chains[ci] = cf
        if not record:
            continue
        ctx.series(
            f"probes.{ci.key}",
            "probe",
            "",
            "D",
            "value",
            probe_points(cf),
            plot="bar",
            figure=f"probes.{ci.key}",
            instruction=f"{ci.chain} x {ci.ptx}",
            findings=json.dumps({"between_instructions": cf.mode, "note": cf.note}),
        )
        ctx.figure(
            f"num.{ci.key}.between_instructions",
            cf.mode or "undecided",
            "",
            "measured",
            f"tc_probes: chains of {ci.chain} instructions (D -> next C), crafted inputs whose D shows how the sum "
            "passes from one instruction to the next; hypotheses: " + ", ".join(CHAIN_MODES),
            check="ok" if cf.mode else "failed",
            note=chain_summary(cf),
        )
    return chains


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
        ex = (
            f"a={[hex(x) for x in a[i]]} b={[hex(x) for x in b[i]]} c={c[i]:#x}: D={v1[i]!r}, "
            f"with a0={a2[i, 0]:#x}: D={v2[i]!r}"
        )
    return int(bad.size), int(fin.sum()), ex


@benchmark(
    name="tc_probes",
    title="Tensor-core arithmetic decided by crafted inputs (block size and layout, alignment bits and rounding, the "
    "sum between blocks and between chained instructions, output rounding, subnormals, specials)",
    axes={
        "instruction": "mma.sync m16n8k16/k8 (f16, bf16, tf32; compute capability 8.0), m16n8k32 (e4m3, e5m2; 8.9); "
        "wgmma m64n8k* (f16, bf16, tf32, e4m3, e5m2; sm_90a only); each of one instruction also as a chain of 4 "
        "(D -> next C); what the GPU cannot run is skipped by name"
    },
    kernels=list(SPECS.values()),
    timeout_s=300,
    needs=Needs((8, 0)),
    paper="beyond 001 §8: probes in the style of Fasi et al. (2021) / Mikaitis et al.",
)
def tc_probes(ctx: BenchContext) -> None:
    runner = Runner(ctx)
    todo, chains_todo = probe_todo(ctx)
    found = run_all_probes(ctx, runner, todo, record=True)
    chains = run_chain_probes(ctx, runner, found, chains_todo, record=True)
    impl = implementations(ctx, list(found))
    for ins, im in impl.items():
        ctx.figure(
            f"num.{ins.key}.implementation",
            im.label,
            "",
            "derived",
            "the tensor-core instructions of the kernel as built for this GPU: native where one of them takes the "
            "input type, emulated where the compiler converts to another (fp8 mma.sync as f16 HMMA)",
            note=im.note,
        )
    rng = np.random.default_rng(7)
    for ins in found:
        viol, pairs, ex = monotonicity(runner, ins, rng)
        ctx.figure(
            f"num.{ins.key}.monotonic_violations",
            viol,
            "pairs",
            "measured",
            f"{pairs} dot pairs, a_0 raised by one code (a_0 b_0 > 0); D must not decrease",
            note=ex,
        )
    ctx.figure(
        "num.subnormal_inputs",
        subnormal_summary(found),
        "",
        "measured",
        "tc_probes: subnormal A or B times a power of two, product normal in D",
    )
    write_presets(ctx, found, chains, impl)
