"""Probes: crafted inputs, the prediction of each hypothesis, the hardware's answer and the verdict, per
instruction and parameter (alignment bits and reference, alignment rounding, normalisation, block size,
D's fraction bits, where C joins, output rounding, C's alignment, subnormals, special values)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction

import numpy as np

from .common import FMT, Instr, fmt_max, fmt_max_exp, fmt_min_normal_exp, from_values, round_values, to_values
from .evaluator import Hyp, round_to
from .multiblock import greedy_cover
from .probe_kit import (
    NO_PROBE,
    Probe,
    _make,
    _out_ok,
    _term,
    _terms,
    agreed,
    no_match,
    probe_bits,  # noqa: F401
    scale_exp,
    shared,
)


@shared
def align_probes(ins: Instr, base: Hyp, fmax: int = 40) -> list[Probe]:
    """{+2^e, -2^e, 2^(e-j)} at positions 0, 1, 2: the small term survives iff j <= align_frac_bits."""
    e = scale_exp(ins)
    out = []
    hyps = {str(f): replace(base, align_frac_bits=f) for f in range(2, fmax + 1)}
    for j in range(1, fmax + 1):
        big, neg, small = _term(e, ins.a), _term(e, ins.a, -1.0), _term(e - j, ins.a)
        if None in (big, neg, small) or not _out_ok(2.0 ** (e - j), ins.c):
            break
        a, b, c = _terms(ins, {0: big, 1: neg, 2: small})  # type: ignore[dict-item]
        out.append(_make("align_frac_bits", f"j={j}", ins, a, b, c, hyps))
    return out


@shared
def align_ref_probes(ins: Instr, f: int, fmax: int = 40) -> list[Probe]:
    """{+2.25 * 2^e, -2.25 * 2^e, 2^(e-j)} (1.5 x 1.5 significands): the leading bit of the product is
    one above the power of two's. Aligned to the exact leading bit, the small term survives only up to
    j = F - 1 (F found with powers of two); aligned to the nominal exponent (ea + eb + 1: the same for
    both probes), up to j = F as before."""
    e = scale_exp(ins)
    out = []
    for j in range(1, fmax + 1):
        big, neg, small = _term(e, ins.a), _term(e, ins.a, -1.0), _term(e - j, ins.a)
        if None in (big, neg, small) or not _out_ok(2.0 ** (e - j), ins.c):
            break
        a, b, c = _terms(ins, {0: (1.5 * big[0], 1.5 * big[1]), 1: (-1.5 * big[0], 1.5 * big[1]), 2: small})  # type: ignore[index]
        v = 2.0 ** (e - j)
        out.append(
            Probe("align_ref", f"j={j}", a, b, c, {"exact": v if j <= f - 1 else 0.0, "nominal": v if j <= f else 0.0})
        )
    return out


def decide_align_bits(probes: list[Probe]) -> tuple[int | None, str]:
    """Kept small terms must be exactly j = 1..F; F = None when the pattern fits no hypothesis."""
    kept = [p.got != 0 for p in probes]
    f = next((i for i, k in enumerate(kept) if not k), len(kept))
    if any(kept[f:]):
        return None, "inconsistent: " + "".join("1" if k else "0" for k in kept)
    if f == len(kept):
        return f, f">= {f} (every tested bit kept)"
    return f, "ok"


@shared
def rounding_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """{+2^e, -2^e, +-0.75 * 2^(e-F)}: truncate -> (0, 0), floor -> (0, -u), rne -> (u, -u)."""
    e, f = scale_exp(ins), base.align_frac_bits
    hyps = {m: replace(base, align_rounding=m) for m in ("truncate", "floor", "rne")}
    out = []
    for sign in (1.0, -1.0):
        small = _term(e - f - 1, ins.a, sign, 1.5)
        if small is None or not _out_ok(2.0 ** (e - f), ins.c):
            continue
        a, b, c = _terms(ins, {0: _term(e, ins.a), 1: _term(e, ins.a, -1.0), 2: small})  # type: ignore[dict-item]
        out.append(_make("align_rounding", f"sign={'+' if sign > 0 else '-'}", ins, a, b, c, hyps))
    return out


@shared
def block_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """+2^e, -2^e at positions 0, 1 and a small 2^(e-F-2) at p: the small term survives iff p is in
    a later block (the pair cancels to an exact 0 first)."""
    e, f = scale_exp(ins), base.align_frac_bits
    small = _term(e - f - 2, ins.a)
    if small is None or not _out_ok(2.0 ** (e - f - 2), ins.c):
        return []
    sizes = [s for s in (2, 4, 8, 16, 32) if s <= ins.k]
    hyps = {str(s): replace(base, block_size=s) for s in sizes}
    out = []
    for p in range(2, ins.k):
        a, b, c = _terms(ins, {0: _term(e, ins.a), 1: _term(e, ins.a, -1.0), p: small})  # type: ignore[dict-item]
        out.append(_make("block_size", f"p={p}", ins, a, b, c, hyps))
    return out


@shared
def acc_bits_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """{+2^e, +2^e, +2^(e-j)}: the sum's leading bit is one above the largest term's, so 2^(e-j) survives
    iff j <= F (alignment) and j + 1 <= the fraction bits D keeps. Hopper fp8 -> f32 keeps 13 (every
    D has its low 10 fraction bits zero); formats that keep all of the output's bits give out_man_bits None."""
    e = scale_exp(ins)
    full = FMT[ins.c][1]
    hyps = {str(m): replace(base, out_man_bits=None if m == full else m) for m in range(4, full + 1)}
    out = []
    for j in range(1, full + 2):
        big, small = _term(e, ins.a), _term(e - j, ins.a)
        if None in (big, small) or not _out_ok(2.0 ** (e + 2), ins.c) or not _out_ok(2.0 ** (e - j), ins.c):
            break
        a, b, c = _terms(ins, {0: big, 1: big, 2: small})  # type: ignore[dict-item]
        out.append(_make("out_man_bits", f"j={j}", ins, a, b, c, hyps))
    return out


