"""Control information of sm_70+ instruction words (Jia et al. §2.1), its field positions found by
discovery, decoding, and the consistency check of the compiler's barriers and stalls.

Discovery: the control bits are the upper-word bits that (a) no single-bit flip makes nvdisasm print
differently, except the reuse flags, which it prints as `.reuse`, and (b) are set in compiled code
(the unused bits are never printed and always 0 in every cubin we build). One bit gates the printing
of the reuse flags: it is the yield flag (Jia: with yield cleared the reuse flags are ineffective).
The split of the remaining bits follows the widths of Jia's table (stall 4 | yield 1 | write
barrier 3 | read barrier 3 | wait mask 6 | reuse 4, low to high), anchored at the discovered yield
bit, and is then checked against the compiler's use of barriers over every cubin."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .disasm import disassemble_raw
from .encoding import BITS, OpcodeEncoding
from .text import Instr, parse

# Jia et al. §2.1 table, from the least significant bit up: field name and width.
JIA_WIDTHS: tuple[tuple[str, int], ...] = (
    ("stall", 4),
    ("yield", 1),
    ("wbar", 3),
    ("rbar", 3),
    ("wait", 6),
    ("reuse", 4),
)
NO_BARRIER = 7  # a barrier index field with all bits set names no barrier


@dataclass(frozen=True)
class ControlLayout:
    fields: dict[str, tuple[int, int]]  # name -> (lowest bit, width)
    unused: tuple[int, ...]  # bits never printed and never set in compiled code
    evidence: dict[str, str] = field(default_factory=dict)

    def get(self, word: int, name: str) -> int:
        lo, w = self.fields[name]
        return (word >> lo) & ((1 << w) - 1)

    def set(self, word: int, name: str, value: int) -> int:
        lo, w = self.fields[name]
        if not 0 <= value < 1 << w:
            raise ValueError(f"{name} is {w} bits wide; {value} does not fit")
        return (word & ~(((1 << w) - 1) << lo)) | (value << lo)

    def decode(self, word: int) -> Control:
        return Control(*(self.get(word, n) for n in ("stall", "yield", "wbar", "rbar", "wait", "reuse")))

    @property
    def span(self) -> tuple[int, int]:
        lo = min(low for low, _ in self.fields.values())
        hi = max(low + w - 1 for low, w in self.fields.values())
        return lo, hi


@dataclass(frozen=True)
class Control:
    stall: int
    yield_: int
    wbar: int
    rbar: int
    wait: int
    reuse: int

    def short(self) -> str:
        """As CuAssembler-like listings show it: wait mask, read/write barrier, yield, stall, reuse."""
        wait = "".join(str(b) if self.wait >> b & 1 else "-" for b in range(6))
        rb = "-" if self.rbar == NO_BARRIER else str(self.rbar)
        wb = "-" if self.wbar == NO_BARRIER else str(self.wbar)
        reuse = "".join("r" if self.reuse >> b & 1 else "-" for b in range(4))
        return f"W:{wait} R:{rb} B:{wb} Y:{self.yield_} S:{self.stall:2d} U:{reuse}"


def _same_but_reuse(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.replace(".reuse", "") == b.replace(".reuse", "")


def _gates(word: int, candidates: list[int], arch: str) -> dict[int, list[int]]:
    """Gate bit -> bits whose `.reuse` shows or hides when the gate is flipped with them. Only bits
    whose own flip prints nothing but .reuse changes are candidates."""
    base = disassemble_raw([word], arch)[0]
    singles = disassemble_raw([word ^ (1 << b) for b in candidates], arch)
    alone = {b: t for b, t in zip(candidates, singles) if _same_but_reuse(t, base)}
    cand = list(alone)
    pairs = [(g, b) for g in cand for b in cand if g != b]
    texts = disassemble_raw([word ^ (1 << g) ^ (1 << b) for g, b in pairs], arch)
    out: dict[int, list[int]] = {}
    for (g, b), t in zip(pairs, texts):
        if t is not None and (".reuse" in t) != (".reuse" in alone[b]):
            out.setdefault(g, []).append(b)
    return out


def _reuse_bits(word: int, gate: int, candidates: list[int], arch: str) -> list[int]:
    """With the gate set, the bits whose flip adds or removes exactly one operand's .reuse."""
    w = word | (1 << gate)
    cand = [b for b in candidates if b != gate]
    texts = disassemble_raw([w] + [w ^ (1 << b) for b in cand], arch)
    base = texts[0]
    out = []
    for b, t in zip(cand, texts[1:]):
        if _same_but_reuse(t, base) and t != base and abs(t.count(".reuse") - base.count(".reuse")) == 1:
            out.append(b)
    return out


