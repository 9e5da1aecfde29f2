"""Bit-exact CPU models of single sm_90 instructions, on numpy arrays of a chain's words: f16x2/bf16x2
packing, PRMT, FLO, BREV, POPC, F2I, MATCH, and the wrappers that turn a float64/uint64 formula into
one chain step of the chain's type. native_ops.py builds its instruction table from them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

M32 = np.uint64(0xFFFFFFFF)


def unpack_f16x2(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = w.astype(np.uint32)
    return (
        (w & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64),
        (w >> 16).astype(np.uint16).view(np.float16).astype(np.float64),
    )


def pack_f16x2(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    a = np.asarray(lo, np.float16).view(np.uint16).astype(np.uint32)
    b = np.asarray(hi, np.float16).view(np.uint16).astype(np.uint32)
    return (a | (b << 16)).astype(np.uint32)


def unpack_bf16x2(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = w.astype(np.uint32)
    return (
        ((w & 0xFFFF) << 16).astype(np.uint32).view(np.float32).astype(np.float64),
        (w & 0xFFFF0000).astype(np.uint32).view(np.float32).astype(np.float64),
    )


def to_bf16(v: np.ndarray) -> np.ndarray:
    """float64 -> bf16 bits, round to nearest even (exact where the value is a float32, as in the chains)."""
    u = np.asarray(v, np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) & 0xFFFF


def pack_bf16x2(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (to_bf16(lo) | (to_bf16(hi) << 16)).astype(np.uint32)


def half2(f: Callable[..., tuple[np.ndarray, np.ndarray]], bf: bool = False) -> Callable:
    unpack, pack = (unpack_bf16x2, pack_bf16x2) if bf else (unpack_f16x2, pack_f16x2)

    def step(x: np.ndarray, b: np.uint32, c: np.uint32) -> np.ndarray:
        xl, xh = unpack(x)
        bl, bh = unpack(np.array([b]))
        cl, ch = unpack(np.array([c]))
        return pack(f(xl, bl[0], cl[0]), f(xh, bh[0], ch[0]))

    return step


def s32(v: np.ndarray | int) -> np.ndarray:
    return np.asarray(v, np.uint32).view(np.int32)


def prmt(x: np.ndarray, b: np.uint32, c: np.uint32) -> np.ndarray:
    x64 = x.astype(np.uint64) | (np.uint64(b) << np.uint64(32))  # bytes 0-3: a (x), 4-7: b
    out = np.zeros_like(x, dtype=np.uint32)
    for i in range(4):
        n = (int(c) >> (4 * i)) & 0xF
        byte = ((x64 >> np.uint64(8 * (n & 7))) & np.uint64(0xFF)).astype(np.uint32)
        if n & 8:
            byte = np.where(byte & 0x80, 0xFF, 0).astype(np.uint32)
        out |= byte << np.uint32(8 * i)
    return out


def flo(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, 0xFFFFFFFF, np.uint32)
    nz = x != 0
    out[nz] = np.floor(np.log2(x[nz].astype(np.float64))).astype(np.uint32)
    return out


def brev(x: np.ndarray) -> np.ndarray:
    r = np.zeros_like(x, dtype=np.uint32)
    v = x.astype(np.uint32)
    for i in range(32):
        r |= ((v >> np.uint32(i)) & np.uint32(1)) << np.uint32(31 - i)
    return r


def popc(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.uint32)
    return np.unpackbits(v.view(np.uint8).reshape(*v.shape, 4), axis=-1).sum(axis=-1).astype(np.uint32)


def f2i(x: np.ndarray) -> np.ndarray:  # cvt.rzi.s32.f32: truncate, saturate, NaN -> 0; bits back as float
    t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
    return np.clip(t, -(2**31), 2**31 - 1).astype(np.int32).view(np.float32)


def match_any(x: np.ndarray) -> np.ndarray:
    eq = x[..., :, None] == x[..., None, :]  # [chain, lane, other]
    return (eq.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=-1).astype(np.uint32)


def f32_step(fn: Callable[..., np.ndarray]) -> Callable:
    """A float32 step computed in float64 and rounded once (exact for the integer-valued chains)."""
    return lambda x, b, c: fn(x.astype(np.float64), float(b), float(c)).astype(np.float32)


def f64_step(fn: Callable[..., np.ndarray]) -> Callable:
    return lambda x, b, c: fn(x, float(b), float(c))


def u32_step(fn: Callable[..., np.ndarray]) -> Callable:
    return lambda x, b, c: (fn(x.astype(np.uint64), np.uint64(b), np.uint64(c)) & M32).astype(np.uint32)
