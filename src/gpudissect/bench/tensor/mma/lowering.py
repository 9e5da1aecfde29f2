"""What each mma / mma.sp variant needs, the SASS ptxas makes of it on each architecture family, and the label a
figure gets from the SASS that ran.

The SASS per family was read from NVRTC 13 builds for sm_75, sm_80, sm_86, sm_89, sm_90a, sm_100a and sm_120a
(NVRTC 12 for sm_70) with `gpudissect sass`; the patterns pin it, and the run checks the cubin it times against
them. Where the families differ:
- m8n8k4 .f16: a tensor instruction of its own (HMMA.884 ... STEPn) on Volta and Turing only; from Ampere on a
  subroutine of shuffles and HADD2.F32 / FFMA.
- f64: DMMA.884 on Ampere and Ada (m8n8k4 only; m16n8k* f64 needs sm_90), DMMA.<m>x<n>x<k> on Hopper, and on
  Blackwell every shape as DMMA.8x8x4 (m16n8k16: 8 of them).
- fp8: native QMMA on Ada and sm_120; on Hopper and sm_100 converted to f16 (F2FP ... UNPACK_B) for an f16 HMMA
  of half the K.
- s4/u4: native IMMA ... .S4 on Turing, Ampere and Ada; unpacked to 8 bits for an IMMA .S8 of half the K on
  Hopper and Blackwell.
- b1: BMMA .AND.POPC / .XOR.POPC on Ampere and Ada (Turing: xor m8n8k128 only); Hopper rebuilds xor from
  AND.POPC; Blackwell has no BMMA: both unpacked for IMMA .U8 in a subroutine.
- s8/u8 m8n8k16: IMMA.8816 before Blackwell, padded into an IMMA.16816 on Blackwell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .... import capability
from ....capability import Needs
from ...shared import FAMILIES, family_has
from .common import LATENCY_UNROLL
from .variants import MmaVariant

NO = r"\A(?![\s\S]*{})"  # the whole function holds no match of {}
HOPPER = "hopper"
BLACKWELL = ("blackwell", "blackwell-consumer")
_NATIVE_FP8 = ("ada", "blackwell-consumer")
_NATIVE_INT4 = ("turing", "ampere", "ada")


def needs_of(v: MmaVariant) -> Needs:
    """What a GPU needs to run the variant at all (its PTX compiles for it)."""
    m = v.mnk[0]
    if v.sparse:
        return Needs(features=("mma_sparse", "mma_fp8") if v.a in ("e4m3", "e5m2") else ("mma_sparse",))
    if v.quadpair:
        return Needs(features=("mma_m8n8k4",))
    if v.a == "f16":
        return Needs(features=("mma_f16",) if v.shape == "m16n8k8" else ("mma_m16n8k16",))
    if v.a in ("bf16", "tf32", "e4m3", "e5m2"):
        return Needs(features=({"bf16": "mma_bf16", "tf32": "mma_tf32"}.get(v.a, "mma_fp8"),))
    if v.a == "f64":  # m8n8k4 from sm_80; the m16n8k* shapes from sm_90 (ptxas refuses them before)
        return Needs((9, 0) if m == 16 else (8, 0), features=("mma_f64",))
    if v.a in ("s8", "u8"):
        return Needs((8, 0) if m == 16 else (7, 5), features=("mma_int8",))
    # s4/u4 m8n8k32 and b1 xor m8n8k128 from sm_75; the m16n8 shapes and and.popc from sm_80
    return Needs((7, 5) if m == 8 and v.bitop != "and" else (8, 0))


@dataclass(frozen=True)
class Lowering:
    """What a variant becomes on one family: `native` (a tensor instruction of its own type, perhaps of another
    shape) or emulated by other instructions, and the SASS patterns that prove it."""

    native: bool
    patterns: list[str]


def lower(v: MmaVariant, family: str = HOPPER) -> Lowering:
    m, n, k = v.mnk
    sp = r"\.SP" if v.sparse else ""
    bw = family in BLACKWELL
    if v.quadpair:
        if family in ("volta", "turing"):
            c = v.c.upper()
            last = "STEP3" if v.c == "f32" else "STEP1"
            return Lowering(True, [rf"HMMA\.884\.{c}\.{c}\.STEP0", rf"HMMA\.884\.{c}\.{c}\.{last}"])
        # no tensor-core instruction: a subroutine of shuffles and FFMA/HADD2
        return Lowering(False, [NO.format(r"[HBDIQ]MMA"), r"SHFL\.IDX", r"HADD2\.F32", r"CALL\.REL"])
    if v.a in ("e4m3", "e5m2"):
        if family in _NATIVE_FP8:
            t, acc = v.a.upper(), v.c.upper()
            return Lowering(True, [rf"QMMA{sp}\.{m}{n}{k}\.{acc}\.{t}\.{t}", NO.format(r"F2FP\S*\.UNPACK_B")])
        acc = r"\.F32 " if v.c == "f32" else r"\.F16 "  # fp8 -> f16 (F2FP ... UNPACK_B), f16 HMMA of half the K
        return Lowering(
            False,
            [
                rf"F2FP\.F16\.{v.a.upper()}\.UNPACK_B",
                rf"HMMA{sp}\.{m}{n}{k // 2}{acc}",
                NO.format(r"(?:QMMA|\.E4M3\.E4M3|\.E5M2\.E5M2)"),
            ],
        )
    if v.a in ("s4", "u4"):
        t = v.a.upper()
        if family in _NATIVE_INT4:
            return Lowering(True, [rf"IMMA{sp}\.{m}{n}{k}\.{t}\.{t}\b"])
        s8 = "S8" if v.a == "s4" else "U8"  # unpacked to 8 bits, then IMMA of half the K (Blackwell: m16)
        mm = 16 if bw else m
        return Lowering(False, [rf"IMMA{sp}\.{mm}{n}{k // 2}\.{s8}\.{s8}", NO.format(r"IMMA\S*\.[SU]4")])
    if v.a == "b1":
        if bw:  # no BMMA: bits unpacked to bytes for IMMA .U8 in a subroutine
            return Lowering(False, [r"IMMA\.16832\.U8\.U8", r"CALL\.REL", NO.format(r"BMMA")])
        if v.bitop == "xor" and family == HOPPER:  # AND.POPC plus integer arithmetic
            return Lowering(False, [rf"BMMA\.{m}{n}{k}\.AND\.POPC", NO.format(r"XOR\.POPC"), r"CALL\.REL"])
        return Lowering(True, [rf"BMMA\.{m}{n}{k}\.{v.bitop.upper()}\.POPC"])
    if v.a == "f64":
        if family in ("ampere", "ada"):
            return Lowering(True, [r"DMMA\.884\b"])
        if bw:  # every shape as DMMA.8x8x4, as many as the shape holds
            return Lowering(True, [r"DMMA\.8x8x4\b", NO.format(r"DMMA\.(?!8x8x4\b)")])
        return Lowering(True, [rf"DMMA\.{m}x{n}x{k}\b"])
    if v.a in ("s8", "u8"):
        t = v.a.upper()
        mm = 16 if bw else m  # Blackwell pads m8n8k16 into an m16n8k16
        return Lowering(True, [rf"IMMA{sp}\.{mm}{n}{k}\.{t}\.{t}\b"])
    kind = {"f16": r"\.F16 " if v.c == "f16" else r"\.F32 ", "bf16": r"\.F32\.BF16 ", "tf32": r"\.F32\.TF32 "}[v.a]
    return Lowering(True, [rf"HMMA{sp}\.{m}{n}{k}{kind}"])


def sass_patterns(v: MmaVariant, family: str = HOPPER) -> list[str]:
    """The SASS of a variant on a family, as it really is (see the module docstring)."""
    return lower(v, family).patterns


def runs_on(v: MmaVariant) -> list[str]:
    """The families whose GPUs can run the variant."""
    return [fam for fam in FAMILIES if family_has(needs_of(v), fam)]


def _on_families(families: list[str], then: object, otherwise: object) -> object:
    """A define whose value is `then` on the GPUs of `families` and `otherwise` elsewhere: a conditional on
    __CUDA_ARCH__ (NVRTC compiles device code only, where it is always defined)."""
    if not families:
        return otherwise
    runs: list[list[int]] = []  # runs of consecutive known targets in the families, as __CUDA_ARCH__ values
    prev_in = False
    for (a, b), (fam, _) in sorted(capability.FAMILIES.items()):
        if fam in families:
            if not prev_in:
                runs.append([])
            runs[-1].append(a * 100 + b * 10)
        prev_in = fam in families
    test = "||".join(f"(__CUDA_ARCH__>={r[0]}&&__CUDA_ARCH__<={r[-1]})" for r in runs)
    return f"({test}?{then}:{otherwise})"  # || binds tighter than ?:


def emulating(v: MmaVariant) -> list[str]:
    """The families (of those that run it) where ptxas emulates the variant with other instructions."""
    return [fam for fam in runs_on(v) if not lower(v, fam).native]


def latency_unrolled(v: MmaVariant, family: str) -> bool:
    """Whether mma_ilp1 (the latency chain) unrolls its timed loop LATENCY_UNROLL times on the family: where the
    mma is native (one tensor instruction; HMMA.884's steps on Volta and Turing), but not f64 on Blackwell.
    Elsewhere an mma is a dozen to hundreds of SASS instructions (an emulation; Blackwell's DMMA.8x8x4 with their
    register moves), which hide the loop-back themselves and whose 64 copies would make a loop body of 10-900 KB,
    past the instruction caches: the compiler's unroll stays (the SASS as before)."""
    return lower(v, family).native and not (v.a == "f64" and family in BLACKWELL)


def defines(v: MmaVariant) -> dict[str, object]:
    """The variant's defines, with OPAQUE, MAX_WARPS and LATENCY_UNROLL per family: OPAQUE where ptxas emulates
    it (its expansion is visible to ptxas, which would hoist the loop-invariant part out of the timed loop), 8
    warps at most for the 2:4 fp8 emulation (up to 252 registers a thread: 16 warps would spill), and
    LATENCY_UNROLL where latency_unrolled (0 elsewhere: the compiler's unroll)."""
    emu, ran = emulating(v), runs_on(v)
    out = v.defines()
    out["OPAQUE"] = 1 if emu and set(emu) == set(ran) else _on_families(emu, 1, 0)
    fp8_sp = v.sparse and v.a in ("e4m3", "e5m2")
    out["MAX_WARPS"] = (8 if set(emu) == set(ran) else _on_families(emu, 8, 16)) if fp8_sp and emu else 16
    unrolled = [fam for fam in ran if latency_unrolled(v, fam)]
    full = set(unrolled) == set(ran)
    out["LATENCY_UNROLL"] = LATENCY_UNROLL if full else _on_families(unrolled, LATENCY_UNROLL, 0)
    return out


def max_warps(v: MmaVariant, family: str) -> int:
    """Largest block launched on a family (as `defines` caps it)."""
    return 8 if v.sparse and v.a in ("e4m3", "e5m2") and not lower(v, family).native else 16


def opaque(v: MmaVariant, family: str) -> bool:
    """Whether the family's build XORs the operands with a run-time zero (OPAQUE: where ptxas emulates it)."""
    return not lower(v, family).native


# ---------------------------------------------------------------------------------------
# The label from the SASS that ran
# ---------------------------------------------------------------------------------------
_TENSOR_OP = re.compile(r"\b([HIDBQ]MMA(?:\.SP)?\.(?:\d+x\d+x\d+|\d+)(?:\.[A-Z0-9_]+)*)")
_TYPE_MARK = {"bf16": "BF16", "tf32": "TF32", "e4m3": "E4M3", "e5m2": "E5M2", "s8": "S8", "u8": "U8", "s4": "S4"}
_TYPE_MARK |= {"u4": "U4"}
_OP_FAMILY = {"f16": "HMMA", "bf16": "HMMA", "tf32": "HMMA", "f64": "DMMA", "e4m3": "QMMA", "e5m2": "QMMA"}
_OP_FAMILY |= {"s8": "IMMA", "u8": "IMMA", "s4": "IMMA", "u4": "IMMA", "b1": "BMMA"}


def tensor_ops(sass: str) -> list[str]:
    """The distinct tensor-core instructions of a function (without HMMA.884's STEPn), in order."""
    ops = [re.sub(r"\.STEP\d$", "", op) for op in _TENSOR_OP.findall(sass)]
    return list(dict.fromkeys(ops))


def op_shape(op: str) -> tuple[int, int, int]:
    """m, n, k of a tensor instruction: HMMA.16816 -> (16, 8, 16), DMMA.16x8x4 -> (16, 8, 4), BMMA.88128 ->
    (8, 8, 128)."""
    s = op.split(".")[2 if op.split(".")[1] == "SP" else 1]
    if "x" in s:
        m, n, k = (int(x) for x in s.split("x"))
        return m, n, k
    m = 16 if s.startswith("16") else 8
    rest = s[len(str(m)) :]
    return m, int(rest[0]), int(rest[1:])


def op_type(op: str) -> str | None:
    """The operand type a tensor instruction multiplies (a PTX type name), None if it is not told."""
    mods = op.split(".")
    head = mods[0]
    if head == "DMMA":
        return "f64"
    if head == "BMMA":
        return "b1"
    for t, mark in _TYPE_MARK.items():
        if mark in mods and _OP_FAMILY[t] == head:
            return t
    return "f16" if head == "HMMA" else None


def _is_own(v: MmaVariant, op: str) -> bool:
    """Whether `op` runs the variant's own operation: its operand type (and bit operation), dense or sparse."""
    if op_type(op) != v.a or (".SP." in op) != v.sparse:
        return False
    return v.a != "b1" or f".{v.bitop.upper()}.POPC" in op


@dataclass(frozen=True)
class Execution:
    """How a variant ran, read from its SASS: native or emulated, and in words."""

    native: bool
    text: str
    ops: tuple[str, ...]  # its tensor-core instructions

    @property
    def ran_as(self) -> str | None:
        """The operand type of the tensor instruction the variant ran on, when it ran on one type only."""
        types = {op_type(op) for op in self.ops} - {None}
        return types.pop() if len(types) == 1 else None


def execution(v: MmaVariant, sass: str | None, family: str) -> Execution:
    """Native or emulated, from the SASS that ran; `sass` None (no disassembler): from the SASS the variant
    declares for the family, said as such."""
    if sass is None:
        low = lower(v, family)
        kind = "native" if low.native else "emulated"
        return Execution(low.native, f"{kind} (the SASS declared for {family}; not read: no disassembler)", ())
    ops = tensor_ops(sass)
    own = [op for op in ops if _is_own(v, op)]
    if own:
        op = own[0]
        ratio = (v.mnk[0] * v.mnk[1] * v.mnk[2]) / (op_shape(op)[0] * op_shape(op)[1] * op_shape(op)[2])
        if ratio > 1:
            return Execution(True, f"native {op}, {ratio:g} per {v.shape}", tuple(ops))
        if ratio < 1:
            return Execution(True, f"native {op}, the {v.shape} padded into it ({ratio:g} of it used)", tuple(ops))
        return Execution(True, f"native {op}", tuple(ops))
    how = []
    if re.search(r"F2FP\S*\.UNPACK_B", sass):
        how.append("F2FP unpack")
    if re.search(r"\bCALL\.REL", sass):
        how.append("a subroutine")
    with_ = ", ".join(ops) if ops else "no tensor-core instruction"
    return Execution(False, f"emulated: {with_}" + (f" ({', '.join(how)})" if how else ""), tuple(ops))
