"""The numerics suite: what the tensor cores compute, bit for bit (issue 4).

Three benchmarks, all built on one kernel shape (kernels/numerics.cu): every instance (a warp for
mma.sync, a warpgroup for wgmma) loads its own A, B, C, executes exactly ONE instruction and stores
the raw D bits. The host lays the matrices out in the instruction's fragments with the packers of
tensor_mma (register fragments) and tensor_wgmma (no-swizzle shared-memory image, D fragment).

1. `tc_profiling` — Sun et al. (001) §8: element-wise errors of multiplication, inner-product
   addition and accumulation (Tables 12-15) and chain matrix multiplication (Fig. 17), on mma and
   wgmma, plus fp8 on wgmma.
2. `tc_probes` — crafted inputs that decide, per instruction and type, how the sum is formed:
   alignment bits, alignment rounding, block size, where C joins, normalisation, output rounding,
   subnormals, special values. Each probe carries the prediction of every hypothesis (an exact
   rational evaluator below, independent of gpudissect.numerics) and the hardware's answer.
3. `tc_model_agreement` — corner-stressing random dot products, hardware bits vs
   gpudissect.numerics.model.dot with the parameters the probes of the same run found.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..device.cuda import Arg
from ..models import Point
from .context import BenchContext
from .registry import KernelSpec, benchmark
from .tensor_mma import MmaVariant, decode as tm_decode, layout_a, layout_b, layout_c
from .tensor_wgmma import TYPES as WG_TYPES, d_coords, pack_operand

SUITE = "numerics"
FILE = "numerics.cu"

# ---------------------------------------------------------------------------------------
# Formats (host side): exponent/mantissa widths, container bits
# ---------------------------------------------------------------------------------------
# name: (exponent bits, fraction bits, bias, container bits)
FMT = {"f16": (5, 10, 15, 16), "bf16": (8, 7, 127, 16), "tf32": (8, 10, 127, 32), "e4m3": (4, 3, 7, 8),
       "e5m2": (5, 2, 15, 8), "f32": (8, 23, 127, 32)}


def fmt_min_normal_exp(fmt: str) -> int:
    return 1 - FMT[fmt][2]


def fmt_max_exp(fmt: str) -> int:
    """Largest exponent of a finite power of two (e4m3: 2^8 = 256, its top binade has no infinity)."""
    e, _, bias, _ = FMT[fmt]
    return (1 << e) - 1 - bias - (0 if fmt == "e4m3" else 1)


def fmt_max(fmt: str) -> float:
    return {"f16": 65504.0, "bf16": float(np.finfo(np.float32).max * (1 - 2.0**-8) / (1 - 2.0**-24)),
            "tf32": float((2 - 2.0**-10) * 2.0**127), "e4m3": 448.0, "e5m2": 57344.0,
            "f32": float(np.finfo(np.float32).max)}[fmt]


def to_values(fmt: str, bits: np.ndarray) -> np.ndarray:
    """Bits (any uint array) of fmt -> float64 values (tf32: low 13 bits ignored; e5m2 infinities)."""
    codes = np.asarray(bits).astype(np.uint64)
    v = tm_decode(codes, fmt)
    if fmt == "e5m2":  # tensor_mma's fp8 table has NaN for the infinity codes too
        inf = (codes & np.uint64(0x7F)) == np.uint64(0x7C)
        v = np.where(inf, np.where(codes & np.uint64(0x80), -np.inf, np.inf), v)
    return v


def from_values(fmt: str, x: np.ndarray | float) -> np.ndarray:
    """Exactly representable values -> bits (uint32). Raises if a value is not representable."""
    x = np.atleast_1d(np.asarray(x, np.float64))
    if fmt == "f32":
        out = x.astype(np.float32).view(np.uint32)
    elif fmt == "f16":
        out = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    elif fmt in ("bf16", "tf32"):
        w = x.astype(np.float32).view(np.uint32)
        out = w >> np.uint32(16) if fmt == "bf16" else w & np.uint32(0xFFFFE000)
    else:  # fp8: table lookup over the 256 codes (-0 kept)
        table = to_values(fmt, np.arange(256))
        out = np.zeros(x.shape, np.uint32)
        for i, v in enumerate(x.ravel()):
            hits = np.flatnonzero(table == v) if not np.isnan(v) else np.flatnonzero(np.isnan(table))
            if v == 0:
                hits = np.array([0x80 if math.copysign(1.0, v) < 0 else 0])
            if hits.size == 0:
                raise ValueError(f"{v} is not representable in {fmt}")
            out.ravel()[i] = hits[0]
        return out
    back = to_values(fmt, out)
    ok = (back == x) | (np.isnan(back) & np.isnan(x))
    if not ok.all():
        raise ValueError(f"{x[~ok][:3]} not representable in {fmt}")
    return out.astype(np.uint32)


def round_values(fmt: str, x: np.ndarray) -> np.ndarray:
    """float64 -> bits of fmt by round-to-nearest-even (fp8: nearest, saturating to the largest finite;
    the host conversion of the paper's "initialise in fp32, convert when copying")."""
    x = np.asarray(x, np.float64)
    if fmt == "f16":
        with np.errstate(over="ignore"):  # beyond 65520 -> inf, as a conversion does
            return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    if fmt == "f32":
        return x.astype(np.float32).view(np.uint32)
    if fmt in ("bf16", "tf32"):
        u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        sh = 16 if fmt == "bf16" else 13
        half = (1 << (sh - 1)) - 1
        r = (u + half + ((u >> sh) & 1)) >> sh << sh
        nan = np.isnan(x)
        r = np.where(nan, u, r).astype(np.uint32)
        return r >> np.uint32(16) if fmt == "bf16" else r
    from .tensor_wgmma import _fp8_encode  # nearest finite code (saturates)

    return _fp8_encode(fmt, np.nan_to_num(x)).astype(np.uint32)


# ---------------------------------------------------------------------------------------
# Instructions
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Instr:
    family: str  # "mma" | "wgmma"
    a: str  # input format
    c: str  # accumulator format
    m: int
    n: int
    k: int

    @property
    def tname(self) -> str:
        return f"{self.a}_{self.c}"

    @property
    def key(self) -> str:
        """Figure-key stem, e.g. wgmma.f16_f32."""
        return f"{self.family}.{self.tname}"

    @property
    def ptx(self) -> str:
        """Instruction name as gpudissect.numerics.presets names it."""
        return f"{self.family}.m{self.m}n{self.n}k{self.k}.{self.c}.{self.a}.{self.a}"

    @property
    def min_cc(self) -> tuple[int, int]:
        return (9, 0) if self.family == "wgmma" else (8, 0)

    @property
    def per_inst(self) -> int:
        return self.m * self.n


MMA_INSTRS = [Instr("mma", "f16", "f32", 16, 8, 16), Instr("mma", "f16", "f16", 16, 8, 16),
              Instr("mma", "bf16", "f32", 16, 8, 16), Instr("mma", "tf32", "f32", 16, 8, 8)]
WG_INSTRS = [Instr("wgmma", "f16", "f32", 64, 8, 16), Instr("wgmma", "f16", "f16", 64, 8, 16),
             Instr("wgmma", "bf16", "f32", 64, 8, 16), Instr("wgmma", "tf32", "f32", 64, 8, 8)] + \
            [Instr("wgmma", f, c, 64, 8, 32) for f in ("e4m3", "e5m2") for c in ("f32", "f16")]
INSTRS = MMA_INSTRS + WG_INSTRS


def mma_variant(ins: Instr) -> MmaVariant:
    return MmaVariant(ins.a, ins.c, f"m{ins.m}n{ins.n}k{ins.k}")


def sass_pattern(ins: Instr) -> str:
    """The SASS one instance must contain (NVRTC 13.5, sm_90a: checked by tests/test_sass.py)."""
    if ins.family == "mma":
        kind = {"f16": r"\.F16 " if ins.c == "f16" else r"\.F32 ", "bf16": r"\.F32\.BF16 ", "tf32": r"\.F32\.TF32 "}[ins.a]
        return rf"HMMA\.{ins.m}{ins.n}{ins.k}{kind}"
    head = "QGMMA" if ins.a in ("e4m3", "e5m2") else "HGMMA"
    tail = {"f16": "", "bf16": r"\.BF16", "tf32": r"\.TF32"}.get(ins.a, rf"\.{ins.a.upper()}\.{ins.a.upper()}")
    return rf"{head}\.64x8x{ins.k}\.{ins.c.upper()}{tail} R\d+, gdesc\[UR\d+\], R\d+"


def spec_of(ins: Instr) -> KernelSpec:
    if ins.family == "mma":
        v = mma_variant(ins)
        na, nb, nc = v.regs()
        defines: dict[str, object] = {"NA": na, "NB": nb, "NC": nc, "CK": 0 if ins.c == "f32" else 1,
                                      "MMA_ASM": f'"{v.asm()}"'}
        return KernelSpec(FILE, {"num_mma": [sass_pattern(ins)]}, defines, label=f"{FILE}[{ins.key}]")
    t = WG_TYPES[ins.tname]
    op = f"wgmma.mma_async.sync.aligned.m64n8k{ins.k}.{ins.c}.{ins.a}.{ins.a}"
    defines = {"NUM_WG": 1, "WG_OP": f'"{op}"', "WG_TAIL": '", 1, 1, 0, 0"' if t.kind == 0 else '", 1, 1"',
               "WG_NACC": t.nacc(8), "WG_FACC": int(ins.c == "f32")}
    req = [sass_pattern(ins), r"WARPGROUP\.ARRIVE", r"WARPGROUP\.DEPBAR\.LE gsb0, 0x0"]
    return KernelSpec(FILE, {"num_wgmma": req}, defines, label=f"{FILE}[{ins.key}]")


SPECS = {ins: spec_of(ins) for ins in INSTRS}


# ---------------------------------------------------------------------------------------
# Fragment packing: matrices of bits (inst, M, K), (inst, K, N), (inst, M, N) -> kernel buffers
# ---------------------------------------------------------------------------------------
def _words(codes: np.ndarray, bits: int) -> np.ndarray:
    """[..., lane, element] codes -> [..., register, lane] 32-bit words (element 0 in the low bits),
    the vectorised form of tensor_mma.pack."""
    c = codes.astype(np.uint64)
    per = 32 // bits if bits < 32 else 1
    lead, lanes, n = c.shape[:-2], c.shape[-2], c.shape[-1]
    c = c.reshape(*lead, lanes, n // per, per)
    w = (c << (np.arange(per, dtype=np.uint64) * np.uint64(bits))).sum(axis=-1)
    return np.ascontiguousarray(np.swapaxes(w, -1, -2).astype(np.uint32))


def _codes(words: np.ndarray, bits: int) -> np.ndarray:
    """Inverse of _words: [..., register, lane] -> [..., lane, element]."""
    per = 32 // bits if bits < 32 else 1
    w = np.swapaxes(words.astype(np.uint64), -1, -2)[..., None]
    c = (w >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))) & np.uint64((1 << bits) - 1 if bits < 64 else ~0)
    return c.reshape(*c.shape[:-2], -1).astype(np.uint32)


