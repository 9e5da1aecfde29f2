"""The kernels' timing record (kernels/gpudissect.cuh record()), read back: one parser for every kernel
that writes it (memory bandwidth per block; native instructions, mma and ldmatrix per warp).

Per timed unit, REC u64 words: start and end clock64, the SM (%smid), start and end %globaltimer ns.
Clocks compare only within one SM; %globaltimer is one time base for every SM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REC = 5  # words per record (REC_WORDS in gpudissect.cuh)


@dataclass(frozen=True)
class Records:
    """The records of one launch as int64 arrays shaped (groups, per_group): a group is a block of
    `per_group` warps, or (per_group = 1) a block of its own."""

    t0: np.ndarray
    t1: np.ndarray
    sm: np.ndarray
    g0: np.ndarray
    g1: np.ndarray

    @property
    def span_cycles(self) -> np.ndarray:
        """Per group: clock64 from its first start to its last end (one SM's clock)."""
        return self.t1.max(axis=1) - self.t0.min(axis=1)

    @property
    def span_ns(self) -> np.ndarray:
        """Per group: %globaltimer from its first start to its last end."""
        return self.g1.max(axis=1) - self.g0.min(axis=1)


def parse(rec: np.ndarray, per_group: int = 1) -> Records:
    """Records from the raw u64 words a kernel wrote, `per_group` units (warps) to a group (block)."""
    r = np.asarray(rec).reshape(-1, per_group, REC).astype(np.int64)
    return Records(r[:, :, 0], r[:, :, 1], r[:, :, 2], r[:, :, 3], r[:, :, 4])


def words(units: int) -> int:
    """How many u64 words `units` records take (the size of the buffer a kernel writes them to)."""
    return units * REC
