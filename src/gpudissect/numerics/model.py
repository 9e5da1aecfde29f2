"""A parameterised, bit-exact CPU model of one tensor-core dot product ``d = sum_i a_i * b_i + c``.

How the model computes one instruction row (k products and c):
1. Inputs are decoded to exact integer significands and exponents (subnormals kept or flushed).
   Products of two inputs are exact in int64 (at most 11 x 11 significand bits).
2. Products are taken in blocks of ``block_size``; the running accumulator (c for the first block when
   ``c_in_first_block``) is one more term of each block.
3. Within a block every term is aligned to the block's largest term: bits below
   ``2**(R - align_frac_bits)`` are dropped, R being the exponent of the leading bit of the largest term
   (``align_ref="exact"``) or its nominal exponent (``align_ref="nominal"``: ea + eb + 1 for a product,
   subnormal operands counting as emin; the exponent field for c). Dropped bits are truncated (toward
   zero or toward -inf, ``align_truncation``) or rounded to nearest even (``align_rounding="rne"``).
   The accumulator terms (c, the running sum) use their exponent field + ``c_ref_offset`` as reference
   (Hopper: 1 with ``align_ref="nominal"``, i.e. C aligns like a product whose ea + eb + 1 equals e_c + 1).
4. The aligned integers are summed exactly (``normalize="per_block"``), or one by one in term order
   (accumulator first, then products in index order) with the partial sum renormalised to
   ``align_frac_bits`` fraction bits after each addition (``normalize="per_add"``).
5. The block sum is rounded into the intermediate format (``inter_fmt``, default acc_fmt) with
   ``inter_block_rounding``; the last block is rounded into acc_fmt with ``out_rounding``. When c is not
   in the first block it is added after the products as a final two-term block.
   ``out_man_bits``: D keeps only that many fraction bits (acc_fmt's exponent range, the low bits of the
   container zero; Hopper fp8 -> f32: 13).
6. ``block_interleave`` g > 0: products are dealt to the blocks in runs of g (k index j goes to block
   (j // g) % nblocks) instead of contiguous runs of block_size (sm_90 fp8 mma.sync m16n8k32: blocks
   {j : j mod 4 in (0, 1)} and {j : j mod 4 in (2, 3)}). ``in_convert``: the inputs are first converted
   exactly to that format, whose fields (nominal exponents of subnormals) the alignment then sees
   (sm_90 fp8 mma.sync: F2FP to f16, then f16 HMMA). ``c_add="ieee"`` (only with c_in_first_block False):
   C is added to the rounded product sum by one IEEE addition, rounded to nearest even (a separate
   FADD / HADD2), instead of a fused two-term block.
Inputs longer than ``k`` are treated as a chain of instructions, each one's D being the next one's C.
Specials follow IEEE: NaN in, inf*0 or inf-inf give NaN (``nan_out`` bit pattern); an inf term gives inf.
An exact zero sum is -0 only when every term is a negative zero (``zero_sign="ieee"``); with
``zero_sign="positive"`` every zero result is +0, also a negative sum that rounds (underflows) to zero.
Overflow: ``"inf"`` IEEE (rtz gives max finite), ``"saturate"`` max finite, ``"inf_always"`` inf whatever
the rounding direction (Hopper), judged on the value rounded in that direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dc_fields
from typing import Any

import numpy as np
import numpy.typing as npt

from gpudissect.numerics.formats import (
    FINITE,
    FORMATS,
    INF,
    NAN,
    ROUNDINGS,
    Format,
    _bit_length,
    _shift_right_round,
    decode,
    encode,
    fields,
    get_format,
    round_to_format,
)

_ZERO_REF = -(1 << 20)

# accumulator formats that exist only inside the tensor core (inter_fmt): fp32 range, 13 fraction bits
_INTER_FORMATS: dict[str, Format] = {
    "e8m13": Format("e8m13", 32, 8, 13, 127, True, pad_bits=10)
}  # reference exponent of a zero term: below everything real

_CHOICES: dict[str, tuple[str, ...]] = {
    "in_fmt": ("f16", "bf16", "tf32", "e4m3", "e5m2"),
    "acc_fmt": ("f32", "f16"),
    "align_rounding": ("truncate", "rne"),
    "normalize": ("per_block", "per_add"),
    "out_rounding": ROUNDINGS,
    "subnormal_in": ("keep", "flush"),
    "subnormal_out": ("keep", "flush"),
    "inter_block_rounding": (*ROUNDINGS, "truncate"),
    "align_truncation": ("toward_zero", "toward_minus_inf"),
    "align_ref": ("exact", "nominal"),
    "subnormal_c": ("keep", "flush"),
    "overflow": ("inf", "saturate", "inf_always"),
    "zero_sign": ("ieee", "positive"),
    "c_add": ("fused", "ieee"),
}


@dataclass(frozen=True)
class TCParams:
    in_fmt: str
    acc_fmt: str
    k: int  # products per instruction row
    block_size: int  # products summed in one fused step
    c_in_first_block: bool = True
    align_frac_bits: int = 23  # fraction bits kept below the leading bit of the largest term
    align_rounding: str = "truncate"
    normalize: str = "per_block"
    out_rounding: str = "rne"
    subnormal_in: str = "keep"
    subnormal_out: str = "keep"
    inter_block_rounding: str = "rne"  # "truncate": drop bits in the align_truncation direction
    align_truncation: str = "toward_zero"
    align_ref: str = "exact"
    inter_fmt: str | None = None  # format of the accumulator between blocks (None: acc_fmt)
    subnormal_c: str = "keep"
    overflow: str = "inf"
    nan_out: int | None = None  # None: 0x7fffffff (f32), 0x7fff (f16)
    zero_sign: str = "ieee"
    c_ref_offset: int = 0  # added to the accumulator term's alignment reference exponent
    out_man_bits: int | None = None  # D keeps only this many fraction bits (acc_fmt's exponent range)
    block_interleave: int = 0  # 0: contiguous blocks; g: products dealt to blocks in runs of g
    c_add: str = "fused"  # C after the products (c_in_first_block False): "fused" | "ieee" (RNE add)
    in_convert: str | None = None  # inputs converted exactly to this format first (None: none)

    def __post_init__(self) -> None:
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"TCParams.{name}={value!r}: must be one of {', '.join(map(str, allowed))}")
        for name in ("k", "block_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"TCParams.{name}={value!r}: must be a positive int")
        if not isinstance(self.align_frac_bits, int) or not 0 <= self.align_frac_bits <= 256:
            raise ValueError(f"TCParams.align_frac_bits={self.align_frac_bits!r}: must be an int in 0..256")
        if not isinstance(self.c_in_first_block, bool):
            raise ValueError("TCParams.c_in_first_block must be a bool")
        if self.out_man_bits is not None and (
            not isinstance(self.out_man_bits, int)
            or isinstance(self.out_man_bits, bool)
            or not 1 <= self.out_man_bits <= FORMATS[self.acc_fmt].man_bits
        ):
            raise ValueError(
                f"TCParams.out_man_bits={self.out_man_bits!r}: must be None or 1..{FORMATS[self.acc_fmt].man_bits}"
            )
        if not isinstance(self.c_ref_offset, int) or isinstance(self.c_ref_offset, bool):
            raise ValueError(f"TCParams.c_ref_offset={self.c_ref_offset!r}: must be an int")
        if self.inter_fmt is not None and self.inter_fmt not in ("f32", "f16", *_INTER_FORMATS):
            raise ValueError(
                f"TCParams.inter_fmt={self.inter_fmt!r}: must be None, 'f32', 'f16' or "
                f"{', '.join(map(repr, _INTER_FORMATS))}"
            )
        if (
            not isinstance(self.block_interleave, int)
            or isinstance(self.block_interleave, bool)
            or self.block_interleave < 0
        ):
            raise ValueError(f"TCParams.block_interleave={self.block_interleave!r}: must be an int >= 0")
        nblocks = -(-self.k // self.block_size)
        if self.block_interleave and self.k % (self.block_interleave * nblocks):
            raise ValueError(
                f"TCParams.block_interleave={self.block_interleave}: k={self.k} is not a multiple of "
                f"{self.block_interleave} x {nblocks} blocks"
            )
        if self.c_add == "ieee" and (self.c_in_first_block or self.out_rounding != "rne"):
            raise ValueError(
                "TCParams.c_add='ieee' needs c_in_first_block=False and out_rounding='rne' (an IEEE RNE add)"
            )
        if self.in_convert is not None and (
            self.in_convert not in FORMATS or FORMATS[self.in_convert].width <= FORMATS[self.in_fmt].width
        ):
            raise ValueError(
                f"TCParams.in_convert={self.in_convert!r}: must be None or a format wider than {self.in_fmt}"
            )
        if self.nan_out is not None and not 0 <= self.nan_out < (1 << FORMATS[self.acc_fmt].width):
            raise ValueError(f"TCParams.nan_out={self.nan_out!r} does not fit {self.acc_fmt}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TCParams:
        """Build from a JSON-like dict, rejecting unknown and missing fields by name."""
        names = {f.name for f in dc_fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown TCParams field(s) {unknown}; known: {sorted(names)}")
        nan_out = d.get("nan_out")
        if isinstance(nan_out, str):  # JSON has no hex: accept "0x7fffffff"
            d = {**d, "nan_out": int(nan_out, 0)}
        try:
            return cls(**d)
        except TypeError as e:
            raise ValueError(f"bad TCParams fields: {e}") from None

    @property
    def nan_bits(self) -> int:
        if self.nan_out is not None:
            return self.nan_out
        return 0x7FFFFFFF if self.acc_fmt == "f32" else 0x7FFF


@dataclass
class _Terms:
    """Terms of a dot product, one row each: value = (-1)**neg * sig * 2**scale (when cls is FINITE)."""

    neg: np.ndarray  # int64 0/1 (n, t)
    sig: np.ndarray  # int64 (n, t), 0 for zero / inf / NaN
    scale: np.ndarray  # int64 (n, t)
    ref: np.ndarray  # int64 (n, t): alignment reference exponent (_ZERO_REF for zeros)
    cls: np.ndarray | None  # int8 (n, t), None when every term is finite


_SIG_MASK = (1 << 24) - 1
_TABLES: dict[str, np.ndarray] = {}


def _codes(f: Format, bits: np.ndarray) -> np.ndarray:
    """Packed fields per element: significand (bits 0-23), max(exponent field, 1) (24-31), sign (32), class (33-34).

    One gather from a cached table for formats of <= 16 bits: the model's hot path.
    """
    if f.width <= 16:
        table = _TABLES.get(f.name)
        if table is None:
            table = _TABLES[f.name] = _codes_uncached(f, np.arange(1 << f.width, dtype=np.int64))
        return table[bits]
    return _codes_uncached(f, bits)


def _codes_uncached(f: Format, bits: np.ndarray) -> np.ndarray:
    neg, sig, scale, _, cls = fields(f, bits)
    eeff = scale + f.man_bits + f.bias  # exponent field, 1 for subnormals
    return sig | (eeff << 24) | (neg.astype(np.int64) << 32) | (cls.astype(np.int64) << 33)


def _bitlen_small(sig: np.ndarray) -> np.ndarray:
    """Bit length of non-negative int64 below 2**24 (exact in float32), 0 for 0."""
    e = (sig.astype(np.float32).view(np.int32) >> 23) - 126
    return np.where(sig == 0, 0, e).astype(np.int64)


def _ref(sig: np.ndarray, scale: np.ndarray, nominal_top: np.ndarray | None, mode: str) -> np.ndarray:
    if mode == "exact":
        ref = _bitlen_small(sig) - 1 + scale
    else:
        assert nominal_top is not None
        ref = nominal_top
    return np.where(sig == 0, _ZERO_REF, ref)


_CONVERT: dict[tuple[str, str], np.ndarray] = {}


def _converted(src: str, dst: str, bits: np.ndarray) -> np.ndarray:
    """Bit patterns of src re-encoded exactly in the wider dst (NaN -> dst's NaN, inf -> inf)."""
    table = _CONVERT.get((src, dst))
    if table is None:
        codes = np.arange(1 << FORMATS[src].width, dtype=np.int64)
        table = _CONVERT[(src, dst)] = encode(dst, decode(src, codes), "rne", saturate=False).astype(np.int64)
    return table[bits]


def _products(p: TCParams, a: np.ndarray, b: np.ndarray) -> _Terms:
    f = FORMATS[p.in_fmt]
    if p.in_convert is not None:
        a, b, f = _converted(p.in_fmt, p.in_convert, a), _converted(p.in_fmt, p.in_convert, b), FORMATS[p.in_convert]
    ca = _codes(f, a)
    cb = _codes(f, b)
    ma = ca & _SIG_MASK
    mb = cb & _SIG_MASK
    if p.subnormal_in == "flush":
        ma = np.where(ma < (1 << f.man_bits), 0, ma)
        mb = np.where(mb < (1 << f.man_bits), 0, mb)
    sig = ma * mb
    scale = ((ca >> 24) & 0xFF) + ((cb >> 24) & 0xFF) - 2 * (f.bias + f.man_bits)
    neg = ((ca ^ cb) >> 32) & 1
    nominal = scale + 2 * f.man_bits + 1 if p.align_ref == "nominal" else None  # ea + eb + 1
    cls = None
    if ((ca | cb) >> 33).any():
        cla, clb = ca >> 33, cb >> 33
        cls = np.where((cla == NAN) | (clb == NAN), NAN, np.maximum(cla, clb)).astype(np.int8)
        zero_times_inf = ((cla == INF) & (clb == FINITE) & (mb == 0)) | ((clb == INF) & (cla == FINITE) & (ma == 0))
        cls[zero_times_inf] = NAN
    return _Terms(neg, sig, scale, _ref(sig, scale, nominal, p.align_ref), cls)


def _acc_term(p: TCParams, fmt: Format, bits: np.ndarray, flush: bool) -> _Terms:
    code = _codes(fmt, bits)
    sig = code & _SIG_MASK
    if flush:
        sig = np.where(sig < (1 << fmt.man_bits), 0, sig)
    scale = ((code >> 24) & 0xFF) - (fmt.bias + fmt.man_bits)
    cls = (code >> 33).astype(np.int8)
    ref = _ref(sig, scale, scale + fmt.man_bits, p.align_ref) + np.where(sig == 0, 0, p.c_ref_offset)
    return _Terms(
        ((code >> 32) & 1)[:, None], sig[:, None], scale[:, None], ref[:, None], cls[:, None] if cls.any() else None
    )


def _aligned(p: TCParams, t: _Terms, unit: np.ndarray, wide: bool) -> np.ndarray:
    """Signed integer multiples of 2**unit of each term after alignment (bits below dropped/rounded)."""
    sig = t.sig if t.cls is None else np.where(t.cls == FINITE, t.sig, 0)
    shift = unit[:, None] - t.scale
    if wide:
        sig = sig.astype(object)
    trunc = "rd" if p.align_truncation == "toward_minus_inf" else "rtz"
    amode = trunc if p.align_rounding == "truncate" else "rne"
    if not wide and amode == "rtz" and p.align_frac_bits <= 38:
        # every term's lead is <= R, so sig << F (< 2**62) >> (R - scale) >= 0 is one exact truncating shift
        mag = (sig << p.align_frac_bits) >> np.minimum(shift + p.align_frac_bits, 63)
    else:
        left = np.maximum(-shift, 0)
        mag = np.where(
            shift <= 0,
            sig << (left.astype(object) if wide else left),
            _shift_right_round(sig, np.maximum(shift, 0), amode, t.neg.astype(bool)),
        )
    if wide:
        return np.where(t.neg.astype(bool), -mag, mag)
    return (mag ^ -t.neg) + t.neg  # two's complement negation where neg


def _block(p: TCParams, acc: _Terms | None, prods: _Terms, out: Format, mode: str) -> np.ndarray:
    """Fused sum of one block of terms (acc first, then products), rounded into ``out``; int64 bit patterns."""
    F = p.align_frac_bits
    parts = [t for t in (acc, prods) if t is not None]
    n = prods.sig.shape[0]
    width = sum(t.sig.shape[1] for t in parts)
    refs = [t.ref if t.cls is None else np.where(t.cls == FINITE, t.ref, _ZERO_REF) for t in parts]
    R = refs[-1].max(axis=1)
    if len(refs) == 2:
        R = np.maximum(R, refs[0][:, 0])
    unit = R - F  # exponent of the last kept bit
    # int64 holds the block sum unless the kept width plus carries nears 62 bits: then Python ints
    wide = F + 2 + int(width).bit_length() >= 62
    vals = [_aligned(p, t, unit, wide) for t in parts]
    if p.normalize == "per_block":
        S = vals[-1].sum(axis=1)
        if len(vals) == 2:
            S = S + vals[0][:, 0]
    else:
        trunc = "rd" if p.align_truncation == "toward_minus_inf" else "rtz"
        amode = trunc if p.align_rounding == "truncate" else "rne"
        val = np.concatenate(vals, axis=1)
        S = val[:, 0]
        for j in range(1, width):
            S = S + val[:, j]
            a = np.abs(S)
            drop = np.maximum(_bit_length(a) - 1 - F, 0)
            if (drop > 0).any():
                a = _shift_right_round(a, drop, amode, np.asarray(S < 0, dtype=bool)) << (
                    drop.astype(object) if wide else drop
                )
                S = np.where(S < 0, -a, a)
    Sneg = np.asarray(S < 0, dtype=bool)
    mag_s = np.abs(S)
    bits, _ = round_to_format(
        out,
        Sneg,
        mag_s,
        unit,
        mode,
        p.overflow == "saturate",
        flush_subnormal=p.subnormal_out == "flush",
        always_inf=p.overflow == "inf_always",
    )
    # the sign of an exact zero sum (IEEE: x + -x = +0 except toward -inf; -0 + -0 = -0)
    zero = np.asarray(mag_s == 0, dtype=bool)
    if zero.any():
        sigs = [t.sig if t.cls is None else np.where(t.cls == FINITE, t.sig, 1) for t in parts]
        all_zero = np.logical_and.reduce([(s == 0).all(axis=1) for s in sigs])
        all_neg = np.logical_and.reduce([(t.neg == 1).all(axis=1) for t in parts])
        any_neg = np.logical_or.reduce([(t.neg == 1).any(axis=1) for t in parts])
        if p.zero_sign == "positive":
            neg0 = np.zeros(n, dtype=bool)
        elif mode == "rd":
            neg0 = ~(all_zero & ~any_neg)
        else:
            neg0 = all_zero & all_neg
        bits = np.where(zero, np.where(neg0, out.sign_bit, 0), bits)
    if p.zero_sign == "positive":  # zero results are +0, also where a nonzero sum rounded (underflowed) to 0
        bits = np.where(bits == out.sign_bit, 0, bits)
    # specials
    if any(t.cls is not None for t in parts):
        cls = np.concatenate([t.cls if t.cls is not None else np.zeros(t.sig.shape, np.int8) for t in parts], axis=1)
        negb = np.concatenate([t.neg for t in parts], axis=1) == 1
        is_nan = (cls == NAN).any(axis=1)
        pinf = ((cls == INF) & ~negb).any(axis=1)
        ninf = ((cls == INF) & negb).any(axis=1)
        is_nan |= pinf & ninf
        bits = np.where(pinf, out.inf_bits(False), bits)
        bits = np.where(ninf, out.inf_bits(True), bits)
        bits = np.where(is_nan, out.canonical_nan, bits)
    return bits.astype(np.int64)


def _narrowed(f: Format, man_bits: int | None) -> Format:
    """f with only man_bits fraction bits, in f's container (the dropped low bits read and write as 0)."""
    if man_bits is None or man_bits == f.man_bits:
        return f
    return Format(
        f"{f.name}m{man_bits}",
        f.width,
        f.exp_bits,
        man_bits,
        f.bias,
        f.has_inf,
        pad_bits=f.pad_bits + f.man_bits - man_bits,
    )


def _instruction(p: TCParams, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    acc = FORMATS[p.acc_fmt]
    d_fmt = _narrowed(acc, p.out_man_bits)
    inter = _INTER_FORMATS.get(p.inter_fmt or "") or FORMATS[p.inter_fmt or p.acc_fmt]
    nblocks = -(-p.k // p.block_size)
    if p.block_interleave:  # block order: every block's products together, blocks one after another
        g = p.block_interleave
        order = sorted(range(p.k), key=lambda j: ((j // g) % nblocks, j))
        a, b = a[:, order], b[:, order]
    prods = _products(p, a, b)
    c_term = _acc_term(p, acc, c, p.subnormal_c == "flush")
    running: _Terms | None = c_term if p.c_in_first_block else None
    ib_mode = p.inter_block_rounding
    if ib_mode == "truncate":
        ib_mode = "rd" if p.align_truncation == "toward_minus_inf" else "rtz"
    bits = c.astype(np.int64)
    for j in range(nblocks):
        cols = slice(j * p.block_size, min((j + 1) * p.block_size, p.k))
        block = _Terms(
            prods.neg[:, cols],
            prods.sig[:, cols],
            prods.scale[:, cols],
            prods.ref[:, cols],
            None if prods.cls is None else prods.cls[:, cols],
        )
        last = j == nblocks - 1 and p.c_in_first_block
        fmt, mode = (d_fmt, p.out_rounding) if last else (inter, ib_mode)
        bits = _block(p, running, block, fmt, mode)
        running = _acc_term(p, fmt, bits, False)
    if not p.c_in_first_block and p.c_add == "ieee":
        # one IEEE addition, RNE: the float64 sum of two values of <= 24 bits rounds correctly (53 >= 2 * 24 + 2)
        with np.errstate(invalid="ignore", over="ignore"):
            total = decode(fmt, bits) + decode(acc, c)
        bits = encode(d_fmt, total, "rne", saturate=False).astype(np.int64)
    elif not p.c_in_first_block:
        bits = _block(p, running, c_term, d_fmt, p.out_rounding)
    # NaN results carry the hardware's NaN pattern
    nan = fields(acc, bits)[4] == NAN
    return np.where(nan, p.nan_bits, bits)


def dot(
    params: TCParams, a_bits: npt.ArrayLike, b_bits: npt.ArrayLike, c_bits: npt.ArrayLike, chunk: int = 8192
) -> np.ndarray:
    """Tensor-core dot products: D[i] = sum_j A[i, j] * B[i, j] + C[i], as bit patterns of acc_fmt.

    a_bits, b_bits: (n, K) bit patterns of in_fmt (tf32: 32-bit containers); c_bits: (n,) of acc_fmt.
    K must be a multiple of params.k; K > k chains instructions (each D is the next C), like a GEMM.
    Returns uint32 (f32) or uint16 (f16) bit patterns.
    """
    a = np.asarray(a_bits)
    b = np.asarray(b_bits)
    c = np.asarray(c_bits)
    if a.ndim != 2 or a.shape != b.shape or c.shape != a.shape[:1]:
        raise ValueError(f"dot: need A, B of shape (n, K) and C of shape (n,); got {a.shape}, {b.shape}, {c.shape}")
    n, K = a.shape
    if K % params.k:
        raise ValueError(f"dot: K={K} is not a multiple of the instruction's k={params.k}")
    acc = get_format(params.acc_fmt)
    out = np.empty(n, dtype=acc.container_dtype)
    a = a.astype(np.int64)
    b = b.astype(np.int64)
    c = c.astype(np.int64) & ((1 << acc.width) - 1)
    for lo in range(0, n, chunk):  # chunks keep the temporaries in cache
        d = c[lo : lo + chunk]
        for j in range(0, K, params.k):
            d = _instruction(params, a[lo : lo + chunk, j : j + params.k], b[lo : lo + chunk, j : j + params.k], d)
        out[lo : lo + chunk] = d
    return out
