"""The CPU replay of the native-instruction chains (isa suite): the operand and start-value words a
kernel reads, every chain's final words after the steps the kernel runs, and the check of the words
the GPU wrote against them. Pure numpy, on the table of native_ops.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .native_ops import BODY, TABLE, Op
from .native_steps import M32


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


def steps_per_chain(ilp: int, iters: int, body: int = BODY) -> int:
    """Steps one chain runs in the kernel: two passes of `iters` iterations of body / ILP steps (Op.body)."""
    return 2 * iters * (body // ilp)


def chain_model(o: Op, inp: Inputs, iters: int) -> dict[int, np.ndarray]:
    """Final words [chain][lane] of every ILP variant. Step k of a chain uses operand pair k mod nops,
    whatever the ILP (body / ILP is a multiple of nops), so one replay of the longest chain serves all:
    the ILP-i variant stops after steps_per_chain(i, iters) steps and keeps chains 0..i-1."""
    stops = {steps_per_chain(i, iters, o.body): i for i in o.ilps}
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
