"""Source generator for the instruction- and constant-cache probes (no benchmarks here).

The FFMA sequences are one inline-asm statement each (NVRTC stays linear in their length); the
generated `#define`s are prepended to kernels/icache.cu or kernels/const_cache.cu, and the SASS of
every build is checked to be the straight-line code asked for.
"""

from __future__ import annotations

import re

from ..device.compiler import compile_cubin, kernel_source

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
    """icache.cu with a measured sequence of n_measure FFMAs and a thrash sequence of n_thrash."""
    if n_measure % 8 or n_thrash % 8 or n_measure <= 0 or n_thrash <= 0:
        raise ValueError("sequence lengths must be positive multiples of 8 FFMAs (the 8 chains stay equal)")
    return (f"#define ICACHE_MEASURE {ffma_body(n_measure)}\n"
            f"#define ICACHE_THRASH {ffma_body(n_thrash)}\n" + kernel_source("icache.cu"))


def const_source(n_thrash: int = 2) -> str:
    """const_cache.cu with a thrash sequence of n_thrash FFMAs in const_thrash."""
    if n_thrash <= 0:
        raise ValueError("thrash length must be positive")
    head = f"#define ICACHE_THRASH {ffma_body(n_thrash, regs=2, b=2, c=2)}\n"
    return head + kernel_source("const_cache.cu")


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


def straight_line_problems(sass: str, n_ffma: int, expect_regions: int = 1) -> list[str]:
    """Why a function's SASS is not `expect_regions` timed regions that each hold exactly n_ffma
    FFMAs and no branch, call or other FFMA-breaking instruction (empty list: it is)."""
    regions = [r for r in timed_regions(sass) if any("FFMA" in x for x in r)]
    problems = []
    if len(regions) != expect_regions:
        problems.append(f"{len(regions)} timed regions hold FFMAs, expected {expect_regions}")
    for r in regions:
        ffma = sum(1 for x in r if re.search(r"\bFFMA\b", x))
        if ffma != n_ffma:
            problems.append(f"a timed region holds {ffma} FFMA, expected {n_ffma}")
        jumps = [x for x in r if re.search(r"\b(BRA|BRX|JMP|JMX|CALL|RET|BSSY|WARPSYNC)\b", x)]
        if jumps:
            problems.append(f"a timed region contains control flow: {jumps[0]}")
        others = [x for x in r if not re.search(r"\b(FFMA|NOP)\b", x)]
        if len(others) > 4:  # a handful of moves/adds of the loop around it are harmless
            problems.append(f"a timed region holds {len(others)} non-FFMA instructions")
    return problems