def discover_layout(
    encs: dict[str, OpcodeEncoding], corpus_words: list[int], arch: str = "SM90a", probe_words: list[int] | None = None
) -> ControlLayout:
    """Control-field positions from single-bit discovery of many opcodes plus the compiled words."""
    set_count = [0] * BITS
    for w in corpus_words:
        for b in range(64, BITS):
            set_count[b] += (w >> b) & 1
    reuse_bits = sorted(
        {b for e in encs.values() for b, lab in enumerate(e.labels) if lab.startswith("reuse") and b >= 64}
    )
    # silent: no single flip prints anything but .reuse, for all opcodes but a few (<= 5 %, named in the
    # evidence) that use a bit as an operand
    quiet = {
        b: [
            n
            for n, e in encs.items()
            if not (e.labels[b] in ("unprinted", "illegal") or e.labels[b].startswith("reuse"))
        ]
        for b in range(64, BITS)
    }
    silent = [b for b in range(64, BITS) if len(quiet[b]) <= 0.05 * len(encs)]
    exceptions = sorted({n for b in silent for n in quiet[b]})
    unused = tuple(b for b in silent if set_count[b] == 0)
    control = [b for b in silent if set_count[b] > 0]
    # the gate, probed on several words (one word's other control values may make a flip illegal)
    probes = ([encs["FFMA"].word] if "FFMA" in encs else []) + list(probe_words or [])
    if not probes:
        probes = [max(encs.values(), key=lambda e: sum(k == "reg" for k in e.kinds)).word]
    varying = [b for b in range(64, BITS) if set_count[b] > 0]
    votes: dict[int, int] = {}
    for word in probes[:4]:
        for g, bs in _gates(word, varying, arch).items():
            if len(bs) >= 2:  # a gate shows or hides the reuse flag of at least two operand slots
                votes[g] = votes.get(g, 0) + 1
    if not votes:
        texts = disassemble_raw(probes[:4], arch)
        raise RuntimeError(
            f"control discovery: no bit gates .reuse on {len(probes[:4])} probe words: "
            + "; ".join(f"{w:032x} {t}" for w, t in zip(probes, texts))
        )
    gate = max(votes, key=lambda g: votes[g])
    gate_bits = [gate]
    reuse_bits = sorted(
        (set(reuse_bits) | {b for word in probes[:4] for b in _reuse_bits(word, gate, varying, arch)}) - {gate}
    )
    y = gate_bits[0]
    names = [n for n, _ in JIA_WIDTHS]
    widths = dict(JIA_WIDTHS)
    lo = y - widths["stall"]
    fields: dict[str, tuple[int, int]] = {}
    at = lo
    for n in names:
        fields[n] = (at, widths[n])
        at += widths[n]
    span = set(range(lo, at))
    evidence = {
        "control_bits": f"{_ranges(control)} ({len(control)} bits): never printed alone, set in compiled code"
        + (f" (except as operand bits of {', '.join(exceptions)})" if exceptions else ""),
        "unused_bits": _ranges(unused) + " never printed, never set in any compiled word",
        "reuse": f"bits {_ranges(reuse_bits)} print .reuse on source operand slots",
        "yield": f"bit {y}: .reuse is printed only when it is set ({votes[y]} of {len(probes[:4])} probe words agree)",
        "jia_widths_fit": str(span == set(control) and set(range(*_lohi(fields["reuse"]))) >= set(reuse_bits)),
    }
    return ControlLayout(fields, unused, evidence)


def _lohi(f: tuple[int, int]) -> tuple[int, int]:
    return f[0], f[0] + f[1]


def _ranges(bits) -> str:
    bits = sorted(bits)
    out, i = [], 0
    while i < len(bits):
        j = i
        while j + 1 < len(bits) and bits[j + 1] == bits[j] + 1:
            j += 1
        out.append(f"{bits[i]}-{bits[j]}" if j > i else f"{bits[i]}")
        i = j + 1
    return ", ".join(out) or "none"


