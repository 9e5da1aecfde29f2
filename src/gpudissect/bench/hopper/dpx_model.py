"""The DPX functions of kernels/hopper_dpx.cu and their CPU model (Luo et al. 000 §8, CUDA Math API
semantics): the function list read from the kernel's DPX_LIST, one call on arrays of words (dpx_model)
and on Python ints (scalar_one, scalar_step), the replays of the kernel's timing chains, and the edge
words every build is checked on. Pure host code: the benchmarks in dpx.py hold their results to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ...device.compiler import kernel_source
from ...errors import GpuDissectError

# passed to hopper_dpx.cu as defines: one truth for kernels and models
LAT_PAIRS, LAT_UNROLL, THR_UNROLL, THR_ILP = 32, 128, 16, 4
DPX_DEFINES = {"LAT_PAIRS": LAT_PAIRS, "LAT_UNROLL": LAT_UNROLL, "THR_UNROLL": THR_UNROLL, "THR_ILP": THR_ILP}
_WIDTH = {"s32": (32, True), "u32": (32, False), "s16x2": (16, True), "u16x2": (16, False)}


@dataclass(frozen=True)
class Intrinsic:
    """One DPX function, `__<name>`. form: A2 (relu max/min of two), A3 (three operands),
    B1 / B2 (max/min that also return one / two predicates)."""

    name: str
    form: str
    partner: str | None = None  # A2: the opposite relu function a chain step pairs it with

    @property
    def family(self) -> str:  # vimax, vimin, vimax3, vimin3, viaddmax, viaddmin, vibmax, vibmin
        return self.name.split("_")[0]

    @property
    def dtype(self) -> str:
        return self.name.split("_")[1]

    @property
    def relu(self) -> bool:
        return self.name.endswith("_relu")

    @property
    def is_max(self) -> bool:
        return "max" in self.family

    @property
    def calls(self) -> int:
        """Calls of the function per chain step (see hopper_dpx.cu: A2 steps as a max/min pair)."""
        return 2 if self.form == "A2" else 1


@cache
def intrinsics() -> tuple[Intrinsic, ...]:
    """The functions hopper_dpx.cu declares (its DPX_LIST), in kernel order."""
    src = kernel_source("hopper_dpx.cu")
    body = src[src.index("#define DPX_LIST(X)") :]
    body = body[: body.index("\n\n")]
    found = re.findall(r"X\((\w+),\s*(A2|A3|B1|B2),\s*(\w+),\s*(\w+)\)", body)
    return tuple(Intrinsic(n, f, p if f == "A2" else None) for n, f, _t, p in found)


def intrinsic(name: str) -> Intrinsic:
    for it in intrinsics():
        if it.name == name:
            return it
    raise GpuDissectError(f"unknown DPX function {name!r}; known: {', '.join(i.name for i in intrinsics())}")


def _sign(x: np.ndarray, bits: int) -> np.ndarray:
    return np.where(x >= 1 << (bits - 1), x - (1 << bits), x)


def _lanes(v: Any, dtype: str) -> list[np.ndarray]:
    """A 32-bit word as its lane values (int64), low halfword first for the x2 types."""
    w = np.asarray(v, dtype=np.uint64) & np.uint64(0xFFFFFFFF)
    bits, signed = _WIDTH[dtype]
    lanes = (
        [w.astype(np.int64)]
        if bits == 32
        else [(w & np.uint64(0xFFFF)).astype(np.int64), (w >> np.uint64(16)).astype(np.int64)]
    )
    return [_sign(x, bits) if signed else x for x in lanes]


def _pack(lanes: list[np.ndarray], dtype: str) -> np.ndarray:
    bits, _ = _WIDTH[dtype]
    mask = (1 << bits) - 1
    out = np.zeros(np.shape(lanes[0]), np.int64)
    for k, x in enumerate(lanes):
        out |= (np.asarray(x, np.int64) & mask) << (bits * k)
    return out.astype(np.uint32)


def dpx_model(name: str, a: Any, b: Any, c: Any = 0) -> tuple[np.ndarray, np.ndarray]:
    """CPU model of one call of `__<name>` on arrays of 32-bit words (CUDA Math API semantics):
    the result word and the predicate word (bit 0: the predicate, or pred_hi of a x2 type;
    bit 1: pred_lo). Additions wrap (per halfword for x2 types); relu clamps each lane at 0;
    __vibmax sets pred = (a >= b), __vibmin pred = (a <= b)."""
    it = intrinsic(name)
    bits, signed = _WIDTH[it.dtype]
    pick = np.maximum if it.is_max else np.minimum
    la, lb, lc = _lanes(a, it.dtype), _lanes(b, it.dtype), _lanes(np.broadcast_to(c, np.shape(a)), it.dtype)
    res, preds = [], []
    for x, y, z in zip(la, lb, lc):
        fam = it.family
        if fam in ("vimax", "vimin", "vibmax", "vibmin"):
            r = pick(x, y)
        elif fam in ("vimax3", "vimin3"):
            r = pick(pick(x, y), z)
        else:  # viaddmax / viaddmin: the sum wraps like the lane's integer type
            s = (x + y) & ((1 << bits) - 1)
            r = pick(_sign(s, bits) if signed else s, z)
        if it.relu:
            r = np.maximum(r, 0)
        res.append(r)
        preds.append((x >= y) if it.is_max else (x <= y))
    pred = np.zeros(np.shape(a), np.uint32)
    if it.form == "B1":
        pred = preds[0].astype(np.uint32)
    elif it.form == "B2":  # lanes are [lo, hi]; the kernel counts hi in bit 0, lo in bit 1
        pred = preds[1].astype(np.uint32) | (preds[0].astype(np.uint32) << 1)
    return _pack(res, it.dtype), pred


Step = Callable[[int, int, int], tuple[int, int, int]]


@cache
def scalar_one(name: str) -> Step:
    """One call on Python ints (fast enough to replay the timing chains): (x, b, c) ->
    (result, pa increment, pb increment). Same semantics as dpx_model (a test holds them equal)."""
    it = intrinsic(name)
    bits, signed = _WIDTH[it.dtype]
    mask, half = (1 << bits) - 1, 1 << (bits - 1)
    fam, relu, is_max = it.family, it.relu, it.is_max

    def sg(v: int) -> int:
        return v - (1 << bits) if signed and v >= half else v

    def lane(x: int, y: int, z: int) -> tuple[int, bool]:
        x, y, z = sg(x), sg(y), sg(z)
        if fam in ("vimax3", "vimin3"):
            r = max(x, y, z) if is_max else min(x, y, z)
        elif fam in ("viaddmax", "viaddmin"):
            s = sg((x + y) & mask)
            r = max(s, z) if is_max else min(s, z)
        else:
            r = max(x, y) if is_max else min(x, y)
        if relu and r < 0:
            r = 0
        return r & mask, (x >= y) if is_max else (x <= y)

    if bits == 32:
        b1 = it.form == "B1"

        def one32(x: int, y: int, z: int) -> tuple[int, int, int]:
            r, p = lane(x, y, z)
            return r, int(p and b1), 0

        return one32
    b2 = it.form == "B2"

    def one16(x: int, y: int, z: int) -> tuple[int, int, int]:
        lo, plo = lane(x & 0xFFFF, y & 0xFFFF, z & 0xFFFF)
        hi, phi = lane(x >> 16, y >> 16, z >> 16)
        return lo | (hi << 16), int(phi and b2), int(plo and b2)

    return one16


@cache
def scalar_step(name: str) -> Step:
    """One step of the timing chains of hopper_dpx.cu: a call, or for the A2 forms the call followed by
    its partner (x <- partner(f(x, b), c))."""
    it = intrinsic(name)
    one = scalar_one(name)
    if it.form != "A2":
        return one
    other = scalar_one(it.partner or "")

    def pair(x: int, y: int, z: int) -> tuple[int, int, int]:
        return other(one(x, y, z)[0], z, 0)

    return pair


def chain_latency(name: str, ops: np.ndarray, iters: int) -> tuple[int, int, int]:
    """What dpx_lat_<name> must return: two passes of `iters` x LAT_UNROLL steps."""
    step = scalar_step(name)
    b = [int(v) for v in ops[:LAT_PAIRS]]
    c = [int(v) for v in ops[LAT_PAIRS : 2 * LAT_PAIRS]]
    x, pa, pb = int(ops[2 * LAT_PAIRS]), 0, 0
    for _ in range(2 * iters):
        for k in range(LAT_UNROLL):
            x, da, db = step(x, b[k % LAT_PAIRS], c[k % LAT_PAIRS])
            pa, pb = pa + da, pb + db
    return x, pa & 0xFFFFFFFF, pb & 0xFFFFFFFF


def chain_throughput(name: str, ops: np.ndarray, iters: int) -> np.ndarray:
    """What every thread of dpx_thr_<name> must return: x[0..THR_ILP), pa, pb."""
    step = scalar_step(name)
    b = [int(v) for v in ops[:THR_UNROLL]]
    c = [int(v) for v in ops[LAT_PAIRS : LAT_PAIRS + THR_UNROLL]]
    out, pa, pb = [], 0, 0
    for j in range(THR_ILP):
        x = int(ops[2 * LAT_PAIRS + j])
        for _ in range(iters):
            for k in range(THR_UNROLL):
                x, da, db = step(x, b[k], c[k])
                pa, pb = pa + da, pb + db
        out.append(x)
    return np.array(out + [pa & 0xFFFFFFFF, pb & 0xFFFFFFFF], dtype=np.uint32)


def eval_inputs(seed: int = 5, extra: int = 2048) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every triple of edge words (0, +-1, the 32- and 16-bit extremes in both lanes) plus random
    words: saturation, wrap-around, relu and lane separation all get exercised."""
    edges = np.array(
        [
            0x0,
            0x1,
            0xFFFFFFFF,
            0x7FFFFFFF,
            0x80000000,
            0x00007FFF,
            0x00008000,
            0x0000FFFF,
            0x7FFF8000,
            0x80007FFF,
            0xFFFF0000,
            0x00010001,
            0x7FFF7FFF,
            0x80008000,
        ],
        np.uint32,
    )
    g = np.stack(np.meshgrid(edges, edges, edges, indexing="ij"), -1).reshape(-1, 3)
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 1 << 32, size=(extra, 3), dtype=np.uint64).astype(np.uint32)
    allv = np.concatenate([g, r])
    return allv[:, 0].copy(), allv[:, 1].copy(), allv[:, 2].copy()


def chain_operands(seed: int) -> np.ndarray:
    """The ops array of the timing kernels: LAT_PAIRS b words, LAT_PAIRS c words, THR_ILP chain starts."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 1 << 32, size=2 * LAT_PAIRS + THR_ILP, dtype=np.uint64).astype(np.uint32)
