"""The probes' hypotheses in Fraction arithmetic: the evaluator of the numerics suite as it was before its
integer rewrite (bench/numerics/evaluator.py), kept as the definition that rewrite is tested against, bit for
bit (test_probe_host.py)."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

from gpudissect.bench.numerics.common import FMT, fmt_max
from gpudissect.bench.numerics.evaluator import Hyp


def exponent(x: Fraction) -> int:
    """floor(log2 |x|) for x != 0."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1


def _aligned(x: Fraction, u: int, mode: str) -> int:
    """x in units of 2^u, rounded under the alignment's mode."""
    return _align(x / Fraction(2) ** u, mode)


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
