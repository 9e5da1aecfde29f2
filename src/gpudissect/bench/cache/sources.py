"""Source generator for the instruction- and constant-cache probes (no benchmarks here).

The FFMA sequences are one inline-asm statement each (NVRTC stays linear in their length); the
generated `#define`s are prepended to kernels/cache_icache.cu or kernels/cache_const.cu, and the SASS of
every build is checked to be the straight-line code asked for.
"""

from __future__ import annotations

import re

from ...device.compiler import compile_cubin, kernel_source

INSTR_BYTES = 16  # every sm_70+ SASS instruction is 128 bits
CLOCK = "SR_CLOCKLO"


def ffma_body(n: int, regs: int = 8, b: int | None = None, c: int | None = None) -> str:
    """C string literal of n `fma.rn.f32` on `regs` rotating chains (asm operands %0..%regs-1;
    b and c are the operand numbers of the two scalar inputs, default regs and regs + 1)."""
    if n < 0 or regs < 1:
        raise ValueError("need n >= 0 and regs >= 1")
    b = regs if b is None else b
    c = regs + 1 if c is None else c
    return " ".join(f'"fma.rn.f32 %{i % regs}, %{i % regs}, %{b}, %{c};\\n\\t"' for i in range(n)) or '""'


def icache_source(n_measure: int, n_thrash: int = 8) -> str:
    """cache_icache.cu with a measured sequence of n_measure FFMAs and a thrash sequence of n_thrash."""
    if n_measure % 8 or n_thrash % 8 or n_measure <= 0 or n_thrash <= 0:
        raise ValueError("sequence lengths must be positive multiples of 8 FFMAs (the 8 chains stay equal)")
    return (
        f"#define ICACHE_MEASURE {ffma_body(n_measure)}\n"
        f"#define ICACHE_THRASH {ffma_body(n_thrash)}\n" + kernel_source("cache_icache.cu")
    )


def const_source(n_thrash: int = 2) -> str:
    """cache_const.cu with a thrash sequence of n_thrash FFMAs in const_thrash."""
    if n_thrash <= 0:
        raise ValueError("thrash length must be positive")
    head = f"#define ICACHE_THRASH {ffma_body(n_thrash, regs=2, b=2, c=2)}\n"
    return head + kernel_source("cache_const.cu")


def build(source: str, name: str, arch: str) -> bytes:
    return compile_cubin(source, name, arch)


def timed_regions(sass: str) -> list[list[str]]:
    """Instruction lines between consecutive clock reads of one function's SASS."""
    regions: list[list[str]] = []
    cur: list[str] | None = None
    for line in sass.splitlines():
        if CLOCK in line:
            if cur is not None:
                regions.append(cur)
            cur = []
        elif cur is not None:
            cur.append(line)
    return regions


def ffma_runs(sass: str) -> list[tuple[int, int, int]]:
    """Maximal runs of consecutive FFMA instructions: (first line index, last line index, length)."""
    lines = sass.splitlines()
    runs, start = [], None
    for i, line in enumerate(lines + [""]):
        if re.search(r"\bFFMA\b", line):
            start = i if start is None else start
        elif start is not None:
            runs.append((start, i - 1, i - start))
            start = None
    return runs


def ffma_total(sass: str) -> int:
    return sum(r[2] for r in ffma_runs(sass))


def straight_line_problems(sass: str, n_ffma: int, n_thrash: int | None = None) -> list[str]:
    """Why a function's SASS does not hold the measured sequence as exactly n_ffma consecutive FFMAs
    with a clock read at most 3 instructions before and after it, the thrash sequence (if given) as
    n_thrash consecutive FFMAs, and no other FFMA (a rolled loop or a duplicated body would show
    here). Empty list: it does."""
    lines = sass.splitlines()
    runs = ffma_runs(sass)
    problems = []
    total = sum(r[2] for r in runs)
    want_total = n_ffma + (n_thrash or 0)
    if total != want_total:
        problems.append(f"{total} FFMA in the function, expected {want_total}")

    def clocked(first: int, last: int) -> bool:
        before = lines[max(0, first - 3) : first]
        after = lines[last + 1 : last + 4]
        return any(CLOCK in x for x in before) and any(CLOCK in x for x in after)

    if not any(n == n_ffma and clocked(a, b) for a, b, n in runs):
        problems.append(f"no run of exactly {n_ffma} consecutive FFMA between two clock reads")
    if n_thrash is not None and not any(n == n_thrash for _, _, n in runs):
        problems.append(f"no run of exactly {n_thrash} consecutive FFMA (the thrash sequence)")
    return problems


def thrash_problems(sass: str, n_thrash: int) -> list[str]:
    """Why a thrasher function's SASS does not hold exactly n_thrash FFMAs in one straight run (ptxas may
    schedule a few stores or moves among the first and last 16, where the chains start and end)."""
    runs = ffma_runs(sass)
    total = sum(r[2] for r in runs)
    problems = []
    if total != n_thrash:
        problems.append(f"{total} FFMA in the function, expected {n_thrash}")
    longest = max((r[2] for r in runs), default=0)
    if longest < n_thrash - 16:
        problems.append(f"longest run of consecutive FFMA is {longest}, expected at least {n_thrash - 16}")
    return problems


# ---- immediate-operand constants (c[0x3][imm] operands of FFMA) ------------------------------------
# sm_90 ptxas never leaves a fixed-offset __constant__ operand in an FFMA: it loads it into a uniform
# register first (ULDC URk, c[0x3][imm]; FFMA R, R, URk, R), in every code shape tried (see the tests).
# The hardware and nvdisasm still know FFMA's constant-bank form (sm_80 ptxas emits it, and its word
# decodes as the same instruction for sm_90), so the probe is compiled as a chain of ULDC + FFMA and
# then patched: each FFMA becomes FFMA R, R, c[0x3][imm], R with the offset its ULDC loaded, the
# timed region is packed with those FFMAs only, and every ULDC of the bank becomes a NOP. The patched
# function is disassembled again and must read as asked (imm_patch_problems).
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
