"""The isa suite, native instructions (Jia et al. 002 §4.1, Table 4.1) and the scheduler mapping
(002 §2.2, Table 2.1) on the GPU at hand.

Native instructions: for every instruction a chain x <- op(x, b[k], c[k]) in inline PTX that ptxas
turns into that SASS opcode (kernels/isa_native.cu, one build per instruction). One launch per cell
of a warps x ILP grid, one block per SM on every SM: the (1 warp, ILP 1) cell gives the dependent-issue
latency (clock64 cycles per step), the best cell the steady-state throughput (thread instructions per
clock per SM). Where a step needs a second instruction to keep the chain closed (FSETP + FSEL,
ISETP + SEL, LG2 + FADD, the FMUL.RZ that sm_90 puts before MUFU.SIN/COS, STS + LDS), the latency
is the step minus the helper's own latency from its own chain (Jia's method for instructions that
cannot be chained alone). Every final chain value of every thread equals a CPU replay of the chain.

Scheduler: a 16-warp block in which only chosen warps run FFMA chains (ILP 8); pairs of warps that
slow each other down share a sub-core. The classes give the number of sub-cores and the rule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from ...analysis import issue_rate as ir
from ...device.cuda import Arg
from ...models import Point
from ...reference import isa as ref
from ..context import BenchContext
from ..registry import KernelSpec, Param, benchmark

BODY = 64  # steps per loop iteration over all chains (BODY in isa_native.cu)
NOPS = 8
MAX_WARPS = 16
TABLE = 256
ILPS = (1, 2, 4, 8)
M32 = np.uint64(0xFFFFFFFF)

Words = np.ndarray  # uint64 words: the raw bits of a chain value or operand


# ---------------------------------------------------------------------------------------
# Chain models: one step on arrays [chains, 32 lanes] of the chain's own type
# ---------------------------------------------------------------------------------------
def _f16(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = w.astype(np.uint32)
    return (
        (w & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64),
        (w >> 16).astype(np.uint16).view(np.float16).astype(np.float64),
    )


def _pack16(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    a = np.asarray(lo, np.float16).view(np.uint16).astype(np.uint32)
    b = np.asarray(hi, np.float16).view(np.uint16).astype(np.uint32)
    return (a | (b << 16)).astype(np.uint32)


def _bf16(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = w.astype(np.uint32)
    return (
        ((w & 0xFFFF) << 16).astype(np.uint32).view(np.float32).astype(np.float64),
        (w & 0xFFFF0000).astype(np.uint32).view(np.float32).astype(np.float64),
    )


def _to_bf16(v: np.ndarray) -> np.ndarray:
    """float64 -> bf16 bits, round to nearest even (exact where the value is a float32, as in the chains)."""
    u = np.asarray(v, np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32) & 0xFFFF


def _packbf(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (_to_bf16(lo) | (_to_bf16(hi) << 16)).astype(np.uint32)


def _half2(f: Callable[..., tuple[np.ndarray, np.ndarray]], bf: bool = False) -> Callable:
    unpack, pack = (_bf16, _packbf) if bf else (_f16, _pack16)

    def step(x: np.ndarray, b: np.uint32, c: np.uint32) -> np.ndarray:
        xl, xh = unpack(x)
        bl, bh = unpack(np.array([b]))
        cl, ch = unpack(np.array([c]))
        return pack(f(xl, bl[0], cl[0]), f(xh, bh[0], ch[0]))

    return step


def _s32(v: np.ndarray | int) -> np.ndarray:
    return np.asarray(v, np.uint32).view(np.int32)


def _prmt(x: np.ndarray, b: np.uint32, c: np.uint32) -> np.ndarray:
    x64 = x.astype(np.uint64) | (np.uint64(b) << np.uint64(32))  # bytes 0-3: a (x), 4-7: b
    out = np.zeros_like(x, dtype=np.uint32)
    for i in range(4):
        n = (int(c) >> (4 * i)) & 0xF
        byte = ((x64 >> np.uint64(8 * (n & 7))) & np.uint64(0xFF)).astype(np.uint32)
        if n & 8:
            byte = np.where(byte & 0x80, 0xFF, 0).astype(np.uint32)
        out |= byte << np.uint32(8 * i)
    return out


def _flo(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, 0xFFFFFFFF, np.uint32)
    nz = x != 0
    out[nz] = np.floor(np.log2(x[nz].astype(np.float64))).astype(np.uint32)
    return out


def _brev(x: np.ndarray) -> np.ndarray:
    r = np.zeros_like(x, dtype=np.uint32)
    v = x.astype(np.uint32)
    for i in range(32):
        r |= ((v >> np.uint32(i)) & np.uint32(1)) << np.uint32(31 - i)
    return r


def _popc(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.uint32)
    return np.unpackbits(v.view(np.uint8).reshape(*v.shape, 4), axis=-1).sum(axis=-1).astype(np.uint32)


def _f2i(x: np.ndarray) -> np.ndarray:  # cvt.rzi.s32.f32: truncate, saturate, NaN -> 0; bits back as float
    t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
    return np.clip(t, -(2**31), 2**31 - 1).astype(np.int32).view(np.float32)


def _match(x: np.ndarray) -> np.ndarray:
    eq = x[..., :, None] == x[..., None, :]  # [chain, lane, other]
    return (eq.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=-1).astype(np.uint32)


@dataclass(frozen=True)
class Op:
    """One instruction of the table: name (the figure key), SASS regex counted per step, count per step,
    chain type, step model, helper ops whose latency is subtracted, operand/initial-value makers."""

    key: str
    sass: str
    dtype: str  # f32 f64 u32 u64
    step: Callable[[np.ndarray, object, object], np.ndarray]
    make: Callable[[np.random.Generator], tuple[list[float | int], list[float | int], np.ndarray]]
    count: int = 1
    helpers: tuple[str, ...] = ()
    nops: int = NOPS
    max_ilp: int = 8
    tol: tuple[float, float] | None = None  # (relative, absolute) for approximate (MUFU) chains
    warp_op: bool = False  # the step mixes lanes
    note: str = ""
    volta: str = ""  # key of Jia's Table 4.1 row, where it differs from key

    @property
    def define(self) -> str:
        return "OP_" + self.key.upper()

    @property
    def pattern(self) -> str:
        """The SASS regex, not matching inside a longer mnemonic (IADD3 must not count UIADD3)."""
        return r"(?<![\w.])" + self.sass

    @property
    def ilps(self) -> tuple[int, ...]:
        return tuple(i for i in ILPS if i <= self.max_ilp)


def _ints(rng: np.random.Generator, lo: int, hi: int, shape: tuple[int, ...] = (8, 32)) -> np.ndarray:
    return rng.integers(lo, hi + 1, size=shape)


# Additive operands: integers summing to +1 per period, so the chains hold small integers (exact in every
# type) and never repeat (a kernel that skipped steps would not match the replay).
ZERO_SUM = [3, -1, 4, -2, -5, 2, 1, -1]
# Multiplicative operands: product 0.99 per period, so the chains decay slowly and never repeat.
UNIT_PROD = [2, 0.5, -1, 4, 0.25, -1, 1.1, 0.9]


def _mk_fma(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
    return [1.0] * NOPS, ZERO_SUM, _ints(r, -20, 20)


def _mk_add(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
    return ZERO_SUM, [0] * NOPS, _ints(r, -20, 20)


def _mk_mul(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
    return UNIT_PROD, [0] * NOPS, _ints(r, -20, 20)


def _mk_clamp(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
    return list(_ints(r, -10, 0, (NOPS,))), list(_ints(r, 0, 10, (NOPS,))), _ints(r, -20, 20)


def _mk_sel(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
    return list(_ints(r, -9, 9, (4,))), [1, 0, 1, 1], _ints(r, -20, 20)


def _mk_setp(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
    return list(_ints(r, -9, 9, (NOPS,))), list(_ints(r, -9, 9, (NOPS,))), _ints(r, -20, 20)


def _mk_u32(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
    return list(_ints(r, 0, 2**32 - 1, (NOPS,))), list(_ints(r, 0, 2**32 - 1, (NOPS,))), _ints(r, 0, 2**32 - 1)


def _mk_floats(lo: float, hi: float, b: float = 0.0) -> Callable:
    def mk(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
        return [b] * NOPS, [0.0] * NOPS, r.uniform(lo, hi, (8, 32)).astype(np.float32)

    return mk


def _f(fn: Callable[..., np.ndarray]) -> Callable:
    """A float32 step computed in float64 and rounded once (exact for the integer-valued chains)."""
    return lambda x, b, c: fn(x.astype(np.float64), float(b), float(c)).astype(np.float32)


def _d(fn: Callable[..., np.ndarray]) -> Callable:
    return lambda x, b, c: fn(x, float(b), float(c))


def _u(fn: Callable[..., np.ndarray]) -> Callable:
    return lambda x, b, c: (fn(x.astype(np.uint64), np.uint64(b), np.uint64(c)) & M32).astype(np.uint32)


_MUFU_TOL = (1e-3, 1e-4)


@cache
def ops() -> tuple[Op, ...]:
    """The instructions, in the order of the report's table (FP32, FP16/BF16, FP64, integer, MUFU,
    conversions, warp, shared memory, barrier, DPX)."""
    clamp = lambda x, b, c: np.minimum(np.maximum(x, b), c)
    return (
        Op("ffma", r"FFMA ", "f32", _f(lambda x, b, c: x * b + c), _mk_fma),
        Op("fadd", r"FADD ", "f32", _f(lambda x, b, c: x + b), _mk_add),
        Op("fmul", r"FMUL ", "f32", _f(lambda x, b, c: x * b), _mk_mul),
        Op("fmnmx", r"FMNMX ", "f32", _f(clamp), _mk_clamp, count=2, note="a max and a min per step"),
        Op(
            "fsetp",
            r"FSETP\.",
            "f32",
            _f(lambda x, b, c: np.where(x < b, c, b)),
            _mk_setp,
            helpers=("fsel",),
            note="FSETP + FSEL per step; the FSEL latency (own chain) subtracted",
        ),
        Op(
            "fsel",
            r"FSEL ",
            "f32",
            _f(lambda x, b, c: x if c != 0 else np.full_like(x, b)),
            _mk_sel,
            nops=4,
            note="predicates set once outside the loop",
        ),
        Op(
            "hfma2",
            r"HFMA2(\.MMA)? ",
            "u32",
            _half2(lambda x, b, c: x * b + c),
            lambda r: ([0x3C003C00] * NOPS, [_h2(v, -v) for v in ZERO_SUM], _h2i(r)),
            note="ptxas alternates HFMA2 and HFMA2.MMA (the two FP16 pipes) along the chain",
        ),
        Op(
            "hadd2",
            r"(HADD2|HFMA2\.MMA) ",
            "u32",
            _half2(lambda x, b, c: x + b),
            lambda r: ([_h2(v, -v) for v in ZERO_SUM], [0] * NOPS, _h2i(r)),
            note="ptxas issues every other add as HFMA2.MMA (x*1+b): the figure is the mean of the two",
        ),
        Op(
            "hmul2",
            r"(HMUL2|HFMA2\.MMA) ",
            "u32",
            _half2(lambda x, b, c: x * b),
            lambda r: ([_h2(v, v) for v in UNIT_PROD], [0] * NOPS, _h2i(r)),
            note="ptxas issues every other multiply as HFMA2.MMA (x*b+0): the figure is the mean of the two",
        ),
        Op(
            "hmnmx2",
            r"HMNMX2 ",
            "u32",
            _half2(clamp),
            lambda r: ([_h2(-v, -v) for v in range(NOPS)], [_h2(v, v) for v in range(NOPS)], _h2i(r)),
            count=2,
        ),
        Op(
            "hfma2_bf16",
            r"HFMA2(\.MMA)?\.BF16_V2 ",
            "u32",
            _half2(lambda x, b, c: x * b + c, bf=True),
            lambda r: ([0x3F803F80] * NOPS, [_b2(v, -v) for v in ZERO_SUM], _b2i(r)),
            note="ptxas alternates HFMA2.BF16_V2 and HFMA2.MMA.BF16_V2",
        ),
        Op("dfma", r"DFMA ", "f64", _d(lambda x, b, c: x * b + c), _mk_fma),
        Op("dadd", r"DADD ", "f64", _d(lambda x, b, c: x + b), _mk_add),
        Op("dmul", r"DMUL ", "f64", _d(lambda x, b, c: x * b), _mk_mul),
        Op(
            "imad",
            r"IMAD ",
            "u32",
            _u(lambda x, b, c: x * b + c),
            lambda r: (
                [int(v) | 1 for v in _ints(r, 0, 2**32 - 1, (NOPS,))],
                list(_ints(r, 0, 2**32 - 1, (NOPS,))),
                _ints(r, 0, 2**32 - 1),
            ),
            note="odd multipliers: every step is a bijection, the chain never settles",
        ),
        Op(
            "imad_wide",
            r"IMAD\.WIDE\.U32 ",
            "u64",
            lambda x, b, c: (x & M32) * (x >> np.uint64(32)),
            lambda r: ([0] * NOPS, [0] * NOPS, r.integers(0, 2**63, (8, 32))),
            note="x <- lo(x) * hi(x) (mul.wide; ptxas splits a mad.wide with a register addend into IMAD.WIDE and a "
            "64-bit add); the value reaches 0 within a few dozen steps, the multiplier's latency does not "
            "depend on it",
        ),
        Op("iadd3", r"IADD3 ", "u32", _u(lambda x, b, c: x + b + c), _mk_u32),
        Op("lop3", r"LOP3\.LUT ", "u32", _u(lambda x, b, c: (x & b) ^ c), _mk_u32),
        Op(
            "shf",
            r"SHF\.L\.W",
            "u32",
            _u(lambda x, b, c: (x << (c & np.uint64(31))) | ((b << (c & np.uint64(31))) >> np.uint64(32))),
            _mk_u32,
        ),
        Op(
            "vimnmx",
            r"VIMNMX ",
            "u32",
            lambda x, b, c: clamp(_s32(x), _s32(b), _s32(c)).view(np.uint32),
            lambda r: (
                [int(v) & 0xFFFFFFFF for v in _ints(r, -1000, 0, (NOPS,))],
                list(_ints(r, 0, 1000, (NOPS,))),
                _ints(r, -2000, 2000) & 0xFFFFFFFF,
            ),
            count=2,
            volta="",
            note="integer max then min; sm_90 encodes IMNMX as VIMNMX",
        ),
        Op(
            "isetp",
            r"ISETP\.(LT|LE|GT|GE)\.AND P\d, PT, R\d+, R\d+",
            "u32",
            lambda x, b, c: np.where(_s32(x) < _s32(b), np.uint32(c), np.uint32(b)).astype(np.uint32),
            lambda r: (
                [int(v) & 0xFFFFFFFF for v in _ints(r, -9, 9, (NOPS,))],
                [int(v) & 0xFFFFFFFF for v in _ints(r, -9, 9, (NOPS,))],
                _ints(r, -20, 20) & 0xFFFFFFFF,
            ),
            helpers=("sel",),
            note="ISETP + SEL per step; the SEL latency (own chain) subtracted",
        ),
        Op(
            "sel",
            r"SEL ",
            "u32",
            lambda x, b, c: x if c != 0 else np.full_like(x, b),
            lambda r: (list(_ints(r, 0, 99, (4,))), [1, 0, 1, 1], _ints(r, 0, 99)),
            nops=4,
            note="predicates set once outside the loop",
        ),
        Op("popc", r"POPC ", "u32", lambda x, b, c: _popc(x), _mk_u32),
        Op("flo", r"FLO\.U32 ", "u32", lambda x, b, c: _flo(x), _mk_u32),
        Op("brev", r"BREV ", "u32", lambda x, b, c: _brev(x), _mk_u32),
        Op(
            "prmt",
            r"PRMT ",
            "u32",
            _prmt,
            lambda r: (
                list(_ints(r, 0, 2**32 - 1, (NOPS,))),
                [int(v) for v in _ints(r, 0, 0x7777, (NOPS,)) & 0x7777],
                _ints(r, 0, 2**32 - 1),
            ),
        ),
        Op(
            "mufu_ex2",
            r"MUFU\.EX2 ",
            "f32",
            _f(lambda x, b, c: np.exp2(-x)),
            _mk_floats(0, 2),
            tol=_MUFU_TOL,
            note="x <- 2^-x (negation as a source modifier)",
        ),
        Op(
            "mufu_lg2",
            r"MUFU\.LG2 ",
            "f32",
            _f(lambda x, b, c: np.log2(x) + b),
            _mk_floats(1, 8, 2.0),
            helpers=("fadd",),
            tol=_MUFU_TOL,
            note="x <- log2(x) + 2: the FADD latency (own chain) subtracted",
        ),
        Op("mufu_rsq", r"MUFU\.RSQ ", "f32", _f(lambda x, b, c: 1 / np.sqrt(x)), _mk_floats(0.5, 4), tol=_MUFU_TOL),
        Op(
            "mufu_rcp",
            r"MUFU\.RCP ",
            "f32",
            _f(lambda x, b, c: 1 / np.abs(x)),
            _mk_floats(0.5, 4),
            tol=_MUFU_TOL,
            note="x <- 1/|x| (|x| as a source modifier; ptxas folds rcp(rcp(x)))",
        ),
        Op(
            "mufu_sin",
            r"MUFU\.SIN ",
            "f32",
            _f(lambda x, b, c: np.sin(x)),
            _mk_floats(-1.5, 1.5),
            helpers=("fmul",),
            tol=(0.1, 0.02),
            note="sm_90 prefixes MUFU.SIN with FMUL.RZ by 1/(2 pi); the FMUL latency subtracted",
        ),
        Op(
            "mufu_cos",
            r"MUFU\.COS ",
            "f32",
            _f(lambda x, b, c: np.cos(x)),
            _mk_floats(-3, 3),
            helpers=("fmul",),
            tol=_MUFU_TOL,
            note="sm_90 prefixes MUFU.COS with FMUL.RZ by 1/(2 pi); the FMUL latency subtracted",
        ),
        Op("mufu_sqrt", r"MUFU\.SQRT ", "f32", _f(lambda x, b, c: np.sqrt(x)), _mk_floats(0.5, 100), tol=_MUFU_TOL),
        Op(
            "mufu_tanh",
            r"MUFU\.TANH ",
            "f32",
            _f(lambda x, b, c: np.tanh(x)),
            _mk_floats(-2, 2),
            tol=(0.5, 0.05),
            note="tanh.approx has a relative error up to 2^-11; its chain decays slowly to 0, so the check is loose",
        ),
        Op(
            "f2i",
            r"F2I\.TRUNC",
            "f32",
            lambda x, b, c: _f2i(x),
            lambda r: ([0] * NOPS, [0] * NOPS, r.uniform(-3e9, 3e9, (8, 32)).astype(np.float32)),
        ),
        Op(
            "i2fp",
            r"I2FP\.F32\.S32 ",
            "u32",
            lambda x, b, c: _s32(x).astype(np.float32).view(np.uint32),
            _mk_u32,
            volta="i2f",
            note="s32 -> f32 is I2FP.F32.S32 on sm_90 (I2F on Volta)",
        ),
        Op(
            "f2f",
            r"F2F\.",
            "f64",
            lambda x, b, c: x.astype(np.float32).astype(np.float64),
            lambda r: ([0] * NOPS, [0] * NOPS, r.uniform(-1e6, 1e6, (8, 32))),
            count=2,
            note="F2F.F32.F64 then F2F.F64.F32 per step: the mean of the two",
        ),
        Op(
            "f2fp",
            r"F2FP\.F16\.F32\.PACK_AB ",
            "u32",
            lambda x, b, c: _pack16(
                np.float32(np.uint32(b).view(np.float32)).astype(np.float16) * np.ones(x.shape),
                x.astype(np.uint32).view(np.float32).astype(np.float16),
            ),
            lambda r: (
                [int(v) for v in r.uniform(-100, 100, NOPS).astype(np.float32).view(np.uint32)],
                [0] * NOPS,
                r.uniform(-100, 100, (8, 32)).astype(np.float32).view(np.uint32),
            ),
        ),
        Op(
            "shfl",
            r"SHFL\.IDX ",
            "u32",
            lambda x, b, c: x[..., (np.arange(32) + int(b)) & 31],
            lambda r: ([1, 5, 9, 30, 3, 17, 2, 6], [0] * NOPS, _ints(r, 0, 2**32 - 1)),
            warp_op=True,
            note="source lane (lane + b) mod 32; the offsets sum to 73 per period (odd: no short cycle)",
        ),
        Op(
            "vote",
            r"VOTE\.(ANY|ALL) ",
            "u32",
            lambda x, b, c: np.broadcast_to((x != 0).any(axis=-1, keepdims=True), x.shape).astype(np.uint32),
            lambda r: ([0] * NOPS, [0] * NOPS, (r.random((8, 32)) < 0.1).astype(np.int64)),
            count=2,
            max_ilp=4,
            warp_op=True,
            note="predicate chain, vote.any then vote.all per step (setp/selp between steps folded away)",
        ),
        Op(
            "redux",
            r"REDUX\.SUM ",
            "u32",
            lambda x, b, c: np.broadcast_to(
                (x.astype(np.uint64).sum(axis=-1, keepdims=True) & M32).astype(np.uint32), x.shape
            ).copy(),
            _mk_u32,
            warp_op=True,
            note="REDUX writes a uniform register: the step includes its move back to a register",
        ),
        Op(
            "match",
            r"MATCH\.ANY ",
            "u32",
            lambda x, b, c: _match(x),
            lambda r: ([0] * NOPS, [0] * NOPS, _ints(r, 0, 3)),
            warp_op=True,
        ),
        Op(
            "lds",
            r"LDS ",
            "u32",
            lambda x, b, c: x,  # replaced by the table walk in chain_model
            lambda r: ([0] * NOPS, [0] * NOPS, (np.arange(32)[None, :] + 32 * np.arange(8)[:, None]) % TABLE),
            note="pointer chase through shared memory, conflict-free (lanes walk distinct banks)",
        ),
        Op(
            "sts",
            r"STS ",
            "u32",
            lambda x, b, c: x,
            _mk_u32,
            helpers=("lds",),
            note="STS then LDS of the same word; the LDS latency (own chain) subtracted",
        ),
        Op(
            "bar",
            r"BAR\.SYNC",
            "u32",
            lambda x, b, c: x,
            _mk_u32,
            note="bar.sync 0 of the whole block; rate in thread instructions (warp barriers x 32)",
        ),
        Op(
            "viaddmnmx",
            r"VIADDMNMX ",
            "u32",
            lambda x, b, c: np.maximum(_s32((x.astype(np.uint64) + np.uint64(b)) & M32), _s32(c)).view(np.uint32),
            lambda r: (
                [int(v) & 0xFFFFFFFF for v in _ints(r, -(10**6), 10**6, (NOPS,))],
                [int(v) & 0xFFFFFFFF for v in _ints(r, -(10**6), 10**6, (NOPS,))],
                _ints(r, -(10**6), 10**6) & 0xFFFFFFFF,
            ),
            note="DPX __viaddmax_s32",
        ),
        Op(
            "vimnmx3",
            r"VIMNMX3 ",
            "u32",
            lambda x, b, c: np.maximum(np.maximum(_s32(x), _s32(b)), _s32(c)).view(np.uint32),
            _mk_u32,
            note="DPX __vimax3_s32 (the chain settles at the largest operand; the latency does not depend on it)",
        ),
    )


def _h2(lo: float, hi: float) -> int:
    return int(_pack16(np.array([lo]), np.array([hi]))[0])


def _b2(lo: float, hi: float) -> int:
    return int(_packbf(np.array([lo]), np.array([hi]))[0])


def _h2i(r: np.random.Generator) -> np.ndarray:
    return _pack16(_ints(r, -20, 20), _ints(r, -20, 20)).astype(np.int64)


def _b2i(r: np.random.Generator) -> np.ndarray:
    return _packbf(_ints(r, -20, 20), _ints(r, -20, 20)).astype(np.int64)


def op(key: str) -> Op:
    for o in ops():
        if o.key == key:
            return o
    raise KeyError(key)


# ---------------------------------------------------------------------------------------
# Host data and the CPU replay
# ---------------------------------------------------------------------------------------
_NP = {"f32": np.float32, "f64": np.float64, "u32": np.uint32, "u64": np.uint64}


def to_words(values: object, dtype: str) -> np.ndarray:
    """Values of a chain type -> uint64 words as the kernel reads them (floats by their bits)."""
    a = np.asarray(values)
    if dtype == "f32":
        return a.astype(np.float32).view(np.uint32).astype(np.uint64)
    if dtype == "f64":
        return a.astype(np.float64).view(np.uint64)
    if dtype == "u32":
        return (a.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
    return a.astype(np.uint64)


def from_words(w: np.ndarray, dtype: str) -> np.ndarray:
    w = np.asarray(w, np.uint64)
    if dtype == "f32":
        return (w & M32).astype(np.uint32).view(np.float32)
    if dtype == "f64":
        return w.view(np.float64)
    if dtype == "u32":
        return (w & M32).astype(np.uint32)
    return w


@dataclass
class Inputs:
    ops: np.ndarray  # uint64 [2 * nops]: b then c
    init: np.ndarray  # uint64 [8 * 32 + TABLE]: start values [chain][lane], then the LDS table
    b: np.ndarray = field(repr=False)
    c: np.ndarray = field(repr=False)
    x0: np.ndarray = field(repr=False)


def make_inputs(o: Op, seed: int = 7) -> Inputs:
    rng = np.random.default_rng(seed)
    b, c, x0 = o.make(rng)
    bt, ct = np.asarray(b), np.asarray(c)
    bw, cw = to_words(bt, o.dtype), to_words(ct, o.dtype)
    x0w = to_words(x0, o.dtype)
    table = (np.arange(TABLE) + 37) % TABLE  # LDS: index i -> i + 37 (mod 256)
    init = np.concatenate([x0w.reshape(-1), table.astype(np.uint64)])
    return Inputs(
        np.concatenate([bw, cw]).astype(np.uint64),
        init,
        from_words(bw, o.dtype),
        from_words(cw, o.dtype),
        from_words(x0w.reshape(8, 32), o.dtype),
    )


def steps_per_chain(ilp: int, iters: int) -> int:
    """Steps one chain runs in the kernel: two passes of `iters` iterations of BODY / ILP steps."""
    return 2 * iters * (BODY // ilp)


def chain_model(o: Op, inp: Inputs, iters: int) -> dict[int, np.ndarray]:
    """Final words [chain][lane] of every ILP variant. Step k of a chain uses operand pair k mod nops,
    whatever the ILP (BODY / ILP is a multiple of nops), so one replay of the longest chain serves all:
    the ILP-i variant stops after steps_per_chain(i, iters) steps and keeps chains 0..i-1."""
    stops = {steps_per_chain(i, iters): i for i in o.ilps}
    x = inp.x0.copy()
    out: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for s in range(1, max(stops) + 1):
            k = (s - 1) % o.nops
            if o.key == "lds":
                x = ((x.astype(np.int64) + 37) % TABLE).astype(np.uint32)
            else:
                x = o.step(x, inp.b[k], inp.c[k])
            if s in stops:
                i = stops[s]
                out[i] = to_words(x[:i], o.dtype)
    return out


def check_words(o: Op, got: np.ndarray, want: np.ndarray) -> str:
    """'' if every thread's final chain values equal the model (within tol for MUFU chains)."""
    if o.tol is None:
        bad = got != want[None]
    else:
        g, w = from_words(got, o.dtype).astype(np.float64), from_words(want, o.dtype).astype(np.float64)[None]
        bad = ~(np.abs(g - w) <= o.tol[1] + o.tol[0] * np.abs(w))
    if not bad.any():
        return ""
    idx = np.argwhere(bad)[0]
    return (
        f"{int(bad.sum())} of {bad.size} chain values differ from the CPU replay, first at {tuple(idx)}: "
        f"got {from_words(got[tuple(idx)], o.dtype)}, model {from_words(want[tuple(idx[1:])], o.dtype)}"
    )


