"""The Op record of the native-instruction table (native_ops.py) and the loop constants mirrored from
kernels/isa_native.cu: chain steps per loop iteration, operand pairs, shared-memory table size, ILPs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

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