def in_bits(fmt: str) -> int:
    return 32 if fmt == "tf32" else FMT[fmt][3]


def mma_pack(ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ib, cb = in_bits(ins.a), FMT[ins.c][3]
    _, ra, ca = layout_a(ins.m, ins.k, ib)
    _, rb, cbb = layout_b(ins.k, ins.n, ib)
    _, rc, cc = layout_c(ins.m, ins.n, cb)
    return _words(a[:, ra, ca], ib), _words(b[:, rb, cbb], ib), _words(c[:, rc, cc], cb)


def mma_unpack_d(ins: Instr, words: np.ndarray) -> np.ndarray:
    cb = FMT[ins.c][3]
    _, rc, cc = layout_c(ins.m, ins.n, cb)
    codes = _codes(words, cb)
    out = np.zeros((words.shape[0], ins.m, ins.n), np.uint32)
    out[:, rc, cc] = codes[:, :, : rc.shape[1]]
    return out


def _to_bytes(fmt: str, bits: np.ndarray) -> np.ndarray:
    """(..., K) codes -> (..., K * bytes) little-endian bytes."""
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}[in_bits(fmt)]
    b = np.ascontiguousarray(bits.astype(dt))
    return b.view(np.uint8).reshape(*bits.shape[:-1], -1)


IMG_BYTES = 2304  # numerics.cu: A (64 x 32 bytes) then B^T (8 x 32 bytes)


