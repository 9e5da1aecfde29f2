"""The native table's throughputs against the per-SM peak of their unit (reference/isa_peaks.py), and what the
SASS of a timed loop says about a rate below it: the register-file reads of each instruction after the reuse
cache, and the loop's own instructions. Pure text and arithmetic: native.py measures and stores.

The bank model is isa_regbank's finding on Hopper (isa.regbank.banks = 2, bank = register number mod 2,
isa.regbank.reads_per_bank_per_clk = 1): an instruction whose operands put v values in one bank spends v clocks
reading them, a 64-bit register pair puts one value in each bank. A source is read from the reuse cache where
the instruction before it (the loop's uniform-datapath instructions, which read no R register, in between)
named the same register in the same slot with .reuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .native_arch import timed_loop_body

AT_PEAK = 0.95  # a rate below this fraction of its peak carries its measured reason (as the tensor suite's)
BANKS = 2  # isa_regbank: bank = register number mod 2 (a model input here, measured there)
_REG = re.compile(r"(?<![\w.])R(\d+)(\.reuse)?\b")
_WIDE = ("DFMA", "DADD", "DMUL")  # 64-bit sources: Rn names the pair Rn, Rn+1


@dataclass(frozen=True)
class LoopReads:
    """The register-file reads of the instruction under test in one timed loop."""

    count: int  # instances of the instruction in the loop
    loop: int  # instructions in the loop
    fullest: tuple[int, ...]  # per instance, values its fullest bank delivers (after the reuse cache)
    sources: tuple[int, ...]  # per instance, source registers (64-bit: pairs) read from the register file

    def histogram(self) -> dict[int, int]:
        """values in the fullest bank -> instances."""
        out: dict[int, int] = {}
        for v in self.fullest:
            out[v] = out.get(v, 0) + 1
        return dict(sorted(out.items()))

    def model_ratio(self, interval: float) -> float:
        """Rate / peak if each instance issues after max(issue interval, clocks of its own operand reads) and
        the loop's other instructions take an issue slot each (one warp's view of an SM sub-partition)."""
        busy = sum(max(interval, v) for v in self.fullest) + (self.loop - self.count)
        return self.count * interval / busy if busy else 0.0


def _operands(line: str) -> tuple[str, list[str]]:
    text = line.split(";")[0].strip()
    if text.startswith("@"):
        text = text.split(None, 1)[1]
    op, _, rest = text.partition(" ")
    return op, [s.strip() for s in rest.split(",")] if rest else []


def loop_reads(text: str, pattern: str) -> LoopReads | None:
    """LoopReads of `pattern`'s instruction in the timed loop of a function's SASS (None: no loop)."""
    body = timed_loop_body(text, pattern)  # sm_100's uniform backward branch included
    rx = re.compile(pattern)
    n = sum(1 for t in body if rx.search(t))
    if not n:
        return None
    cache: dict[int, int] = {}  # slot -> register held there by the reuse cache
    fullest, sources = [], []
    for line in body + body:  # twice round: the first pass only fills the cache the loop starts with
        op, args = _operands(line)
        slots = [_REG.search(a) for a in args[1:]]
        if not rx.search(line):
            if any(_REG.search(a) for a in args) or "BRA" in op:
                cache = {}
            continue
        wide = op.split(".")[0] in _WIDE
        read: list[int] = []
        nxt: dict[int, int] = {}
        for j, m in enumerate(slots):
            if m is None or m.group(1) is None:
                continue
            reg = int(m.group(1))
            if cache.get(j) != reg:
                read += [reg, reg + 1] if wide else [reg]
            if m.group(2):
                nxt[j] = reg
        cache = nxt
        fullest.append(max((sum(1 for r in read if r % BANKS == b) for b in range(BANKS)), default=0))
        sources.append(len(read) // (2 if wide else 1))
    half = len(fullest) // 2
    return LoopReads(n, len(body), tuple(fullest[half:]), tuple(sources[half:]))


def reads_note(r: LoopReads, instr: str, interval: float) -> str:
    """One sentence on a loop's reads: the instances by values in their fullest bank, and the model's ratio."""
    hist = ", ".join(f"{k} of {r.count} read {v} value(s) in one bank" for v, k in r.histogram().items())
    return (
        f"its timed loop's SASS: {hist} after the reuse cache ({r.loop - r.count} other instructions in the loop); "
        f"at 1 value per bank per clock (isa_regbank, bank = reg mod {BANKS}) and one {instr} per {interval:g} "
        f"clock(s) per sub-partition, that predicts {r.model_ratio(interval):.3f} of the peak"
    )


def issue_interval(peak_per_clk_sm: float, subcores: int = 4) -> float:
    """Clocks between two warp instructions of one sub-partition at the unit's peak (32 threads each)."""
    return 32 * subcores / peak_per_clk_sm
