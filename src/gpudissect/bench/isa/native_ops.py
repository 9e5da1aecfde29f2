"""The native-instruction table (isa suite, Jia et al. 002 §4.1 Table 4.1): for every instruction its SASS
pattern, the chain type, the CPU model of one chain step x <- op(x, b[k], c[k]), the helper chains
whose latency is subtracted, and the operands and start values the chains run with. Pure numpy:
native_replay.py replays the chains, native.py builds one kernel per row (kernels/isa_native.cu) and
measures it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from .native_steps import (
    M32,
    brev,
    f2i,
    f32_step,
    f64_step,
    flo,
    half2,
    match_any,
    pack_bf16x2,
    pack_f16x2,
    popc,
    prmt,
    s32,
    u32_step,
)

# mirrored from kernels/isa_native.cu
BODY = 64  # chain steps per loop iteration, summed over the ILP chains
NOPS = 8  # operand pairs (b[k], c[k]) a chain cycles through (NOPS_DEFAULT; Op.nops = 4 for FSEL and SEL)
TABLE = 256  # words of the shared-memory table of the LDS / STS chains
ILPS = (1, 2, 4, 8)  # independent chains per thread: one kernel function isa_ilp<i> each


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
    sass_note: bool = False  # the note describes sm_90's SASS (elsewhere the SASS that ran replaces it)
    body: int = BODY  # chain steps per loop iteration (the _reuse rows: longer, less loop overhead)
    thr_name: str = ""  # the name in its throughput key where not `key` (isa.throughput.<thr_name>_per_clk_sm)
    latency: bool = True  # False: a second form of an instruction timed for its throughput only

    @property
    def throughput_name(self) -> str:
        return self.thr_name or self.key

    @property
    def instruction(self) -> str:
        """The instruction the row times (a peak form's: the row it is a form of), for its unit's peak."""
        return self.key if self.latency else self.thr_name

    @property
    def define(self) -> str:
        return "OP_" + self.key.upper()

    @property
    def pattern(self) -> str:
        """The SASS regex (sm_90's; other families': native_arch.py), not matching inside a longer mnemonic
        (IADD3 must not count UIADD3)."""
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


_MUFU_TOL = (1e-3, 1e-4)

REUSE_BODY = 256  # steps per loop iteration of the _reuse rows: the loop's 3 instructions are 1% of its slots


def _mk_reuse(b: float, c: float) -> Callable:
    """One operand pair (b, c) for every step: x <- x * 1 + 1 counts up, exact in f32 and f64 for the
    steps a kernel runs (at most 2 x 65 x 256 from |x| <= 20), and never repeats."""

    def mk(r: np.random.Generator) -> tuple[list, list, np.ndarray]:
        return [b], [c], _ints(r, -20, 20)

    return mk


def _reuse_form(of: str, more: str = "", note: str = "") -> dict:
    """The fields of a peak form of instruction `of` (its throughput is the one called `of`'s, its latency is
    the 8-pair row's): one operand pair, a longer loop body."""
    note = note or (
        f"{of} with one (b, c) pair for every step, marked .reuse by ptxas: the register file reads x alone "
        "(but where ptxas drops the flags)"
    )
    return {
        "nops": 1,
        "body": REUSE_BODY,
        "thr_name": of,
        "latency": False,
        "note": f"{note}; {REUSE_BODY} steps per loop iteration{more}",
    }


def _h2(lo: float, hi: float) -> int:
    return int(pack_f16x2(np.array([lo]), np.array([hi]))[0])


def _b2(lo: float, hi: float) -> int:
    return int(pack_bf16x2(np.array([lo]), np.array([hi]))[0])


def _h2i(r: np.random.Generator) -> np.ndarray:
    return pack_f16x2(_ints(r, -20, 20), _ints(r, -20, 20)).astype(np.int64)


def _b2i(r: np.random.Generator) -> np.ndarray:
    return pack_bf16x2(_ints(r, -20, 20), _ints(r, -20, 20)).astype(np.int64)


@cache
def ops() -> tuple[Op, ...]:
    """The instructions, in the order of the report's table (FP32, FP16/BF16, FP64, integer, MUFU,
    conversions, warp, shared memory, barrier, DPX)."""
    clamp = lambda x, b, c: np.minimum(np.maximum(x, b), c)
    return (
        Op("ffma", r"FFMA ", "f32", f32_step(lambda x, b, c: x * b + c), _mk_fma, thr_name="ffma_bank_limited"),
        Op(
            "ffma_reuse",
            r"FFMA ",
            "f32",
            f32_step(lambda x, b, c: x * b + c),
            _mk_reuse(1.0, 1.0),
            **_reuse_form("ffma"),
        ),
        Op("fadd", r"FADD ", "f32", f32_step(lambda x, b, c: x + b), _mk_add),
        Op("fmul", r"FMUL ", "f32", f32_step(lambda x, b, c: x * b), _mk_mul),
        Op("fmnmx", r"FMNMX ", "f32", f32_step(clamp), _mk_clamp, count=2, note="a max and a min per step"),
        Op(
            "fsetp",
            r"FSETP\.",
            "f32",
            f32_step(lambda x, b, c: np.where(x < b, c, b)),
            _mk_setp,
            helpers=("fsel",),
            note="FSETP + FSEL per step; the FSEL latency (own chain) subtracted",
        ),
        Op(
            "fsel",
            r"FSEL ",
            "f32",
            f32_step(lambda x, b, c: x if c != 0 else np.full_like(x, b)),
            _mk_sel,
            nops=4,
            note="predicates set once outside the loop",
        ),
        Op(
            "hfma2",
            r"HFMA2(\.MMA)? ",
            "u32",
            half2(lambda x, b, c: x * b + c),
            lambda r: ([0x3C003C00] * NOPS, [_h2(v, -v) for v in ZERO_SUM], _h2i(r)),
            note="ptxas alternates HFMA2 and HFMA2.MMA (the two FP16 pipes) along the chain",
            sass_note=True,
            thr_name="hfma2_bank_limited",
        ),
        Op(
            "hfma2_reuse",
            r"HFMA2(\.MMA)? ",
            "u32",
            half2(lambda x, b, c: x * b + c),
            lambda r: ([0x3C003C00], [_h2(1, -1)], _h2i(r)),
            **_reuse_form(
                "hfma2",
                "; the halves count up and down by 1 and stop at +-2048 (f16 spacing 2 from there: x + 1 rounds "
                "back to x), as the replay does, after about 2000 steps",
            ),
        ),
        Op(
            "hadd2",
            r"(HADD2|HFMA2\.MMA) ",
            "u32",
            half2(lambda x, b, c: x + b),
            lambda r: ([_h2(v, -v) for v in ZERO_SUM], [0] * NOPS, _h2i(r)),
            note="ptxas issues every other add as HFMA2.MMA (x*1+b): the figure is the mean of the two",
            sass_note=True,
        ),
        Op(
            "hmul2",
            r"(HMUL2|HFMA2\.MMA) ",
            "u32",
            half2(lambda x, b, c: x * b),
            lambda r: ([_h2(v, v) for v in UNIT_PROD], [0] * NOPS, _h2i(r)),
            note="ptxas issues every other multiply as HFMA2.MMA (x*b+0): the figure is the mean of the two",
            sass_note=True,
        ),
        Op(
            "hmnmx2",
            r"HMNMX2 ",
            "u32",
            half2(clamp),
            lambda r: ([_h2(-v, -v) for v in range(NOPS)], [_h2(v, v) for v in range(NOPS)], _h2i(r)),
            count=2,
        ),
        Op(
            "hfma2_bf16",
            r"HFMA2(\.MMA)?\.BF16_V2 ",
            "u32",
            half2(lambda x, b, c: x * b + c, bf=True),
            lambda r: ([0x3F803F80] * NOPS, [_b2(v, -v) for v in ZERO_SUM], _b2i(r)),
            note="ptxas alternates HFMA2.BF16_V2 and HFMA2.MMA.BF16_V2",
            sass_note=True,
        ),
        Op("dfma", r"DFMA ", "f64", f64_step(lambda x, b, c: x * b + c), _mk_fma, thr_name="dfma_bank_limited"),
        Op(
            "dfma_ureg",
            r"DFMA ",
            "f64",
            f64_step(lambda x, b, c: x * b + c),
            _mk_reuse(1.0, 1.0),
            **_reuse_form(
                "dfma",
                note="dfma with one (b, c) pair for every step and b = 1 from a kernel parameter (a uniform register "
                "on sm_90): each DFMA reads at most x and c, two 64-bit pairs, from the register file",
            ),
        ),
        Op("dadd", r"DADD ", "f64", f64_step(lambda x, b, c: x + b), _mk_add),
        Op("dmul", r"DMUL ", "f64", f64_step(lambda x, b, c: x * b), _mk_mul),
        Op(
            "imad",
            r"IMAD ",
            "u32",
            u32_step(lambda x, b, c: x * b + c),
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
        Op("iadd3", r"IADD3 ", "u32", u32_step(lambda x, b, c: x + b + c), _mk_u32),
        Op("lop3", r"LOP3\.LUT ", "u32", u32_step(lambda x, b, c: (x & b) ^ c), _mk_u32),
        Op(
            "shf",
            r"SHF\.L\.W",
            "u32",
            u32_step(lambda x, b, c: (x << (c & np.uint64(31))) | ((b << (c & np.uint64(31))) >> np.uint64(32))),
            _mk_u32,
        ),
        Op(
            "vimnmx",
            r"VIMNMX ",
            "u32",
            lambda x, b, c: clamp(s32(x), s32(b), s32(c)).view(np.uint32),
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
            lambda x, b, c: np.where(s32(x) < s32(b), np.uint32(c), np.uint32(b)).astype(np.uint32),
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
        Op("popc", r"POPC ", "u32", lambda x, b, c: popc(x), _mk_u32),
        Op("flo", r"FLO\.U32 ", "u32", lambda x, b, c: flo(x), _mk_u32),
        Op("brev", r"BREV ", "u32", lambda x, b, c: brev(x), _mk_u32),
        Op(
            "prmt",
            r"PRMT ",
            "u32",
            prmt,
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
            f32_step(lambda x, b, c: np.exp2(-x)),
            _mk_floats(0, 2),
            tol=_MUFU_TOL,
            note="x <- 2^-x (negation as a source modifier)",
        ),
        Op(
            "mufu_lg2",
            r"MUFU\.LG2 ",
            "f32",
            f32_step(lambda x, b, c: np.log2(x) + b),
            _mk_floats(1, 8, 2.0),
            helpers=("fadd",),
            tol=_MUFU_TOL,
            note="x <- log2(x) + 2: the FADD latency (own chain) subtracted",
        ),
        Op(
            "mufu_rsq",
            r"MUFU\.RSQ ",
            "f32",
            f32_step(lambda x, b, c: 1 / np.sqrt(x)),
            _mk_floats(0.5, 4),
            tol=_MUFU_TOL,
        ),
        Op(
            "mufu_rcp",
            r"MUFU\.RCP ",
            "f32",
            f32_step(lambda x, b, c: 1 / np.abs(x)),
            _mk_floats(0.5, 4),
            tol=_MUFU_TOL,
            note="x <- 1/|x| (|x| as a source modifier; ptxas folds rcp(rcp(x)))",
        ),
        Op(
            "mufu_sin",
            r"MUFU\.SIN ",
            "f32",
            f32_step(lambda x, b, c: np.sin(x)),
            _mk_floats(-1.5, 1.5),
            helpers=("fmul",),
            tol=(0.1, 0.02),
            note="sm_90 prefixes MUFU.SIN with FMUL.RZ by 1/(2 pi); the FMUL latency subtracted",
        ),
        Op(
            "mufu_cos",
            r"MUFU\.COS ",
            "f32",
            f32_step(lambda x, b, c: np.cos(x)),
            _mk_floats(-3, 3),
            helpers=("fmul",),
            tol=_MUFU_TOL,
            note="sm_90 prefixes MUFU.COS with FMUL.RZ by 1/(2 pi); the FMUL latency subtracted",
        ),
        Op(
            "mufu_sqrt",
            r"MUFU\.SQRT ",
            "f32",
            f32_step(lambda x, b, c: np.sqrt(x)),
            _mk_floats(0.5, 100),
            tol=_MUFU_TOL,
        ),
        Op(
            "mufu_tanh",
            r"MUFU\.TANH ",
            "f32",
            f32_step(lambda x, b, c: np.tanh(x)),
            _mk_floats(-2, 2),
            tol=(0.5, 0.05),
            note="tanh.approx has a relative error up to 2^-11; its chain decays slowly to 0, so the check is loose",
        ),
        Op(
            "f2i",
            r"F2I\.TRUNC",
            "f32",
            lambda x, b, c: f2i(x),
            lambda r: ([0] * NOPS, [0] * NOPS, r.uniform(-3e9, 3e9, (8, 32)).astype(np.float32)),
        ),
        Op(
            "i2fp",
            r"I2FP\.F32\.S32 ",
            "u32",
            lambda x, b, c: s32(x).astype(np.float32).view(np.uint32),
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
            lambda x, b, c: pack_f16x2(
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
            lambda x, b, c: match_any(x),
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
            lambda x, b, c: np.maximum(s32((x.astype(np.uint64) + np.uint64(b)) & M32), s32(c)).view(np.uint32),
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
            lambda x, b, c: np.maximum(np.maximum(s32(x), s32(b)), s32(c)).view(np.uint32),
            _mk_u32,
            note="DPX __vimax3_s32 (the chain settles at the largest operand; the latency does not depend on it)",
        ),
    )


def op(key: str) -> Op:
    for o in ops():
        if o.key == key:
            return o
    raise KeyError(key)


def table_group(key: str) -> str:
    """Which bar chart of the report an instruction goes to (one chart of 47 bars is unreadable)."""
    if key.startswith("mufu_") or key in ("f2i", "i2fp", "f2f", "f2fp"):
        return "mufu_conversions"
    if key in ("shfl", "vote", "redux", "match", "lds", "sts", "bar"):
        return "warp_shared_barrier"
    if key[0] in "fhd" and key != "flo":
        return "floating_point"
    return "integer_dpx"
