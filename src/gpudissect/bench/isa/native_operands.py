"""The operand and start-value makers of the native-instruction table (native_ops.py): for a row, the
(b[k], c[k]) pairs its chains cycle through and the start values x, plus the fields of the one-pair
peak (_reuse) forms. Pure numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .native_op import NOPS
from .native_steps import pack_bf16x2, pack_f16x2


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
