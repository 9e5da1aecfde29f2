"""Bit-level floating-point formats used by the tensor cores: exact decode, rounding encode.

Every format is sign / exponent / mantissa with an implicit leading bit and gradual underflow.
Two formats differ from plain IEEE 754 binary interchange formats:
- ``tf32`` lives in a 32-bit container laid out like f32 (1-8-10 in the top 19 bits); the low 13
  bits are ignored on decode and written as zero on encode.
- ``e4m3`` (OCP FP8 "E4M3FN") has no infinity; only S.1111.111 (0x7f / 0xff) is NaN, so the
  all-ones exponent holds normal numbers up to 448.

Saturation rules of :func:`encode` (``saturate=None`` picks the format's default):
- e4m3: saturates by default, like PTX ``cvt.rn.satfinite.e4m3x2.f32`` (the only form PTX has):
  finite overflow and +-inf become +-448, NaN becomes 0x7f. With ``saturate=False`` overflow is NaN.
- every other format: IEEE overflow by default (rne -> +-inf, rtz -> +-max finite); with
  ``saturate=True`` overflow and +-inf become +-max finite.
NaN always encodes to the format's canonical quiet NaN (positive).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

ROUNDINGS = ("rne", "rtz", "rd", "ru")  # nearest-even, toward zero, toward -inf, toward +inf


@dataclass(frozen=True)
class Format:
    name: str
    width: int  # container bits
    exp_bits: int
    man_bits: int
    bias: int
    has_inf: bool
    pad_bits: int = 0  # ignored low bits of the container (tf32: 13)

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal (also the exponent subnormals use)."""
        return 1 - self.bias

    @property
    def p(self) -> int:
        """Significand precision in bits, implicit bit included."""
        return self.man_bits + 1

    @property
    def emax_field(self) -> int:
        """Largest exponent field holding finite numbers."""
        return (1 << self.exp_bits) - (2 if self.has_inf else 1)

    @property
    def max_man_at_emax(self) -> int:
        """Largest mantissa field at emax_field (e4m3: all-ones is NaN)."""
        full = (1 << self.man_bits) - 1
        return full if self.has_inf else full - 1

    @property
    def max_finite(self) -> float:
        m = (1 << self.man_bits) + self.max_man_at_emax
        return float(m) * 2.0 ** (self.emax_field - self.bias - self.man_bits)

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (self.emin - self.man_bits)

    @property
    def min_normal(self) -> float:
        return 2.0**self.emin

    @property
    def sign_bit(self) -> int:
        return 1 << (self.width - 1)

    @property
    def container_dtype(self) -> type[np.unsignedinteger[Any]]:
        return {8: np.uint8, 16: np.uint16, 32: np.uint32}[self.width]

    @property
    def canonical_nan(self) -> int:
        exp = ((1 << self.exp_bits) - 1) << self.man_bits
        man = (1 << self.man_bits) - 1 if not self.has_inf else 1 << (self.man_bits - 1)
        return (exp | man) << self.pad_bits

    def inf_bits(self, negative: bool = False) -> int:
        if not self.has_inf:
            raise ValueError(f"{self.name} has no infinity")
        bits = (((1 << self.exp_bits) - 1) << self.man_bits) << self.pad_bits
        return bits | (self.sign_bit if negative else 0)

    @cached_property
    def _fields_table(self) -> tuple[np.ndarray, ...] | None:
        """For formats of <= 16 bits: per bit pattern (sign, significand, scale, nominal exp, class)."""
        if self.width > 16:
            return None
        return _fields_uncached(self, np.arange(1 << self.width, dtype=np.int64))


FORMATS: dict[str, Format] = {
    "f16": Format("f16", 16, 5, 10, 15, True),
    "bf16": Format("bf16", 16, 8, 7, 127, True),
    "tf32": Format("tf32", 32, 8, 10, 127, True, pad_bits=13),
    "e4m3": Format("e4m3", 8, 4, 3, 7, False),
    "e5m2": Format("e5m2", 8, 5, 2, 15, True),
    "f32": Format("f32", 32, 8, 23, 127, True),
}

# Classes returned by fields()
FINITE, INF, NAN = 0, 1, 2


def get_format(fmt: str | Format) -> Format:
    if isinstance(fmt, Format):
        return fmt
    try:
        return FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}") from None


