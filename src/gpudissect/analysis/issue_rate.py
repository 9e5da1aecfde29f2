"""Pure functions behind the instruction tables (isa suite): rates from per-warp clock records,
the steady-state cell of a warps x ILP sweep, the scheduler mapping from co-running warps, and the
loop bodies of a disassembled kernel (to prove that the timed loop is the instruction under test)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .records import parse


def block_rates(rec: np.ndarray, warps: int, instr_per_warp: float) -> tuple[np.ndarray, np.ndarray]:
    """rec [blocks * warps * REC] -> per block (one block per SM): cycles per instruction of one warp
    (mean over its warps) and instructions per clock of the whole block (all warps' instructions over
    the span from the first start to the last end, in that SM's clock64)."""
    r = parse(rec, warps)
    per_warp = ((r.t1 - r.t0) / instr_per_warp).mean(axis=1)
    span = np.maximum(r.span_cycles, 1)
    return per_warp, warps * instr_per_warp / span


def spans(rec: np.ndarray, warps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per block: clock64 cycles and %globaltimer ns from the first start to the last end."""
    r = parse(rec, warps)
    return r.span_cycles, r.span_ns


def clock_mhz(rec: np.ndarray, warps: int) -> np.ndarray:
    """Per block: clock64 cycles over %globaltimer ns of its span, in MHz."""
    cycles, ns = spans(rec, warps)
    return cycles / np.maximum(ns, 1) * 1e3


@dataclass(frozen=True)
class Cell:
    warps: int
    ilp: int
    latency: float  # cycles per instruction of one warp (median over SMs, median of repetitions)
    rate: float  # thread instructions per clock per SM (median over SMs, median of repetitions)
    rate_lo: float
    rate_hi: float


def steady_state(cells: Sequence[Cell], tol: float = 0.03) -> tuple[Cell, Cell]:
    """(best cell, smallest warps x ILP within `tol` of the best): the plateau of the sweep, and
    where it starts."""
    best = max(cells, key=lambda c: c.rate)
    near = [c for c in cells if c.rate >= (1 - tol) * best.rate]
    return best, min(near, key=lambda c: (c.warps * c.ilp, c.warps))


def helper_corrected(step_cycles: float, count: int, helpers: Sequence[float]) -> float:
    """Latency of one instruction of a chain step that also holds `helpers` (their own latencies,
    measured in their own chains): (step - sum(helpers)) / count, Jia's pair method."""
    return (step_cycles - float(sum(helpers))) / count


# ---- scheduler mapping ---------------------------------------------------------------------------
def split_two_levels(values: Mapping[tuple[int, int], float], min_ratio: float = 1.3) -> float | None:
    """Threshold between the low and the high group of pair rates (the widest relative gap of the sorted
    values), or None when the two groups differ by less than `min_ratio` (no structure)."""
    v = np.sort(np.array(list(values.values()), dtype=float))
    if v.size < 2 or v[0] <= 0:
        return None
    gaps = v[1:] / v[:-1]
    i = int(np.argmax(gaps))
    if v[i + 1 :].mean() / v[: i + 1].mean() < min_ratio or gaps[i] < 1.1:
        return None
    return float(np.sqrt(v[i] * v[i + 1]))


def classes_from_conflicts(n: int, conflicts: Sequence[tuple[int, int]]) -> list[int]:
    """Warp -> class id, where warps that slow each other down share a class (union-find)."""
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in conflicts:
        parent[find(a)] = find(b)
    roots: dict[int, int] = {}
    return [roots.setdefault(find(w), len(roots)) for w in range(n)]


def modulo_rule(classes: Sequence[int]) -> int | None:
    """The n for which class(w) is determined by w % n and n classes exist (e.g. 4 for Volta's
    'warp % 4'), or None when no modulo rule fits."""
    n_cls = len(set(classes))
    for n in range(1, len(classes) + 1):
        if n != n_cls:
            continue
        groups: dict[int, set[int]] = {}
        for w, c in enumerate(classes):
            groups.setdefault(w % n, set()).add(c)
        if all(len(g) == 1 for g in groups.values()) and len({next(iter(g)) for g in groups.values()}) == n:
            return n
    return None


# ---- SASS loop bodies ----------------------------------------------------------------------------
_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*)")
_BRA = re.compile(r"(?:@!?U?P\w+\s+)?BRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))")


def parse_sass(text: str) -> list[tuple[int, str]]:
    """(address, instruction) of each line of a function's disassembly (sass.disasm.disassemble)."""
    out = []
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            out.append((int(m.group(1), 16), m.group(2).strip()))
    return out


def loop_bodies(text: str) -> list[list[str]]:
    """The instructions of every loop (a backward branch to an earlier address), innermost first;
    NOPs dropped."""
    ins = parse_sass(text)
    loops = []
    for addr, op in ins:
        m = _BRA.search(op)
        if m and m.group(1):
            target = int(m.group(1), 16)
            if target <= addr:
                body = [o for a, o in ins if target <= a <= addr and not o.startswith("NOP")]
                loops.append(body)
    return sorted(loops, key=len)


def timed_loop(text: str, pattern: str) -> tuple[list[str], int]:
    """The loop with the most matches of `pattern` and that count (the loop the kernel times)."""
    best: tuple[list[str], int] = ([], 0)
    rx = re.compile(pattern)
    for body in loop_bodies(text):
        n = sum(1 for o in body if rx.search(o))
        if n > best[1]:
            best = (body, n)
    return best
