"""The SASS of the DPX functions per architecture family (hopper_dpx.cu, hopper_smith_waterman.cu), derived from
disassembly of NVRTC's output, and the hardware-or-emulated verdict read from a build's SASS.

sm_90a and sm_100a run the functions as DPX instructions (VIMNMX3, VIADDMNMX, VIMNMX.S16x2 with predicate
outputs...). Elsewhere ptxas emulates them with two-operand min/max: IMNMX from Turing to Ada; on Volta a
compare and a select (ISETP.LT + SEL: ptxas 12 does not emit IMNMX for sm_70); on sm_120 VIMNMX, which has the
16x2 and .RELU forms but neither the three-operand nor the add-fused one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...capability import Target
from .dpx_model import Intrinsic, intrinsics

_SASS_OP = {  # family, dtype, relu -> mnemonic of the hardware instruction
    "vimax3": "VIMNMX3",
    "vimin3": "VIMNMX3",
    "viaddmax": "VIADDMNMX",
    "viaddmin": "VIADDMNMX",
    "vimax": "VIMNMX",
    "vimin": "VIMNMX",
    "vibmax": "VIMNMX",
    "vibmin": "VIMNMX",
}
_SUFFIX = {"s32": "", "u32": ".U32", "s16x2": ".S16x2", "u16x2": ".U16x2"}
# the emulation's two-operand min/max by operand type (16-bit lanes are taken apart before sm_120)
_EMULATED_OP = {
    "pre-hopper": {"s32": "IMNMX", "u32": "IMNMX.U32", "s16x2": "IMNMX", "u16x2": "IMNMX.U32"},
    "blackwell-consumer": {"s32": "VIMNMX.S32", "u32": "VIMNMX.U32", "s16x2": "VIMNMX.S16x2", "u16x2": "VIMNMX.U16x2"},
}
PRE_HOPPER = ("volta", "turing", "ampere", "ada")
EMULATING_FAMILIES = (*PRE_HOPPER, "blackwell-consumer")
# the three-operand and add-fused min/max: in a build's SASS only where the GPU has DPX in hardware
HARDWARE_DPX = re.compile(r"\b(VIMNMX3|VIADDMNMX)\b")
_R = r"(?:\.reuse)?"


def _flag(is_max: bool) -> str:
    return r"!PT$" if is_max else r"[^!]PT$"  # last operand: !PT selects max, PT min


def _kind(family: str) -> str:
    """How a family emulates the functions: volta, pre-hopper (IMNMX) or blackwell-consumer (VIMNMX)."""
    return family if family in ("volta", "blackwell-consumer") else "pre-hopper"


def volta_mnmx(unsigned: bool, is_max: bool, first: str = r"R\d+") -> str:
    """Volta's min/max: ISETP.LT P, a, b then SEL d, a, b, !P (max) or P (min), a few instructions later; the
    pair is matched together, so the select's predicate and operand order give the direction."""
    u = r"\.U32" if unsigned else ""
    return (
        rf"ISETP\.LT{u}\.AND (P\d), PT, ({first}){_R}, (R\d+){_R}, PT\n(?:[^\n]*\n){{0,16}}?[^\n]*"
        rf"SEL R\d+, \2{_R}, \3{_R}, {'!' if is_max else ''}\1$"
    )


def _mnmx(kind: str, dtype: str, is_max: bool, relu: bool = False) -> str:
    """One two-operand min/max of the emulation in the function's direction."""
    if kind == "volta":
        return volta_mnmx(dtype in ("u32", "u16x2"), is_max)
    op = re.escape(_EMULATED_OP[kind][dtype] + (".RELU" if relu and kind == "blackwell-consumer" else ""))
    if kind == "pre-hopper":  # two registers: not the max with zero (RZ) that a relu adds
        return op + rf" R\d+, R\d+{_R}, R\d+{_R}, " + ("!PT$" if is_max else "PT$")
    return op + r" [^\n]*" + _flag(is_max)


def relu_max(family: str) -> str:
    """The max with zero of a relu before Hopper (a separate instruction there)."""
    return volta_mnmx(False, True, "RZ") if family == "volta" else r"IMNMX R\d+, RZ, R\d+, !PT$"


def _cmp(it: Intrinsic) -> str:
    """The compare that makes a __vib* predicate (every family): ISETP.GE/LE for max, GT/LT for min."""
    u, r = (r"\.U32" if it.dtype in ("u32", "u16x2") else ""), r"U?R\d+(?:\.reuse)?"
    return rf"ISETP\.{'(?:GE|LE)' if it.is_max else '(?:GT|LT)'}{u}\.AND P\d, PT, {r}, {r}"