def wg_pack_img(ins: Instr, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A (inst, 64, K) and B (inst, K, 8) codes -> (inst, IMG_BYTES) shared-memory images, the layout of
    tensor_wgmma.pack_operand (vectorised over instances)."""
    def img(rows: np.ndarray) -> np.ndarray:
        i, r, c = rows.shape[0], rows.shape[1], rows.shape[2] // 16
        return rows.reshape(i, r // 8, 8, c, 16).transpose(0, 3, 1, 2, 4).reshape(i, -1)
    ab, bb = _to_bytes(ins.a, a), _to_bytes(ins.a, np.swapaxes(b, 1, 2))
    return np.ascontiguousarray(np.concatenate([img(ab), img(bb)], axis=1))


def wg_pack_c(ins: Instr, c: np.ndarray) -> np.ndarray:
    """C (inst, 64, 8) codes -> (inst, 128, nacc) registers in the wgmma D fragment."""
    rows, cols = d_coords(8)
    el = c[:, rows, cols].astype(np.uint32)  # (inst, 128, 4)
    if ins.c == "f16":
        el = el[..., 0::2] | (el[..., 1::2] << np.uint32(16))
    return np.ascontiguousarray(el)


def wg_unpack_d(ins: Instr, regs: np.ndarray) -> np.ndarray:
    rows, cols = d_coords(8)
    if ins.c == "f16":
        el = np.empty(regs.shape[:-1] + (4,), np.uint32)
        el[..., 0::2], el[..., 1::2] = regs & np.uint32(0xFFFF), regs >> np.uint32(16)
    else:
        el = regs
    out = np.zeros((regs.shape[0], 64, 8), np.uint32)
    out[:, rows, cols] = el
    return out


class Runner:
    """Runs one instruction per instance over arbitrary bit matrices."""

    MAX_INST = 1 << 14

    def __init__(self, ctx: BenchContext):
        self.ctx = ctx
        self.launches = 0

    def supported(self, ins: Instr) -> bool:
        p = self.ctx.props
        return (p["cc_major"], p.get("cc_minor", 0)) >= ins.min_cc

    def run(self, ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """a (I, M, K), b (I, K, N), c (I, M, N) codes -> D (I, M, N) codes."""
        out = np.empty(c.shape, np.uint32)
        for s in range(0, a.shape[0], self.MAX_INST):
            sl = slice(s, s + self.MAX_INST)
            out[sl] = self._run(ins, a[sl], b[sl], c[sl])
        return out

    def _run(self, ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        dev, count = self.ctx.device, a.shape[0]
        fn = self.ctx.kernel(SPECS[ins], "num_mma" if ins.family == "mma" else "num_wgmma")
        if ins.family == "mma":
            aw, bw, cw = mma_pack(ins, a, b, c)
            bufs = [dev.upload(np.ascontiguousarray(x)) for x in (aw, bw, cw)]
            dbuf = dev.alloc(cw.nbytes)
            dev.memset32(dbuf, 0xFFFFFFFF)
            fn((count * 32 + 255) // 256, 256, [Arg.ptr(bufs[0]), Arg.ptr(bufs[1]), Arg.ptr(bufs[2]), Arg.ptr(dbuf),
                                               Arg.u32(count)])
            dev.sync("num_mma")
            words = dev.download(dbuf, np.uint32, cw.size).reshape(cw.shape)
            d = mma_unpack_d(ins, words)
        else:
            img, cr = wg_pack_img(ins, a, b), wg_pack_c(ins, c)
            bufs = [dev.upload(img), dev.upload(cr)]
            dbuf = dev.alloc(cr.nbytes)
            dev.memset32(dbuf, 0xFFFFFFFF)
            per = 4  # WG_PER_BLOCK
            fn((count + per - 1) // per, 128 * per, [Arg.ptr(bufs[0]), Arg.ptr(bufs[1]), Arg.ptr(dbuf),
                                                     Arg.u32(count), Arg.u32(1)])
            dev.sync("num_wgmma")
            regs = dev.download(dbuf, np.uint32, cr.size).reshape(cr.shape)
            d = wg_unpack_d(ins, regs)
        for x in (*bufs, dbuf):
            dev.free(x)
        self.launches += 1
        return d

    def dots(self, ins: Instr, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Independent dot products a (n, K), b (n, K), c (n,) -> d (n,): one per instance, at D[0, 0]
        (every other element of A, B, C is +0)."""
        n = a.shape[0]
        A = np.zeros((n, ins.m, ins.k), np.uint32)
        B = np.zeros((n, ins.k, ins.n), np.uint32)
        C = np.zeros((n, ins.m, ins.n), np.uint32)
        A[:, 0, :], B[:, :, 0], C[:, 0, 0] = a, b, c
        return self.run(ins, A, B, C)[:, 0, 0]


# ---------------------------------------------------------------------------------------
# Exact hypothesis evaluator (independent of gpudissect.numerics: it states what each hypothesis
# predicts for a probe, with rational arithmetic)
# ---------------------------------------------------------------------------------------
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


def exponent(x: Fraction) -> int:
    """floor(log2 |x|) for x != 0, exactly."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1


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
    unit = Fraction(2) ** (max(refs) - h.align_frac_bits)
    return sum((_align(t / unit, h.align_rounding) for t in [*terms, *accs] if t != 0), 0) * unit


def predict(h: Hyp, products: list[Fraction], c: Fraction, out_fmt: str) -> float:
    """What hypothesis h says D = sum(products) + c is (intermediate sums rounded to f32 with the same
    rounding; the final one to out_fmt)."""
    def inter(x: Fraction) -> Fraction:
        r = round_to(x, "f32", h.out_rounding)
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


def _predict(h: Hyp, products: list[Fraction], c: Fraction, out_fmt: str, inter: Callable[[Fraction], Fraction]) -> float:
    if h.normalize == "per_add":
        acc = c
        for p in products:
            acc = inter(fused([p], h, (acc,)))
        return round_to(acc, out_fmt, h.out_rounding, h.out_man_bits)
    blocks = [products[i:i + h.block_size] for i in range(0, len(products), h.block_size)]
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
        acc = fused([], h, (inter(acc), c))
    return round_to(acc, out_fmt, h.out_rounding, h.out_man_bits)


# ---------------------------------------------------------------------------------------
# Probes: inputs, the prediction of each hypothesis, the hardware's answer, the verdict
# ---------------------------------------------------------------------------------------
@dataclass
class Probe:
    param: str
    label: str
    a: list[float]  # K input values (exactly representable)
    b: list[float]
    c: float
    predictions: dict[str, float]  # hypothesis -> predicted D value
    got: float | None = None
    got_bits: int | None = None
    raw_a: list[int] | None = None  # bit patterns, where the probe needs codes values cannot express

    def matches(self) -> list[str]:
        strict = self.param == "special"  # signed zeros count there
        return [h for h, v in self.predictions.items() if self.got is not None and _same(v, self.got, strict)]


def _same(x: float, y: float, signed_zero: bool = False) -> bool:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and (not signed_zero or math.copysign(1.0, x) == math.copysign(1.0, y))


def pow2_pair(e: int, fmt: str) -> tuple[float, float] | None:
    """Two normal powers of two of fmt whose product is 2^e (factors as equal as possible)."""
    lo, hi = fmt_min_normal_exp(fmt), fmt_max_exp(fmt)
    best = None
    for x in range(lo, hi + 1):
        if lo <= e - x <= hi and (best is None or abs(2 * x - e) < abs(2 * best - e)):
            best = x
    return None if best is None else (2.0**best, 2.0 ** (e - best))


def _out_ok(v: float, out: str) -> bool:
    return v == 0 or 2.0 ** fmt_min_normal_exp(out) <= abs(v) <= fmt_max(out)


def scale_exp(ins: Instr) -> int:
    """Exponent of the large terms of the probes: high enough that small terms stay normal."""
    return min(2 * fmt_max_exp(ins.a) - 1, fmt_max_exp(ins.c) - 1, 40)


def _terms(ins: Instr, placed: dict[int, tuple[float, float]], c: float = 0.0) -> tuple[list[float], list[float], float]:
    a, b = [0.0] * ins.k, [0.0] * ins.k
    for pos, (x, y) in placed.items():
        a[pos], b[pos] = x, y
    return a, b, c


def _products(a: list[float], b: list[float]) -> list[Fraction]:
    return [Fraction(x) * Fraction(y) for x, y in zip(a, b)]


def _make(param: str, label: str, ins: Instr, a: list[float], b: list[float], c: float,
          hyps: dict[str, Hyp]) -> Probe:
    prods = _products(a, b)
    return Probe(param, label, a, b, c, {k: predict(h, prods, Fraction(c), ins.c) for k, h in hyps.items()})


def _term(e: int, fmt: str, sign: float = 1.0, mant: float = 1.0) -> tuple[float, float] | None:
    p = pow2_pair(e, fmt)
    return None if p is None else (sign * mant * p[0], p[1])


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
        out.append(Probe("align_ref", f"j={j}", a, b, c, {"exact": v if j <= f - 1 else 0.0,
                                                          "nominal": v if j <= f else 0.0}))
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
        return None, "no probe possible for this format"
    common = set(probes[0].predictions)
    for p in probes:
        common &= set(p.matches())
    if not common:
        return None, "no hypothesis matches: " + "; ".join(f"{p.label} -> {p.got!r}" for p in probes if not p.matches())
    if str(full) in common:
        return None, f"ok (all {full} fraction bits of D; alignment hides at most " + \
            f"{full - min(int(m) for m in common)} of them)" if len(common) > 1 else "ok"
    m = max(int(x) for x in common)  # indistinguishable candidates: the widest that fits
    return m, "ok" if len(common) == 1 else f"ok (every one of {sorted(int(x) for x in common)} fits; widest taken)"


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
        if small is None or not _out_ok(2.0 ** e, ins.c) or not _out_ok(2.0 ** (e - j), ins.c):
            continue
        a, b, c = _terms(ins, {first: small}, 2.0 ** e)
        out.append(_make("c_ref_shift", f"C=2^e, -2^(e-{j})", ins, a, b, c, hyps))
        if half is not None and j > fb + 2:
            a, b, c = _terms(ins, {first: half, second: small}, 2.0 ** e)
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


def out_rounding_probes(ins: Instr, base: Hyp, limit: int = 16) -> list[Probe]:
    """Sums n * 2^e +- (2^(e-j1) + 2^(e-j2)) within one fused block whose exact value needs more bits
    than the output: kept where the rounding hypotheses disagree, greedily until every pair of
    hypotheses is told apart."""
    e, f = scale_exp(ins), base.align_frac_bits
    modes = ("rne", "rtz", "rna", "rup", "rdown")
    hyps = {m: replace(base, out_rounding=m) for m in modes}
    p_out = min(FMT[ins.c][1], base.out_man_bits or FMT[ins.c][1])  # fraction bits D keeps
    cands: list[Probe] = []
    for n_big in (1, 2, 3):
        if n_big + 2 > min(base.block_size, ins.k):
            continue
        for j1 in range(max(1, p_out - 2), f + 1):
            for j2 in range(j1 + 1, f + 1):
                for sign in (1.0, -1.0):
                    placed = {i: _term(e - 1, ins.a, sign, 1.0) for i in range(n_big)}  # n * 2^(e-1)
                    placed[n_big] = _term(e - 1 - j1, ins.a, sign)
                    placed[n_big + 1] = _term(e - 1 - j2, ins.a, sign)
                    if any(v is None for v in placed.values()):
                        continue
                    a, b, c = _terms(ins, placed)  # type: ignore[arg-type]
                    pr = _make("out_rounding", f"{'+' if sign > 0 else '-'}{n_big}x2^{e - 1}+2^{e - 1 - j1}+2^{e - 1 - j2}",
                               ins, a, b, c, hyps)
                    if all(math.isfinite(v) and v != 0 for v in pr.predictions.values()) and len(set(pr.predictions.values())) > 1:
                        cands.append(pr)
    pairs = {(x, y) for i, x in enumerate(modes) for y in modes[i + 1:]}
    chosen: list[Probe] = []
    for pr in cands:
        told = {(x, y) for (x, y) in pairs if pr.predictions[x] != pr.predictions[y]}
        if told:
            chosen.append(pr)
            pairs -= told
        if not pairs or len(chosen) >= limit:
            break
    return chosen


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


def _nan_bits(fmt: str) -> int:
    return {"f16": 0x7E00, "bf16": 0x7FC0, "tf32": 0x7FC00000, "e4m3": 0x7F, "e5m2": 0x7E, "f32": 0x7FC00000}[fmt]


def special_probes(ins: Instr) -> list[Probe]:
    """Special values, with the IEEE-754 answer as the one prediction (and the plausible alternatives)."""
    inf = math.inf
    fin = ins.a not in ("e4m3",)  # e4m3 has no infinity
    big = fmt_max(ins.a)
    out = []
    add = lambda label, pl, c, pred: out.append(Probe("special", label, *_terms(ins, pl, c), pred))  # noqa: E731
    # every product a negative zero (the unused positions too): IEEE gives -0 only then
    add("(-0)*1 + (-0)", {i: (-0.0, 1.0) for i in range(ins.k)}, -0.0, {"ieee": -0.0, "positive": 0.0})
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
        pl = {i: t for i in range(min(4, ins.k))}
        add(f"{min(4, ins.k)} x 2^{top} (overflow {ins.c})", pl, 0.0, {"inf": inf, "max_finite": fmt_max(ins.c)})
    add(f"max*max ({ins.a})", {0: (big, big)}, 0.0,
        {"exact/inf": round_to(Fraction(big) * Fraction(big), ins.c, "rne"), "max_finite": round_to(Fraction(big) * Fraction(big), ins.c, "rtz")})
    return out


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
        p = Probe("tf32_low_bits", f"a={label} (0x{low:08X}) then -1", a, b, c,
                  {"truncate": trunc - 1.0, "round": rnd - 1.0, "used": v - 1.0})
        p.a[0] = v
        p.raw_a = [low] + [int(x) for x in from_values("tf32", np.array(p.a[1:]))]
        # a[0]*b[0] with a[0] = pattern, b[0] = 1; a[1]*b[1] = -1
        out.append(p)
    return out


def fp8_probes(ins: Instr) -> list[Probe]:
    """Codes outside the finite range of fp8 (e4m3 NaN S.1111.111; e5m2 inf / NaN)."""
    if ins.a not in ("e4m3", "e5m2"):
        return []
    codes = {"e4m3": [(0x7F, "0x7F (NaN)"), (0xFF, "0xFF (-NaN)")],
             "e5m2": [(0x7C, "0x7C (+inf)"), (0xFC, "0xFC (-inf)"), (0x7E, "0x7E (NaN)")]}[ins.a]
    out = []
    for code, label in codes:
        v = float(to_values(ins.a, np.array([code]))[0])
        a, b, c = _terms(ins, {0: (1.0, 1.0)})
        p = Probe("fp8_range", f"A={label} x 1", a, b, c, {"ieee": v})
        p.raw_a = [code] + [0] * (ins.k - 1)
        out.append(p)
    return out


def probe_bits(ins: Instr, probes: list[Probe]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = np.array([p.raw_a if p.raw_a is not None else from_values(ins.a, np.array(p.a)) for p in probes], np.uint32)
    b = np.array([from_values(ins.a, np.array(p.b)) for p in probes], np.uint32)
    c = np.array([from_values(ins.c, np.array([p.c]))[0] for p in probes], np.uint32)
    return a, b, c


def run_probes(runner: Runner, ins: Instr, probes: list[Probe]) -> None:
    if not probes:
        return
    a, b, c = probe_bits(ins, probes)
    d = runner.dots(ins, a, b, c)
    vals = to_values(ins.c, d)
    for p, bits, v in zip(probes, d, vals):
        p.got_bits, p.got = int(bits), float(v)


@dataclass
class Findings:
    ins: Instr
    hyp: Hyp
    decided: dict[str, Any] = field(default_factory=dict)  # param -> value (str/int) or None
    notes: dict[str, str] = field(default_factory=dict)
    probes: list[Probe] = field(default_factory=list)
    specials: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        """Fields of gpudissect.numerics.model.TCParams (its names: floor alignment = truncation toward
        -inf; C added after the products = c_in_first_block False; rounding rup/rdown = ru/rd)."""
        d, h, ins = self.decided, self.hyp, self.ins
        rmap = {"rne": "rne", "rtz": "rtz", "rup": "ru", "rdown": "rd"}
        out_r = rmap.get(d.get("out_rounding") or "", "rne")
        p: dict[str, Any] = {
            "in_fmt": ins.a, "acc_fmt": ins.c, "k": ins.k, "block_size": h.block_size,
            "c_in_first_block": h.c_position == "first",
            "align_frac_bits": h.align_frac_bits + (1 if d.get("align_ref") == "nominal" else 0),
            "align_rounding": "rne" if h.align_rounding == "rne" else "truncate",
            "align_truncation": "toward_minus_inf" if h.align_rounding == "floor" else "toward_zero",
            "normalize": h.normalize, "out_rounding": out_r, "inter_block_rounding": out_r,
            # the model counts bits below the nominal exponent (ea + eb + 1), one above a power of two's
            "align_ref": "nominal" if d.get("align_ref") == "nominal" else "exact",
            "subnormal_in": d.get("subnormal_in") or "keep", "subnormal_out": d.get("subnormal_out") or "keep",
            # the probe evaluator keeps sums between blocks in fp32 whatever the accumulator
            "inter_fmt": "f32",
            # the probe evaluator aligns C to its exact leading bit + c_ref_shift; the model's nominal
            # reference of a product is ea + eb + 1, so C aligned like a product is c_ref_offset 1 there
            "c_ref_offset": (d.get("c_ref_shift") or 0) + (1 if d.get("align_ref") == "nominal" else 0),
        }
        if d.get("out_man_bits") is not None:
            p["out_man_bits"] = d["out_man_bits"]
        sub_c = next((pr for pr in self.probes if pr.param == "subnormal_out" and "C" in pr.label), None)
        if sub_c is not None and d.get("subnormal_out"):
            p["subnormal_c"] = d["subnormal_out"]
        nan = next((pr for pr in self.probes if pr.label in ("inf*0", "NaN*1") and pr.got is not None
                    and math.isnan(pr.got)), None)
        if nan is not None:
            p["nan_out"] = nan.got_bits
        ovf = next((pr for pr in self.probes if "(overflow" in pr.label), None)
        if ovf is not None and ovf.matches():
            # Hopper: inf also under rtz (IEEE would give max finite): the model's "inf_always"
            p["overflow"] = ("inf" if out_r == "rne" else "inf_always") if ovf.matches() == ["inf"] else "saturate"
        z = next((pr for pr in self.probes if pr.label == "(-0)*1 + (-0)"), None)
        if z is not None and z.got_bits is not None:
            # matches() lists the hypotheses the answer fits ("ieee" -0 or "positive" +0): a non-empty
            # list does not mean ieee (the H100 gives +0, and +0 for every zero result)
            p["zero_sign"] = "positive" if z.matches() == ["positive"] else "ieee"
        return p


def _pick(probes: list[Probe], param: str) -> tuple[str | None, str]:
    """The one hypothesis every probe of `param` agrees with (None when none or several do)."""
    if not probes:
        return None, "no probe possible for this format"
    common = set(probes[0].predictions)
    for p in probes:
        common &= set(p.matches())
    if len(common) == 1:
        return common.pop(), "ok"
    if not common:
        return None, "no hypothesis matches: " + "; ".join(f"{p.label} -> {p.got!r}" for p in probes if not p.matches())
    return None, "undecided between " + ", ".join(sorted(common))


def probe_instruction(runner: Runner, ins: Instr) -> Findings:
    """All probes of one instruction, each stage using what the previous ones found."""
    f = Findings(ins, Hyp(block_size=ins.k))
    stage = align_probes(ins, f.hyp)
    run_probes(runner, ins, stage)
    bits, note = decide_align_bits(stage)
    f.probes += stage
    f.decided["align_frac_bits"], f.notes["align_frac_bits"] = bits, note
    if bits is not None:
        f.hyp = replace(f.hyp, align_frac_bits=bits)
        stage = align_ref_probes(ins, bits)[: bits + 1]
        run_probes(runner, ins, stage)
        f.probes += stage
        f.decided["align_ref"], f.notes["align_ref"] = _pick(stage, "align_ref")
    for param, make in (("align_rounding", rounding_probes), ("normalize", normalize_probes)):
        stage = make(ins, f.hyp)
        run_probes(runner, ins, stage)
        f.probes += stage
        val, note = _pick(stage, param)
        f.decided[param], f.notes[param] = val, note
        if val is not None:
            f.hyp = replace(f.hyp, **{param: val})
    stage = block_probes(ins, f.hyp)
    run_probes(runner, ins, stage)
    f.probes += stage
    blk, note = decide_block(stage, ins.k) if stage else (None, "no probe possible")
    f.decided["block_size"], f.notes["block_size"] = blk, note
    if blk is not None:
        f.hyp = replace(f.hyp, block_size=blk)
    # how many fraction bits D keeps (before out_rounding: its probes' predictions depend on it)
    stage = acc_bits_probes(ins, f.hyp)
    run_probes(runner, ins, stage)
    f.probes += stage
    mb, note = decide_acc_bits(stage, FMT[ins.c][1])
    f.decided["out_man_bits"], f.notes["out_man_bits"] = mb, note
    if mb is not None:
        f.hyp = replace(f.hyp, out_man_bits=mb)
    for param, make in (("c_position", c_probes), ("out_rounding", out_rounding_probes)):
        stage = make(ins, f.hyp)
        run_probes(runner, ins, stage)
        f.probes += stage
        val, note = _pick(stage, param)
        if param == "c_position" and val is None and f.hyp.block_size >= ins.k and {"first", "last"} <= set(
                stage[0].matches() if stage else ()):
            val, note = "first", "one block: C is fused with all K products (first = last)"
        if param == "out_rounding" and not stage:
            note = f"n/a: no sum of one block needs rounding to {ins.c} (align_frac_bits {f.hyp.align_frac_bits})"
        f.decided[param], f.notes[param] = val, note
        if val is not None:
            f.hyp = replace(f.hyp, **{param: val})
    # how C aligns when it is the largest term (after out_rounding: the probes read D's last ulp)
    stage = c_ref_probes(ins, f.hyp)
    run_probes(runner, ins, stage)
    f.probes += stage
    val, note = _pick(stage, "c_ref_shift")
    if val is None and stage and all(len(set(p.predictions.values())) == 1 for p in stage):
        note = "n/a: no probe tells the hypotheses apart"
    f.decided["c_ref_shift"], f.notes["c_ref_shift"] = (int(val) if val is not None else None), note
    if val is not None:
        f.hyp = replace(f.hyp, c_ref_shift=int(val))
    sub = subnormal_probes(ins)
    run_probes(runner, ins, sub)
    f.probes += sub
    for param in ("subnormal_in", "subnormal_out"):
        f.decided[param], f.notes[param] = _pick([p for p in sub if p.param == param], param)
    extra = special_probes(ins) + tf32_probes(ins) + fp8_probes(ins)
    run_probes(runner, ins, extra)
    f.probes += extra
    for p in extra:
        m = p.matches()
        f.specials[p.label] = f"0x{p.got_bits:0{FMT[ins.c][3] // 4}X} ({p.got!r})" + (f" = {'/'.join(m)}" if m else " (no prediction)")
    for param in ("tf32_low_bits",):
        ps = [p for p in extra if p.param == param]
        if ps:
            f.decided[param], f.notes[param] = _pick(ps, param)
    return f


# ---------------------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------------------
def _y(v: float | None) -> float:
    """Series values must be finite (the store keeps REALs): non-finite ones are 0 with the truth in
    the point's strings."""
    return float(v) if v is not None and math.isfinite(v) else 0.0


def probe_points(f: Findings) -> list[Point]:
    pts = []
    for i, p in enumerate(f.probes):
        m = p.matches()
        pts.append(Point(i, _y(p.got), extra={
            "label": f"{p.param}: {p.label}", "param": p.param,
            "inputs": f"a={p.a if p.raw_a is None else [hex(x) for x in p.raw_a]} b={p.b} c={p.c}",
            "predictions": "; ".join(f"{h}={v!r}" for h, v in p.predictions.items()),
            "hardware": f"0x{(p.got_bits or 0):X} ({p.got!r})",
            "verdict": "/".join(m) if m else "none"}))
    return pts


def findings_row(f: Findings) -> dict[str, Any]:
    return {**{k: f.decided.get(k) for k in ("block_size", "align_frac_bits", "align_ref", "align_rounding", "normalize",
                                             "c_position", "out_rounding", "subnormal_in", "subnormal_out")},
            "notes": f.notes, "specials": f.specials}


def write_presets(ctx: BenchContext, found: dict[Instr, Findings]) -> None:
    path = os.environ.get("GPUDISSECT_PRESETS_OUT")
    if not path:
        return
    arch = f"sm_{ctx.props['cc_major']}{ctx.props.get('cc_minor', 0)}"
    entry = {}
    for ins, f in found.items():
        undecided = sorted(k for k in ("block_size", "align_frac_bits", "align_rounding", "normalize")
                           if f.decided.get(k) is None)
        if f.hyp.c_position == "last":  # C fused into the last block: the model has no such mode
            undecided.append("c_position=last")
        entry[ins.ptx] = {**f.params(), "_verified": not undecided, "_undecided": undecided,
                          "_source": f"tc_probes on {ctx.props.get('name', arch)}", "_notes": f.notes,
                          "_specials": f.specials, "_c_position": f.hyp.c_position}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    status = "measured by gpudissect numerics/tc_probes (bench/numerics.py); _verified is false where a probe was undecided"
    Path(path).write_text(json.dumps({"_status": status, arch: entry}, indent=1, sort_keys=True))


def _instrs(runner: Runner) -> list[Instr]:
    return [i for i in INSTRS if runner.supported(i)]


REQUIRED_KEYS = {  # summary keys of the issue: instruction key -> params reported
    "mma.f16_f32": ("block_size", "align_frac_bits", "out_rounding"),
    "wgmma.f16_f32": ("block_size", "align_frac_bits", "out_rounding"),
    "wgmma.f16_f16": ("out_rounding",), "wgmma.bf16_f32": ("align_frac_bits",),
    "wgmma.tf32_f32": ("align_frac_bits",), "wgmma.e4m3_f32": ("block_size", "align_frac_bits", "out_rounding"),
}


def run_all_probes(ctx: BenchContext, runner: Runner, record: bool) -> dict[Instr, Findings]:
    found: dict[Instr, Findings] = {}
    todo = _instrs(runner)
    for i, ins in enumerate(todo):
        ctx.progress(i, len(todo), f"probes {ins.key}")
        f = probe_instruction(runner, ins)
        found[ins] = f
        if not record:
            continue
        ctx.series(f"probes.{ins.key}", "probe", "", "D", "value", probe_points(f), plot="bar",
                   figure=f"probes.{ins.key}", instruction=ins.ptx, findings=json.dumps(findings_row(f), default=str))
        for param in ("block_size", "align_frac_bits", "align_ref", "align_rounding", "normalize", "c_position",
                      "out_rounding", "subnormal_in", "subnormal_out"):
            val = f.decided.get(param)
            required = param in REQUIRED_KEYS.get(ins.key, ())
            if val is None and not required:
                continue
            note = f.notes.get(param, "")
            if val is None and param == "out_rounding" and note.startswith("n/a"):
                ctx.figure(f"num.{ins.key}.{param}", "n/a", "", "measured", "tc_probes: crafted inputs", note=note)
                continue
            ok = val is not None
            ctx.figure(f"num.{ins.key}.{param}", val if ok else "undecided", "bits" if param == "align_frac_bits" else "",
                       "measured", "tc_probes: crafted inputs, predictions of each hypothesis vs hardware",
                       check="ok" if ok else "failed", note=note)
            if required and not ok:
                ctx.soft_check(False, f"{ins.key}.{param}: {note}")
    return found


def subnormal_summary(found: dict[Instr, Findings]) -> str:
    vals = {f"{ins.key}": f.decided.get("subnormal_in") or "undecided" for ins, f in found.items()}
    kinds = set(vals.values())
    return kinds.pop() if len(kinds) == 1 else ", ".join(f"{k}={v}" for k, v in vals.items())


def monotonicity(runner: Runner, ins: Instr, rng: np.random.Generator, n: int = 4096) -> tuple[int, int, str]:
    """Random dots (exponents within +-3: cancellation), then the same with a_0 one code larger in
    magnitude and a_0 b_0 > 0: a monotone sum never decreases. Returns (violations, pairs, an example)."""
    a = random_codes(ins.a, (n, ins.k), rng, "narrow", FMT[ins.a][2])
    b = random_codes(ins.a, (n, ins.k), rng, "narrow", FMT[ins.a][2])
    c = random_codes(ins.c, (n,), rng, "narrow", FMT[ins.c][2])
    sign = np.uint32(1 << (in_bits(ins.a) - 1))
    a[:, 0] &= ~sign
    b[:, 0] &= ~sign
    a2 = a.copy()
    a2[:, 0] += np.uint32(1 << 13 if ins.a == "tf32" else 1)
    ok = np.isfinite(to_values(ins.a, a2[:, 0]))
    a, b, c, a2 = a[ok], b[ok], c[ok], a2[ok]
    v1 = to_values(ins.c, runner.dots(ins, a, b, c))
    v2 = to_values(ins.c, runner.dots(ins, a2, b, c))
    fin = np.isfinite(v1) & np.isfinite(v2)
    bad = np.flatnonzero(fin & (v2 < v1))
    ex = ""
    if bad.size:
        i = bad[0]
        ex = (f"a={[hex(x) for x in a[i]]} b={[hex(x) for x in b[i]]} c={c[i]:#x}: D={v1[i]!r}, "
              f"with a0={a2[i, 0]:#x}: D={v2[i]!r}")
    return int(bad.size), int(fin.sum()), ex


@benchmark(
    suite=SUITE, name="tc_probes",
    title="Tensor-core arithmetic decided by crafted inputs (block size, alignment bits and rounding, output rounding, subnormals, specials)",
    axes={"instruction": "mma.sync m16n8k16/k8 (f16, bf16, tf32); wgmma m64n8k* (f16, bf16, tf32, e4m3, e5m2) on sm_90"},
    kernels=list(SPECS.values()), timeout_s=300, min_cc=(8, 0),
    paper="beyond 001 §8: probes in the style of Fasi et al. (2021) / Mikaitis et al.",
)
def tc_probes(ctx: BenchContext) -> None:
    runner = Runner(ctx)
    found = run_all_probes(ctx, runner, record=True)
    rng = np.random.default_rng(7)
    for ins in found:
        viol, pairs, ex = monotonicity(runner, ins, rng)
        ctx.figure(f"num.{ins.key}.monotonic_violations", viol, "pairs", "measured",
                   f"{pairs} dot pairs, a_0 raised by one code (a_0 b_0 > 0); D must not decrease", note=ex)
    ctx.figure("num.subnormal_inputs", subnormal_summary(found), "", "measured",
               "tc_probes: subnormal A or B times a power of two, product normal in D")
    write_presets(ctx, found)


# ---------------------------------------------------------------------------------------
# Model agreement: corner-stressing random dot products
# ---------------------------------------------------------------------------------------
SCENARIOS = ("wide", "narrow", "cancel", "subnormal", "overflow", "special")


def random_codes(fmt: str, shape: tuple[int, ...], rng: np.random.Generator, scenario: str,
                 center: int | None = None) -> np.ndarray:
    """Codes of fmt drawn for one scenario: wide (every finite exponent, subnormals included),
    narrow (exponents within +-3 of `center`: cancellation), subnormal (exponent field 0 or 1),
    overflow (the top exponents), special (a few inf/NaN among wide values)."""
    ebits, fbits, bias, _ = FMT[fmt]
    emax_field = (1 << ebits) - 1
    top = emax_field if fmt == "e4m3" else emax_field - 1  # largest field of finite values
    sign = rng.integers(0, 2, shape).astype(np.uint64)
    man = rng.integers(0, 1 << fbits, shape).astype(np.uint64)
    if scenario in ("wide", "special", "cancel"):
        ex = rng.integers(0, top + 1, shape)
    elif scenario == "narrow":
        c = bias if center is None else center
        ex = np.clip(c + rng.integers(-3, 4, shape), 1, top)
    elif scenario == "subnormal":
        ex = rng.integers(0, 2, shape)
    else:  # overflow
        ex = rng.integers(max(1, top - 2), top + 1, shape)
    code = (sign << np.uint64(ebits + fbits)) | (ex.astype(np.uint64) << np.uint64(fbits)) | man
    if fmt == "e4m3":  # S.1111.111 is NaN: keep it out except in "special"
        code = np.where((code & np.uint64(0x7F)) == 0x7F, code - np.uint64(1), code)
    if scenario == "special":
        hit = rng.random(shape) < 0.02
        spec = np.array([_nan_bits(fmt) >> (13 if fmt == "tf32" else 0)] + ([] if fmt == "e4m3" else
                        [((1 << ebits) - 1) << fbits, (1 << (ebits + fbits)) | (((1 << ebits) - 1) << fbits)]), np.uint64)
        code = np.where(hit, spec[rng.integers(0, spec.size, shape)], code)
    if fmt == "tf32":
        code = code << np.uint64(13)  # tf32 lives in the top 19 bits of an fp32 container
    return code.astype(np.uint32)


def _cancel(a: np.ndarray, b: np.ndarray, fmt: str, rng: np.random.Generator) -> np.ndarray:
    """Second half of each K row: the negated first half with the lowest fraction bit flipped at random
    (near-total cancellation)."""
    k = a.shape[-1]
    h = k // 2
    sign_bit = np.uint32(1 << (in_bits(fmt) - 1))
    lsb = np.uint32(1 << 13) if fmt == "tf32" else np.uint32(1)
    flip = (rng.random(a[..., :h].shape) < 0.5).astype(np.uint32) * lsb
    a = a.copy()
    a[..., h:2 * h] = (a[..., :h] ^ sign_bit) ^ flip
    if fmt == "e4m3":  # flipping into S.1111.111 would make a NaN
        a = np.where((a & np.uint32(0x7F)) == 0x7F, a - np.uint32(1), a)
    return a


def agreement_inputs(ins: Instr, n_inst: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, C, scenario index per instance): instances cycle through SCENARIOS."""
    sc = np.arange(n_inst) % len(SCENARIOS)
    A = np.zeros((n_inst, ins.m, ins.k), np.uint32)
    B = np.zeros((n_inst, ins.k, ins.n), np.uint32)
    C = np.zeros((n_inst, ins.m, ins.n), np.uint32)
    bias = FMT[ins.a][2]
    for s, name in enumerate(SCENARIOS):
        idx = np.flatnonzero(sc == s)
        if idx.size == 0:
            continue
        center = int(rng.integers(1, 2 * bias)) if name == "narrow" else None
        A[idx] = random_codes(ins.a, (idx.size, ins.m, ins.k), rng, name, center)
        B[idx] = random_codes(ins.a, (idx.size, ins.k, ins.n), rng, "narrow" if name == "cancel" else name, center)
        if name == "cancel":
            # B rows mirrored too so that a_j b_j and a_{j+h} b_{j+h} nearly cancel
            h = ins.k // 2
            B[idx, h:2 * h, :] = B[idx, :h, :]
            A[idx] = _cancel(A[idx], B[idx], ins.a, rng)
        cs = "narrow" if name == "cancel" else ("wide" if name == "special" else name)
        C[idx] = random_codes(ins.c, (idx.size, ins.m, ins.n), rng, cs, None)
        zero_c = rng.random((idx.size, ins.m, ins.n)) < 0.25
        C[idx] = np.where(zero_c, 0, C[idx])
    return A, B, C, sc


def flatten_dots(ins: Instr, A: np.ndarray, B: np.ndarray, C: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every D[i, m, n] as a dot product (a = A[i, m, :], b = B[i, :, n], c = C[i, m, n])."""
    I = A.shape[0]
    a = np.broadcast_to(A[:, :, None, :], (I, ins.m, ins.n, ins.k)).reshape(-1, ins.k)
    b = np.broadcast_to(np.swapaxes(B, 1, 2)[:, None, :, :], (I, ins.m, ins.n, ins.k)).reshape(-1, ins.k)
    return a, b, C.reshape(-1), D.reshape(-1)


def same_bits(fmt: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bit-identical, both NaN with different payloads)."""
    eq = x == y
    nan = np.isnan(to_values(fmt, x)) & np.isnan(to_values(fmt, y))
    return eq, nan & ~eq


def write_vectors(store: dict[str, np.ndarray]) -> None:
    path = os.environ.get("GPUDISSECT_VECTORS_OUT")
    if not path or not store:
        return
    p = Path(path)
    if p.suffix != ".npz":
        p.mkdir(parents=True, exist_ok=True)
        p = p / "vectors.npz"
    else:
        p.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(p, **store)


def _tcparams(params: dict[str, Any]) -> Any:
    from ..numerics.model import TCParams  # helper A's model (lazy: the suite must load without it)

    names = {f.name for f in fields(TCParams)}
    return TCParams.from_dict({k: v for k, v in params.items() if k in names})


@benchmark(
    suite=SUITE, name="tc_model_agreement",
    title="gpudissect.numerics model vs hardware, bit for bit, on corner-stressing random dot products",
    axes={"instruction": "every mma/wgmma instruction of tc_probes", "samples": "2^17 (quick) / 2^20 (full) dots each"},
    kernels=list(SPECS.values()), timeout_s=600, min_cc=(8, 0),
    paper="issue 4 §3: parameters from this run's probes, not presets",
)
def tc_model_agreement(ctx: BenchContext) -> None:
    try:
        from ..numerics.model import dot as model_dot  # the package exports a `model` function too
    except ImportError as e:
        ctx.check(False, f"gpudissect.numerics.model is not importable ({e}): the model agreement needs it")
        raise
    runner = Runner(ctx)
    found = run_all_probes(ctx, runner, record=False)
    samples = 1 << (17 if ctx.quick else 20)
    rng = np.random.default_rng(20240)
    rates: list[float] = []
    total = 0
    store: dict[str, np.ndarray] = {}
    for idx, (ins, f) in enumerate(found.items()):
        ctx.progress(idx, len(found), f"agreement {ins.key}")
        n_inst = max(len(SCENARIOS), samples // ins.per_inst)
        A, B, C, sc = agreement_inputs(ins, n_inst, rng)
        D = runner.run(ins, A, B, C)
        a, b, c, d = flatten_dots(ins, A, B, C, D)
        scen = np.repeat(sc, ins.per_inst)
        params = _tcparams(f.params())
        m = model_dot(params, a, b, c).astype(np.uint32)
        eq, nan_payload = same_bits(ins.c, d, m)
        agree = eq | nan_payload
        rate = float(agree.mean())
        rates.append(rate)
        total += d.size
        bad = np.flatnonzero(~agree)
        pts = []
        for j, i in enumerate(bad[:20]):
            pts.append(Point(j, _y(float(to_values(ins.c, d[i:i + 1])[0])), extra={
                "scenario": SCENARIOS[scen[i]], "a": " ".join(f"{x:X}" for x in a[i]), "b": " ".join(f"{x:X}" for x in b[i]),
                "c": f"{c[i]:X}", "hardware": f"{d[i]:X}", "model": f"{m[i]:X}"}))
        ctx.series(f"agreement.{ins.key}.disagreements", "#", "", "D (hardware)", "value", pts, plot="bar",
                   figure="agreement", params=json.dumps(f.params()))
        by_sc = {SCENARIOS[s]: float(agree[scen == s].mean()) for s in range(len(SCENARIOS)) if (scen == s).any()}
        ctx.figure(f"num.model.{ins.key}.agreement_rate", rate, "fraction", "measured",
                   f"{d.size} dots; by scenario {json.dumps(by_sc)}; NaN payload differences counted as agreeing: "
                   f"{int(nan_payload.sum())}")
        ctx.figure(f"num.model.{ins.key}.disagreements", int(bad.size), "dots", "measured", "hardware != model bits")
        # test vectors: every disagreement first, then a random sample, up to 4096
        keep = np.concatenate([bad, rng.choice(np.flatnonzero(agree), min(4096, int(agree.sum())), replace=False)])[:4096]
        dt_in = {8: np.uint8, 16: np.uint16, 32: np.uint32}[in_bits(ins.a)]
        dt_acc = np.uint16 if ins.c == "f16" else np.uint32
        for nm_, arr, dt in (("a", a, dt_in), ("b", b, dt_in), ("c", c, dt_acc), ("d", d, dt_acc)):
            store[f"{ins.ptx}.{nm_}"] = np.ascontiguousarray(arr[keep]).astype(dt)  # smallest container
        store[f"{ins.ptx}.params"] = np.array(json.dumps(f.params()))  # what the probes of this run found
    ctx.figure("num.model.agreement_rate", min(rates) if rates else float("nan"), "fraction", "measured",
               "minimum over instructions of the bit-identical fraction")
    ctx.figure("num.model.samples", total, "dots", "measured", "dot products compared, all instructions")
    write_vectors(store)


# ---------------------------------------------------------------------------------------
# Sun et al. §8: element-wise profiling (Tables 12-15) and chain matrix multiplication (Fig. 17)
# ---------------------------------------------------------------------------------------
PROFILE_SEED = 0  # the paper uses one fixed seed for every type; its value is not stated
OPS = ("mul", "add", "acc")  # a0*b0 | a0*b0 + a1*b1 | a0*b0 + c0


def profile_inputs(op: str, trials: int, seed: int = PROFILE_SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fp32 normal(0, 1) values (the same sequence for every type): a (trials, 2), b (trials, 2), c (trials,)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((trials, 2)).astype(np.float32)
    b = rng.standard_normal((trials, 2)).astype(np.float32)
    c = rng.standard_normal(trials).astype(np.float32)
    if op == "mul":
        a[:, 1] = b[:, 1] = c[:] = 0
    elif op == "add":
        c[:] = 0
    else:
        a[:, 1] = b[:, 1] = 0
    return a, b, c


def cpu_fp32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The paper's CPU baseline: fp32 arithmetic, products then sums in order."""
    p = (a.astype(np.float32) * b.astype(np.float32))
    return (p[:, 0] + p[:, 1]) + c.astype(np.float32)


def profile_stats(gpu: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    err = np.abs(gpu.astype(np.float64) - ref.astype(np.float64))
    return {"mean_abs_err": float(np.mean(err)), "max_abs_err": float(np.max(err)),
            "frac_nonzero": float(np.mean(err > 0))}


def profile_case(runner: Runner, ins: Instr, op: str, init: str, trials: int) -> dict[str, dict[str, float]]:
    a32, b32, c32 = profile_inputs(op, trials)
    ab, bb, cb = round_values(ins.a, a32), round_values(ins.a, b32), round_values(ins.c, c32)
    if init == "low":  # values initialised in the low-precision type: the CPU sees the same values
        a32, b32 = to_values(ins.a, ab).astype(np.float32), to_values(ins.a, bb).astype(np.float32)
        c32 = to_values(ins.c, cb).astype(np.float32)
    K = ins.k
    a = np.zeros((trials, K), np.uint32)
    b = np.zeros((trials, K), np.uint32)
    a[:, :2], b[:, :2] = ab, bb
    d = to_values(ins.c, runner.dots(ins, a, b, cb))
    ref = cpu_fp32(a32, b32, c32)
    out = {"vs_fp32": profile_stats(d, ref)}
    if ins.c == "f16":
        out["vs_fp32cvtf16"] = profile_stats(d, ref.astype(np.float16))
    return out


def chain_run(runner: Runner, ins: Instr, init: str, trials: int, n_max: int, seed: int = 1) -> tuple[list[float], list[float]]:
    """D_{i+1} = D_i x B_i (Fig. 17): D (M x 8) becomes the first 8 columns of the next A (converted to
    the input type, RNE; fp8 saturates). Returns per N: mean relative l2 error over the finite trials,
    fraction of trials that overflowed (inf/NaN, or fp8 saturation)."""
    rng = np.random.default_rng(seed)
    m, k, n = ins.m, ins.k, ins.n
    a_val = rng.standard_normal((trials, m, k)).astype(np.float32)
    a_bits = round_values(ins.a, a_val)
    ref = to_values(ins.a, a_bits).astype(np.float32) if init == "low" else a_val
    errs, over = [], []
    bad = np.zeros(trials, bool)
    for step in range(n_max):
        b_val = rng.standard_normal((trials, k, n)).astype(np.float32)
        if step > 0:
            b_val[:, n:, :] = 0  # A holds D in its first 8 columns only
        b_bits = round_values(ins.a, b_val)
        b_ref = to_values(ins.a, b_bits).astype(np.float32) if init == "low" else b_val
        c_bits = np.zeros((trials, m, n), np.uint32)
        d = to_values(ins.c, runner.run(ins, a_bits, b_bits, c_bits))
        ref = np.matmul(ref, b_ref, dtype=np.float32)
        bad |= ~np.isfinite(d).all(axis=(1, 2))
        num = np.sqrt(((d - ref) ** 2).sum(axis=(1, 2)))
        den = np.sqrt((d**2).sum(axis=(1, 2)))
        ok = ~bad & (den > 0)
        errs.append(float(np.mean(num[ok] / den[ok])) if ok.any() else float("nan"))
        over.append(float(bad.mean()))
        nxt = np.zeros((trials, m, k), np.float64)
        nxt[:, :, :n] = d
        if ins.a in ("e4m3", "e5m2"):
            bad |= (np.abs(nxt) > fmt_max(ins.a)).any(axis=(1, 2))
        a_bits = round_values(ins.a, nxt)
        ref_next = np.zeros((trials, m, k), np.float32)
        ref_next[:, :, :n] = ref
        ref = ref_next
    return errs, over


PROFILE_INSTRS = [i for i in INSTRS if i.a in ("f16", "bf16", "tf32") or i.c == "f32"]


@benchmark(
    suite=SUITE, name="tc_profiling",
    title="Element-wise error profiling (Tables 12-15) and chain matrix multiplication (Fig. 17), mma and wgmma",
    axes={"instruction": "mma m16n8k16/k8, wgmma m64n8k*", "op": "mul | add | acc", "init": "low | fp32",
          "N": "chain length 1..12 (quick) / 1..20 (full)"},
    kernels=list(SPECS.values()), timeout_s=300, min_cc=(8, 0),
    paper="001 §8 (Sun et al.): Tables 12-15, Fig. 17",
)
def tc_profiling(ctx: BenchContext) -> None:
    runner = Runner(ctx)
    trials = 1000 if ctx.quick else 10000
    chain_trials, n_max = (200, 12) if ctx.quick else (1000, 20)
    todo = [i for i in PROFILE_INSTRS if runner.supported(i)]
    for idx, ins in enumerate(todo):
        ctx.progress(idx, len(todo), f"profiling {ins.key}")
        for init in ("low", "fp32"):
            iname = f"init_{ins.a}" if init == "low" else "init_fp32"
            pts = []
            for j, op in enumerate(OPS):
                res = profile_case(runner, ins, op, init, trials)
                for ref, st in res.items():
                    for stat, v in st.items():
                        key = f"num.profile.{ins.family}.{ins.tname}.{iname}.{op}.{stat}" + ("" if ref == "vs_fp32" else f".{ref}")
                        ctx.figure(key, v, "abs error" if "err" in stat else "fraction", "measured",
                                   f"{trials} trials, normal(0,1) fp32 values (seed {PROFILE_SEED}), error vs CPU fp32"
                                   + (" converted to f16" if ref != "vs_fp32" else ""))
                pts.append(Point(j, res["vs_fp32"]["mean_abs_err"], extra={"label": op, **{
                    f"{r}.{s}": v for r, st in res.items() for s, v in st.items()}}))
            ctx.series(f"profile.{ins.key}.{iname}", "operation", "", "mean |error|", "abs", pts, plot="bar",
                       figure=f"profile.{ins.family}")
            errs, over = chain_run(runner, ins, init, chain_trials, n_max)
            # the line stops where every trial has overflowed (Fig. 17's fp16 line stops at N = 10)
            cpts = [Point(i + 1, e, extra={"overflow_fraction": o}) for i, (e, o) in enumerate(zip(errs, over))
                    if math.isfinite(e)]
            ctx.series(f"chain.{ins.key}.{iname}", "chain length N", "", "relative l2 error", "", cpts, plot="logy",
                       figure=f"chain.{ins.family}")
            first_over = next((i + 1 for i, o in enumerate(over) if o > 0), None)
            ctx.figure(f"num.chain.{ins.key}.{iname}.rel_err_n1", errs[0] if math.isfinite(errs[0]) else "overflow", "", "measured",
                       f"mean over {chain_trials} trials of the relative l2 error (Sun eq. 1) after one step")
            last = errs[-1] if math.isfinite(errs[-1]) else "all trials overflowed"
            ctx.figure(f"num.chain.{ins.key}.{iname}.rel_err_n{n_max}", last, "", "measured",
                       f"mean over the {chain_trials} trials still finite")
            ctx.figure(f"num.chain.{ins.key}.{iname}.first_overflow_n", first_over if first_over else "none", "", "measured",
                       "smallest N at which a trial overflowed (inf/NaN in D; fp8: D beyond the input range)")
