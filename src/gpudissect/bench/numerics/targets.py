"""What of the numerics suite this GPU runs, and how: the instructions it can run (the others recorded as
skipped variants, with the reason) and, per instruction, whether the tensor core runs it natively or the
compiler emulates it, read from the SASS that ran (bench.shared.sass_of), never from what Hopper does."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..context import BenchContext
from ..shared import sass_of
from .common import FP8, SPECS, Instr

# a tensor-core instruction of any family (HMMA/QMMA/DMMA/IMMA of mma.sync, HGMMA/QGMMA of wgmma) with its forms
_MMA = re.compile(r"\b([HQDI]G?MMA(?:\.[0-9A-Za-z_]+)+)")
_UNPACK = re.compile(r"\b(F2FP\.F16\.E[45]M[23]\.UNPACK_B)\b")
_C_ADD = re.compile(r"\b(FADD|HADD2)\b")


def runnable_instrs(ctx: BenchContext, instrs: Sequence[Instr]) -> list[Instr]:
    """The instructions of `instrs` this GPU can run; every other one is recorded as a skipped variant (its
    kernel variant's name and what the GPU lacks)."""
    ok = {s.variant for s in ctx.runnable([SPECS[i] for i in instrs])}
    return [i for i in instrs if SPECS[i].variant in ok]


def _takes(ins: Instr, opcode: str) -> bool:
    """Whether a tensor-core opcode multiplies `ins`'s input type itself (f16 is the forms' default)."""
    forms = set(opcode.split(".")[1:])
    if ins.a in FP8:
        return ins.a.upper() in forms
    if ins.a in ("bf16", "tf32"):
        return ins.a.upper() in forms
    return not forms & {"BF16", "TF32", "E4M3", "E5M2", "S8", "U8", "F64"}


@dataclass(frozen=True)
class Implementation:
    label: str  # "native" | "emulated" | "unknown"
    note: str  # the SASS it was read from: opcodes with their counts per instance

    @property
    def native(self) -> bool:
        return self.label == "native"


def implementation(ins: Instr, sass: str, source: str = "SASS") -> Implementation:
    """Native where one of the function's tensor-core opcodes takes the instruction's input type; emulated
    where they take another (fp8 mma.sync on sm_90: F2FP to f16, then HMMA), unknown with none at all."""
    ops = Counter(_MMA.findall(sass))
    if not ops:
        return Implementation("unknown", f"no tensor-core instruction in its {source}")
    seen = ", ".join(f"{n} x {op}" for op, n in sorted(ops.items()))
    if any(_takes(ins, op) for op in ops):
        return Implementation("native", f"{source}: {seen}")
    extra = [f"{n} x {op}" for op, n in sorted(Counter(_UNPACK.findall(sass)).items())]
    if ins.a in FP8 and _C_ADD.search(sass):
        extra.append(f"C added by {_C_ADD.search(sass).group(1)}")  # type: ignore[union-attr]
    return Implementation("emulated", f"{source}: {seen}" + (f" ({'; '.join(extra)})" if extra else ""))


def implementations(ctx: BenchContext, instrs: Sequence[Instr]) -> dict[Instr, Implementation]:
    """implementation() of each instruction as built for this GPU; without a disassembler, of the SASS its
    variant declares for this GPU's family (what a check there would hold it to)."""
    out = {}
    for ins in instrs:
        spec = SPECS[ins]
        fn = "num_mma" if ins.family == "mma" else "num_wgmma"
        text = sass_of(ctx, spec, fn)
        if text is None:
            declared = "\n".join(spec.required_for(ctx.target).get(fn, []))
            out[ins] = implementation(ins, re.sub(r"\\(.)", r"\1", declared), "declared SASS (no disassembler here)")
        else:
            out[ins] = implementation(ins, text, f"SASS of {spec.variant} on {ctx.target.arch}")
    return out
