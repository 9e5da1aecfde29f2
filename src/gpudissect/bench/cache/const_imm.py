"""The cache suite, constant memory: the immediate-operand path (Jia §3.4), FFMA with a c[0x3][imm]
operand. Part of `const_cache` (const.py runs it last).

sm_90 ptxas never leaves a fixed-offset __constant__ operand in an FFMA: it loads it into a uniform
register first (ULDC URk, c[0x3][imm]; FFMA R, R, URk, R), in every code shape tried (see the tests).
The hardware and nvdisasm still know FFMA's constant-bank form (sm_80 ptxas emits it, and its word
decodes as the same instruction for sm_90), so the probe is compiled as a chain of ULDC + FFMA and
then patched: each FFMA becomes FFMA R, R, c[0x3][imm], R with the offset its ULDC loaded, the
timed region is packed with those FFMAs only, and every ULDC of the bank becomes a NOP. The patched
function is disassembled again and must read as asked (imm_patch_problems).

Before sm_90 (Volta to Ada) ptxas leaves c[0x3][imm] in the FFMA itself: there the unpatched build is
the probe, checked the same way. Blackwell ptxas loads the constants into uniform registers too (LDCU),
but the patch knows only the sm_90 encoding: the constant-bank plans do not run there (the register
plan does).
"""

from __future__ import annotations

import re
from functools import partial

import numpy as np

from ...capability import Target
from ...device.compiler import compile_spec
from ...device.cuda import Arg, Buffer, Function
from ...errors import GpuDissectError
from ...sass.cubin import Cubin
from ...sass.disasm import disassemble_cached, find_tool
from ..context import BenchContext
from ..registry import KernelSpec, Needs
from ..shared import PRE_HOPPER, by_family, one_block_per_sm_smem
from .const_probe import WORDS, ConstProbe, const_buffer
from .sources import CLOCK, CLOCK_READ

NOP_WORD = 0x000FC000000000000000000000007918  # NOP, stall 0 (nvdisasm's padding)
_FFMA_UR_FORM, _FFMA_C_FORM, _FORM_BITS = 0xC00, 0xA00, 0xE00  # bits 9-11 of FFMA: operand b kind
_UR_FLAG_HI = 1 << 27  # bit 91: set in FFMA's uniform-register form, clear in its constant-bank form
_STALL_SHIFT_HI, _STALL_MASK = 41, 0xF  # control field: stall cycles, bits 105-108
FFMA_LATENCY = 4  # dependent FFMA issue distance ptxas uses on sm_90 (FFMA stall 1 + ULDC stall 3 between the links)


def const_imm_source(offsets: list[int], reg: bool = False) -> str:
    """A kernel timing a dependent chain x = x * cf[off] + y over `offsets` (byte offsets into the
    64 KiB __constant__ cf, multiples of 4), `passes` times through one code instance; reg=True: the
    multiplier is a register (the FFMA's own latency)."""
    if not offsets or any(o % 4 or not 0 <= o < 65536 for o in offsets):
        raise ValueError("offsets must be multiples of 4 inside the 64 KiB constant bank")
    term = "m" if reg else "cf[{}]"
    body = "\n".join(f"        x = fmaf(x, {term.format(o // 4)}, y);" for o in offsets)
    return f"""#include "gpudissect.cuh"
__constant__ float cf[16384];
// res[p] = clock64 cycles of pass p (p < 16), res[16] = SM; out[0] = x (host-checked: the chain ran).
extern "C" __global__ void const_imm(float x0, float one, int passes, u32 target_sm, long long* res, float* out) {{
    if (target_sm != 0xFFFFFFFFu && smid() != target_sm) return;
    float x = x0 + threadIdx.x, y = one * (float)(threadIdx.x + 1), m = one * (float)(threadIdx.x + 1);
#pragma unroll 1
    for (int p = 0; p < passes; ++p) {{
        long long t0 = clk();
{body}
        long long t1 = clk();
        res[p] = t1 - t0;
    }}
    out[0] = x + 0.0f * m;
    res[16] = smid();
}}
"""