def decide_acc_bits(probes: list[Probe], full: int) -> tuple[int | None, str]:
    """out_man_bits: None where D keeps every bit of its format (or no probe tells), else the count."""
    if not probes:
        return None, NO_PROBE
    common = agreed(probes)
    if not common:
        return None, no_match(probes)
    if str(full) in common:
        return (
            None,
            f"ok (all {full} fraction bits of D; alignment hides at most "
            + f"{full - min(int(m) for m in common)} of them)"
            if len(common) > 1
            else "ok",
        )
    m = max(int(x) for x in common)  # indistinguishable candidates: the widest that fits
    return m, "ok" if len(common) == 1 else f"ok (every one of {sorted(int(x) for x in common)} fits; widest taken)"


@shared
def c_ref_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """C = 2^e above every product, products -2^(e-j) (and -2^(e-j) - half an ulp of D below 2^e):
    the product survives iff j <= F + c_ref_shift, seen as D one ulp below C (rtz) or at the tie (rne).
    Hopper aligns C like a product (shift 0); in the model's terms that is c_ref_offset 1 with the
    nominal reference."""
    e = scale_exp(ins)
    fb = min(FMT[ins.c][1], base.out_man_bits or FMT[ins.c][1])
    hyps = {str(s): replace(base, c_ref_shift=s) for s in (-2, -1, 0, 1, 2)}
    first, second = (0, 1) if base.c_position == "first" else (ins.k - 2, ins.k - 1)
    out = []
    for j in range(max(1, base.align_frac_bits - 4), base.align_frac_bits + 4):
        small, half = _term(e - j, ins.a, -1.0), _term(e - fb - 2, ins.a, -1.0)
        if small is None or not _out_ok(2.0**e, ins.c) or not _out_ok(2.0 ** (e - j), ins.c):
            continue
        a, b, c = _terms(ins, {first: small}, 2.0**e)
        out.append(_make("c_ref_shift", f"C=2^e, -2^(e-{j})", ins, a, b, c, hyps))
        if half is not None and j > fb + 2:
            a, b, c = _terms(ins, {first: half, second: small}, 2.0**e)
            out.append(_make("c_ref_shift", f"C=2^e, -half ulp, -2^(e-{j})", ins, a, b, c, hyps))
    return out


def decide_block(probes: list[Probe], k: int) -> tuple[int | None, str]:
    sep = [p.got != 0 for p in probes]  # positions 2..K-1
    if not any(sep):
        return k, "ok (one block: C and all K products fused)"
    first = 2 + sep.index(True)
    want = [pos >= first for pos in range(2, k)]
    if sep != want:
        return None, "non-contiguous: " + "".join("1" if s else "0" for s in sep)
    return first, "ok"


@shared
def c_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """C = small, with +2^e, -2^e in the first (resp. last) two positions: C is dropped iff it is fused
    with that block."""
    e, f = scale_exp(ins), base.align_frac_bits
    s = 2.0 ** (e - f - 2)
    if _term(e, ins.a) is None or not _out_ok(s, ins.c) or not _out_ok(s, "f32"):
        return []
    hyps = {m: replace(base, c_position=m) for m in ("first", "last", "separate")}
    out = []
    for name, (p0, p1) in (("pair first", (0, 1)), ("pair last", (ins.k - 2, ins.k - 1))):
        a, b, c = _terms(ins, {p0: _term(e, ins.a), p1: _term(e, ins.a, -1.0)}, s)  # type: ignore[dict-item]
        out.append(_make("c_position", name, ins, a, b, c, hyps))
    return out


