"""Source generator for the instruction- and constant-cache probes (no benchmarks here).

The FFMA sequences are one inline-asm statement each (NVRTC stays linear in their length); the
generated `#define`s are the prelude of a KernelSpec of kernels/cache_icache.cu or kernels/cache_const.cu
(icache_probe.icache_spec, const_probe.thrash_spec), and the SASS of every build is checked to be the
straight-line code asked for (the checks below).
"""

from __future__ import annotations

import re

INSTR_BYTES = 16  # every sm_70+ SASS instruction is 128 bits
CLOCK = "SR_CLOCKLO"
CLOCK_READ = r"CS2R(\.32)? R\d+, SR_CLOCKLO"  # a clock read as a required SASS pattern (KernelSpec.required)


def ffma_body(n: int, regs: int = 8, b: int | None = None, c: int | None = None) -> str:
    """C string literal of n `fma.rn.f32` on `regs` rotating chains (asm operands %0..%regs-1;
    b and c are the operand numbers of the two scalar inputs, default regs and regs + 1)."""
    if n < 0 or regs < 1:
        raise ValueError("need n >= 0 and regs >= 1")
    b = regs if b is None else b
    c = regs + 1 if c is None else c
    return " ".join(f'"fma.rn.f32 %{i % regs}, %{i % regs}, %{b}, %{c};\\n\\t"' for i in range(n)) or '""'


def icache_prelude(n_measure: int, n_thrash: int = 8) -> str:
    """The #defines that give cache_icache.cu a measured sequence of n_measure FFMAs and a thrash
    sequence of n_thrash."""
    if n_measure % 8 or n_thrash % 8 or n_measure <= 0 or n_thrash <= 0:
        raise ValueError("sequence lengths must be positive multiples of 8 FFMAs (the 8 chains stay equal)")
    return f"#define ICACHE_MEASURE {ffma_body(n_measure)}\n#define ICACHE_THRASH {ffma_body(n_thrash)}\n"


def icache_seq_prelude(n_measure: int) -> str:
    """The #defines that reduce cache_icache.cu to icache_seq over a measured sequence of n_measure FFMAs (what the
    staircase and the fine scans launch: no second copy of the sequence in icache_observe to compile and read)."""
    if n_measure % 8 or n_measure <= 0:
        raise ValueError("sequence lengths must be positive multiples of 8 FFMAs (the 8 chains stay equal)")
    return f"#define ICACHE_SEQ_ONLY 1\n#define ICACHE_MEASURE {ffma_body(n_measure)}\n"


def const_prelude(n_thrash: int = 2) -> str:
    """The #define that gives cache_const.cu's const_thrash a thrash sequence of n_thrash FFMAs."""
    if n_thrash <= 0:
        raise ValueError("thrash length must be positive")
    return f"#define ICACHE_THRASH {ffma_body(n_thrash, regs=2, b=2, c=2)}\n"


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