def _addr_lines(sass: str) -> dict[int, str]:
    out = {}
    for line in sass.splitlines():
        m = re.match(r"/\*([0-9a-f]+)\*/ (.*)", line)
        if m:
            out[int(m.group(1), 16) // 16] = m.group(2).strip()
    return out


def imm_patch(words: list[int], sass: str) -> tuple[dict[int, int], list[int]]:
    """Word changes turning const_imm's ULDC + FFMA-UR chain into FFMA c[0x3][imm] operands, and the
    offsets in chain order. Raises ValueError when the code is not the expected shape."""
    text = _addr_lines(sass)
    clocks = [i for i in sorted(text) if CLOCK in text[i]]
    if len(clocks) != 2:
        raise ValueError(f"{len(clocks)} clock reads, expected 2")
    a, b = clocks
    ur_off: dict[int, int] = {}
    changes: dict[int, int] = {}
    ffmas: list[tuple[int, int]] = []  # (word index, offset)
    for i in sorted(text):
        t = text[i]
        m = re.match(r"ULDC(\.64)? UR(\d+), c\[0x3\]\[(-?0x[0-9a-f]+)\]$", t)
        if m:
            if m.group(1):
                raise ValueError(f"ULDC.64 of the constant bank at {i}: {t}")
            ur_off[int(m.group(2))] = int(m.group(3), 16) & 0xFFFF  # printed signed past 32 KiB
            changes[i] = NOP_WORD
            continue
        if a < i < b:
            m = re.match(r"FFMA R(\d+), R(\d+), UR(\d+), R(\d+)$", t)
            if not m:
                raise ValueError(f"instruction {i} of the timed region is not ULDC/FFMA: {t}")
            ur = int(m.group(3))
            if ur not in ur_off:
                raise ValueError(f"FFMA at {i} reads UR{ur}, which no ULDC of the bank loaded before it")
            ffmas.append((i, ur_off[ur]))
    region = list(range(a + 1, b + 1))  # the closing clock read moves up behind the packed FFMAs
    packed: list[int] = []
    for i, off in ffmas:
        w = words[i]
        lo, hi = w & (1 << 64) - 1, w >> 64
        if lo & _FORM_BITS != _FFMA_UR_FORM or not hi & _UR_FLAG_HI:
            raise ValueError(f"FFMA at {i} is not in the encoding expected of its uniform-register form")
        lo = (lo & ~_FORM_BITS & 0xFFFFFFFF) | _FFMA_C_FORM | (3 << 54) | ((off >> 2) << 40)
        hi &= ~_UR_FLAG_HI
        hi = (hi & ~(_STALL_MASK << _STALL_SHIFT_HI)) | (FFMA_LATENCY << _STALL_SHIFT_HI)
        packed.append(hi << 64 | lo)
    packed.append(words[b])
    packed += [NOP_WORD] * (len(region) - len(packed))
    changes.update(dict(zip(region, packed)))
    return changes, [off for _, off in ffmas]


def imm_patch_problems(sass: str, offsets: list[int]) -> list[str]:
    """Why a patched const_imm does not hold, between its two clock reads, exactly the FFMAs with
    c[0x3][offset] operands in chain order and nothing else, or still loads the bank into a register."""
    lines = [t for _, t in sorted(_addr_lines(sass).items())]
    clocks = [i for i, t in enumerate(lines) if CLOCK in t]
    if len(clocks) != 2:
        return [f"{len(clocks)} clock reads, expected 2"]
    region = lines[clocks[0] + 1 : clocks[1]]
    got = [re.match(r"FFMA R\d+, R\d+, c\[0x3\]\[(-?0x[0-9a-f]+)\], R\d+$", t) for t in region]
    problems = []
    if not all(got) or [int(m.group(1), 16) & 0xFFFF for m in got if m] != list(offsets):
        bad = next((t for t, m in zip(region, got) if not m), None)
        problems.append(
            f"timed region is not {len(offsets)} FFMA c[0x3][imm] in chain order ({len(region)} instructions"
            + (f", e.g. {bad}" if bad else "")
            + ")"
        )
    if any(re.search(r"\bU?LDC(\.\d+)? U?R\d+, c\[0x3\]", t) for t in lines):
        problems.append("a ULDC/LDC of the constant bank is left in the function")
    return problems


# ---- the builds: one generated kernel per plan, declared so `gpudissect sass const_cache` checks them --------
IMM_PLANS = {  # level: (byte offsets of the chain's constants, register operand instead)
    "register": ([0] * 512, True),
    "l1": ([(i % 16) * 64 for i in range(512)], False),  # 16 lines of 64 B (1 KiB), re-read
    "l1_5": ([i * 64 for i in range(512)], False),  # 512 lines (32 KiB): past L1, within L1.5
    "l2": ([i * 1024 for i in range(64)], False),  # 64 lines 1 KiB apart (64 KiB), on a cold SM
}
# what the unpatched build must hold: the ULDC + FFMA-UR chain imm_patch rewrites, or register FFMAs only
_UNPATCHED = {"const_imm": [r"ULDC UR\d+, c\[0x3\]\[", r"FFMA R\d+, R\d+, UR\d+, R\d+", CLOCK_READ]}
_REGISTER = {"const_imm": [r"FFMA R\d+, R\d+, R\d+, R\d+", CLOCK_READ, r"\A(?![\s\S]*c\[0x3\])"]}
# the families whose ptxas leaves the constant in the FFMA (the probe as built: no patch) ...
NATIVE_FAMILIES = PRE_HOPPER
_NATIVE = {"const_imm": [r"FFMA R\d+, R\d+, c\[0x3\]\[", CLOCK_READ, r"\A(?![\s\S]*\bU?LDC(\.\d+)? U?R\d+, c\[0x3\])"]}
# ... and where the constant-bank plans run: there, and on sm_90, whose encoding imm_patch knows
IMM_NEEDS = Needs(max_cc=(9, 0))


def imm_spec(level: str) -> KernelSpec:
    """The const_imm build of one plan, before any patch."""
    offsets, reg = IMM_PLANS[level]
    return KernelSpec(
        f"cache_const_imm_{level}.cu",
        _REGISTER if reg else _UNPATCHED,
        prelude=const_imm_source(offsets, reg),
        standalone=True,  # all generated: NVRTC compiles the prelude alone under this program name
        needs=Needs() if reg else IMM_NEEDS,
        required_by_family={} if reg else by_family(lambda fam: _NATIVE if fam in NATIVE_FAMILIES else _UNPATCHED),
    )


def native(arch: str) -> bool:
    """Whether ptxas for `arch` leaves c[0x3][imm] in the FFMA itself (the build needs no patch)."""
    return Target.parse(arch).family in NATIVE_FAMILIES


IMM_SPECS = {level: imm_spec(level) for level in IMM_PLANS}


def imm_build(level: str, arch: str, can_check: bool) -> tuple[bytes, list[int]]:
    """The const_imm cubin of one plan, patched to c[0x3][imm] operands (not the register plan, nor where
    ptxas emits them itself) and, where cuobjdump exists, checked to read as asked."""
    offsets, reg = IMM_PLANS[level]
    cubin = compile_spec(IMM_SPECS[level], arch)
    if reg:
        return cubin, offsets
    if native(arch):
        bad = imm_patch_problems(disassemble_cached(cubin)["const_imm"], offsets) if can_check else []
        if bad:
            raise GpuDissectError(f"const_imm_{level} as built for {arch}: {'; '.join(bad)}")
        return cubin, offsets
    if not can_check:
        raise GpuDissectError("no cuobjdump on this machine: the immediate-operand patch cannot be built or checked")
    c = Cubin(cubin)
    changes, got = imm_patch(c.words("const_imm"), disassemble_cached(cubin)["const_imm"])
    if got != offsets:
        raise GpuDissectError(f"const_imm_{level}: the chain's constants are not in the order asked")
    patched = c.with_words("const_imm", changes)
    bad = imm_patch_problems(disassemble_cached(patched)["const_imm"], offsets)
    if bad:
        raise GpuDissectError(f"const_imm_{level} after the patch: {'; '.join(bad)}")
    return patched, offsets


# ---- the experiment ------------------------------------------------------------------------------------
HOW = (
    "dependent chain x = x * c[0x3][imm] + y, one FFMA per constant, straight-line between two clock reads; sm_90 "
    "ptxas emits ULDC UR, c[0x3][imm] + FFMA R, R, UR, R, so the cubin is patched: every FFMA rewritten to its "
    "constant-bank form (the form sm_80 ptxas emits, which nvdisasm decodes alike for sm_90) with stall 4 (ptxas' own "
    "FFMA distance), the timed region packed with them, every ULDC of bank 3 made a NOP; the patched SASS is checked "
    "to hold exactly the chain's FFMA c[0x3][imm] and no load of bank 3"
)
HOW_NATIVE = (
    "dependent chain x = x * c[0x3][imm] + y, one FFMA per constant, straight-line between two clock reads; ptxas "
    "emits FFMA R, R, c[0x3][imm], R itself for this GPU, so the cubin runs as built (no patch)"
)
CHECKED_NATIVE = "; its SASS is checked to hold exactly the chain's FFMA c[0x3][imm] and no load of bank 3"
UNCHECKED_NATIVE = "; its SASS is checked by the CPU tests (no cuobjdump on this machine)"
WHERE = {
    "register": "the multiplier in a register (the FFMA's own latency), warm passes",
    "l1": "16 constants 64 B apart (1 KiB) re-read, warm passes 2-3 of 3, 3 launches",
    "l1_5": "512 constants 64 B apart (32 KiB: past the 2 KiB L1, within L1.5), warm passes 2-3 of 3, 3 launches",
    "l2": "64 constants 1 KiB apart, first pass on each of 3 SMs that never read this module's constants, "
    "after another SM read them all (L2 hits; the SM's instruction fetch of the 1 KiB of code is cold as well)",
}


def _launch(
    ctx: BenchContext, fn: Function, res: Buffer, out: Buffer, n: int, level: str, passes: int, sm: int | None
) -> tuple[list[float], int] | None:
    """Cycles per FFMA of each pass of one launch and its SM; sm: only the block on that SM runs (one
    block per SM), None when none did."""
    dev = ctx.device
    dev.memset32(res, 0, 2 * 32)
    args = [
        Arg.f32(0.0),
        Arg.f32(1.0),
        Arg.i32(passes),
        Arg.u32(0xFFFFFFFF if sm is None else sm),
        Arg.ptr(res),
        Arg.ptr(out),
    ]
    if sm is None:
        fn(1, 1, args)
    else:
        fn(ctx.props["sm_count"], 1, args, smem=one_block_per_sm_smem(ctx.props))
    dev.sync(f"const_imm_{level}")
    r = dev.download(res, np.int64, 17)
    if int(r[0]) == 0:
        return None
    x = float(dev.download(out, np.float32, 1)[0])
    ctx.check(x == passes * n, f"const_imm_{level}: the chain holds {x}, expected {passes * n}")
    return [float(r[k]) / n for k in range(passes)], int(r[16])


def immediate(ctx: BenchContext, p: ConstProbe) -> None:
    """Jia's immediate-operand path: a dependent chain of FFMA x, x, c[0x3][imm], y, one constant per
    FFMA, straight-line between two clock reads (sm_90 ptxas emits ULDC + FFMA-UR; the cubin is patched
    to the constant-bank form and its SASS re-checked). Per FFMA: the FFMA's own latency plus any stall
    on the constant operand."""
    can_check = find_tool("cuobjdump") is not None
    as_built = native(ctx.target.arch)  # ptxas emits the constant-bank FFMA itself: no patch
    how = HOW_NATIVE + (CHECKED_NATIVE if can_check else UNCHECKED_NATIVE) if as_built else HOW
    level_of = {spec.name: level for level, spec in IMM_SPECS.items()}
    vals: dict[str, list[float]] = {}
    with ctx.scratch():
        res, out = ctx.alloc(8 * 32), ctx.alloc(64)
        for spec in ctx.runnable(IMM_SPECS.values()):  # the constant-bank plans need a known encoding
            level = level_of[spec.name]
            reg = IMM_PLANS[level][1]
            try:
                cubin, offsets = imm_build(level, ctx.device.arch, can_check)
            except (GpuDissectError, ValueError) as e:
                ctx.figure(
                    f"cache.const.imm_{level}_cycles_per_ffma", "n/a", "", "derived", how, check="failed", note=str(e)
                )
                continue
            # the patched cubin is not compile_spec's: it is loaded as it is
            mod = ctx.module(spec) if reg or as_built else ctx.device.load(cubin)
            ctx.device.upload(np.ones(WORDS, np.float32), const_buffer(mod, "cf"))
            launch = partial(_launch, ctx, mod.function("const_imm"), res, out, len(offsets), level)
            got: list[float] = []
            if level == "l2":  # one cold pass on each of 3 SMs that never read this module's bank, after SM a read it
                _, sm_a = launch(1, None)  # type: ignore[misc]
                p.used_sms.add(sm_a)
                for sm in [s for s in range(ctx.props["sm_count"] - 1, -1, -1) if s not in p.used_sms][:3]:
                    p.used_sms.add(sm)
                    r = launch(1, sm)
                    if r is not None:
                        got.append(r[0][0])
            else:
                for _ in range(3):
                    r = launch(3, None)
                    got += r[0][1:] if r else []
            vals[level] = got
    for level, v in vals.items():
        if not v:
            continue
        ctx.figure(
            f"cache.const.imm_{level}_cycles_per_ffma",
            round(float(np.median(v)), 2),
            "cycles",
            "measured",
            f"{WHERE[level]}; {how}" if level != "register" else f"{WHERE[level]}; the same chain shape, not patched",
            (min(v), max(v)),
        )
    if "register" in vals and vals["register"]:
        reg = float(np.median(vals["register"]))
        for level in ("l1", "l1_5", "l2"):
            if vals.get(level):
                ctx.figure(
                    f"cache.const.imm_{level}_extra_cycles",
                    round(float(np.median(vals[level])) - reg, 2),
                    "cycles",
                    "derived",
                    "cycles per FFMA with a c[0x3][imm] operand at this level minus the register-operand chain's "
                    f"({reg:.2f}): the stall the constant operand adds to a dependent FFMA",
                )
