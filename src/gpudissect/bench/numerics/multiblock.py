"""Probes past one block (issue 9 §6): K larger than the tensor core's block.

Two cases exist on sm_90 for the float types:
- one instruction over several blocks: fp8 mma.sync m16n8k32 (emulated by ptxas as two f16 HMMA.16816 of
  half the K each, then C added by FADD / HADD2). `layout_probes` find which k indices share a block
  (the blocks need not be contiguous runs of k), `inter_probes` the format and rounding of the sum between
  blocks, `c_add_probes` how a C that joins after the products is added, `in_convert_probes` whether fp8
  inputs reach the adder as f16 (where a subnormal's nominal exponent differs).
- a chain of instructions, each taking the previous D as its C (a GEMM's K loop): `chain_probes` decide
  whether D is rounded into the accumulator format between instructions (the PTX semantics), kept wider,
  or the chain fuses into one block.
Every probe carries each hypothesis' prediction from the exact evaluator (evaluator.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from .common import FMT, Instr, fmt_max_exp, fmt_min_normal_exp
from .evaluator import Hyp, predict, predictor
from .probe_kit import Probe, _out_ok, _products, _term, _terms, pick_preferred, run_probes, scale_exp, shared
from .runner import Runner

ROUNDINGS = ("rne", "rtz", "rup", "rdown")


# ---------------------------------------------------------------------------------------
# Which k indices share a block
# ---------------------------------------------------------------------------------------
@shared
def layout_probes(ins: Instr) -> list[Probe]:
    """+2^e, -2^e at k = 0, 1 and 2^(e-G) at k = p, with the widest gap G the formats allow (beyond any
    alignment width): the small term survives iff p is in a later block than 0 and 1 (the pair cancels
    to an exact 0 first). Run before anything else, so that later probes can place terms by block."""
    e = scale_exp(ins)
    big, neg = _term(e, ins.a), _term(e, ins.a, -1.0)
    gap = next(
        (g for g in range(40, 2, -1) if _term(e - g, ins.a) is not None and _out_ok(2.0 ** (e - g), ins.c)), None
    )
    if big is None or neg is None or gap is None:
        return []
    small = _term(e - gap, ins.a)
    out = []
    for p in range(2, ins.k):
        a, b, c = _terms(ins, {0: big, 1: neg, p: small})  # type: ignore[dict-item]
        out.append(Probe("layout", f"p={p} (gap {gap})", a, b, c, {"same block": 0.0, "later block": 2.0 ** (e - gap)}))
    return out


def decide_layout(probes: list[Probe], k: int) -> tuple[list[int] | None, str]:
    """The k index of each position in block order: 0, 1, the rest of their block, then the later blocks.
    Identity where blocks are contiguous runs of k (or one block)."""
    if not probes:
        return list(range(k)), "no probe possible: positions taken as contiguous"
    if any(not p.matches() for p in probes):
        return None, "no hypothesis matches: " + "; ".join(f"{p.label} -> {p.got!r}" for p in probes if not p.matches())
    later = [int(p.label.split()[0][2:]) for p in probes if p.matches() == ["later block"]]
    same = [int(p.label.split()[0][2:]) for p in probes if p.matches() == ["same block"]]
    perm = [0, 1] + same + later
    if perm == list(range(k)):
        return perm, "contiguous" + (
            f" (later blocks from k={later[0]})" if later else " (one block at the widest gap)"
        )
    return perm, f"k indices {[0, 1] + same} share the block of k=0, 1; {later} are later"


def interleave_of(perm: list[int], k: int, block: int) -> int | None:
    """The model's block_interleave: 0 where blocks are contiguous runs of k, g where products are dealt
    to the blocks in runs of g, None where the layout is neither."""
    if perm == list(range(k)):
        return 0
    nb = -(-k // block)
    for g in range(1, k):
        if k % (g * nb) == 0 and sorted(range(k), key=lambda j: ((j // g) % nb, j)) == perm:
            return g
    return None


# ---------------------------------------------------------------------------------------
# The sum carried from one segment (block, or instruction of a chain) to the next
# ---------------------------------------------------------------------------------------
def _carry_candidates(
    ins: Instr, first: int, second: int, room: int, f: int
) -> list[tuple[str, dict[int, tuple[float, float]]]]:
    """S = n 2^(e-1) + 2^(e-1-j1) + 2^(e-1-j2) in the first segment (positions first..), -n 2^(e-1) in the
    second: D = R(S) - n 2^(e-1), the rounding of S between the segments, exposed exactly."""
    e = scale_exp(ins)
    out = []
    js = sorted({*range(8, 15), *range(21, f + 1)})
    for n_big in (1, 3):
        if n_big + 2 > room:
            continue
        for j1 in js:
            for j2 in sorted({j1 + 1, j1 + 2, f - 1, f}):
                if not j1 < j2 <= f:
                    continue
                for sign in (1.0, -1.0):
                    placed = {first + i: _term(e - 1, ins.a, sign) for i in range(n_big)}
                    placed[first + n_big] = _term(e - 1 - j1, ins.a, sign)
                    placed[first + n_big + 1] = _term(e - 1 - j2, ins.a, sign)
                    placed.update({second + i: _term(e - 1, ins.a, -sign) for i in range(n_big)})
                    if any(v is None for v in placed.values()):
                        continue
                    label = (
                        f"{'+' if sign > 0 else '-'}({n_big}x2^{e - 1}+2^{e - 1 - j1}+2^{e - 1 - j2}) "
                        f"then -{n_big}x2^{e - 1}"
                    )
                    out.append((label, placed))  # type: ignore[arg-type]
    return out


def greedy_cover(
    cands: Iterable[Probe], limit: int = 24, names: Sequence[str] | None = None, key: Callable[[Any], object] = repr
) -> list[Probe]:
    """Probes kept in order until every pair of hypotheses (`names`, default the first candidate's)
    that some candidate tells apart is told apart, at most `limit`. Two predictions differ where
    their `key`s do: repr by default, so NaN matches NaN and -0.0 differs from 0.0. `cands` is read
    lazily, in order: from a generator, the candidates after the last one needed are never built (their
    predictions were two thirds of the probes' host time)."""
    it = iter(cands)
    first = next(it, None)
    if first is None:
        return []
    if names is None:
        names = list(first.predictions)
    pairs = {(x, y) for i, x in enumerate(names) for y in names[i + 1 :]}
    chosen: list[Probe] = []
    for pr in itertools.chain([first], it):
        told = {(x, y) for (x, y) in pairs if key(pr.predictions[x]) != key(pr.predictions[y])}
        if told:
            chosen.append(pr)
            pairs -= told
        if not pairs or len(chosen) >= limit:
            break
    return chosen


def inter_hyps(ins: Instr, base: Hyp) -> dict[str, Hyp]:
    fmts = dict.fromkeys([ins.c, "f32", "f16", "e8m13"])
    hyps = {f"{f}/{r}": replace(base, inter_fmt=f, inter_rounding=r) for f in fmts for r in ROUNDINGS}
    hyps["exact"] = replace(base, inter_fmt="exact")
    return hyps


@shared
def inter_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """Between two blocks of one instruction: the block sum's format (the accumulator's, f32, f16, f32 with
    13 fraction bits, exact) and rounding. Predictions that depend on D's own rounding are left out (D is
    the exactly representable residue)."""
    b = base.block_size
    if b >= ins.k:
        return []
    hyps = inter_hyps(ins, base)

    def cands() -> Iterator[Probe]:
        for label, placed in _carry_candidates(ins, 0, b, b, base.align_frac_bits):
            a, bb, c = _terms(ins, placed)
            pred = predictor(_products(a, bb), Fraction(c), ins.c)
            preds = {}
            for name, h in hyps.items():
                rtz, rup = (pred(replace(h, out_rounding=m)) for m in ("rtz", "rup"))
                if repr(rtz) != repr(rup):
                    break
                preds[name] = rtz
            else:
                if len({repr(v) for v in preds.values()}) > 1:
                    yield Probe("inter_block", label, a, bb, c, preds)

    return greedy_cover(cands())


def inter_prefer(ins: Instr, base: Hyp) -> list[str]:
    return [f"{ins.c}/{base.out_rounding}", *(f"{ins.c}/{r}" for r in ROUNDINGS), *inter_hyps(ins, base)]


@shared
def c_add_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """C joining after the products (c_position separate): one more fused step with the alignment's
    truncation, or one IEEE addition (FADD/HADD2) rounded to nearest or toward zero. The product sum is
    2^e; C = +-(half an ulp of D + a far smaller bit): rounded to nearest only if the small bit counts."""
    if base.c_position != "separate":
        return []
    e = scale_exp(ins)
    p = min(FMT[ins.c][1], base.out_man_bits or FMT[ins.c][1])
    hyps = {m: replace(base, c_add=m) for m in ("fused", "ieee_rne", "ieee_rtz")}
    out = []
    for q in sorted({2, p // 2 + 1, min(p, 16)}):
        for sign in (1.0, -1.0):
            cv = sign * (2.0 ** (e - p - 1) + 2.0 ** (e - p - 1 - q))
            if not _out_ok(cv, ins.c) or _term(e, ins.a) is None:
                continue
            a, b, c = _terms(ins, {0: _term(e, ins.a)}, cv)  # type: ignore[dict-item]
            pred = predictor(_products(a, b), Fraction(c), ins.c)
            out.append(
                Probe(
                    "c_add",
                    f"2^{e} + C=({'+' if sign > 0 else '-'}2^{e - p - 1}{'+' if sign > 0 else '-'}2^{e - p - 1 - q})",
                    a,
                    b,
                    c,
                    {k: pred(h) for k, h in hyps.items()},
                )
            )
    return out


@shared
def in_convert_probes(ins: Instr, base: Hyp, nominal: bool) -> list[Probe]:
    """fp8 inputs aligned by their own nominal exponent (a subnormal counts as emin) or converted to f16
    first (a subnormal of fp8 is a normal f16 with its true exponent). X = (smallest subnormal) x 2^y sets
    the reference; a tiny term 2^t lies between the two alignment units, with an optional half-ulp tie
    of D so that rounding to nearest shows it: kept iff converted."""
    if ins.a not in ("e4m3", "e5m2") or not nominal:
        return []
    _, mb, bias, _ = FMT[ins.a]
    s_exp, emin = 1 - bias - mb, 1 - bias
    if s_exp < fmt_min_normal_exp("f16"):  # e5m2's subnormals are f16's: converting changes no exponent
        return []
    f_model = base.align_frac_bits + 1  # nominal reference: one above a power of two's leading bit
    p = min(FMT[ins.c][1], base.out_man_bits or FMT[ins.c][1])
    hyps_out = []
    for y in range(fmt_max_exp(ins.a), fmt_min_normal_exp(ins.a) - 1, -1):
        x_exp = s_exp + y
        t = x_exp + 1 - f_model  # the converted unit: kept there, dropped natively (unit emin + y + 1 - F)
        tiny = _term(t, ins.a)
        if tiny is None or not _out_ok(2.0**x_exp, ins.c) or not _out_ok(2.0**t, "f32"):
            continue
        for tie in (False, True):
            t2e = x_exp - p - 1
            if tie and (_term(t2e, ins.a) is None or t2e < emin + y + 1 - f_model):
                continue
            for sign in (1.0, -1.0):
                placed = {0: (2.0**s_exp, 2.0**y), 2: (sign * tiny[0], tiny[1])}
                if tie:
                    placed[1] = _term(t2e, ins.a)  # type: ignore[assignment]
                a, b, c = _terms(ins, placed)
                kept = _products(a, b)
                dropped = [v if i != 2 else Fraction(0) for i, v in enumerate(kept)]
                preds = {
                    "f16": predict(base, kept, Fraction(0), ins.c),
                    "native": predict(base, dropped, Fraction(0), ins.c),
                }
                if preds["f16"] != preds["native"]:
                    hyps_out.append(
                        Probe(
                            "in_convert",
                            f"2^{s_exp}x2^{y}{' + tie 2^' + str(t2e) if tie else ''} {'+' if sign > 0 else '-'} 2^{t}",
                            a,
                            b,
                            c,
                            preds,
                        )
                    )
        if len(hyps_out) >= 4:
            break
    return hyps_out


# ---------------------------------------------------------------------------------------
# Chains of instructions
# ---------------------------------------------------------------------------------------
CHAIN_MODES = ("separate", "wide:f32/rne", "wide:f32/rtz", "exact", "fused")


def chain_hyp(h: Hyp, mode: str, K: int) -> Hyp:
    """The hypothesis for a whole chain as one long instruction (modes other than separate)."""
    if mode == "fused":
        return replace(h, block_size=K)
    if mode == "exact":
        return replace(h, inter_fmt="exact")
    fmt, r = mode.split(":")[1].split("/")
    return replace(h, inter_fmt=fmt, inter_rounding=r)


def predict_chain(h: Hyp, mode: str, prods: list[Fraction], c: Fraction, out_fmt: str, k: int) -> float:
    """D of a chain of instructions of k products. separate: each instruction rounds its D into the
    accumulator format (D -> next C, what PTX says); wide: the sum between instructions kept in f32 (or
    exactly) and rounded once at the end; fused: the whole chain one block."""
    if mode != "separate":
        return predict(chain_hyp(h, mode, len(prods)), prods, c, out_fmt)
    d: float = float(c)
    for i in range(0, len(prods), k):
        d = predict(h, prods[i : i + k], Fraction(d), out_fmt)
        if not math.isfinite(d):
            return d
    return d


@shared
def chain_probes(ins: Instr, h: Hyp) -> list[Probe]:
    """Crafted chains: a cancelling pair in instruction 1 and a small term in instruction 2 (survives
    unless the chain fuses into one block), and sums in instruction 1 that need rounding, exposed by
    instruction 2."""
    e, k = scale_exp(ins), ins.k
    out = []

    def make(label: str, placed: dict[int, tuple[float, float]], c: float = 0.0) -> Probe:
        a, b, cc = _terms(ins, placed, c)
        prods = _products(a, b)
        return Probe(
            "chain", label, a, b, cc, {m: predict_chain(h, m, prods, Fraction(cc), ins.c, k) for m in CHAIN_MODES}
        )

    small = _term(e - h.align_frac_bits - 2, ins.a)
    if small is not None and _out_ok(2.0 ** (e - h.align_frac_bits - 2), ins.c):
        out.append(make("+-2^e in instr 1, small in instr 2", {0: _term(e, ins.a), 1: _term(e, ins.a, -1.0), k: small}))  # type: ignore[dict-item]
    cands = (make(label, placed) for label, placed in _carry_candidates(ins, 0, k, k, h.align_frac_bits))
    return out + greedy_cover(p for p in cands if all(math.isfinite(v) for v in p.predictions.values()))


@dataclass
class ChainFindings:
    ins: Instr
    mode: str | None = None
    note: str = ""
    probes: list[Probe] = field(default_factory=list)


def probe_chain(runner: Runner, ins: Instr, h: Hyp) -> ChainFindings:
    """What happens between chained instructions, given what the single instruction's probes found (h)."""
    f = ChainFindings(ins)
    f.probes = chain_probes(ins, h)
    run_probes(runner, ins, f.probes)
    f.mode, f.note = pick_preferred(f.probes, list(CHAIN_MODES)) if f.probes else (None, "no probe possible")
    return f