def dpx_sass(it: Intrinsic, family: str = "hopper") -> tuple[str, list[str]]:
    """(regex of the instruction each chain step executes, all required regexes) on an architecture family:
    the hardware instruction on hopper and blackwell, the min/max of the emulation elsewhere."""
    if family in EMULATING_FAMILIES:
        return _emulated_sass(it, family)
    op = _SASS_OP[it.family] + _SUFFIX[it.dtype] + (".RELU" if it.relu else "")
    main = re.escape(op) + r" [^\n]*" + _flag(it.is_max)
    if it.form == "A2":  # max/min pair: both flavours present
        return re.escape(op) + " ", [main, re.escape(op) + r" [^\n]*" + _flag(not it.is_max)]
    if it.form == "B2":  # the Hopper form with two predicate outputs
        main = re.escape(op) + r" R\d+, P\d, P\d, [^\n]*" + _flag(it.is_max)
        return main, [main]
    if it.form == "B1":  # ptxas: setp + selp (max) or setp + VIMNMX (min); no DPX opcode
        cmp = _cmp(it)
        if it.is_max:
            return cmp, [cmp, r"SEL R\d+, R\d+"]
        return cmp, [cmp, re.escape("VIMNMX" + _SUFFIX[it.dtype]) + r" [^\n]*" + _flag(False)]
    return main, [main]


def _emulated_sass(it: Intrinsic, family: str) -> tuple[str, list[str]]:
    """The emulation ptxas builds of a function from two-operand min/max: the min/max in the function's
    direction, plus what the form adds."""
    kind = _kind(family)
    pre = kind != "blackwell-consumer"
    main = _mnmx(kind, it.dtype, it.is_max, it.relu)
    pats = [main]
    if it.form == "A2":
        pats.append(_mnmx(kind, it.dtype, not it.is_max, it.relu))
    if it.family.startswith("viadd"):  # the add is an instruction of its own
        if pre:
            pats.append(r"(?:IMAD\.IADD|IADD3) R\d+, ")
        else:
            pats.append(r"VIADD\.16x2 " if "16x2" in it.dtype else r"IADD R\d+, ")
    if it.relu and pre:  # relu: a max with zero
        pats.append(relu_max(family))
    if "16x2" in it.dtype and pre and it.form != "B2":  # the halfwords put back together
        pats.append(r"LOP3\.LUT R\d+, ")
    if it.form == "B1" or (it.form == "B2" and pre):  # (sm_120 unpacks the x2 predicates)
        cmp = _cmp(it)
        pats.insert(0, cmp)
        if it.form == "B1" and it.is_max and not pre:  # setp + selp, as on Hopper
            pats = [cmp, r"SEL R\d+, R\d+"]
    return main, pats


def dpx_required(family: str = "hopper") -> dict[str, list[str]]:
    """The required SASS of hopper_dpx.cu on a family: dpx_eval and every latency and throughput kernel."""
    kind = _kind(family) if family in EMULATING_FAMILIES else "hardware"
    evals = {
        "volta": [r"ISETP\.LT\.AND ", r"ISETP\.LT\.U32\.AND ", r"SEL R\d+, "],
        "pre-hopper": [r"IMNMX ", r"IMNMX\.U32 "],
        "blackwell-consumer": [r"VIMNMX\.S16x2\.RELU ", r"VIADD\.16x2 "],
        "hardware": [r"VIMNMX3", r"VIADDMNMX"],
    }[kind]
    req: dict[str, list[str]] = {"dpx_eval": evals}
    for it in intrinsics():
        _, pats = dpx_sass(it, family)
        req[f"dpx_lat_{it.name}"] = pats
        req[f"dpx_thr_{it.name}"] = pats
    return req


def has_hardware_dpx(sass: dict[str, str] | None, functions: Iterable[str] | None = None) -> bool | None:
    """Whether a build runs DPX in hardware, from its SASS (of `functions`, default all): the three-operand or
    add-fused min/max only DPX hardware has. None where the SASS is unknown."""
    if sass is None:
        return None
    names = list(sass) if functions is None else list(functions)
    return any(HARDWARE_DPX.search(sass.get(f, "")) for f in names)


def declared_hardware(t: Target) -> bool:
    """Whether the SASS the DPX variants declare for `t`'s family is the hardware instructions."""
    return t.family not in EMULATING_FAMILIES


def native_label(t: Target, hardware: bool | None) -> str:
    """How a figure of this GPU's DPX build is introduced: its target and, from its SASS, hardware or emulated;
    without a disassembler, from the SASS its variants declare for this family (checked wherever one runs)."""
    if hardware is None:
        what = "hardware DPX" if declared_hardware(t) else "emulated"
        return f"{t.arch} build ({what} by its declared SASS: not disassembled here); "
    if hardware:
        return f"{t.arch} build (hardware DPX); "
    return f"{t.arch} build (emulated: no VIMNMX3/VIADDMNMX in its SASS); "
