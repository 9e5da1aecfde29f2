"""mma.sync element codes, register fragment layouts and the 2:4 sparse metadata layout."""

from __future__ import annotations

from functools import cache

import numpy as np

# ---------------------------------------------------------------------------------------
# Element types and their bit codes
# ---------------------------------------------------------------------------------------
BITS = {
    "f16": 16,
    "bf16": 16,
    "tf32": 32,
    "f32": 32,
    "f64": 64,
    "e4m3": 8,
    "e5m2": 8,
    "s8": 8,
    "u8": 8,
    "s4": 4,
    "u4": 4,
    "b1": 1,
    "s32": 32,
}
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
        lo, hi = {
            "s8": (-128, 127),
            "u8": (0, 255),
            "s4": (-8, 7),
            "u4": (0, 15),
            "b1": (0, 1),
            "s32": (-(2**31), 2**31 - 1),
        }[t]
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
    """Inverse of pack: [..., register, lane] -> [..., lane, element] codes (any leading dimensions: a whole
    download is unpacked in one call, not one fragment at a time)."""
    w = np.swapaxes(words, -1, -2).astype(np.uint64)
    if bits == 64:
        return w
    per = 32 // bits
    c = (w[..., None] >> (np.arange(per, dtype=np.uint64) * np.uint64(bits))) & np.uint64((1 << bits) - 1)
    return c.reshape(*w.shape[:-1], -1)[..., :n]


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
# tests/bench/tensor/test_mma.py for the table), and every mma.sp run re-checks it on random metadata.
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
        nib = np.where(
            idx >= 0, nibbles.reshape(-1)[np.where(idx >= 0, (idx // 64) * nibbles.shape[1] + idx % 64, 0)], 0x4
        )
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