def _fields_uncached(f: Format, bits: np.ndarray) -> tuple[np.ndarray, ...]:
    b = bits >> f.pad_bits
    sign = ((b >> (f.exp_bits + f.man_bits)) & 1).astype(bool)
    e = (b >> f.man_bits) & ((1 << f.exp_bits) - 1)
    man = b & ((1 << f.man_bits) - 1)
    normal = e != 0
    sig = np.where(normal, man | (1 << f.man_bits), man).astype(np.int64)
    nominal = np.where(normal, e - f.bias, f.emin).astype(np.int64)  # subnormals use emin
    scale = nominal - f.man_bits
    cls = np.zeros(b.shape, dtype=np.int8)
    top = e == (1 << f.exp_bits) - 1
    if f.has_inf:
        cls[top & (man == 0)] = INF
        cls[top & (man != 0)] = NAN
    else:
        cls[top & (man == (1 << f.man_bits) - 1)] = NAN
    sig[cls != FINITE] = 0
    return sign, sig, scale, nominal, cls


def fields(fmt: str | Format, bits: npt.ArrayLike) -> tuple[np.ndarray, ...]:
    """Split bit patterns into (sign: bool, significand: int64, scale: int64, nominal_exp: int64, cls: int8).

    A finite value is ``(-1)**sign * significand * 2**scale`` exactly; nominal_exp is the unbiased
    exponent field (emin for subnormals and zero); significand is 0 for zero, inf and NaN.
    """
    f = get_format(fmt)
    b = np.asarray(bits).astype(np.int64) & ((1 << f.width) - 1)
    table = f._fields_table
    if table is not None:
        return tuple(t[b] for t in table)
    return _fields_uncached(f, b)


def decode(fmt: str | Format, bits: npt.ArrayLike) -> np.ndarray:
    """Exact float64 values of bit patterns (every format here is a subset of float64)."""
    f = get_format(fmt)
    sign, sig, scale, _, cls = fields(f, bits)
    mag = np.ldexp(sig.astype(np.float64), scale.astype(np.int32))
    mag = np.where(cls == INF, np.inf, mag)
    mag = np.where(cls == NAN, np.nan, mag)
    return np.where(sign, -mag, mag)


