"""Instruction encoding and control codes of the run's GPU's architecture (sm_90a on an H100), discovered
from our own cubins (Jia et al. §2.1, §2.3): bit flipping against nvdisasm, the control-field layout, and the
consistency of the compiler's barriers and stalls over every cubin the project builds for that architecture.
Runs on the CPU; an architecture whose raw words this nvdisasm cannot read (sm_70 with CUDA 13) is a skip."""

from __future__ import annotations

import re
from pathlib import Path

from ...capability import Target
from ...device.compiler import unsupported_why
from ...errors import GpuDissectError
from ...models import Point
from ...sass.control import ControlLayout, check_consistency, discover_layout, measured_latencies
from ...sass.corpus import Function
from ...sass.encoding import annotate, discover_many, fields_table, representative_words
from ...sass.text import parse, register_number
from ..context import BenchContext
from ..registry import Facts, KernelSpec, Param, benchmark
from .corpus import no_discovery_why, project_functions, project_specs, raw_arch

# the repository's results (src/gpudissect/bench/isa/ -> 4 levels up): measured latencies for the consistency check
# of Hopper's code (an H100's; another architecture's compiler plans its stalls for its own latencies)
SUMMARY = Path(__file__).resolve().parents[4] / "results" / "h100-sxm5-80gb" / "summary.json"
SUMMARY_FAMILY = "hopper"
KIND_CODE = {
    "opcode": 1,
    "illegal": 2,
    "form": 3,
    "operand-kind": 3,
    "modifier": 4,
    "predicate": 5,
    "reg": 6,
    "ureg": 7,
    "pred": 8,
    "upred": 8,
    "imm": 9,
    "const": 10,
    "mem": 11,
    "operand-modifier": 12,
    "reuse": 13,
    "control": 15,
    "unused": 16,
    "unprinted": 0,
}


def _probe_words(fns: list[Function], n: int = 8) -> list[int]:
    """Words of instructions with three register sources (candidates for reuse flags), distinct control."""
    out: dict[int, int] = {}
    for f in fns:
        for w, t in zip(f.words, f.texts):
            if t and not t.startswith("@"):
                ins = parse(t)
                if sum(register_number(o) not in (None, 255) for o in ins.operands[1:4]) == 3:
                    out.setdefault(w >> 105, w)
                    if len(out) >= n:
                        return list(out.values())
    return list(out.values())


def _bits(ranges: str) -> set[int]:
    """The bits of a sass.control._ranges text at the start of an evidence line: '105-124, 126 (...)'."""
    out: set[int] = set()
    for lo, hi in re.findall(r"(\d+)(?:-(\d+))?", ranges.split("(")[0].split(" print")[0]):
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def widths_fit(layout: ControlLayout) -> tuple[bool, str]:
    """Whether Jia's field widths fit the discovered control bits, and the reuse bits (text) the fit leaves
    unevidenced. sass.control asks that the compiled code sets every bit of the span; a reuse slot that the
    compiler of this architecture never flags (sm_80 sets no bit 125) is never set, yet silent and unused like
    the field's other bits: that does not contradict the layout, so it fits with those bits named."""
    if layout.evidence["jia_widths_fit"] == "True":
        return True, ""
    lo, w = layout.fields["reuse"]
    reuse_field = set(range(lo, lo + w))
    start = min(f[0] for f in layout.fields.values())
    span = set(range(start, max(f[0] + f[1] for f in layout.fields.values())))
    control = _bits(layout.evidence["control_bits"])
    reuse_seen = _bits(layout.evidence["reuse"].removeprefix("bits "))
    gap = span - control
    ok = control <= span and reuse_seen <= reuse_field and bool(gap) and gap <= reuse_field & set(layout.unused)
    return ok, ", ".join(map(str, sorted(gap))) if ok else ""


def run_target(ctx: BenchContext) -> Target:
    """The architecture to analyse: the `arch` parameter, else the run's GPU's. The runner opens no device for
    a CPU-only benchmark, so without one in the context GPU 0 is asked (no GPU: a skip)."""
    if ctx.params.get("arch"):
        return Target.parse(ctx.params["arch"])
    if ctx.device is not None:
        return ctx.target
    from ...device.cuda import Device

    try:
        props = Device(0).props
    except GpuDissectError as e:
        ctx.skip(f"no GPU to take the architecture from ({e}); --set arch=sm_XX names one")
        raise  # unreachable: skip raises
    return Target(int(props["cc_major"]), int(props["cc_minor"]))


def no_analysis_why(arch: str) -> str | None:
    """Why this machine cannot analyse `arch` (None when it can): no NVRTC builds it, or no nvdisasm reads it."""
    why = unsupported_why(arch)
    return f"no discovery for {arch} here: {why}" if why else no_discovery_why(arch)


def _check_arch(value: str, facts: Facts) -> str | None:
    try:
        Target.parse(value)
    except ValueError as e:
        return str(e)
    return None


def corpus_builds(target: Target, _mode: str) -> list[KernelSpec]:
    """Every build the benchmark reads, for the run's compile pool: compiled once there (most are the GPU
    benchmarks' own kernels) instead of again inside the benchmark. With --set arch= another architecture's
    builds are made by the benchmark itself."""
    return project_specs(target)