@cache
def default_layout(arch: str = "sm_90a") -> ControlLayout:
    """The layout discovered from a small compiled kernel (cached per process)."""
    from ..device.compiler import compile_cubin
    from .corpus import cubin_functions
    from .encoding import discover_many, representative_words

    raw = "SM" + arch.removeprefix("sm_")
    fns = cubin_functions("probe", compile_cubin(PROBE_SOURCE, "isa_probe.cu", arch), raw)
    encs = discover_many(representative_words(fns), raw)
    return discover_layout(encs, [w for f in fns for w in f.words], raw)


# A kernel with loads, stores, shared memory, arithmetic with reuse, and a branch: enough opcodes
# and control values for the discovery when no corpus is given.
PROBE_SOURCE = r"""
extern "C" __global__ void isa_probe(const float* a, float* b, int n) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = a[i + n], z = a[i + 2 * n];
    s[threadIdx.x] = x;
    __syncthreads();
    float acc = s[(threadIdx.x + 1) & 255];
    for (int k = 0; k < n; ++k) { acc = fmaf(x, y, acc); acc = fmaf(x, z, acc); x = fmaf(y, z, x); }
    if (acc > 0.f) b[i] = acc * __expf(z); else b[i] = acc + (float)i;
}
"""


# ---- consistency of the compiler's control codes ---------------------------------------------------
_NO_DEST = re.compile(
    r"^(ST|STG|STS|STL|RED|REDG|REDUX?S?|BAR|BRA|BSSY|BSYNC|EXIT|RET|CALL|NOP|MEMBAR|FENCE|"
    r"ERRBAR|CGAERRBAR|DEPBAR|LDGDEPBAR|WARPSYNC|YIELD|CCTL|UTMA\w*|UBLKCP|SYNCS|WARPGROUP|"
    r"UCGABAR_\w+|ELECT|LDGSTS|ISETP|FSETP|DSETP|HSETP2|PLOP3|VOTEU?|UISETP|UPLOP3|R2P|P2R?)$"
)
_CONTROL_FLOW = {"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "BREAK", "WARPSYNC", "KILL"}
_REG_TOKEN = re.compile(r"(?<![\w.])(U?R)(\d+)(\.64)?")


def _width(ins: Instr) -> int:
    mods = set(ins.modifiers)
    if "128" in mods or "4" in mods and ins.opcode == "LDSM":
        return 4
    if mods & {"64", "WIDE"} or ("2" in mods and ins.opcode == "LDSM"):
        return 2
    return 1


def written(ins: Instr) -> set[str]:
    """Registers the instruction writes (first operand of opcodes that have a register destination)."""
    if _NO_DEST.match(ins.opcode) or not ins.operands:
        return set()
    m = re.match(r"^(U?R)(\d+)$", ins.operands[0].split(".")[0])
    if not m:
        return set()
    return {f"{m.group(1)}{int(m.group(2)) + k}" for k in range(_width(ins))}


def read(ins: Instr) -> set[str]:
    """Registers the instruction reads: every register token among the sources (64-bit addresses as two)."""
    first = 0 if _NO_DEST.match(ins.opcode) else 1
    out: set[str] = set()
    for op in ins.operands[first:]:
        for m in _REG_TOKEN.finditer(op):
            n = int(m.group(2))
            out.add(f"{m.group(1)}{n}")
            if m.group(3):
                out.add(f"{m.group(1)}{n + 1}")
    return out


@dataclass
class Consistency:
    barrier_pairs: int = 0
    barrier_ok: int = 0
    fixed_pairs: int = 0
    fixed_ok: int = 0
    failures: list[str] = field(default_factory=list)  # the first ones, with place
    kinds: dict[str, int] = field(default_factory=dict)  # every failure by pattern
    latencies: dict[str, int] = field(default_factory=dict)

    def _fail(self, kind: str, text: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if len(self.failures) < 100:
            self.failures.append(text)

    def summary(self, n: int = 8) -> str:
        top = sorted(self.kinds.items(), key=lambda kv: -kv[1])[:n]
        return "; ".join(f"{k}: {v}" for k, v in top)

    @property
    def pairs(self) -> int:
        return self.barrier_pairs + self.fixed_pairs

    @property
    def fraction(self) -> float:
        return (self.barrier_ok + self.fixed_ok) / self.pairs if self.pairs else float("nan")


def _instrs(fn) -> list[tuple[Instr | None, int]]:
    return [(parse(t) if t else None, w) for t, w in zip(fn.texts, fn.words)]


def barrier_pairs(fn, layout: ControlLayout) -> list[tuple[int, int, bool, str]]:
    """(producer, consumer, consumer waited on the producer's barrier, what) for every register a
    variable-latency instruction writes (write barrier, RAW/WAW) or reads (read barrier, WAR)."""
    ins = _instrs(fn)
    out = []
    for i, (p, w) in enumerate(ins):
        if p is None:
            continue
        c = layout.decode(w)
        for kind, bar, regs in (("write", c.wbar, written(p)), ("read", c.rbar, read(p))):
            if bar == NO_BARRIER or not regs:
                continue
            waited = False
            for j in range(i + 1, len(ins)):
                q, qw = ins[j]
                if q is None:
                    break
                waited |= bool(layout.decode(qw).wait >> bar & 1) or (
                    q.opcode == "DEPBAR" and f"SB{bar}" in " ".join(q.operands)
                )
                touches = (read(q) | written(q)) & regs if kind == "write" else written(q) & regs
                if touches:
                    out.append((i, j, waited, f"{p.full_opcode} {kind} barrier {bar} -> {q.full_opcode}"))
                    break
                if q.opcode in _CONTROL_FLOW:
                    break
    return out


def fixed_pairs(fn, layout: ControlLayout) -> list[tuple[str, int, str]]:
    """(producer opcode, stall cycles between it and its first consumer, what) for fixed-latency
    producers (no write barrier) of a register read before any control flow."""
    ins = _instrs(fn)
    out = []
    for i, (p, w) in enumerate(ins):
        if p is None or layout.decode(w).wbar != NO_BARRIER:
            continue
        regs = {r for r in written(p) if r.startswith("R")}
        if not regs or p.guard or p.opcode.endswith("GMMA"):  # wgmma: waited by WARPGROUP.DEPBAR, not stalls
            continue
        stalls = 0
        for j in range(i + 1, len(ins)):
            stalls += layout.decode(ins[j - 1][1]).stall
            q = ins[j][0]
            if q is None:
                break
            if read(q) & regs:
                out.append((p.full_opcode, stalls, f"{p.full_opcode} -> {q.full_opcode} after {stalls} stall cycles"))
                break
            if written(q) & regs or q.opcode in _CONTROL_FLOW:
                break
    return out


def latency_key(opcode: str) -> list[str]:
    """Summary keys of a measured dependent-issue latency for a SASS opcode, most specific first."""
    parts = opcode.lower().split(".")
    return [f"isa.latency.{'_'.join(parts[:k])}_cycles" for k in range(len(parts), 0, -1)]


def measured_latencies(summary: Path) -> dict[str, float]:
    try:
        data = json.loads(summary.read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if k.startswith("isa.latency.") and isinstance(v, (int, float))}


def check_consistency(functions, layout: ControlLayout, measured: dict[str, float] | None = None) -> Consistency:
    """Barrier pairs over every function; fixed-latency pairs against `measured` latencies where a key
    exists, otherwise against the minimum stall the compiler itself uses for that opcode learned from
    the other half of the kernels (by KernelSpec name, alternating), so the check can fail."""
    res = Consistency()
    for fn in functions:
        for i, j, ok, what in barrier_pairs(fn, layout):
            res.barrier_pairs += 1
            res.barrier_ok += ok
            if not ok:
                p, _, q = what.partition(" -> ")
                kind = f"{p.split('.')[0]} {' '.join(p.split()[1:3])} -> {q.split('.')[0]} without wait"
                res._fail(kind, f"{fn.spec}:{fn.name} @{16 * i:#06x}->{16 * j:#06x} {what}: no wait")
    specs = sorted({f.spec for f in functions})
    half = {s: k % 2 for k, s in enumerate(specs)}
    pairs = {f: fixed_pairs(f, layout) for f in functions}
    learned: list[dict[str, int]] = [{}, {}]
    for f, ps in pairs.items():
        d = learned[half[f.spec]]
        for op, st, _ in ps:
            d[op] = min(d.get(op, st), st)
    for f, ps in pairs.items():
        for op, st, what in ps:
            need = None
            for k in latency_key(op):
                if measured and k in measured:
                    need = round(measured[k])  # stall fields count whole cycles; the measurement has a fraction
                    res.latencies[op] = need
                    break
            if need is None:
                other = learned[1 - half[f.spec]]
                if op not in other:
                    continue  # no independent latency for this opcode
                need = other[op]
                res.latencies.setdefault(op, need)
            res.fixed_pairs += 1
            res.fixed_ok += st >= need
            if st < need:
                res._fail(f"{op} after {st} < {need} stall cycles", f"{f.spec}:{f.name} {what} < {need}")
    return res