# ---------------------------------------------------------------------------------------
# Kernel specs
# ---------------------------------------------------------------------------------------
def native_spec(o: Op) -> KernelSpec:
    req = {f"isa_ilp{i}": [o.pattern] for i in o.ilps}
    if o.key == "ffma":
        req["sched_ffma"] = [r"FFMA ", r"SR_VIRTID"]
    return KernelSpec("isa_native.cu", req, {o.define: 1}, label=f"isa_native.cu[{o.key}]")


SPECS = {o.key: native_spec(o) for o in ops()}


def _one_block_smem(props: dict) -> int:
    """Dynamic shared memory that lets only one block fit on an SM (blocks spread over all SMs)."""
    return min(props["smem_per_sm"] // 2 + 1024, props["smem_per_block_optin"] - 1024)  # + 1 KiB static table


def precompile(ctx: BenchContext, specs: list[KernelSpec]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from ...device.compiler import compile_kernel_file

    with ThreadPoolExecutor(max_workers=16) as ex:
        list(ex.map(lambda s: compile_kernel_file(s.file, ctx.device.arch, s.defines), specs))


def warps_grid(quick: bool) -> list[int]:
    return [1, 2, 4, 8, 16] if quick else [1, 2, 3, 4, 6, 8, 12, 16]


# ---------------------------------------------------------------------------------------
# 1. Native instruction table
# ---------------------------------------------------------------------------------------
METHOD = (
    "chain x <- op(x, b[k], c[k]) in inline PTX, 8 operand pairs from a run-time array in registers; "
    f"{BODY} steps per loop iteration, two passes, the 2nd timed with clock64 per warp; one block per SM on "
    "every SM; every thread's final chain values equal a CPU replay; CPU tests count the opcode in the "
    "timed loop body; the loop's own 2 instructions and branch per iteration are inside the span (about "
    "0.1 cycle per step: 4.12 for a 4-cycle FFMA)"
)


@benchmark(
    name="native_instructions",
    title="Native sm_90 instructions: dependent-issue latency and throughput per SM (warps x ILP)",
    axes={
        "instruction": f"{len(ops())} SASS instructions (FP32, FP16/BF16, FP64, INT, MUFU, conversions, warp, "
        "LDS/STS, BAR, DPX)",
        "warps": "1..16 per block (one block per SM)",
        "ilp": "1, 2, 4, 8 independent chains per thread",
    },
    kernels=list(SPECS.values()),
    params={
        "ops": Param(
            None,
            "comma-separated subset of instruction keys (default: all)",
            str,
            lambda v, f: None if all(k in SPECS for k in v.split(",")) else f"known: {', '.join(SPECS)}",
        )
    },
    timeout_s=600,
    min_cc=(9, 0),
    paper="002 §4.1 Table 4.1",
)
def native_instructions(ctx: BenchContext) -> None:
    chosen = [op(k) for k in ctx.params["ops"].split(",")] if ctx.params["ops"] else list(ops())
    precompile(ctx, [SPECS[o.key] for o in chosen])
    dev, sms = ctx.device, ctx.props["sm_count"]
    iters = 25 if ctx.quick else 65  # not a multiple of 4: the LDS walk (period 256) must not return to its start
    reps = 3
    smem = _one_block_smem(ctx.props)
    out = dev.alloc(sms * MAX_WARPS * 8 * 32 * 8)
    rec = dev.alloc(sms * MAX_WARPS * ir.REC * 8)
    results: dict[str, tuple[dict[tuple[int, int], ir.Cell], str]] = {}
    clocks: list[float] = []  # per instruction: SM clock over all its first launches (long spans weigh most)
    for n, o in enumerate(chosen):
        mod = ctx.module(SPECS[o.key])
        inp = make_inputs(o)
        want = chain_model(o, inp, iters)
        d_ops, d_init = dev.upload(inp.ops), dev.upload(inp.init)
        cells: dict[tuple[int, int], ir.Cell] = {}
        err = ""
        cyc_total, ns_total = 0, 0
        for ilp in o.ilps:
            fn = mod.function(f"isa_ilp{ilp}")
            for w in warps_grid(ctx.quick):
                per_warp = steps_per_chain(ilp, iters) // 2 * ilp * o.count  # instructions per warp, timed pass
                lats, rates = [], []
                for r in range(reps):
                    dev.memset32(out, 0xDEADBEEF)
                    fn(
                        sms,
                        32 * w,
                        [Arg.ptr(d_ops), Arg.u32(0), Arg.ptr(d_init), Arg.u32(iters), Arg.ptr(out), Arg.ptr(rec)],
                        smem=smem,
                    )
                    dev.sync(f"isa {o.key} ilp{ilp} warps{w}")
                    rr = dev.download(rec, np.uint64, sms * w * ir.REC)
                    lat, rate = ir.block_rates(rr, w, per_warp)
                    lats.append(float(np.median(lat)))
                    rates.append(32 * float(np.median(rate)))
                    if r == 0:
                        cyc, ns = ir.spans(rr, w)
                        cyc_total, ns_total = cyc_total + int(cyc.sum()), ns_total + int(ns.sum())
                        got = dev.download(out, np.uint64, sms * w * ilp * 32).reshape(-1, ilp, 32)
                        err = err or check_words(o, got, want[ilp])
                cells[(w, ilp)] = ir.Cell(
                    w, ilp, float(np.median(lats)), float(np.median(rates)), min(rates), max(rates)
                )
        dev.free(d_ops), dev.free(d_init)
        clocks.append(cyc_total / max(ns_total, 1) * 1e3)
        if err:
            ctx.soft_check(False, f"{o.key}: {err}")
        results[o.key] = (cells, err)
        ctx.progress(n + 1, len(chosen), o.key)
    dev.free(out), dev.free(rec)
    mhz = float(np.median(clocks))
    ctx.sm_clock(
        mhz,
        "clock64 cycles / %globaltimer ns summed over every block's timed pass in the first launch "
        "of every cell, per instruction; median over the instructions",
        (min(clocks), max(clocks)),
    )
    _figures(ctx, chosen, results, iters)


def table_group(key: str) -> str:
    """Which bar chart of the report an instruction goes to (one chart of 47 bars is unreadable)."""
    if key.startswith("mufu_") or key in ("f2i", "i2fp", "f2f", "f2fp"):
        return "mufu_conversions"
    if key in ("shfl", "vote", "redux", "match", "lds", "sts", "bar"):
        return "warp_shared_barrier"
    if key[0] in "fhd" and key != "flo":
        return "floating_point"
    return "integer_dpx"


def _volta_key(o: Op) -> str:
    if o.key.startswith("mufu_"):
        return "isa.latency.mufu_cycles"
    return f"isa.latency.{o.volta or o.key}_cycles"


def _figures(ctx: BenchContext, chosen: list[Op], results: dict, iters: int) -> None:
    # cycles per chain step of the (1 warp, ILP 1) cell: Cell.latency is per instruction
    step_lat = {
        k: cells[(1, 1)].latency * op(k).count for k, (cells, err) in results.items() if not err and (1, 1) in cells
    }
    pts: dict[tuple[str, str], list[Point]] = defaultdict(list)  # (chart group, series) -> bars
    for i, o in enumerate(chosen):
        cells, err = results[o.key]
        lk, tk = f"isa.latency.{o.key}_cycles", f"isa.throughput.{o.key}_per_clk_sm"
        missing = [h for h in o.helpers if h not in step_lat]
        if err or (1, 1) not in cells or missing:
            why = err or f"helper chain(s) {', '.join(missing)} not measured or failed"
            ctx.figure(lk, "FAILED", "cycles", "measured", METHOD, check="failed", note=why[:300])
            ctx.figure(tk, "FAILED", "instr/clk/SM", "measured", METHOD, check="failed", note=why[:300])
            continue
        helpers = [step_lat[h] for h in o.helpers]
        lat = ir.helper_corrected(step_lat[o.key], o.count, helpers)
        how = (
            f"1 warp, ILP 1: clock64 cycles per step / {o.count} instruction(s) per step"
            + (
                f", minus the helper chain(s) {', '.join(o.helpers)} ({', '.join(f'{h:.2f}' for h in helpers)} cycles)"
                if o.helpers
                else ""
            )
            + f", median over SMs of 3 launches ({steps_per_chain(1, iters) // 2} steps). "
            + METHOD
        )
        vk = _volta_key(o)
        volta = ref.VOLTA_LATENCY.get(vk)
        note = "; ".join(x for x in (o.note, f"Jia Table 4.1 V100: {volta:g} cycles" if volta else "") if x)
        ctx.figure(lk, round(lat, 2), "cycles", "measured" if not o.helpers else "derived", how, note=note)
        best, start = ir.steady_state(list(cells.values()))
        ctx.figure(
            tk,
            round(best.rate, 2),
            "instr/clk/SM",
            "measured",
            f"thread instructions (warp instructions x 32) per SM clock, best cell of warps {warps_grid(ctx.quick)}"
            f" x ILP {list(o.ilps)} ({best.warps} warps, ILP {best.ilp}; within 3% from {start.warps} warps x ILP "
            f"{start.ilp}): all the block's instructions over its clock64 span, median over SMs, median of 3. "
            + METHOD,
            (best.rate_lo, best.rate_hi),
            note=o.note,
        )
        label, g = {"label": o.key}, table_group(o.key)
        pts[(g, "lat")].append(Point(i, lat, None, None, 3, dict(label)))
        pts[(g, "thr")].append(Point(i, best.rate, best.rate_lo, best.rate_hi, 3, dict(label)))
        if volta:
            pts[(g, "volta")].append(Point(i, volta, None, None, 1, dict(label)))
        pascal = ref.PASCAL_LATENCY.get(vk)
        if pascal:
            pts[(g, "pascal")].append(Point(i, pascal, None, None, 1, dict(label)))
        if o.key in ("ffma", "dfma", "mufu_ex2", "imad", "shfl", "lds"):
            grid = [
                Point(c.warps, c.rate, c.rate_lo, c.rate_hi, 3, {"ilp": c.ilp, "latency_cycles": c.latency})
                for c in cells.values()
            ]
            ctx.series(
                f"{o.key} throughput",
                "warps",
                "",
                "throughput",
                "instr/clk/SM",
                grid,
                plot="heatmap",
                figure=f"sweep.{o.key}",
            )
    for g in dict.fromkeys(table_group(o.key) for o in chosen):
        for what, name in (
            ("lat", "sm_90 (this GPU)"),
            ("volta", "V100 (Jia Table 4.1)"),
            ("pascal", "P100 (Jia Table 4.1)"),
        ):
            if pts.get((g, what)):
                ctx.series(
                    name,
                    "instruction",
                    "",
                    "latency",
                    "cycles",
                    pts[(g, what)],
                    plot="bar",
                    figure=f"latency_table.{g}",
                )
        if pts.get((g, "thr")):
            ctx.series(
                "sm_90 (this GPU)",
                "instruction",
                "",
                "throughput",
                "instr/clk/SM",
                pts[(g, "thr")],
                plot="bar",
                figure=f"throughput_table.{g}",
            )
    ok = sum(1 for k, (_, e) in results.items() if not e)
    ctx.figure(
        "isa.native.instructions_measured",
        ok,
        "",
        "measured",
        "instructions whose chains passed the CPU replay check (latency and throughput figures stored)",
    )


# ---------------------------------------------------------------------------------------
# 2. Scheduler mapping (002 §2.2, Table 2.1)
# ---------------------------------------------------------------------------------------
SCHED_ILP = 8
SCHED_REC = 4  # start clock, end clock, %warpid, SM id


def sched_rates(rec: np.ndarray, active: list[int], warps: int, ffma_per_warp: int) -> np.ndarray:
    """Per block: FFMA warp instructions per clock of the active warps together."""
    r = rec.reshape(-1, warps, SCHED_REC).astype(np.int64)[:, active]
    span = np.maximum(r[:, :, 1].max(axis=1) - r[:, :, 0].min(axis=1), 1)
    return len(active) * ffma_per_warp / span


@benchmark(
    name="scheduler_mapping",
    title="Scheduler: which warps share a sub-core, and how many instructions per clock a sub-core issues",
    axes={
        "pair": "every pair of the 16 warps of a block runs FFMA chains (ILP 8), the others exit",
        "set": "1..4 warps on one sub-core class, and on distinct classes",
    },
    kernels=[SPECS["ffma"]],
    timeout_s=300,
    min_cc=(7, 0),
    paper="002 §2.2 Table 2.1",
)
def scheduler_mapping(ctx: BenchContext) -> None:
    dev, sms = ctx.device, ctx.props["sm_count"]
    o = op("ffma")
    fn = ctx.kernel(SPECS["ffma"], "sched_ffma")
    iters = 32 if ctx.quick else 96
    inp = make_inputs(o, seed=3)
    want = chain_model(o, inp, iters)[SCHED_ILP]  # sched_ffma runs the chains of isa_ilp8
    d_ops, d_init = dev.upload(inp.ops), dev.upload(inp.init)
    out = dev.alloc(sms * MAX_WARPS * SCHED_ILP * 32 * 8)
    rec = dev.alloc(sms * MAX_WARPS * SCHED_REC * 8)
    smem = _one_block_smem(ctx.props)
    per_warp = iters * BODY  # FFMA per warp in the timed pass
    errors: list[str] = []
    hw_ids: set[tuple[int, int]] = set()

    def run(active: list[int]) -> tuple[float, float, float]:
        mask = sum(1 << w for w in active)
        vals = []
        for r in range(3):
            dev.memset32(out, 0xDEADBEEF)
            fn(
                sms,
                32 * MAX_WARPS,
                [Arg.ptr(d_ops), Arg.ptr(d_init), Arg.u32(mask), Arg.u32(iters), Arg.ptr(out), Arg.ptr(rec)],
                smem=smem,
            )
            dev.sync("sched_ffma")
            rr = dev.download(rec, np.uint64, sms * MAX_WARPS * SCHED_REC)
            vals.append(float(np.median(sched_rates(rr, active, MAX_WARPS, per_warp))))
            if r == 0:
                got = dev.download(out, np.uint64, sms * MAX_WARPS * SCHED_ILP * 32).reshape(
                    sms, MAX_WARPS, SCHED_ILP, 32
                )
                if not (got[:, active] == want[None, None]).all() and not errors:
                    errors.append(f"warps {active}: FFMA chains differ from the CPU replay")
                for w in active:
                    hw_ids.add((w, int(rr.reshape(sms, MAX_WARPS, SCHED_REC)[0, w, 2])))
        return float(np.median(vals)), min(vals), max(vals)

    single = {w: run([w]) for w in range(MAX_WARPS)}
    pairs: dict[tuple[int, int], tuple[float, float, float]] = {}
    for a in range(MAX_WARPS):
        for b in range(a + 1, MAX_WARPS):
            pairs[(a, b)] = run([a, b])
        ctx.progress(a + 1, MAX_WARPS, f"pairs with warp {a}")
    cut = ir.split_two_levels({k: v[0] for k, v in pairs.items()})
    conflicts = [k for k, v in pairs.items() if cut is not None and v[0] < cut]
    classes = ir.classes_from_conflicts(MAX_WARPS, conflicts)
    rule = ir.modulo_rule(classes) if cut is not None else None
    n_cls = len(set(classes)) if cut is not None else 0
    # issue rate of one sub-core: 1..4 warps of one class, and of distinct classes
    same = [w for w in range(MAX_WARPS) if classes[w] == classes[0]][:4]
    diff = [next(w for w in range(MAX_WARPS) if classes[w] == c) for c in sorted(set(classes))][:4]
    same_rates = [run(same[:k]) for k in range(1, len(same) + 1)]
    diff_rates = [run(diff[:k]) for k in range(1, len(diff) + 1)]
    dev.free(d_ops), dev.free(d_init), dev.free(out), dev.free(rec)
    check = "failed" if errors else "ok"
    if errors:
        ctx.soft_check(False, errors[0])
    pts = [Point(a, v[0], v[1], v[2], 3, {"row": b}) for (a, b), v in pairs.items()]
    pts += [Point(b, v[0], v[1], v[2], 3, {"row": a}) for (a, b), v in pairs.items()]
    pts += [Point(w, v[0], v[1], v[2], 3, {"row": w}) for w, v in single.items()]
    ctx.series(
        "FFMA warp instr/clk of warps A and B",
        "warp A",
        "",
        "throughput",
        "warp instr/clk",
        pts,
        plot="heatmap",
        figure="pairs",
    )
    ctx.series(
        "warps of one class",
        "warps",
        "",
        "throughput",
        "warp instr/clk",
        [Point(k + 1, v[0], v[1], v[2], 3, {"warps": same[: k + 1]}) for k, v in enumerate(same_rates)],
        figure="issue_rate",
    )
    ctx.series(
        "warps of distinct classes",
        "warps",
        "",
        "throughput",
        "warp instr/clk",
        [Point(k + 1, v[0], v[1], v[2], 3, {"warps": diff[: k + 1]}) for k, v in enumerate(diff_rates)],
        figure="issue_rate",
    )
    lo = [v[0] for k, v in pairs.items() if k in conflicts]
    hi = [v[0] for k, v in pairs.items() if k not in conflicts]
    method = (
        f"one block of {MAX_WARPS} warps per SM on every SM; only warps A and B run {SCHED_ILP} independent FFMA "
        f"chains ({per_warp} FFMA each, the other warps exit); their FFMA per clock (clock64 span of the two), "
        "median over SMs, median of 3; pairs split at the widest gap of the sorted rates; classes by union-find"
    )
    ctx.figure(
        "isa.scheduler.subcores_per_sm",
        n_cls if cut is not None else "n/a: no two-level structure",
        "",
        "derived",
        method,
        check=check,
        note=(
            f"same-class pairs {np.median(lo):.3f}, other pairs {np.median(hi):.3f} warp instr/clk" if lo and hi else ""
        ),
    )
    ctx.figure(
        "isa.scheduler.mapping",
        f"warp % {rule}" if rule else "no modulo rule fits: " + str(classes),
        "",
        "derived",
        method,
        check=check,
        note=f"classes by warp index 0..{MAX_WARPS - 1}: {classes}; %warpid values each warp index had on "
        f"SM 0 over all launches: {_warpid_sets(hw_ids)}",
    )
    ctx.figure(
        "isa.scheduler.issue_per_clk_subcore",
        round(max(v[0] for v in same_rates), 3),
        "warp instr/clk",
        "measured",
        f"FFMA warp instructions per clock of 1..{len(same)} warps of one class ({same}); "
        f"{SCHED_ILP} independent chains per warp. " + method,
        check=check,
        note="distinct classes: " + ", ".join(f"{k + 1} warps {v[0]:.2f}" for k, v in enumerate(diff_rates)),
    )
    ctx.figure(
        "isa.scheduler.single_warp_ffma_per_clk",
        round(float(np.median([v[0] for v in single.values()])), 3),
        "warp instr/clk",
        "measured",
        "one warp alone, ILP 8, median over the 16 warp indices",
        check=check,
    )


def _warpid_sets(pairs: set[tuple[int, int]]) -> str:
    by: dict[int, set[int]] = defaultdict(set)
    for w, hw in pairs:
        by[w].add(hw)
    return "; ".join(f"{w}: {','.join(map(str, sorted(v)))}" for w, v in sorted(by.items()))
