"""Exact hypothesis evaluator of the probes, independent of gpudissect.numerics: what each hypothesis about
the tensor core's summation predicts for a probe, exactly.

Every value a probe holds is dyadic (products of floats, and C), and so is every aligned term, sum and
rounding of such values: one predict works on integers that count units of 2^-s, where 2^-s is the finest
bit of its inputs, and every step is an integer shift (no Fraction is built on the probes' hot path, which
called this ~60,000 times per run). tests/bench/numerics/rational_evaluator.py keeps the same hypotheses in
Fraction arithmetic, the definition this is tested against bit for bit."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

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


def _scale(values: Sequence[Fraction]) -> int:
    """s such that every one of `values` is an integer number of 2^-s (the finest bit among them)."""
    s = 0
    for v in values:
        if v:
            d = v.denominator
            if d & (d - 1):
                raise ValueError(f"{v} is not dyadic: the probes' values are products of floats")
            s = max(s, d.bit_length() - 1)
    return s


def _units(v: Fraction, s: int) -> int:
    """v in units of 2^-s (v dyadic, its denominator at most 2^s)."""
    return v.numerator << (s + 1 - v.denominator.bit_length()) if v else 0


def _shift(n: int, k: int, mode: str) -> int:
    """n / 2^k as an integer, rounded under `mode` (the alignment's truncate / floor / rne, or the output's
    rne / rtz / rna / rup / rdown); exact for k <= 0."""
    if k <= 0:
        return n << -k
    if mode in ("floor", "rdown"):
        return n >> k
    if mode in ("truncate", "rtz"):
        return n >> k if n >= 0 else -(-n >> k)
    if mode == "rup":
        return -(-n >> k)
    if mode == "rna":  # half away from zero
        m = (abs(n) + (1 << (k - 1))) >> k
        return m if n >= 0 else -m
    if mode != "rne":
        raise ValueError(f"unknown rounding {mode!r}")
    q = n >> k  # half to even
    r, half = n - (q << k), 1 << (k - 1)
    return q + 1 if r > half or (r == half and q & 1) else q


@cache
def _limits(fmt: str, man_bits: int | None) -> tuple[int, int, float]:
    """(fraction bits kept, least exponent of a normal, largest finite value) of fmt."""
    _, fb, bias, _ = FMT[fmt]
    return (fb if man_bits is None else min(fb, man_bits)), 1 - bias, fmt_max(fmt)


def _round(x: int, s: int, fmt: str, mode: str, man_bits: int | None = None) -> tuple[float, int]:
    """x units of 2^-s -> (the nearest value of fmt under `mode` as a float, with subnormals and overflow;
    that value in units of 2^-s, where finite: a rounding of a multiple of 2^-s is one). man_bits: keep
    only that many fraction bits (fmt's exponent range)."""
    if x == 0:
        return 0.0, 0
    fb, emin, big = _limits(fmt, man_bits)
    g = max(abs(x).bit_length() - 1 - s, emin) - fb  # the unit of the last kept bit: 2^g
    r = _shift(x, g + s, mode)
    v = math.ldexp(r, g)  # exact: r has at most fb + 2 bits
    if abs(v) > big:
        toward_inf = mode in ("rne", "rna") or (mode == "rup" and v > 0) or (mode == "rdown" and v < 0)
        v = math.copysign(math.inf if toward_inf else big, v)
        return v, (_units(Fraction(v), s) if math.isfinite(v) else 0)
    return v, (r << (g + s) if g + s >= 0 else r >> -(g + s))


def round_to(x: Fraction, fmt: str, mode: str, man_bits: int | None = None) -> float:
    """Exact (dyadic) rational -> nearest value of fmt (f32 / f16) under `mode`, with subnormals and overflow;
    man_bits: keep only that many fraction bits (fmt's exponent range)."""
    s = _scale([x])
    return _round(_units(x, s), s, fmt, mode, man_bits)[0]


def predict(h: Hyp, products: list[Fraction], c: Fraction, out_fmt: str) -> float:
    """What hypothesis h says D = sum(products) + c is (sums between blocks rounded into h.inter_fmt with
    h.inter_rounding, default f32 with out_rounding; the final one to out_fmt)."""
    return predictor(products, c, out_fmt)(h)


def predictor(products: list[Fraction], c: Fraction, out_fmt: str) -> Callable[[Hyp], float]:
    """predict of any hypothesis for one probe's inputs (converted to integers once, not per hypothesis)."""
    s = _scale([*products, c])
    units, cu = [_units(p, s) for p in products], _units(c, s)
    return lambda h: _Eval(h, s, out_fmt).run(units, cu)


class _Overflow(Exception):
    def __init__(self, value: float):
        self.value = value


class _Eval:
    """One prediction: every value in units of 2^-s."""

    def __init__(self, h: Hyp, s: int, out_fmt: str):
        self.h, self.s, self.out_fmt = h, s, out_fmt

    def fused(self, terms: Sequence[int], accs: Sequence[int] = ()) -> int:
        """One fused step: terms (products) and accs (C, the running sum: their reference exponent shifted by
        c_ref_shift) aligned to the largest reference keeping align_frac_bits bits, summed exactly."""
        h = self.h
        refs = [abs(t).bit_length() for t in terms if t] + [abs(t).bit_length() + h.c_ref_shift for t in accs if t]
        if not refs:
            return 0
        # the alignment unit 2^u, u = (largest reference exponent) - align_frac_bits, is 2^k units of 2^-s
        k = max(refs) - 1 - h.align_frac_bits
        if k <= 0:  # no bit of any term lies below the unit
            return sum(terms) + sum(accs)
        return sum(_shift(t, k, h.align_rounding) for t in [*terms, *accs] if t) << k

    def inter(self, x: int) -> int:
        """The sum carried between blocks, rounded into inter_fmt (an overflow ends the prediction)."""
        h = self.h
        if h.inter_fmt == "exact":
            return x
        fmt, man = ("f32", 13) if h.inter_fmt == "e8m13" else (h.inter_fmt, None)
        v, units = _round(x, self.s, fmt, h.inter_rounding or h.out_rounding, man)
        if not math.isfinite(v):
            raise _Overflow(v)  # the infinity propagates to D
        return units

    def out(self, x: int, mode: str) -> float:
        return _round(x, self.s, self.out_fmt, mode, self.h.out_man_bits)[0]

    def run(self, products: list[int], c: int) -> float:
        try:
            return self._run(products, c)
        except _Overflow as e:  # an intermediate sum overflowed fp32
            return e.value

    def _run(self, products: list[int], c: int) -> float:
        h = self.h
        if h.normalize == "per_add":
            acc = c
            for p in products:
                acc = self.inter(self.fused([p], (acc,)))
            return self.out(acc, h.out_rounding)
        blocks = [products[i : i + h.block_size] for i in range(0, len(products), h.block_size)]
        total: int | None = None
        for i, blk in enumerate(blocks):
            accs: list[int] = []
            if total is not None:
                accs.append(total)
            if (h.c_position == "first" and i == 0) or (h.c_position == "last" and i == len(blocks) - 1):
                accs.append(c)
            sm = self.fused(blk, accs)
            total = sm if i == len(blocks) - 1 else self.inter(sm)
        assert total is not None
        if h.c_position == "separate":
            if h.c_add != "fused":  # one IEEE addition of C to the rounded product sum
                return self.out(self.inter(total) + c, h.c_add.split("_")[1])
            total = self.fused([], (self.inter(total), c))
        return self.out(total, h.out_rounding)