@benchmark(
    name="isa_encoding",
    title="SASS encoding by bit flipping, control fields, and their consistency over all our cubins",
    axes={"opcode": "one real word per base opcode found in our cubins", "bit": "0..127, flipped alone"},
    kernels=[],
    params={"arch": Param(None, "architecture to analyse (default: the run's GPU's), e.g. sm_80", str, _check_arch)},
    timeout_s=600,
    paper="002 §2.1 (control information), §2.3 (instruction encoding)",
    needs_gpu=False,
    prebuild=corpus_builds,
)
def isa_encoding(ctx: BenchContext) -> None:
    target = run_target(ctx)
    arch, raw = target.arch, raw_arch(target.arch)
    why = no_analysis_why(arch)
    if why:
        ctx.skip(why)
    fns = project_functions(arch)
    words = [w for f in fns for w in f.words]
    encs = discover_many(representative_words(fns), raw)
    low = [len([b for b in e.opcode_bits if b < 12]) for e in encs.values()]
    ctx.figure(
        "isa.encoding.opcodes",
        len(encs),
        "opcodes",
        "measured",
        f"base opcodes in the {len(fns)} functions of every KernelSpec built for {arch} "
        f"({len(words)} instructions); one word each, 128 single-bit flips disassembled by nvdisasm",
    )
    ctx.figure(
        "isa.encoding.opcode_bits_min",
        min(low),
        "bits",
        "measured",
        "fewest of bits 0..11 whose flip changes the mnemonic or makes the word illegal, over the opcodes",
    )
    ctx.figure("isa.encoding.opcode_bits_max", max(low), "bits", "measured", "most such bits over the opcodes")
    regs_ok = sum(all(e.register_checked.values()) and bool(e.register_checked) for e in encs.values())
    ctx.figure(
        "isa.encoding.register_fields_binary",
        regs_ok,
        "opcodes",
        "measured",
        "opcodes whose every register operand field holds the register number in binary (flipping bit k "
        "of the field changes Rn to R(n xor 2^k))",
    )

    pred = sorted({len(e.bits_of("predicate")) for e in encs.values() if e.bits_of("predicate")})
    ctx.figure(
        "isa.encoding.predicate_bits",
        pred[0] if len(pred) == 1 else "/".join(map(str, pred)),
        "bits",
        "measured",
        "bits whose flip changes the guard predicate (@P0 -> @P6, @!P0, @PT ...), over the opcodes",
    )

    layout = discover_layout(encs, words, raw, probe_words=_probe_words(fns))
    for name, e in encs.items():
        a = annotate(e, layout.fields, layout.unused)
        pts = [
            Point(
                b, KIND_CODE.get(a.kinds[b].split(" ")[0], 14), extra={"label": a.labels[b], "example": a.examples[b]}
            )
            for b in range(128)
        ]
        ctx.series(
            name,
            "bit",
            "",
            "field kind code",
            "",
            pts,
            plot="bar",
            figure=f"encoding_{name}",
            text=e.text,
            word=f"{e.word:032x}",
            fields=[{k: str(v) for k, v in r.items()} for r in fields_table(a)],
            kind_codes=KIND_CODE,
        )
    ctx.figure(
        "isa.encoding.unused_bits", len(layout.unused), "bits", "measured", f"bits {layout.evidence['unused_bits']}"
    )
    fit, unset = widths_fit(layout)
    unevidenced = f"; reuse bit(s) {unset} never set in {arch}'s compiled code: Jia's field not contradicted"
    for name, (lo, w) in layout.fields.items():
        ctx.figure(
            f"isa.control.{name}_bits",
            f"{lo + w - 1}:{lo}",
            "",
            "measured",
            "; ".join(f"{k}: {v}" for k, v in layout.evidence.items()) + (unevidenced if unset else ""),
        )
    ctx.check(fit, f"Jia's control widths do not fit the discovered bits: {layout.evidence}")

    measured = measured_latencies(SUMMARY) if target.family == SUMMARY_FAMILY else {}
    res = check_consistency(fns, layout, measured)
    src = (
        "fixed latencies from isa.latency.* in results/h100-sxm5-80gb/summary.json (rounded to whole cycles) "
        "where present, otherwise the compiler's smallest stall sum learned from the other half of the kernels"
        if res.latencies and any(k.startswith("isa.latency.") for k in measured)
        else (
            "no measured isa.latency.* yet"
            if target.family == SUMMARY_FAMILY
            else f"no measured latencies of {arch} (results/h100-sxm5-80gb holds an H100's)"
        )
        + ": each producer opcode's latency is the smallest stall sum the compiler "
        "puts before a consumer in the other half of the kernels (KernelSpecs alternately split), so the "
        "check can fail"
    )
    ctx.figure(
        "isa.control.consistency",
        res.fraction,
        "fraction",
        "measured",
        f"{res.barrier_ok}/{res.barrier_pairs} variable-latency producers whose first consumer (RAW/WAW on a "
        f"write barrier, WAR on a read barrier, before any branch) waits on that barrier, and "
        f"{res.fixed_ok}/{res.fixed_pairs} fixed-latency producer/consumer pairs separated by stalls >= the "
        f"latency; {src}; over {len(fns)} functions",
        note="disagreements by pattern: " + res.summary(),
    )
    ctx.figure(
        "isa.control.consistency_barriers",
        res.barrier_ok / max(res.barrier_pairs, 1),
        "fraction",
        "measured",
        f"{res.barrier_ok}/{res.barrier_pairs} barrier pairs",
    )
    ctx.figure(
        "isa.control.consistency_fixed",
        res.fixed_ok / max(res.fixed_pairs, 1),
        "fraction",
        "measured",
        f"{res.fixed_ok}/{res.fixed_pairs} fixed-latency pairs; latencies used: "
        + ", ".join(f"{k}={v}" for k, v in sorted(res.latencies.items())),
    )
