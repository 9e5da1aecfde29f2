"""Pure functions behind isa_regbank (register banks, the reuse cache; Jia et al. 002 §3.5, §2.1): where
the timed FFMA block and the register pool sit in the disassembled kernel, which source triples to patch
in, and which bank function (register number mod m) explains the measured time per FFMA."""

from __future__ import annotations

import re
from itertools import product

import numpy as np

from ..sass.text import parse

MODULI = (2, 4, 8)  # candidate bank functions: bank = register number mod m

Triple = tuple[int, int, int]  # the three FFMA source registers, slots 1..3
Variant = tuple[str, Triple, int]  # (group, source registers, reuse mask: bit k = source slot k from the reuse cache)


# ---- the kernel's code -------------------------------------------------------------------------
def timed_block(texts: list[str | None]) -> list[int]:
    """Indices of the FFMAs between the two clock reads of a kernel (the timed loop body)."""
    clocks = [i for i, t in enumerate(texts) if t and "SR_CLOCKLO" in t]
    if len(clocks) < 2:
        return []
    return [i for i in range(clocks[0] + 1, clocks[1]) if texts[i] and parse(texts[i]).opcode == "FFMA"]


# a 32-bit global store as each family prints it: STG.E desc[UR4][R8.64+0x4], R2 (sm_90+),
# STG.E [R8.64+0x4], R2 (sm_80, sm_89), STG.E.SYS [R8+0x4], R2 (sm_70, sm_75)
_STORE = re.compile(r"STG\.E(?:\.SYS)? (?:desc\[UR\d+\])?\[(R\d+)(?:\.64)?(?:\+0x([0-9a-f]+))?\], (R\d+)(?:\s|$)")


def pool_registers(texts: list[str | None], after: int, npool: int) -> dict[int, int]:
    """Register number -> pool index, from the stores of the pool at the end of regbank_ffma:
    out[blockDim * NACC + i] = p[i], the group of `npool` stores off one base register at 4*i."""
    groups: dict[str, dict[int, int]] = {}
    for t in texts[after:]:
        m = _STORE.match(t) if t else None
        if m:
            off = int(m.group(2) or "0", 16)
            groups.setdefault(m.group(1), {})[int(m.group(3)[1:])] = off // 4
    for g in groups.values():
        if sorted(g.values()) == list(range(npool)):
            return g
    return {}


# ---- the bank model ----------------------------------------------------------------------------
def max_share(regs: tuple[int, ...], m: int) -> int:
    """How many of the source registers fall into the fullest bank when the bank is reg mod m."""
    counts: dict[int, int] = {}
    for r in regs:
        counts[r % m] = counts.get(r % m, 0) + 1
    return max(counts.values())


def explained(costs: list[float], regs: list[Triple], m: int) -> float:
    """Share of the variance of the cost that the classes 'max sources in one bank mod m' explain."""
    y = np.asarray(costs, dtype=float)
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0:
        return 0.0
    cls = np.asarray([max_share(r, m) for r in regs])
    within = sum(float(((y[cls == c] - y[cls == c].mean()) ** 2).sum()) for c in set(cls.tolist()))
    return 1.0 - within / total


def bank_count(
    costs: list[float], regs: list[Triple], noise: float, moduli: tuple[int, ...] = MODULI
) -> tuple[int | None, dict[int, float]]:
    """The smallest modulus m (2, 4, 8) whose bank classes explain the cost (>= 90 % of the variance,
    and no larger modulus explains 5 points more); None when the costs do not vary beyond `noise`."""
    r2 = {m: explained(costs, regs, m) for m in moduli}
    if max(costs) - min(costs) <= noise:
        return None, r2
    for m in moduli:
        if r2[m] >= 0.9 and all(r2[m] >= r2[k] - 0.05 for k in moduli if k > m):
            return m, r2
    return None, r2


def class_medians(costs: list[float], regs: list[Triple], m: int) -> dict[int, float]:
    """Median cost per class 'sources in the fullest bank' (1, 2, 3) when the bank is reg mod m."""
    cls = np.asarray([max_share(r, m) for r in regs])
    return {int(c): float(np.median(np.asarray(costs)[cls == c])) for c in sorted(set(cls.tolist()))}


def bank_reads(regs: tuple[int, ...], reuse: int, banks: int) -> int:
    """Source values the fullest bank must deliver when the slots in `reuse` come from the reuse cache
    (every FFMA of the block carries the same flags, so each reads its predecessor's cached slots)."""
    read = tuple(r for j, r in enumerate(regs) if not reuse >> j & 1)
    return max_share(read, banks) if read else 0


def reuse_model(regs: tuple[int, ...], reuse: int, banks: int, per_value: float) -> float:
    """Cycles per FFMA the bank model predicts: the values the fullest bank delivers times the time per
    value, at least one issue slot."""
    return max(1.0, bank_reads(regs, reuse, banks) * per_value)


# ---- which registers to patch in ---------------------------------------------------------------
def choose_triple(residues: tuple[int, int, int], pool: list[int], m: int = 8) -> Triple | None:
    """Three distinct pool registers with the given residues mod m (the lowest numbers that fit)."""
    used: list[int] = []
    for r in residues:
        pick = next((x for x in sorted(pool) if x % m == r and x not in used), None)
        if pick is None:
            return None
        used.append(pick)
    return used[0], used[1], used[2]


def plan_variants(regs: list[int], nres: int) -> tuple[list[Variant], tuple[int, int]]:
    """The (group, sources, reuse mask) variants of the bank experiments over the pool registers `regs`,
    and the fixed pair (Ra, Rb) of the RX sweep. Groups: "sweep" (Jia Fig. 3.8), "grid" (one triple per
    residue combination mod `nres`, no reuse), "reuse" (all three slots), "mask" (every reuse mask)."""
    plan: list[tuple[tuple[int, int, int], Triple]] = []
    for res in product(range(nres), repeat=3):
        tri = choose_triple(res, regs, nres)
        if tri is not None:
            plan.append((res, tri))
    # Jia Fig. 3.8: FFMA R, Ra, Rb, RX with Ra, Rb fixed in one residue class and RX swept over the pool
    ra, rb = (choose_triple((1, 1, 1), regs) or choose_triple((0, 0, 0), regs) or (0, 0, 0))[:2]
    todo: list[Variant] = [("sweep", (ra, rb, x), 0) for x in regs if x not in (ra, rb)]
    for res, tri in plan:
        todo.append(("grid", tri, 0))
        if max_share(tri, 2) == 3 or max_share(tri, 4) == 3 or res == plan[0][0]:
            todo.append(("reuse", tri, 0b111))  # the all-in-one-bank triples (mod 2 or 4) and one reference
    # which source slots must be read from the banks: every reuse mask on five bank patterns (mod 2)
    for res in ((0, 1, 1), (1, 0, 1), (1, 1, 0), (0, 0, 0), (0, 0, 1)):
        tri = choose_triple(res, regs, 2)
        if tri is not None:
            todo += [("mask", tri, mask) for mask in range(8)]
    return todo, (ra, rb)
