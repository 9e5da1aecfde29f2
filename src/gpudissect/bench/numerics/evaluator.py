"""Exact hypothesis evaluator of the probes, independent of gpudissect.numerics: what each hypothesis about
the tensor core's summation predicts for a probe, with rational arithmetic."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from .common import FMT, fmt_max


@dataclass(frozen=True)
class Hyp:
    block_size: int = 16
    align_frac_bits: int = 23
    align_rounding: str = "truncate"  # truncate (toward zero) | floor (two's complement) | rne
    normalize: str = "per_block"  # per_block | per_add
    c_position: str = "first"  # first | last | separate: which block C is fused into
    out_rounding: str = "rne"  # rne | rtz | rna | rup | rdown
    subnormal_in: str = "keep"
    out_man_bits: int | None = None  # D rounded to this many fraction bits (None: all of the output format's)
    c_ref_shift: int = 0  # C (and the running sum) align as if their leading bit were this much higher
    inter_fmt: str = "f32"  # the sum between blocks: f32 | f16 | e8m13 (f32 range, 13 fraction bits) | exact
    inter_rounding: str | None = None  # its rounding (None: out_rounding)
    c_add: str = "fused"  # c_position "separate": fused (a two-term block) | ieee_rne | ieee_rtz (one IEEE add)


def exponent(x: Fraction) -> int:
    """floor(log2 |x|) for x != 0, exactly (integer shifts: no Fraction is built, the probes call this
    hundreds of thousands of times)."""
    n, d = abs(x.numerator), x.denominator
    e = n.bit_length() - d.bit_length()
    return e if (n >= d << e if e >= 0 else n << -e >= d) else e - 1


def _aligned(x: Fraction, u: int, mode: str) -> int:
    """_align(x / 2**u, mode) in integers: x = n/d, so x / 2**u = n / (d << u) (or (n << -u) / d)."""
    n, d = (x.numerator, x.denominator << u) if u >= 0 else (x.numerator << -u, x.denominator)
    if mode == "floor":
        return n // d
    if mode == "truncate":
        return n // d if n >= 0 else -(-n // d)
    q, r = divmod(n, d)  # d > 0: 0 <= r < d; half to even, as Fraction's round
    return q + 1 if 2 * r > d or (2 * r == d and q % 2) else q


def _align(q: Fraction, mode: str) -> int:
    if mode == "truncate":
        return math.trunc(q)
    if mode == "floor":
        return math.floor(q)
    return round(q)  # Fraction rounds half to even


def round_to(x: Fraction, fmt: str, mode: str, man_bits: int | None = None) -> float:
    """Exact rational -> nearest value of fmt (f32 / f16) under `mode`, with subnormals and overflow;
    man_bits: keep only that many fraction bits (fmt's exponent range)."""
    if x == 0:
        return 0.0
    _, fb, bias, _ = FMT[fmt]
    if man_bits is not None:
        fb = min(fb, man_bits)
    e = max(exponent(x), 1 - bias)
    ulp = Fraction(2) ** (e - fb)
    q = x / ulp
    if mode == "rne":
        r = round(q)
    elif mode == "rtz":
        r = math.trunc(q)
    elif mode == "rna":
        r = math.floor(abs(q) + Fraction(1, 2)) * (1 if q > 0 else -1)
    elif mode == "rup":
        r = math.ceil(q)
    else:
        r = math.floor(q)
    v = r * ulp
    big = Fraction(fmt_max(fmt))
    if abs(v) > big:
        toward_inf = mode in ("rne", "rna") or (mode == "rup" and v > 0) or (mode == "rdown" and v < 0)
        return math.copysign(math.inf if toward_inf else float(big), float(v))
    return float(v)


def fused(terms: list[Fraction], h: Hyp, accs: tuple[Fraction, ...] = ()) -> Fraction:
    """One fused step: terms (products) and accs (C, the running sum: their reference exponent shifted
    by c_ref_shift) aligned to the largest reference keeping align_frac_bits bits, summed exactly."""
    refs = [exponent(t) for t in terms if t != 0] + [exponent(t) + h.c_ref_shift for t in accs if t != 0]
    if not refs:
        return Fraction(0)
    u = max(refs) - h.align_frac_bits
    total = sum((_aligned(t, u, h.align_rounding) for t in [*terms, *accs] if t != 0), 0)
    return total * Fraction(2) ** u


def predict(h: Hyp, products: list[Fraction], c: Fraction, out_fmt: str) -> float:
    """What hypothesis h says D = sum(products) + c is (sums between blocks rounded into h.inter_fmt with
    h.inter_rounding, default f32 with out_rounding; the final one to out_fmt)."""

    def inter(x: Fraction) -> Fraction:
        if h.inter_fmt == "exact":
            return x
        fmt, man = ("f32", 13) if h.inter_fmt == "e8m13" else (h.inter_fmt, None)
        r = round_to(x, fmt, h.inter_rounding or h.out_rounding, man)
        if not math.isfinite(r):
            raise _Overflow(r)
        return Fraction(r)

    try:
        return _predict(h, products, c, out_fmt, inter)
    except _Overflow as e:  # an intermediate sum overflowed fp32: the infinity (or max) propagates
        return e.value if math.isinf(e.value) else round_to(Fraction(e.value), out_fmt, h.out_rounding, h.out_man_bits)


class _Overflow(Exception):
    def __init__(self, value: float):
        self.value = value


def _predict(
    h: Hyp, products: list[Fraction], c: Fraction, out_fmt: str, inter: Callable[[Fraction], Fraction]
) -> float:
    if h.normalize == "per_add":
        acc = c
        for p in products:
            acc = inter(fused([p], h, (acc,)))
        return round_to(acc, out_fmt, h.out_rounding, h.out_man_bits)
    blocks = [products[i : i + h.block_size] for i in range(0, len(products), h.block_size)]
    acc: Fraction | None = None
    for i, blk in enumerate(blocks):
        accs: list[Fraction] = []
        if acc is not None:
            accs.append(acc)
        if (h.c_position == "first" and i == 0) or (h.c_position == "last" and i == len(blocks) - 1):
            accs.append(c)
        s = fused(list(blk), h, tuple(accs))
        acc = s if i == len(blocks) - 1 else inter(s)
    assert acc is not None
    if h.c_position == "separate":
        if h.c_add != "fused":  # one IEEE addition of C to the rounded product sum
            return round_to(inter(acc) + c, out_fmt, h.c_add.split("_")[1], h.out_man_bits)
        acc = fused([], h, (inter(acc), c))
    return round_to(acc, out_fmt, h.out_rounding, h.out_man_bits)
