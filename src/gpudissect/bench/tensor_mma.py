"""The tensor suite, warp level: mma.sync (dense), mma.sp (2:4 sparse) and ldmatrix.

Methods: Sun et al. (001) §4-7 (Fig. 4: clock64 around an unrolled loop of ILP independent, each
dependent, mma chains with __syncwarp; completion latency at 1 warp and ILP 1; throughput over
#warps x ILP; the two convergence points of Tables 3/6/9) and Luo et al. (000) §6.2 (Tables VII,
VIII and XII: the PTX -> SASS map on Hopper, TFLOPS, power and energy efficiency).

Everything the GPU computes is checked: the host lays out A, B, C (and the sparse metadata) in the
ISA's register fragments, and D must equal numpy's A*B+C — exactly for integer-valued inputs, within
a tolerance for fully random floating-point inputs.

What ptxas (NVRTC 13.5, sm_90a) makes of them, pinned by `sass_patterns` and shown by
`gpudissect sass mma_latency_throughput`: f16/bf16/tf32 -> HMMA.<mnk>.F32[.BF16|.TF32] / .F16,
f64 -> DMMA.<m>x<n>x<k>, s8/u8 -> IMMA.<mnk>.S8.S8 / .U8.U8, b1 and.popc -> BMMA.<mnk>.AND.POPC,
mma.sp -> HMMA.SP / IMMA.SP. Emulated (no instruction of their own on Hopper): fp8 (F2FP...UNPACK_B
to f16, then f16 HMMA of half the K; no f16 accumulator for 2:4 fp8), s4/u4 (unpacked, IMMA.S8/U8 of
half the K), xor.popc (BMMA AND.POPC plus integer arithmetic) and m8n8k4 .f16 (no MMA at all:
SHFL + HADD2.F32 + FFMA in a subroutine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..device.cuda import Arg
from ..errors import GpuDissectError
from ..models import Point
from .context import BenchContext
from .registry import Facts, KernelSpec, Param, benchmark

SUITE = "tensor"

# ---------------------------------------------------------------------------------------
# Element types and their bit codes
# ---------------------------------------------------------------------------------------
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "e4m3": 8, "e5m2": 8,
        "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1, "s32": 32}
FLOAT = {"f16", "bf16", "tf32", "f32", "f64", "e4m3", "e5m2"}
SIGNED = FLOAT | {"s8", "s4", "s32"}  # B2 = -B is representable


@cache
def fp8_values(fmt: str) -> np.ndarray:
    """Value of each of the 256 codes of e4m3 / e5m2 (NaN where the code is NaN or infinite)."""
    e_bits, m_bits, bias = (4, 3, 7) if fmt == "e4m3" else (5, 2, 15)
    code = np.arange(256)
    sign, exp, man = code >> 7, (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    mag = np.where(exp == 0, man / 2.0**m_bits * 2.0 ** (1 - bias), (1 + man / 2.0**m_bits) * 2.0 ** (exp - bias))
    val = np.where(sign == 1, -mag, mag)
    bad = (exp == 15) & (man == 7) if fmt == "e4m3" else exp == 31
    return np.where(bad, np.nan, val)


def decode(codes: np.ndarray, t: str) -> np.ndarray:
    """Bit codes (uint64) of type t -> values (float64, or int64 for integer types)."""
    c = np.asarray(codes, np.uint64)
    if t == "f16":
        return c.astype(np.uint16).view(np.float16).astype(np.float64)
    if t == "bf16":
        return (c.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if t in ("tf32", "f32"):
        return c.astype(np.uint32).view(np.float32).astype(np.float64)
    if t == "f64":
        return c.view(np.float64).copy()
    if t in ("e4m3", "e5m2"):
        return fp8_values(t)[c.astype(np.int64)]
    bits = BITS[t]
    v = (c & np.uint64((1 << bits) - 1)).astype(np.int64)
    if t in ("s8", "s4", "s32"):
        v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
    return v


def encode(values: np.ndarray, t: str) -> np.ndarray:
    """Values -> bit codes (uint64); every value must be exactly representable in t."""
    v = np.asarray(values)
    if t in ("s8", "u8", "s4", "u4", "b1", "s32"):
        lo, hi = {"s8": (-128, 127), "u8": (0, 255), "s4": (-8, 7), "u4": (0, 15), "b1": (0, 1),
                  "s32": (-(2**31), 2**31 - 1)}[t]
        iv = v.astype(np.int64)
        if np.any(iv != v) or np.any(iv < lo) or np.any(iv > hi):
            raise ValueError(f"values outside {t}")
        return (iv & ((1 << BITS[t]) - 1)).astype(np.uint64)
    f = v.astype(np.float64)
    if t == "f16":
        codes = f.astype(np.float16).view(np.uint16).astype(np.uint64)
    elif t == "bf16":
        codes = (f.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint64)
    elif t == "tf32":
        codes = (f.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).astype(np.uint64)
    elif t == "f32":
        codes = f.astype(np.float32).view(np.uint32).astype(np.uint64)
    elif t == "f64":
        codes = f.view(np.uint64).copy()
    elif t in ("e4m3", "e5m2"):
        table = fp8_values(t)
        codes = np.zeros(f.shape, np.uint64)
        for code in range(127, -1, -1):  # positive codes; -0.0 / +0.0 both map to +0
            codes[f == table[code]] = code
            codes[(f == -table[code]) & (f != 0)] = code | 0x80
    else:
        raise ValueError(f"unknown type {t}")
    back = decode(codes, t)
    if not np.array_equal(back, f):
        raise ValueError(f"values not exactly representable in {t}")
    return codes


def random_values(t: str, shape: tuple[int, ...], rng: np.random.Generator, exact: bool) -> np.ndarray:
    """Random inputs of type t. exact: small values whose products and sums are exact in every
    accumulator ({-2..2}/4 for floats); otherwise fully random mantissas. Signed integers stay
    symmetric (-127..127, -7..7) so that -B is representable too."""
    if t in ("s8", "u8", "s4", "u4", "b1"):
        lo, hi = {"s8": (-127, 127), "u8": (0, 255), "s4": (-7, 7), "u4": (0, 15), "b1": (0, 1)}[t]
        return rng.integers(lo, hi + 1, shape).astype(np.float64)
    if exact:
        return rng.integers(-2, 3, shape) / 4.0
    if t in ("e4m3", "e5m2"):
        table = fp8_values(t)
        ok = np.flatnonzero(np.isfinite(table) & (np.abs(table) <= 16))
        return table[rng.choice(ok, shape)]
    x = rng.uniform(-1, 1, shape)
    if t == "f16":
        return x.astype(np.float16).astype(np.float64)
    if t == "bf16":
        b = x.astype(np.float32).view(np.uint32)
        b = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
        return b.view(np.float32).astype(np.float64)
    if t == "tf32":
        return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    return x  # f64


def random_acc(t: str, shape: tuple[int, ...], rng: np.random.Generator, exact: bool) -> np.ndarray:
    """Initial accumulators: multiples of 1/16 in [-4, 4] (exact) or uniform (random)."""
    if t == "s32":
        return rng.integers(-1000, 1001, shape).astype(np.float64)
    if exact:
        return rng.integers(-64, 65, shape) / 16.0
    x = rng.uniform(-1, 1, shape)
    return x.astype(np.float16).astype(np.float64) if t == "f16" else x.astype(np.float32).astype(np.float64)


def pack(codes: np.ndarray, bits: int) -> np.ndarray:
    """[lane, element] codes -> [register, lane] words: 32-bit registers, element 0 in the low bits;
    64-bit elements take one (64-bit) register each."""
    if bits == 64:
        return np.ascontiguousarray(codes.T.astype(np.uint64))
    per = 32 // bits
    lanes, n = codes.shape
    c = codes.reshape(lanes, n // per, per).astype(np.uint64)
    words = (c << (np.arange(per, dtype=np.uint64) * np.uint64(bits))).sum(axis=2)
    return np.ascontiguousarray(words.T.astype(np.uint32))


def unpack(words: np.ndarray, bits: int, n: int) -> np.ndarray:
    """Inverse of pack: [register, lane] -> [lane, element] codes."""
    if bits == 64:
        return words.T.astype(np.uint64)
    per = 32 // bits
    w = words.T.astype(np.uint64)[:, :, None]
    c = (w >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))) & np.uint64((1 << bits) - 1)
    return c.reshape(words.shape[1], -1)[:, :n]


# ---------------------------------------------------------------------------------------
# Fragment layouts (PTX ISA "Matrix fragments for mma.m*n*k*"): for each lane and each element of
# its fragment (in register order), the (batch, row, col) of the matrix element it holds. Batch is
# the quad-pair of mma.m8n8k4 (a warp computes four independent 8x8x4 products); 0 elsewhere.
# ---------------------------------------------------------------------------------------
Layout = tuple[np.ndarray, np.ndarray, np.ndarray]  # batch, row, col: each [32 lanes, elements]


def parse_shape(shape: str) -> tuple[int, int, int]:
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


def _per_reg(bits: int) -> int:
    return 1 if bits >= 32 else 32 // bits


def layout_a(m: int, k: int, bits: int, quadpair: bool = False) -> Layout:
    lane = np.arange(32)[:, None]
    g, t = lane >> 2, lane & 3
    if quadpair:  # m8n8k4 .f16, A row-major: a lane holds 4 consecutive k of one row
        i = np.arange(4)[None, :]
        return ((lane >> 2) & 3) + 0 * i, (lane & 3) + 4 * (lane >> 4) + 0 * i, 0 * lane + i
    p = _per_reg(bits)
    i = np.arange(m * k // 32)[None, :]
    r, j = i // p, i % p
    if m == 8:
        return 0 * (g + i), g + 0 * i, t * p + j
    return 0 * (g + i), g + 8 * (r % 2), t * p + j + 4 * p * (r // 2)


def layout_b(k: int, n: int, bits: int, quadpair: bool = False) -> Layout:
    """B is K x N (column-major fragments: a lane holds consecutive k of one column)."""
    lane = np.arange(32)[:, None]
    g, t = lane >> 2, lane & 3
    if quadpair:
        i = np.arange(4)[None, :]
        return ((lane >> 2) & 3) + 0 * i, 0 * lane + i, (lane & 3) + 4 * (lane >> 4) + 0 * i
    p = _per_reg(bits)
    i = np.arange(k * n // 32)[None, :]
    r, j = i // p, i % p
    return 0 * (g + i), t * p + j + 4 * p * r, g + 0 * i


def layout_c(m: int, n: int, bits: int, quadpair: bool = False) -> Layout:
    lane = np.arange(32)[:, None]
    g, t = lane >> 2, lane & 3
    if quadpair:
        i = np.arange(8)[None, :]
        qp, hi = (lane >> 2) & 3, 4 * (lane >> 4)
        if bits == 16:  # a lane holds one row of 8
            return qp + 0 * i, (lane & 3) + hi + 0 * i, 0 * lane + i
        return qp + 0 * i, (lane & 1) + (i & 2) + hi, (i & 4) + (lane & 2) + (i & 1)
    i = np.arange(m * n // 32)[None, :]
    return 0 * (g + i), g + 8 * (i // 2), 2 * t + i % 2


# ---------------------------------------------------------------------------------------
# 2:4 sparsity (PTX ISA "Sparse matrix storage"). A chunk is 4 slots of which 2 hold the stored
# values; a metadata nibble holds the two slot indices (low 2 bits = the first stored value), in
# increasing order as mma.sp::ordered_metadata requires. A slot is one element for 16- and 8-bit
# types, a pair of elements for 4-bit types, and half an element for tf32 (1:2 sparsity: only
# 0b0100 and 0b1110 are valid).
# ---------------------------------------------------------------------------------------
ORDERED_NIBBLES = (0x4, 0x8, 0xC, 0x9, 0xD, 0xE)  # (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
TF32_NIBBLES = (0x4, 0xE)


def slot_elems(t: str) -> float:
    return {16: 1.0, 8: 1.0, 4: 2.0, 32: 0.5}[BITS[t]]


def nibble_slots(nib: int) -> tuple[int, int]:
    return nib & 3, (nib >> 2) & 3


def encode_nibble(i0: int, i1: int) -> int:
    if not 0 <= i0 < i1 <= 3:
        raise ValueError(f"metadata indices must be increasing and in 0..3: {(i0, i1)}")
    return i0 | (i1 << 2)


def sparse_dense_cols(t: str, nibbles: np.ndarray) -> np.ndarray:
    """For each chunk's nibble: the in-chunk dense column of each stored element ([..., kept])."""
    e = slot_elems(t)
    nib = np.asarray(nibbles, np.int64)
    s0, s1 = nib & 3, (nib >> 2) & 3
    if e < 1:  # tf32: one element; (0,1) -> element 0, (2,3) -> element 1
        return (s0 // 2)[..., None]
    e = int(e)
    slots = np.stack([s0] * e + [s1] * e, axis=-1)
    within = np.array(list(range(e)) * 2)
    return slots * e + within


def chunk_elems(t: str) -> int:
    return int(4 * slot_elems(t))


def decompress(values: np.ndarray, nibbles: np.ndarray, t: str) -> np.ndarray:
    """Stored values [rows, K/2] and nibbles [rows, chunks] -> dense A [rows, K] (zeros elsewhere)."""
    rows, half = values.shape
    ce = chunk_elems(t)
    kept = ce // 2
    chunks = half // kept
    cols = sparse_dense_cols(t, nibbles) + (np.arange(chunks) * ce)[None, :, None]  # [rows, chunks, kept]
    dense = np.zeros((rows, chunks * ce), values.dtype)
    np.put_along_axis(dense, cols.reshape(rows, -1), values, axis=1)
    return dense


def random_nibbles(t: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    choices = TF32_NIBBLES if BITS[t] == 32 else ORDERED_NIBBLES
    return np.asarray(choices)[rng.integers(0, len(choices), shape)]


# Which metadata nibble of which lane describes which (row, chunk), sparsity selector 0. The PTX
# ISA gives it as figures; this is what an H100 does (found by flipping one nibble at a time, see
# tests/test_tensor_mma.py for the table), and every mma.sp run re-checks it on random metadata.
# g = lane / 4 (rows g and g + 8), t = lane % 4; result [lane, nibble] = row * 64 + chunk, -1 unread.
#  * 16-bit slots (f16, bf16, tf32), 4 or 8 chunks a row: T0 holds chunks 0-3 and T1 chunks 4-7,
#    nibbles 0-3 of row g and nibbles 4-7 of row g + 8 (with 4 chunks T1 is not read);
#  * 8-bit slots (8-bit types, pairs of 4-bit ones), 8 chunks: T0 holds row g, T1 row g + 8;
#    16 chunks: T0/T1 chunks 0-7 and T2/T3 chunks 8-15 of rows g / g + 8.
def metadata_layout(t: str, chunks: int) -> np.ndarray:
    lane = np.arange(32)[:, None]
    g, th = lane >> 2, lane & 3
    q = np.arange(8)[None, :]
    if chunks not in (4, 8, 16):
        raise ValueError(f"no metadata layout for {chunks} chunks a row")
    if BITS[t] in (16, 32):
        if chunks == 16:
            raise ValueError("16-bit slots have at most 8 chunks a row")
        idx = (g + 8 * (q // 4)) * 64 + 4 * th + q % 4
        used = th < chunks // 4
    else:
        if chunks == 4:
            raise ValueError("8-bit slots have at least 8 chunks a row")
        idx = (g + 8 * (th & 1)) * 64 + 8 * (th >> 1) + q
        used = th < chunks // 4
    return np.where(used, idx, -1)


def metadata_words(nibbles: np.ndarray, layout: np.ndarray) -> np.ndarray:
    """nibbles [16 rows, chunks] -> the 32 metadata registers (unread nibbles: 0x4, a valid value)."""
    words = np.zeros(32, np.uint64)
    for q in range(8):
        idx = layout[:, q]
        nib = np.where(idx >= 0, nibbles.reshape(-1)[np.where(idx >= 0, (idx // 64) * nibbles.shape[1] + idx % 64, 0)], 0x4)
        words |= nib.astype(np.uint64) << np.uint64(4 * q)
    return words.astype(np.uint32)


def metadata_nibbles(words: np.ndarray, layout: np.ndarray, chunks: int) -> np.ndarray:
    """Inverse of metadata_words: the 32 registers -> nibbles [16 rows, chunks]."""
    out = np.full((16, chunks), -1, np.int64)
    for q in range(8):
        for lane in range(32):
            idx = layout[lane, q]
            if idx >= 0:
                out[idx // 64, idx % 64] = (int(words[lane]) >> (4 * q)) & 0xF
    return out


# ---------------------------------------------------------------------------------------
# Which mma / mma.sp exist for sm_90 (PTX ISA 9.x, "mma" and "mma.sp" syntax and target notes),
# each confirmed by compiling it with NVRTC 13 for sm_90a; the rows below say what was refused.
# ---------------------------------------------------------------------------------------
ISA_SRC = "PTX ISA 9.x §9.7.14.5.14 (mma) / §9.7.14.6.3 (mma.sp); compiled with NVRTC 13.5 for sm_90a"
DENSE: dict[str, tuple[str, ...]] = {
    "f16_f16": ("m8n8k4", "m16n8k8", "m16n8k16"),
    "f16_f32": ("m8n8k4", "m16n8k8", "m16n8k16"),
    "bf16_f32": ("m16n8k8", "m16n8k16"),
    "tf32_f32": ("m16n8k4", "m16n8k8"),
    "f64_f64": ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"),  # m16n8k* f64: sm_90 only
    "e4m3_f32": ("m16n8k16", "m16n8k32"),  # fp8 mma.sync: sm_89+; m16n8k16 and f16 accumulators: PTX 8.7+
    "e5m2_f32": ("m16n8k16", "m16n8k32"),
    "e4m3_f16": ("m16n8k16", "m16n8k32"),
    "e5m2_f16": ("m16n8k16", "m16n8k32"),
    "s8_s32": ("m8n8k16", "m16n8k16", "m16n8k32"),
    "u8_s32": ("m8n8k16", "m16n8k16", "m16n8k32"),
    "s4_s32": ("m8n8k32", "m16n8k32", "m16n8k64"),
    "u4_s32": ("m8n8k32", "m16n8k32", "m16n8k64"),
    "b1and_s32": ("m8n8k128", "m16n8k128", "m16n8k256"),
    "b1xor_s32": ("m8n8k128", "m16n8k128", "m16n8k256"),
}
SPARSE: dict[str, tuple[str, ...]] = {
    "f16_f16": ("m16n8k16", "m16n8k32"),
    "f16_f32": ("m16n8k16", "m16n8k32"),
    "bf16_f32": ("m16n8k16", "m16n8k32"),
    "tf32_f32": ("m16n8k8", "m16n8k16"),
    "e4m3_f32": ("m16n8k64",),
    "e5m2_f32": ("m16n8k64",),
    "s8_s32": ("m16n8k32", "m16n8k64"),
    "u8_s32": ("m16n8k32", "m16n8k64"),
    "s4_s32": ("m16n8k64", "m16n8k128"),
    "u4_s32": ("m16n8k64", "m16n8k128"),
}
# Combinations the ISA's syntax allows but sm_90a refuses, with what refused them.
_F8_F16 = "ptxas: 'mma with F16 accumulator and F8 floating point type' not supported on .target 'sm_90a'"
REFUSED = {("mma_sp", "e4m3_f16"): _F8_F16, ("mma_sp", "e5m2_f16"): _F8_F16}


def check_combination(types: str, shape: str, sparse: bool = False) -> None:
    """Raise GpuDissectError naming the valid combinations unless (types, shape) exists on sm_90."""
    table, what = (SPARSE, "mma.sp") if sparse else (DENSE, "mma.sync")
    if types not in table:
        why = REFUSED.get(("mma_sp" if sparse else "mma", types))
        raise GpuDissectError(
            f"{what}: type pair {types!r} is not valid on sm_90{f' ({why})' if why else ''}; valid pairs: "
            + ", ".join(f"{t} ({'/'.join(s)})" for t, s in table.items()) + f" [{ISA_SRC}]")
    if shape not in table[types]:
        raise GpuDissectError(f"{what}: {types} has no shape {shape!r} on sm_90; valid shapes for {types}: "
                              + ", ".join(table[types]) + f" [{ISA_SRC}]")


@dataclass(frozen=True)
class MmaVariant:
    """One PTX mma / mma.sp instruction: A and B of type `a`, C and D of type `c`."""

    a: str
    c: str
    shape: str
    sparse: bool = False
    bitop: str = ""  # b1 only: "and" | "xor"

    @property
    def types(self) -> str:
        return f"{self.a}{self.bitop}_{self.c}"

    @property
    def key(self) -> str:
        return f"{self.types}.{self.shape}"

    @property
    def family(self) -> str:
        return "mma_sp" if self.sparse else "mma"

    @property
    def mnk(self) -> tuple[int, int, int]:
        return parse_shape(self.shape)

    @property
    def quadpair(self) -> bool:
        return self.shape == "m8n8k4" and self.a == "f16"

    @property
    def fma_per_mma(self) -> int:
        """m*n*k per warp instruction (logical K for mma.sp, as Sun counts; 4 products for m8n8k4 .f16)."""
        m, n, k = self.mnk
        return m * n * k * (4 if self.quadpair else 1)

    @property
    def k_stored(self) -> int:
        return self.mnk[2] // 2 if self.sparse else self.mnk[2]

    def regs(self) -> tuple[int, int, int]:
        m, n, k = self.mnk
        ab = BITS[self.a]
        per = 1 if ab == 64 else 32 // ab
        cbits = BITS[self.c]
        if self.quadpair:
            return 2, 2, 4 if cbits == 16 else 8
        na = m * self.k_stored // 32 // per
        nb = k * n // 32 // per
        nc = m * n // 32 // (2 if cbits == 16 else 1)
        return na, nb, nc

    @property
    def ptx(self) -> str:
        m, n, k = self.mnk
        if self.a == "b1":
            return f"mma.sync.aligned.{self.shape}.row.col.s32.b1.b1.s32.{self.bitop}.popc"
        if self.sparse:
            return f"mma.sp::ordered_metadata.sync.aligned.{self.shape}.row.col.{self.c}.{self.a}.{self.a}.{self.c}"
        return f"mma.sync.aligned.{self.shape}.row.col.{self.c}.{self.a}.{self.a}.{self.c}"

    def asm(self) -> str:
        na, nb, nc = self.regs()
        lst = lambda start, count: "{" + ",".join(f"%{start + i}" for i in range(count)) + "}"  # noqa: E731
        ops = f"{lst(0, nc)}, {lst(nc, na)}, {lst(nc + na, nb)}, {lst(0, nc)}"
        if self.sparse:
            ops += f", %{nc + na + nb}, 0x0"
        return f"{self.ptx} {ops};"

    @property
    def max_warps(self) -> int:
        """Largest block launched. The 2:4 fp8 emulation (metadata shuffles, F2FP, HMMA.SP) needs up to
        252 registers a thread: 8 warps keep it out of local memory (16 would spill)."""
        return 8 if self.sparse and self.a in ("e4m3", "e5m2") else 16

    @property
    def emulated(self) -> bool:
        """ptxas expands it into other SASS on sm_90 (no tensor-core instruction of its own)."""
        return self.a in ("e4m3", "e5m2", "s4", "u4") or self.bitop == "xor" or self.quadpair

    def defines(self) -> dict[str, object]:
        na, nb, nc = self.regs()
        ck = {"f32": 0, "f16": 1, "s32": 1, "f64": 2}[self.c]
        return {"NA": na, "NB": nb, "NC": nc, "AK": 1 if self.a == "f64" else 0, "CK": ck,
                "SPARSE": int(self.sparse), "OPAQUE": int(self.emulated), "MAX_WARPS": self.max_warps, "MMA_ASM": f'"{self.asm()}"'}


def all_variants(sparse: bool) -> list[MmaVariant]:
    out = []
    for types, shapes in (SPARSE if sparse else DENSE).items():
        a, c = types.split("_")
        bitop = ""
        if a.startswith("b1"):
            a, bitop = "b1", a[2:]
        out += [MmaVariant(a, c, s, sparse, bitop) for s in shapes]
    return out


# ---------------------------------------------------------------------------------------
# Inputs in fragment form, and what D must be
# ---------------------------------------------------------------------------------------
CHAINS = 6  # the kernel reads C for up to 6 chains (ILP 1..6)
ZMASKS = 8  # zero masks after the 32 metadata words (OPAQUE kernels)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + 2**31) % 2**32) - 2**31


@dataclass
class MmaInputs:
    """Matrices of one variant, their fragments, and the reference for D."""

    v: MmaVariant
    a: np.ndarray  # [batch, m, k] dense A (values; zeros where 2:4 sparse)
    b: np.ndarray  # [batch, k, n]
    b2: np.ndarray  # [batch, k, n]
    c: np.ndarray  # [chains, batch, m, n]
    a_words: np.ndarray  # [regs, 32]
    b_words: np.ndarray
    b2_words: np.ndarray
    c_words: np.ndarray  # [chains, regs, 32]
    e_words: np.ndarray  # [32 + ZMASKS] u32
    exact: bool

    def product(self, b: np.ndarray) -> np.ndarray:
        a, v = self.a, self.v
        if v.a == "b1" and v.bitop == "xor":
            return a.sum(axis=2)[:, :, None] + b.sum(axis=1)[:, None, :] - 2 * (a @ b)
        return a @ b

    def expected(self, iters: int) -> np.ndarray:
        """D of every chain, [chains, batch, m, n]: C + A*B + iters * (A*B + A*B2)."""
        ab, ab2 = self.product(self.b), self.product(self.b2)
        d = self.c + ab[None] + iters * (ab + ab2)[None]
        return _wrap32(d) if self.v.c == "s32" else d

    def d_values(self, words: np.ndarray) -> np.ndarray:
        """Downloaded D fragments [..., regs, 32] -> values [..., batch, m, n]."""
        v = self.v
        m, n, _ = v.mnk
        nb = 4 if v.quadpair else 1
        bits = BITS[v.c]
        _, _, nc = v.regs()
        lead = words.shape[:-2]
        flat = words.reshape(-1, nc, 32)
        bt, row, col = layout_c(m, n, bits, v.quadpair)
        out = np.empty((flat.shape[0], nb, m, n))
        for i in range(flat.shape[0]):
            codes = unpack(flat[i], bits, row.shape[1])
            out[i][bt, row, col] = decode(codes, v.c)
        return out.reshape(*lead, nb, m, n)

    def tolerance(self, iters: int) -> np.ndarray | None:
        """Allowed |D - reference| per element: None (exact) or a bound from the accumulator's epsilon."""
        if self.exact or self.v.c == "s32":
            return None
        eps = {"f16": 2.0**-10, "f32": 2.0**-16, "f64": 2.0**-48}[self.v.c]
        mag = np.abs(self.a) @ np.abs(self.b) + np.abs(self.a) @ np.abs(self.b2)
        steps = 2 * iters + 1
        return 4 * eps * (np.abs(self.c) + steps * mag[None]) + 1e-30


def metadata_for(v: MmaVariant) -> tuple[int, np.ndarray]:
    """(chunks per row, [lane, nibble] layout) of a sparse variant."""
    chunks = v.mnk[2] // chunk_elems(v.a)
    return chunks, metadata_layout(v.a, chunks)


def make_inputs(v: MmaVariant, rng: np.random.Generator, mode: str = "exact") -> MmaInputs:
    """mode: "exact" (integer-valued, D exact), "random" (full random mantissas) or "zero"."""
    m, n, k = v.mnk
    nb = 4 if v.quadpair else 1
    exact = mode != "random"
    gen = lambda t, shape: (np.zeros(shape) if mode == "zero" else random_values(t, shape, rng, exact))  # noqa: E731
    b = gen(v.a, (nb, k, n))
    if v.a in SIGNED:
        b2 = -b  # D returns to C + A*B every iteration: exact for any length
    elif mode == "random":
        b2 = gen(v.a, (nb, k, n))
    else:
        b2 = b.copy()
    c = np.zeros((CHAINS, nb, m, n)) if mode == "zero" else random_acc(v.c, (CHAINS, nb, m, n), rng, exact)
    e_words = np.zeros(32 + ZMASKS, np.uint32)
    abits = BITS[v.a]
    if v.sparse:
        stored = gen(v.a, (m, k // 2))
        chunks, lay = metadata_for(v)
        nib = random_nibbles(v.a, (m, chunks), rng)
        a = decompress(stored, nib, v.a)[None]
        e_words[:32] = metadata_words(nib, lay)
        bt, row, col = layout_a(m, k // 2, abits)
        a_codes = encode(stored, v.a)[row, col]
    else:
        a = gen(v.a, (nb, m, k))
        bt, row, col = layout_a(m, k, abits, v.quadpair)
        a_codes = encode(a, v.a)[bt, row, col]
    bt, row, col = layout_b(k, n, abits, v.quadpair)
    b_words = pack(encode(b, v.a)[bt, row, col], abits)
    b2_words = pack(encode(b2, v.a)[bt, row, col], abits)
    bt, row, col = layout_c(m, n, BITS[v.c], v.quadpair)
    c_words = np.stack([pack(encode(c[j], v.c)[bt, row, col], BITS[v.c]) for j in range(CHAINS)])
    return MmaInputs(v, a, b, b2, c, pack(a_codes, abits), b_words, b2_words, c_words, e_words, exact)


def check_d(inp: MmaInputs, words: np.ndarray, iters: int) -> str:
    """'' when every D (all blocks, warps, chains) equals the reference; else what differs."""
    ilp = words.shape[-3]
    got = inp.d_values(words)  # [..., ilp, batch, m, n]
    want = inp.expected(iters)[:ilp]
    tol = inp.tolerance(iters)
    if tol is None:
        bad = got != want
    else:
        bad = ~(np.abs(got - want) <= tol[:ilp])
    if not bad.any():
        return ""
    idx = np.argwhere(bad)[0]
    where = tuple(int(i) for i in idx)
    return (f"{int(bad.sum())} of {bad.size} D elements differ; first at {where}: got {got[where]!r}, "
            f"want {want[where[-4:]]!r}")


# ---------------------------------------------------------------------------------------
# Architectural per-SM peaks (kind="assumed"): dense FMA per clock per SM of the tensor cores.
# ---------------------------------------------------------------------------------------
PEAK_FMA_CLK_SM: dict[tuple[int, int], dict[str, int]] = {
    # A100 whitepaper, as Sun et al. Table 3's caption states them
    (8, 0): {"f16": 1024, "tf32": 512, "f64": 64, "int8": 2048, "int4": 4096, "b1": 16384},
    # H100 whitepaper: 989.4 dense FP16 TFLOPS = 2 x 132 SMs x 1830 MHz x 2048; TF32 half, FP8/INT8
    # double that; FP64 tensor 2x A100 per SM. INT4 has no tensor-core path on sm_90 (ptxas unpacks
    # it to IMMA.S8), so the INT8 rate bounds it; no binary rate is published for Hopper.
    (9, 0): {"f16": 2048, "tf32": 1024, "f64": 128, "fp8": 4096, "int8": 4096, "int4": 4096},
}
PEAK_SOURCE = {(8, 0): "A100 whitepaper (Sun et al. Table 3 caption)",
               (9, 0): "H100 whitepaper: 989.4 TFLOPS dense FP16 = 2 x 132 SMs x 1830 MHz x 2048 FMA/clk/SM"}
FAMILY = {"f16": "f16", "bf16": "f16", "tf32": "tf32", "f64": "f64", "e4m3": "fp8", "e5m2": "fp8",
          "s8": "int8", "u8": "int8", "s4": "int4", "u4": "int4", "b1": "b1"}


def arch_peak(cc: tuple[int, int], a: str, sparse: bool) -> float | None:
    """Dense (or 2:4 sparse: twice) FMA/clk/SM the architecture is rated for, None if not published."""
    p = PEAK_FMA_CLK_SM.get(cc, {}).get(FAMILY[a])
    if p is None:
        return None
    return float(p * (2 if sparse and a not in ("f64", "b1") else 1))


# ---------------------------------------------------------------------------------------
# Timing analysis (pure functions; tested on synthetic data)
# ---------------------------------------------------------------------------------------
REC = 5  # per warp: start clock, end clock, SM id, start ns, end ns (%globaltimer)


def per_block(rec: np.ndarray, warps: int, steps: int, work_per_step: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """rec [blocks * warps * REC] -> per block: cycles per dependent step (mean over warps),
    throughput (work per clock over the block's span: first start to last end, one SM's clock) and
    the SM id. work_per_step: work one warp does per step (ILP x FMA per mma, or bytes)."""
    r = rec.reshape(-1, warps, REC).astype(np.int64)
    t0, t1 = r[:, :, 0], r[:, :, 1]
    lat = ((t1 - t0) / steps).mean(axis=1)
    span = t1.max(axis=1) - t0.min(axis=1)
    thr = warps * work_per_step * steps / span
    return lat, thr, r[:, 0, 2]


def sm_clock_hz(rec: np.ndarray, warps: int) -> np.ndarray:
    """Per block: clock64 cycles over %globaltimer nanoseconds of its span (the SM clock it ran at)."""
    r = rec.reshape(-1, warps, REC).astype(np.int64)
    cycles = r[:, :, 1].max(axis=1) - r[:, :, 0].min(axis=1)
    ns = r[:, :, 4].max(axis=1) - r[:, :, 3].min(axis=1)
    return cycles / (ns * 1e-9)


@dataclass
class Cell:
    warps: int
    ilp: int
    latency: float  # cycles per dependent step (median over SMs and repetitions)
    thr: float  # work per clock per SM (median over SMs, median over repetitions)
    thr_lo: float
    thr_hi: float
    lat_lo: float
    lat_hi: float


def convergence(cells: dict[tuple[int, int], Cell], tol: float = 0.05) -> dict[str, Any]:
    """Sun's convergence points: for 4 and 8 warps, the smallest ILP whose throughput is within tol of
    that warp count's best; overall, the smallest #warps x ILP (fewer warps first) within tol of the peak."""
    peak = max(cells.values(), key=lambda c: c.thr)
    good = [c for c in cells.values() if c.thr >= (1 - tol) * peak.thr]
    point = min(good, key=lambda c: (c.warps * c.ilp, c.warps))
    per_warps = {}
    for w in (4, 8):
        row = [c for (cw, _), c in cells.items() if cw == w]
        if row:
            best = max(c.thr for c in row)
            per_warps[w] = min((c for c in row if c.thr >= (1 - tol) * best), key=lambda c: c.ilp)
    return {"peak": peak, "point": point, "per_warps": per_warps}


def grid(quick: bool) -> tuple[list[int], list[int]]:
    return ([1, 4, 8, 16], [1, 2, 4]) if quick else ([1, 2, 4, 6, 8, 12, 16], [1, 2, 3, 4, 5, 6])


def one_block_per_sm_smem(props: dict[str, Any]) -> int:
    """Dynamic shared memory that lets only one block fit on an SM (blocks then spread over all SMs)."""
    return min(props["smem_per_sm"] // 2 + 1024, props["smem_per_block_optin"])


def precompile(ctx: BenchContext, specs: list[KernelSpec]) -> None:
    """Compile every variant in parallel threads (NVRTC releases the GIL) into the cubin cache."""
    from concurrent.futures import ThreadPoolExecutor

    from ..device.compiler import compile_kernel_file

    with ThreadPoolExecutor(max_workers=16) as ex:
        list(ex.map(lambda s: compile_kernel_file(s.file, ctx.device.arch, s.defines), specs))


# ---------------------------------------------------------------------------------------
# Kernel specs with the SASS each variant must hold (from NVRTC 13.5 for sm_90a; `gpudissect sass`)
# ---------------------------------------------------------------------------------------
NO = r"\A(?![\s\S]*{})"  # the whole function holds no match of {}


def sass_patterns(v: MmaVariant) -> list[str]:
    """The SASS of a variant, pinned as it really is on sm_90a (see the module docstring of the report)."""
    m, n, k = v.mnk
    if v.quadpair:  # m8n8k4 .f16: no tensor-core instruction; a subroutine of shuffles and FFMA/HADD2
        return [NO.format(r"[HBDI]MMA"), r"SHFL\.IDX", r"HADD2\.F32", r"CALL\.REL"]
    if v.a in ("e4m3", "e5m2"):  # fp8 -> f16 (F2FP ... UNPACK_B), then f16 HMMA of half the K
        kk = f"{m}{n}{k // 2}"
        sp = r"\.SP" if v.sparse else ""
        acc = r"\.F32 " if v.c == "f32" else r"\.F16 "
        return [rf"F2FP\.F16\.{v.a.upper()}\.UNPACK_B", rf"HMMA{sp}\.{kk}{acc}", NO.format(r"QMMA|\.E4M3\.E4M3|\.E5M2\.E5M2")]
    if v.a in ("s4", "u4"):  # unpacked to 8 bits, then IMMA of half the K
        sp = r"\.SP" if v.sparse else ""
        s8 = "S8" if v.a == "s4" else "U8"
        return [rf"IMMA{sp}\.{m}{n}{k // 2}\.{s8}\.{s8}", NO.format(r"IMMA\S*\.[SU]4")]
    if v.a == "b1":
        pat = [rf"BMMA\.{m}{n}{k}\.AND\.POPC"]
        return pat + ([NO.format(r"XOR\.POPC"), r"CALL\.REL"] if v.bitop == "xor" else [])
    if v.a == "f64":
        return [rf"DMMA\.{m}x{n}x{k}\b"]
    sp = r"\.SP" if v.sparse else ""
    if v.a in ("s8", "u8"):
        t = v.a.upper()
        return [rf"IMMA{sp}\.{m}{n}{k}\.{t}\.{t}\b"]
    kind = {"f16": r"\.F16 " if v.c == "f16" else r"\.F32 ", "bf16": r"\.F32\.BF16 ", "tf32": r"\.F32\.TF32 "}[v.a]
    return [rf"HMMA{sp}\.{m}{n}{k}{kind}"]


def mma_spec(v: MmaVariant) -> KernelSpec:
    pats = sass_patterns(v)
    return KernelSpec("mma.cu", {f"mma_ilp{i}": pats for i in range(1, 7)}, v.defines(),
                      label=f"mma.cu[{v.family}.{v.key}]")


DENSE_VARIANTS = all_variants(False)
SPARSE_VARIANTS = all_variants(True)
SPECS = {v: mma_spec(v) for v in DENSE_VARIANTS + SPARSE_VARIANTS}


# ---------------------------------------------------------------------------------------
# Running one variant over the (#warps, ILP) grid
# ---------------------------------------------------------------------------------------
class MmaRunner:
    """Device buffers of one variant and its launches (one block per SM, on every SM)."""

    def __init__(self, ctx: BenchContext, v: MmaVariant, inp: MmaInputs):
        self.ctx, self.v, self.inp = ctx, v, inp
        dev, p = ctx.device, ctx.props
        self.sms = p["sm_count"]
        self.smem = one_block_per_sm_smem(p)
        self.spec = SPECS[v]
        self.cbytes = 8 if BITS[v.c] == 64 else 4
        self.ab_dtype = np.uint64 if v.a == "f64" else np.uint32
        self.bufs = [dev.upload(inp.a_words.astype(self.ab_dtype)), dev.upload(inp.b_words.astype(self.ab_dtype)),
                     dev.upload(inp.b2_words.astype(self.ab_dtype)),
                     dev.upload(inp.c_words.astype(np.uint64 if self.cbytes == 8 else np.uint32)),
                     dev.upload(inp.e_words)]
        _, _, nc = v.regs()
        self.nc = nc
        self.d = dev.alloc(self.sms * 16 * CHAINS * nc * 32 * self.cbytes)
        self.rec = dev.alloc(self.sms * 16 * REC * 8)

    def close(self) -> None:
        for b in self.bufs + [self.d, self.rec]:
            self.ctx.device.free(b)

    def launch(self, warps: int, ilp: int, iters: int, blocks: int | None = None) -> None:
        fn = self.ctx.kernel(self.spec, f"mma_ilp{ilp}")
        args = [Arg.ptr(b) for b in self.bufs] + [Arg.u32(iters), Arg.ptr(self.d), Arg.ptr(self.rec)]
        fn(blocks or self.sms, 32 * warps, args, smem=self.smem)

    def outputs(self, warps: int, ilp: int, blocks: int | None = None) -> np.ndarray:
        n = (blocks or self.sms) * warps * ilp * self.nc * 32
        dt = np.uint64 if self.cbytes == 8 else np.uint32
        return self.ctx.device.download(self.d, dt, n).reshape(-1, warps, ilp, self.nc, 32)

    def records(self, warps: int, blocks: int | None = None) -> np.ndarray:
        return self.ctx.device.download(self.rec, np.uint64, (blocks or self.sms) * warps * REC)

    def run(self, warps: int, ilp: int, iters: int, check: bool) -> tuple[np.ndarray, np.ndarray, str]:
        """One launch: per-SM latency and throughput; '' or what was wrong with D."""
        self.ctx.device.memset32(self.d, 0xFFFFFFFF)  # NaN / -1 poison: an unwritten D cannot pass
        self.launch(warps, ilp, iters)
        self.ctx.device.sync(f"{self.v.family} {self.v.key}")
        lat, thr, _ = per_block(self.records(warps), warps, 2 * iters, ilp * self.v.fma_per_mma)
        err = check_d(self.inp, self.outputs(warps, ilp), iters) if check else ""
        return lat, thr, err


def sweep(run: Any, warps_list: list[int], ilps: list[int], reps: int) -> tuple[dict[tuple[int, int], Cell], str]:
    """run(warps, ilp, check) -> (per-SM latency, per-SM throughput, error). The first repetition of
    every cell checks every output; the first error ends the sweep."""
    cells: dict[tuple[int, int], Cell] = {}
    for w in warps_list:
        for ilp in ilps:
            lats, thrs = [], []
            for rep in range(reps):
                lat, thr, err = run(w, ilp, rep == 0)
                if err:
                    return cells, f"{w} warps, ILP {ilp}: {err}"
                lats.append(float(np.median(lat)))
                thrs.append(float(np.median(thr)))
            cells[(w, ilp)] = Cell(w, ilp, float(np.median(lats)), float(np.median(thrs)), min(thrs), max(thrs),
                                   min(lats), max(lats))
    return cells, ""


def heatmaps(ctx: BenchContext, name: str, figure: str, cells: dict[tuple[int, int], Cell], unit: str) -> None:
    pts = [Point(c.warps, c.thr, c.thr_lo, c.thr_hi, 1, {"ilp": c.ilp, "latency_cycles": c.latency})
           for c in cells.values()]
    ctx.series(f"{name} throughput", "warps", "", "throughput", unit, pts, plot="heatmap", figure=f"{figure}.throughput")
    pts = [Point(c.warps, c.latency, c.lat_lo, c.lat_hi, 1, {"ilp": c.ilp}) for c in cells.values()]
    ctx.series(f"{name} latency", "warps", "", "latency", "cycles/step", pts, plot="heatmap", figure=f"{figure}.latency")


def conv_note(conv: dict[str, Any], unit: str) -> str:
    parts = [f"({w},{c.ilp}): {c.latency:.1f} cycles, {c.thr:.1f} {unit}" for w, c in conv["per_warps"].items()]
    return "Table 3 points (#warps,ILP): " + "; ".join(parts) if parts else ""


def iters_for(quick: bool) -> int:
    return 128 if quick else 512


def variant_figures(ctx: BenchContext, v: MmaVariant, runner: MmaRunner, cells: dict[tuple[int, int], Cell],
                    err: str) -> None:
    """Latency, peak, convergence, TFLOPS (event-timed long run at the peak cell) and % of peak."""
    pre = f"tc.{v.family}.{v.key}"
    ops = "tops" if v.a in ("s8", "u8", "s4", "u4", "b1") else "tflops"
    what = f"{v.ptx}" + (" (emulated by ptxas: operands XORed with a run-time zero per chain)" if v.emulated else "")
    if err or (1, 1) not in cells:
        for key, unit in (("latency_cycles", "cycles"), ("peak_fma_per_clk_sm", "FMA/clk/SM"), (f"peak_{ops}", ops.upper())):
            ctx.figure(f"{pre}.{key}", "FAILED", unit, "measured", what, check="failed", note=err[:400])
        ctx.soft_check(False, f"{v.family} {v.key}: {err}")
        return
    heatmaps(ctx, v.key, f"{v.family}.{v.key}", cells, "FMA/clk/SM")
    lat = cells[(1, 1)]
    ctx.figure(f"{pre}.latency_cycles", round(lat.latency, 2), "cycles", "measured",
               f"1 warp, ILP 1, dependent {what} (clock64 around 2 x {iters_for(ctx.quick)} steps, median over SMs)",
               (lat.lat_lo, lat.lat_hi))
    conv = convergence(cells)
    pk, pt = conv["peak"], conv["point"]
    ctx.figure(f"{pre}.peak_fma_per_clk_sm", round(pk.thr, 2), "FMA/clk/SM", "measured",
               f"best cell of the #warps x ILP grid ({pk.warps} warps, ILP {pk.ilp}); m*n*k = {v.fma_per_mma} FMA per "
               f"warp instruction{' (logical K: dense-equivalent)' if v.sparse else ''}; per-block clock64 span, one "
               "block per SM on all SMs, median over SMs" + (f"; at most {v.max_warps} warps" if v.max_warps < 16 else ""),
               (pk.thr_lo, pk.thr_hi))
    ctx.figure(f"{pre}.convergence_warps_ilp", f"{pt.warps},{pt.ilp}", "", "derived",
               "smallest #warps x ILP within 5% of the peak throughput", note=conv_note(conv, "FMA/clk/SM"))
    # Long event-timed launch at the peak cell: clock from cycles / time, TFLOPS from both
    target_s = 0.01 if ctx.quick else 0.03
    clock_guess = ctx.props["sm_clock_khz"] * 1e3
    per_iter_cycles = 2 * pk.warps * pk.ilp * v.fma_per_mma / pk.thr
    long_iters = max(iters_for(ctx.quick), int(target_s * clock_guess / per_iter_cycles))
    from ..device.telemetry import Sampler

    ms, clocks, thr_long = [], [], []
    with Sampler(ctx.props.get("uuid")) as s:
        for rep in range(3):
            ctx.device.memset32(runner.d, 0xFFFFFFFF)
            ms.append(ctx.device.time_ms(lambda: runner.launch(pk.warps, pk.ilp, long_iters))[0])
            rec = runner.records(pk.warps)
            clocks.append(float(np.median(sm_clock_hz(rec, pk.warps))))
            thr_long.append(float(np.median(per_block(rec, pk.warps, 2 * long_iters, pk.ilp * v.fma_per_mma)[1])))
            if rep == 0:
                e2 = check_d(runner.inp, runner.outputs(pk.warps, pk.ilp), long_iters)
                if e2:
                    ctx.figure(f"{pre}.peak_{ops}", "FAILED", ops.upper(), "measured", what, check="failed", note=e2[:400])
                    ctx.soft_check(False, f"{v.family} {v.key} long run: {e2}")
                    return
    tel = s.summary()
    clock = float(np.median(clocks))
    work = runner.sms * pk.warps * pk.ilp * 2 * long_iters * v.fma_per_mma * 2
    ev = [work / (t * 1e-3) / 1e12 for t in ms]
    tflops = pk.thr * 2 * runner.sms * clock / 1e12
    nv = f"; NVML SM clock median {tel.sm_clock_mhz_median:.0f} MHz" if tel and tel.sm_clock_mhz_median else ""
    ctx.figure(f"{pre}.peak_{ops}", round(tflops, 2), ops.upper(), "derived",
               f"peak FMA/clk/SM x 2 x {runner.sms} SMs x SM clock ({clock / 1e6:.0f} MHz: clock64 cycles / %globaltimer ns "
               f"over a {float(np.median(ms)):.1f} ms launch at {pk.warps} warps, ILP {pk.ilp})",
               note=f"that launch: {np.median(thr_long):.1f} FMA/clk/SM, event-timed all-SM rate {np.median(ev):.2f} "
                    f"{ops.upper()} ({min(ev):.2f}..{max(ev):.2f}){nv}")
    ctx.figure(f"{pre}.sm_clock_mhz", round(clock / 1e6, 1), "MHz", "measured",
               "clock64 cycles / %globaltimer ns of each block over the long launch, median over SMs",
               (min(clocks) / 1e6, max(clocks) / 1e6))
    peak = arch_peak((ctx.props["cc_major"], ctx.props["cc_minor"]), v.a, v.sparse)
    cc = (ctx.props["cc_major"], ctx.props["cc_minor"])
    if peak is not None:
        ctx.figure(f"{pre}.arch_peak_fma_per_clk_sm", peak, "FMA/clk/SM", "assumed",
                   f"{'2:4 sparse (2 x dense) ' if v.sparse else 'dense '}{FAMILY[v.a]} tensor rate: {PEAK_SOURCE.get(cc, '')}")
        ctx.figure(f"{pre}.pct_peak", round(100 * pk.thr / peak, 2), "%", "derived",
                   f"peak FMA/clk/SM over the assumed {peak:g} FMA/clk/SM")
    else:
        ctx.figure(f"{pre}.pct_peak", "n/a", "%", "derived",
                   f"no published per-SM {FAMILY[v.a]} tensor rate for compute capability {cc[0]}.{cc[1]}")


def _only(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _check_only(sparse: bool) -> Any:
    def check(value: list[str], facts: Facts) -> str | None:
        for key in value:
            types, _, shape = key.partition(".")
            try:
                check_combination(types, shape, sparse)
            except GpuDissectError as e:
                return str(e)
        return None

    return check


def run_variants(ctx: BenchContext, variants: list[MmaVariant]) -> None:
    if ctx.params.get("only"):
        wanted = set(ctx.params["only"])
        variants = [v for v in variants if v.key in wanted]
    precompile(ctx, [SPECS[v] for v in variants])
    warps_list, ilps = grid(ctx.quick)
    reps, iters = (3 if ctx.quick else 5), iters_for(ctx.quick)
    rng = np.random.default_rng(11)
    for i, v in enumerate(variants):
        ctx.progress(i, len(variants), f"{v.family} {v.key}")
        # fully random floating-point inputs, one short launch, within tolerance
        if v.a in FLOAT:
            rr = MmaRunner(ctx, v, make_inputs(v, rng, "random"))
            try:
                _, _, err = rr.run(4, 2, 1, True)
            finally:
                rr.close()
            if err:
                variant_figures(ctx, v, rr, {}, f"random inputs: {err}")
                continue
        runner = MmaRunner(ctx, v, make_inputs(v, rng, "exact"))
        try:
            ws = [w for w in warps_list if w <= v.max_warps]
            cells, err = sweep(lambda w, ilp, chk: runner.run(w, ilp, iters, chk), ws, ilps, reps)
            variant_figures(ctx, v, runner, cells, err)
        finally:
            runner.close()
    ctx.progress(len(variants), len(variants), "done")


@benchmark(
    suite=SUITE, name="mma_latency_throughput", title="mma.sync: latency and throughput of every type and shape",
    axes={"type/shape": ", ".join(v.key for v in DENSE_VARIANTS),
          "warps": "1,2,4,6,8,12,16 (quick: 1,4,8,16)", "ILP": "1..6 (quick: 1,2,4)"},
    kernels=[SPECS[v] for v in DENSE_VARIANTS],
    params={"only": Param(None, "comma-separated variants to run, e.g. f16_f32.m16n8k16 (default: all)", _only,
                          _check_only(False))},
    timeout_s=600, min_cc=(9, 0), paper="001 §4-5 Fig. 4, 6, 7, Table 3; 000 §6.2 Tables VII, VIII",
)
def mma_latency_throughput(ctx: BenchContext) -> None:
    run_variants(ctx, DENSE_VARIANTS)


@benchmark(
    suite=SUITE, name="mma_sparse", title="mma.sp (2:4 sparse): latency and throughput of every type and shape",
    axes={"type/shape": ", ".join(v.key for v in SPARSE_VARIANTS),
          "warps": "1,2,4,6,8,12,16 (quick: 1,4,8,16)", "ILP": "1..6 (quick: 1,2,4)"},
    kernels=[SPECS[v] for v in SPARSE_VARIANTS],
    params={"only": Param(None, "comma-separated variants to run, e.g. f16_f32.m16n8k32 (default: all)", _only,
                          _check_only(True))},
    timeout_s=600, min_cc=(9, 0), paper="001 §6 Fig. 10, 11, Table 6; 000 §6.2 Table VIII",
)
def mma_sparse(ctx: BenchContext) -> None:
    run_variants(ctx, SPARSE_VARIANTS)


# ---------------------------------------------------------------------------------------
# ldmatrix (Sun et al. §7, Table 9)
# ---------------------------------------------------------------------------------------
LDSM_SLOTS, LDSM_SLOT_BYTES = 64, 512  # a slot holds 4 matrices of 8 rows x 16 bytes
LDSM_VARIANTS = [(n, tr) for n in (1, 2, 4) for tr in (False, True)]
SMEM_BYTES_PER_CLK = 128  # 32 banks x 4 bytes: the architectural shared-memory bandwidth per SM


def ldsm_key(n: int, trans: bool) -> str:
    return f"x{n}{'_trans' if trans else ''}"


def ldsm_spec(n: int, trans: bool) -> KernelSpec:
    count = "" if n == 1 else rf"\.{n}"
    pat = rf"LDSM\.16\.M{'T' if trans else ''}88{count} "
    return KernelSpec("ldmatrix.cu", {f"ldsm_ilp{i}": [pat] for i in range(1, 7)},
                      {"LDSM_N": n, "LDSM_TRANS": int(trans)}, label=f"ldmatrix.cu[{ldsm_key(n, trans)}]")


LDSM_SPECS = {nt: ldsm_spec(*nt) for nt in LDSM_VARIANTS}


def ldsm_address(base: int, slot: int, lane: int, n: int) -> int:
    """Shared address lane `lane` supplies for a load from `slot`: row lane % 8 of matrix (lane // 8) % n."""
    return base + slot * LDSM_SLOT_BYTES + ((lane // 8) % n) * 128 + (lane % 8) * 16


def ldsm_positions(lane: int, q: int, trans: bool) -> tuple[int, int]:
    """Byte offsets (in a slot) of the low and high 16-bit halves lane `lane` receives of matrix q
    (PTX ISA ldmatrix: row lane/4, columns 2*(lane%4)..+1; transposed: column lane/4 of rows
    2*(lane%4) and 2*(lane%4)+1)."""
    if trans:
        lo = q * 128 + (2 * (lane % 4)) * 16 + (lane // 4) * 2
        return lo, lo + 16
    lo = q * 128 + (lane // 4) * 16 + (lane % 4) * 4
    return lo, lo + 2


def ldsm_image(base: int, nxt: np.ndarray, n: int, trans: bool, rng: np.random.Generator) -> np.ndarray:
    """Shared-memory bytes: random data, except that what each lane receives in its first register
    from slot s is its address in slot nxt[s] (so a chain of loads is a pointer chase)."""
    img = rng.integers(0, 256, LDSM_SLOTS * LDSM_SLOT_BYTES, dtype=np.uint8)
    for s in range(LDSM_SLOTS):
        for lane in range(32):
            addr = ldsm_address(base, int(nxt[s]), lane, n)
            lo, hi = ldsm_positions(lane, 0, trans)
            off = s * LDSM_SLOT_BYTES
            img[off + lo: off + lo + 2] = np.frombuffer(np.uint16(addr & 0xFFFF).tobytes(), np.uint8)
            img[off + hi: off + hi + 2] = np.frombuffer(np.uint16(addr >> 16).tobytes(), np.uint8)
    return img


def ldsm_registers(img: np.ndarray, slot: int, lane: int, n: int, trans: bool) -> list[int]:
    off = slot * LDSM_SLOT_BYTES
    out = []
    for q in range(n):
        lo, hi = ldsm_positions(lane, q, trans)
        out.append(int(img[off + lo]) | int(img[off + lo + 1]) << 8 | int(img[off + hi]) << 16 | int(img[off + hi + 1]) << 24)
    return out


def ldsm_expected(img: np.ndarray, base: int, nxt: np.ndarray, starts: list[int], loads: int, n: int,
                  trans: bool) -> np.ndarray:
    """[chain, lane] x (last address, XOR of the start address and every register loaded)."""
    x = np.zeros((LDSM_SLOTS, 32), np.int64)
    for s in range(LDSM_SLOTS):
        for lane in range(32):
            v = 0
            for r in ldsm_registers(img, s, lane, n, trans):
                v ^= r
            x[s, lane] = v
    out = np.zeros((len(starts), 32, 2), np.int64)
    for j, s0 in enumerate(starts):
        acc = np.array([ldsm_address(base, s0, lane, n) for lane in range(32)], np.int64)
        s = s0
        for _ in range(loads):
            acc ^= x[s]
            s = int(nxt[s])
        out[j, :, 0] = [ldsm_address(base, s, lane, n) for lane in range(32)]
        out[j, :, 1] = acc
    return out


@benchmark(
    suite=SUITE, name="ldmatrix", title="ldmatrix .x1/.x2/.x4 (.trans): latency and bytes/clk/SM",
    axes={"variant": "x1, x2, x4, each with and without .trans", "warps": "1,2,4,6,8,12,16 (quick: 1,4,8,16)",
          "ILP": "1..6 (quick: 1,2,4)"},
    kernels=list(LDSM_SPECS.values()), timeout_s=300, min_cc=(8, 0), paper="001 §7 Fig. 15, Tables 8, 9",
)
def ldmatrix(ctx: BenchContext) -> None:
    dev, p = ctx.device, ctx.props
    sms, smem = p["sm_count"], one_block_per_sm_smem(p)
    precompile(ctx, list(LDSM_SPECS.values()))
    warps_list, ilps = grid(ctx.quick)
    reps, iters = (3 if ctx.quick else 5), iters_for(ctx.quick)
    rng = np.random.default_rng(5)
    order = rng.permutation(LDSM_SLOTS)
    nxt = np.empty(LDSM_SLOTS, np.int64)
    nxt[order] = np.roll(order, -1)  # one cycle through every slot
    starts = [int(order[(10 * j) % LDSM_SLOTS]) for j in range(CHAINS)]
    words = LDSM_SLOTS * LDSM_SLOT_BYTES // 4
    base_buf = dev.alloc(8)
    out = dev.alloc(sms * 16 * CHAINS * 32 * 8)
    rec = dev.alloc(sms * 16 * REC * 8)
    for i, (n, trans) in enumerate(LDSM_VARIANTS):
        key = ldsm_key(n, trans)
        spec = LDSM_SPECS[(n, trans)]
        ctx.progress(i, len(LDSM_VARIANTS), f"ldmatrix.{key}")
        ctx.kernel(spec, "ldsm_base")(1, 32, [Arg.ptr(base_buf)], smem=smem)
        dev.sync("ldsm_base")
        base = int(dev.download(base_buf, np.uint32, 1)[0])
        img = ldsm_image(base, nxt, n, trans, rng)
        image = dev.upload(img.view(np.uint32))
        start = dev.upload(np.array([[ldsm_address(base, s, lane, n) for lane in range(32)] for s in starts], np.uint32))
        want = {}

        def run(w: int, ilp: int, check: bool) -> tuple[np.ndarray, np.ndarray, str]:
            dev.memset32(out, 0)
            fn = ctx.kernel(spec, f"ldsm_ilp{ilp}")
            fn(sms, 32 * w, [Arg.ptr(image), Arg.u32(words), Arg.ptr(start), Arg.u32(iters), Arg.ptr(out),
                             Arg.ptr(rec), Arg.ptr(base_buf)], smem=smem)
            dev.sync(f"ldmatrix {key}")
            lat, thr, _ = per_block(dev.download(rec, np.uint64, sms * w * REC), w, 2 * iters, ilp * n * 128)
            err = ""
            if check:
                if ilp not in want:
                    want[ilp] = ldsm_expected(img, base, nxt, starts[:ilp], 2 * (iters + 1), n, trans)
                got = dev.download(out, np.uint32, sms * w * ilp * 32 * 2).reshape(sms * w, ilp, 32, 2)
                bad = got != want[ilp][None].astype(np.uint32)
                got_base = int(dev.download(base_buf, np.uint32, 1)[0])
                if got_base != base:
                    err = f"shared-memory base moved: {got_base:#x} != {base:#x}"
                elif bad.any():
                    where = tuple(int(x) for x in np.argwhere(bad)[0])
                    err = (f"{int(bad.sum())} of {bad.size} chain ends/checksums differ; first at (warp, chain, lane, "
                           f"[addr|xor]) {where}: got {got[where]:#x}, want {int(want[ilp][where[1:]]):#x}")
            return lat, thr, err

        try:
            cells, err = sweep(run, warps_list, ilps, reps)
        finally:
            dev.free(image), dev.free(start)
        pre = f"tc.ldmatrix.{key}"
        what = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16"
        if err or (1, 1) not in cells:
            for k2, unit in (("latency_cycles", "cycles"), ("bytes_per_clk_sm", "bytes/clk/SM")):
                ctx.figure(f"{pre}.{k2}", "FAILED", unit, "measured", what, check="failed", note=err[:400])
            ctx.soft_check(False, f"ldmatrix {key}: {err}")
            continue
        heatmaps(ctx, key, f"ldmatrix.{key}", cells, "bytes/clk/SM")
        lat = cells[(1, 1)]
        ctx.figure(f"{pre}.latency_cycles", round(lat.latency, 2), "cycles", "measured",
                   f"1 warp, ILP 1: dependent {what} (pointer chase through the loaded registers, 2 x {iters} "
                   "steps, median over SMs)", (lat.lat_lo, lat.lat_hi))
        conv = convergence(cells)
        pk, pt = conv["peak"], conv["point"]
        ctx.figure(f"{pre}.bytes_per_clk_sm", round(pk.thr, 2), "bytes/clk/SM", "measured",
                   f"best cell ({pk.warps} warps, ILP {pk.ilp}); {n * 128} bytes per warp instruction; per-block "
                   "clock64 span, one block per SM on all SMs, median over SMs", (pk.thr_lo, pk.thr_hi),
                   note=f"{100 * pk.thr / SMEM_BYTES_PER_CLK:.1f}% of {SMEM_BYTES_PER_CLK} B/clk/SM (32 banks x 4 B)")
        ctx.figure(f"{pre}.convergence_warps_ilp", f"{pt.warps},{pt.ilp}", "", "derived",
                   "smallest #warps x ILP within 5% of the peak bytes/clk/SM", note=conv_note(conv, "B/clk/SM"))
    dev.free(base_buf), dev.free(out), dev.free(rec)
    ctx.progress(len(LDSM_VARIANTS), len(LDSM_VARIANTS), "done")


# ---------------------------------------------------------------------------------------
# Power and energy efficiency (Luo et al. Table XII): the largest shape of each type, all SMs
# ---------------------------------------------------------------------------------------
POWER_VARIANTS = [MmaVariant("f16", "f32", "m16n8k16"), MmaVariant("bf16", "f32", "m16n8k16"),
                  MmaVariant("tf32", "f32", "m16n8k8"), MmaVariant("e4m3", "f32", "m16n8k32"),
                  MmaVariant("s8", "s32", "m16n8k32")]
POWER_WARPS, POWER_ILP = 16, 4  # saturates every variant's grid (Sun: >= 8 warps x ILP >= 2)


@benchmark(
    suite=SUITE, name="mma_power", title="mma.sync sustained on all SMs: clock, power, TFLOPS/W (zero vs random)",
    axes={"type/shape": ", ".join(v.key for v in POWER_VARIANTS), "operands": "zero, random"},
    kernels=[SPECS[v] for v in POWER_VARIANTS], timeout_s=300, min_cc=(9, 0), paper="000 §6.2 Table XII",
    params={"seconds": Param(None, "sustained seconds per variant and operand kind (default 0.5 quick, 1.5 full)", float,
                             lambda v, f: None if 0.1 <= v <= 30 else "0.1 .. 30 s")},
)
def mma_power(ctx: BenchContext) -> None:
    from ..device.telemetry import Sampler

    dev = ctx.device
    precompile(ctx, [SPECS[v] for v in POWER_VARIANTS])
    seconds = ctx.params.get("seconds") or (0.5 if ctx.quick else 1.5)
    rng = np.random.default_rng(3)
    w, ilp = POWER_WARPS, POWER_ILP
    total = 2 * len(POWER_VARIANTS)
    for i, v in enumerate(POWER_VARIANTS):
        for j, mode in enumerate(("zero", "rand")):
            ctx.progress(2 * i + j, total, f"{v.key} {mode}")
            inp = make_inputs(v, rng, "zero" if mode == "zero" else "random")
            runner = MmaRunner(ctx, v, inp)
            pre = f"tc.power.mma.{v.key}.{mode}"
            try:
                # launches of about 50 ms: calibrate, warm up (untimed, unsampled), then sustain
                runner.launch(w, ilp, 16)  # the first launch also loads the function (lazy loading)
                dev.sync("power calibration")
                t = min(dev.time_ms(lambda: runner.launch(w, ilp, 1024), 2))
                iters = max(1024, int(1024 * 50.0 / max(t, 1e-3)))
                n_launch = max(1, math.ceil(seconds / 0.05))
                # NVML's power reading averages over about a second: sustain 1 s unsampled first, so
                # that the samples hold this variant's power, not the previous one's
                dev.time_ms(lambda: [runner.launch(w, ilp, iters) for _ in range(20)])
                dev.memset32(runner.d, 0xFFFFFFFF)
                with Sampler(ctx.props.get("uuid"), period_s=0.02) as s:
                    ms = dev.time_ms(lambda: [runner.launch(w, ilp, iters) for _ in range(n_launch)])[0]
                err = check_d(inp, runner.outputs(w, ilp), iters)
                clocks = sm_clock_hz(runner.records(w), w)
            finally:
                runner.close()
            ops = "TOPS" if v.a == "s8" else "TFLOPS"
            if err:
                ctx.soft_check(False, f"power {v.key} {mode}: {err}")
                ctx.figure(f"{pre}_tflops", "FAILED", ops, "measured", v.ptx, check="failed", note=err[:400])
                continue
            tel = s.summary()
            work = runner.sms * w * ilp * 2 * iters * v.fma_per_mma * 2 * n_launch
            tf = work / (ms * 1e-3) / 1e12
            how = (f"{n_launch} back-to-back launches ({ms / 1e3:.2f} s), {runner.sms} blocks x {w} warps, ILP {ilp}, "
                   f"{'zero' if mode == 'zero' else 'random'} operands; {v.ptx}")
            reasons = ", ".join(tel.throttle_reasons) if tel and tel.throttle_reasons else "none"
            ctx.figure(f"{pre}_tflops", round(tf, 2), ops, "measured", f"event-timed: {how}")
            ctx.figure(f"{pre}_kernel_mhz", round(float(np.median(clocks)) / 1e6, 1), "MHz", "measured",
                       "SM clock inside the last launch: clock64 cycles / %globaltimer ns, median over SMs",
                       (float(clocks.min()) / 1e6, float(clocks.max()) / 1e6))
            if tel is None or tel.power_w_median is None:
                for key, unit in (("watts", "W"), ("tflops_per_watt", f"{ops}/W"), ("sm_mhz", "MHz")):
                    ctx.figure(f"{pre}_{key}", "n/a", unit, "measured", "NVML unavailable: no power or clock samples")
                continue
            note = f"{tel.samples} NVML samples; throttle reasons: {reasons}; power max {tel.power_w_max:.0f} W"
            ctx.figure(f"{pre}_watts", round(tel.power_w_median, 1), "W", "measured",
                       f"NVML power, median of samples every 20 ms while sustained ({how})", note=note)
            ctx.figure(f"{pre}_tflops_per_watt", round(tf / tel.power_w_median, 3), f"{ops}/W", "derived",
                       f"{pre}_tflops / {pre}_watts", note=note)
            if tel.sm_clock_mhz_median is not None:
                ctx.figure(f"{pre}_sm_mhz", round(tel.sm_clock_mhz_median, 1), "MHz", "measured",
                           "NVML SM clock, median of busy samples", (tel.sm_clock_mhz_min, tel.sm_clock_mhz_max), note=note)
    ctx.progress(total, total, "done")