def exact(fmt: str | Format, bits: int) -> Fraction:
    """The exact rational value of one finite bit pattern (raises for inf/NaN)."""
    sign, sig, scale, _, cls = (x.item() for x in fields(fmt, np.array([bits])))
    if cls != FINITE:
        raise ValueError(f"{bits:#x} is not finite in {get_format(fmt).name}")
    v = Fraction(sig) * (Fraction(2) ** scale)
    return -v if sign else v


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bit length of non-negative integers (int64 or Python-int object arrays)."""
    if x.dtype == object:
        return np.frompyfunc(int.bit_length, 1, 1)(x).astype(np.int64)
    # float64 exponent is right except where rounding to 53 bits carried into a new power of two
    _, e = np.frexp(x.astype(np.float64))
    e = e.astype(np.int64)
    big = x >= (1 << 53)
    if big.any():
        over = big & ((np.int64(1) << np.clip(e - 1, 0, 62)) > x)
        e = e - over
    return e


def _shift_right_round(mag: np.ndarray, shift: np.ndarray, mode: str, neg: np.ndarray) -> np.ndarray:
    """Round mag / 2**shift (mag >= 0, shift >= 0) to an integer, for values of sign ``neg``.

    int64 magnitudes must be below 2**62; object arrays hold Python ints of any size.
    """
    obj = mag.dtype == object
    if obj:
        sh: np.ndarray = shift.astype(object)
        half_sh: np.ndarray = np.maximum(shift - 1, 0).astype(object)
        one: Any = 1
    else:
        sh = np.minimum(shift, 62)
        half_sh = np.minimum(np.maximum(shift - 1, 0), 61)
        one = np.int64(1)
    q = mag >> sh
    if mode == "rtz":
        return q
    rem = mag - (q << sh)
    nz = rem != 0
    if mode == "rne":
        half = one << half_sh
        up = (rem > half) | ((rem == half) & ((q & 1) == 1))
        if not obj:  # beyond the cap the value is below half an ulp: rounds to zero
            up &= shift <= 62
    elif mode == "rd":
        up = nz & neg
    elif mode == "ru":
        up = nz & ~neg
    else:
        raise ValueError(f"unknown rounding {mode!r}; known: {', '.join(ROUNDINGS)}")
    return q + (up.astype(object) if obj else up.astype(np.int64))


def round_to_format(
    f: Format,
    neg: np.ndarray,
    mag: np.ndarray,
    scale: np.ndarray | int,
    mode: str,
    saturate: bool,
    flush_subnormal: bool = False,
    always_inf: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Round the exact values (-1)**neg * mag * 2**scale to format f.

    Returns (bits, overflowed). mag: non-negative int64 or Python-int object array. Zero results keep
    their sign (the caller decides the sign of exact zeros). Overflow: rne/ru(+)/rd(-) -> inf (NaN
    for e4m3) unless saturate; other directions -> max finite (IEEE 754), or inf too with ``always_inf``
    (overflow is judged on the value rounded in ``mode``: rtz overflows only from 2**(emax + 1) on).
    """
    if mode not in ROUNDINGS:
        raise ValueError(f"unknown rounding {mode!r}; known: {', '.join(ROUNDINGS)}")
    mag = np.asarray(mag)
    neg = np.asarray(neg, dtype=bool)
    scale = np.broadcast_to(np.asarray(scale, dtype=np.int64), mag.shape)
    lead = _bit_length(mag) - 1 + scale  # exponent of the leading bit
    q = np.maximum(lead - f.man_bits, f.emin - f.man_bits)  # exponent of the result's ulp
    shift = q - scale
    obj = mag.dtype == object
    left = np.maximum(-shift, 0)
    sig = np.where(shift <= 0, mag << left, _shift_right_round(mag, np.maximum(shift, 0), mode, neg))
    if obj:
        carry = sig >= (1 << f.p)
        sig = np.where(carry, sig >> 1, sig).astype(np.int64)
    else:
        carry = sig >= (np.int64(1) << f.p)
        sig = np.where(carry, sig >> 1, sig)
    q = q + carry
    normal = sig >= (1 << f.man_bits)
    efield = np.where(normal, q + f.man_bits + f.bias, 0)
    man = np.where(normal, sig - (1 << f.man_bits), sig)
    if flush_subnormal:
        man = np.where(normal, man, 0)
    over = (efield > f.emax_field) | ((efield == f.emax_field) & (man > f.max_man_at_emax))
    bits = (efield << f.man_bits) | man
    if over.any():
        to_inf = (mode == "rne") | ((mode == "ru") & ~neg) | ((mode == "rd") & neg) | always_inf
        maxbits = (f.emax_field << f.man_bits) | f.max_man_at_emax
        if saturate:
            big = np.int64(maxbits)
        elif f.has_inf:
            big = np.where(to_inf, ((1 << f.exp_bits) - 1) << f.man_bits, maxbits)
        else:
            big = np.where(to_inf, (1 << (f.exp_bits + f.man_bits)) - 1, maxbits)
        bits = np.where(over, big, bits)
    bits = (bits << f.pad_bits) | np.where(neg, f.sign_bit, 0)
    return bits.astype(np.int64), over


def encode(fmt: str | Format, values: npt.ArrayLike, rounding: str = "rne", saturate: bool | None = None) -> np.ndarray:
    """Round float64 values to bit patterns of fmt (container dtype). See the module doc for saturation."""
    f = get_format(fmt)
    if saturate is None:
        saturate = not f.has_inf
    v = np.asarray(values, dtype=np.float64)
    neg = np.signbit(v)
    a = np.abs(v)
    finite = np.isfinite(a)
    m, e = np.frexp(np.where(finite, a, 0.0))
    mag = np.ldexp(m, 53).astype(np.int64)  # exact: 53-bit significand
    bits, _ = round_to_format(f, neg, mag, e.astype(np.int64) - 53, rounding, saturate)
    inf = np.isinf(a)
    if inf.any():
        if saturate:
            big = ((f.emax_field << f.man_bits) | f.max_man_at_emax) << f.pad_bits
        elif f.has_inf:
            big = f.inf_bits()
        else:
            big = f.canonical_nan
        bits = np.where(inf, big | np.where(neg & (big != f.canonical_nan), f.sign_bit, 0), bits)
    bits = np.where(np.isnan(v), f.canonical_nan, bits)
    return bits.astype(f.container_dtype)