@shared
def normalize_probes(ins: Instr, base: Hyp) -> list[Probe]:
    """Order inside a block: [s, +2^e, -2^e] vs [+2^e, -2^e, s]. A fused block gives the same for both;
    per-add normalisation loses s only when it comes first. s is far below both F and fp32."""
    e = scale_exp(ins)
    hyps = {m: replace(base, normalize=m) for m in ("per_block", "per_add")}
    out = []
    for gap in range(40, 0, -1):
        small = _term(e - gap, ins.a)
        if small is not None and _out_ok(2.0 ** (e - gap), ins.c):
            break
    else:
        return []
    big, neg = _term(e, ins.a), _term(e, ins.a, -1.0)
    for label, order in (("small first", {0: small, 1: big, 2: neg}), ("small last", {0: big, 1: neg, 2: small})):
        a, b, c = _terms(ins, order)  # type: ignore[arg-type]
        out.append(_make("normalize", f"{label} (gap {gap})", ins, a, b, c, hyps))
    return out


@shared
def out_rounding_probes(ins: Instr, base: Hyp, limit: int = 16) -> list[Probe]:
    """Sums n * 2^e +- (2^(e-j1) + 2^(e-j2)) within one fused block whose exact value needs more bits
    than the output: kept where the rounding hypotheses disagree, greedily until every pair of
    hypotheses is told apart."""
    e, f = scale_exp(ins), base.align_frac_bits
    modes = ("rne", "rtz", "rna", "rup", "rdown")
    hyps = {m: replace(base, out_rounding=m) for m in modes}
    p_out = min(FMT[ins.c][1], base.out_man_bits or FMT[ins.c][1])  # fraction bits D keeps
    start = (-(-ins.k // base.block_size) - 1) * base.block_size  # the last block: its sum becomes D

    def cands() -> Iterator[Probe]:  # lazily: greedy_cover stops building once it has its probes
        for n_big in (1, 2, 3):
            if n_big + 2 > min(base.block_size, ins.k):
                continue
            for j1 in range(max(1, p_out - 2), f + 1):
                for j2 in range(j1 + 1, f + 1):
                    for sign in (1.0, -1.0):
                        placed = {start + i: _term(e - 1, ins.a, sign, 1.0) for i in range(n_big)}  # n * 2^(e-1)
                        placed[start + n_big] = _term(e - 1 - j1, ins.a, sign)
                        placed[start + n_big + 1] = _term(e - 1 - j2, ins.a, sign)
                        if any(v is None for v in placed.values()):
                            continue
                        a, b, c = _terms(ins, placed)  # type: ignore[arg-type]
                        pr = _make(
                            "out_rounding",
                            f"{'+' if sign > 0 else '-'}{n_big}x2^{e - 1}+2^{e - 1 - j1}+2^{e - 1 - j2}",
                            ins,
                            a,
                            b,
                            c,
                            hyps,
                        )
                        if (
                            all(math.isfinite(v) and v != 0 for v in pr.predictions.values())
                            and len(set(pr.predictions.values())) > 1
                        ):
                            yield pr

    return greedy_cover(cands(), limit, modes, key=lambda v: v)  # finite, nonzero predictions: compared as values


@shared
def subnormal_probes(ins: Instr) -> list[Probe]:
    """A subnormal input times a power of two that brings the product back to a normal output: kept
    or flushed; and a product whose exact value is subnormal in the output (where one exists)."""
    _, fb, bias, _ = FMT[ins.a]
    sub = 2.0 ** (1 - bias - fb)  # smallest subnormal of the input
    out = []
    for side in ("a", "b"):
        target = fmt_min_normal_exp(ins.c) + 4 if ins.c == "f16" else -20
        y_e = target - (1 - bias - fb)
        if not fmt_min_normal_exp(ins.a) <= y_e <= fmt_max_exp(ins.a):
            y_e = fmt_max_exp(ins.a)
        y = 2.0**y_e
        x, yv = (sub, y) if side == "a" else (y, sub)
        a, b, c = _terms(ins, {0: (x, yv)})
        keep = sub * y
        out.append(Probe("subnormal_in", f"subnormal in {side.upper()}", a, b, c, {"keep": keep, "flush": 0.0}))
    # subnormal output: smallest normal output / 4 as an exact product of normal inputs, else via C
    target = 2.0 ** (fmt_min_normal_exp(ins.c) - 2)
    t = _term(fmt_min_normal_exp(ins.c) - 2, ins.a)
    if t is not None:
        a, b, c = _terms(ins, {0: t})
        out.append(Probe("subnormal_out", "product subnormal in D", a, b, c, {"keep": target, "flush": 0.0}))
    else:  # e.g. f16 inputs -> f32: products never reach f32 subnormals; a subnormal C, all products 0
        a, b, c = _terms(ins, {}, target)
        out.append(Probe("subnormal_out", "subnormal C, products 0", a, b, c, {"keep": target, "flush": 0.0}))
    return out


@shared
def special_probes(ins: Instr) -> list[Probe]:
    """Special values, with the IEEE-754 answer as the one prediction (and the plausible alternatives)."""
    inf = math.inf
    fin = ins.a not in ("e4m3",)  # e4m3 has no infinity
    big = fmt_max(ins.a)
    out = []
    add = lambda label, pl, c, pred: out.append(Probe("special", label, *_terms(ins, pl, c), pred))
    # every product a negative zero (the unused positions too): IEEE gives -0 only then
    add("(-0)*1 + (-0)", dict.fromkeys(range(ins.k), (-0.0, 1.0)), -0.0, {"ieee": -0.0, "positive": 0.0})
    add("(+0)*(-1) + (+0)", {0: (0.0, -1.0)}, 0.0, {"ieee": 0.0})
    add("1*1 - 1*1 + (-0)", {0: (1.0, 1.0), 1: (-1.0, 1.0)}, -0.0, {"ieee": 0.0})
    if fin:
        add("inf*1", {0: (inf, 1.0)}, 0.0, {"ieee": inf})
        add("inf*0", {0: (inf, 0.0)}, 0.0, {"ieee": math.nan})
        add("inf*1 + (-inf)*1", {0: (inf, 1.0), 1: (-inf, 1.0)}, 0.0, {"ieee": math.nan})
        add("1*1 + C=inf", {0: (1.0, 1.0)}, inf, {"ieee": inf})
    add("NaN*1", {0: (math.nan, 1.0)}, 0.0, {"ieee": math.nan})
    add("1*1 + C=NaN", {0: (1.0, 1.0)}, math.nan, {"ieee": math.nan})
    # overflow of the sum in the output format
    top = fmt_max_exp(ins.c)
    t = _term(top, ins.a)
    if t is not None:
        pl = dict.fromkeys(range(min(4, ins.k)), t)
        add(f"{min(4, ins.k)} x 2^{top} (overflow {ins.c})", pl, 0.0, {"inf": inf, "max_finite": fmt_max(ins.c)})
    add(
        f"max*max ({ins.a})",
        {0: (big, big)},
        0.0,
        {
            "exact/inf": round_to(Fraction(big) * Fraction(big), ins.c, "rne"),
            "max_finite": round_to(Fraction(big) * Fraction(big), ins.c, "rtz"),
        },
    )
    return out


@shared
def tf32_probes(ins: Instr) -> list[Probe]:
    """fp32 bit patterns in tf32 operands: are the low 13 bits ignored (truncated), rounded, or used?"""
    if ins.a != "tf32":
        return []
    out = []
    for low, label in ((0x3F800001, "1+2^-23"), (0x3F801000, "1+2^-11"), (0x3F801800, "1+2^-11+2^-12")):
        v = float(np.array([low], np.uint32).view(np.float32)[0])
        trunc = float(np.array([low & 0xFFFFE000], np.uint32).view(np.float32)[0])
        rnd = float(to_values("f32", round_values("tf32", np.array([v])))[0])
        a, b, c = _terms(ins, {0: (1.0, 1.0), 1: (-1.0, 1.0)})
        p = Probe(
            "tf32_low_bits",
            f"a={label} (0x{low:08X}) then -1",
            a,
            b,
            c,
            {"truncate": trunc - 1.0, "round": rnd - 1.0, "used": v - 1.0},
        )
        p.a[0] = v
        p.raw_a = [low] + [int(x) for x in from_values("tf32", np.array(p.a[1:]))]
        # a[0]*b[0] with a[0] = pattern, b[0] = 1; a[1]*b[1] = -1
        out.append(p)
    return out


@shared
def fp8_probes(ins: Instr) -> list[Probe]:
    """Codes outside the finite range of fp8 (e4m3 NaN S.1111.111; e5m2 inf / NaN)."""
    if ins.a not in ("e4m3", "e5m2"):
        return []
    codes = {
        "e4m3": [(0x7F, "0x7F (NaN)"), (0xFF, "0xFF (-NaN)")],
        "e5m2": [(0x7C, "0x7C (+inf)"), (0xFC, "0xFC (-inf)"), (0x7E, "0x7E (NaN)")],
    }[ins.a]
    out = []
    for code, label in codes:
        v = float(to_values(ins.a, np.array([code]))[0])
        a, b, c = _terms(ins, {0: (1.0, 1.0)})
        p = Probe("fp8_range", f"A={label} x 1", a, b, c, {"ieee": v})
        p.raw_a = [code] + [0] * (ins.k - 1)
        out.append(p)
    return out
