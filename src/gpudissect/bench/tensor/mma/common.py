"""Shared by the tensor suite's warp-level benchmarks: the GPU's tensor peaks, timing analysis and the
(#warps, ILP) grid.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ....analysis import records
from ....reference.peaks import fma_per_clk_sm, peaks_for, tensor_source, tensor_type


# ---------------------------------------------------------------------------------------
# The tensor-core rate a figure is a fraction of: the run's own GPU (reference/peaks.py), nothing for a GPU
# without a record there
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArchPeak:
    fma_per_clk_sm: float  # dense, or 2:4 sparse (twice dense)
    source: str  # where it comes from, for the figure's method


def arch_peak(
    props: Mapping[str, Any], a: str, sparse: bool, acc: str | None = None, ran_as: str | None = None
) -> ArchPeak | None:
    """The per-SM rate of PTX type `a` (accumulator `acc`) on the GPU of `props`; where the GPU has no tensor
    path for `a` and the SASS ran it on instructions of type `ran_as` (4-bit operands unpacked for IMMA .S8 on
    Hopper), that type's rate. None: no record of this GPU, or no published rate."""
    peaks = peaks_for(props)
    if peaks is None:
        return None
    kinds = [a] + ([ran_as] if ran_as and ran_as != a and tensor_type(a) in peaks.lacks else [])
    for t in kinds:
        rate = fma_per_clk_sm(peaks, t, sparse=sparse, acc=acc)
        if rate is not None:
            src = tensor_source(peaks, t, acc=acc) + ("; 2:4 sparse: twice dense" if sparse else "")
            if t != a:
                src = f"no {tensor_type(a)} tensor path on this GPU: the rate of the {t} instructions it ran on; {src}"
            return ArchPeak(rate, src)
    return None


# ---------------------------------------------------------------------------------------
# Timing analysis (pure functions; tested on synthetic data)
# ---------------------------------------------------------------------------------------
REC = records.REC  # words per warp of the timing record (analysis/records.py)


def per_block(
    rec: np.ndarray, warps: int, steps: int, work_per_step: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """rec [blocks * warps * REC] -> per block: cycles per dependent step (mean over warps),
    throughput (work per clock over the block's span: first start to last end, one SM's clock) and
    the SM id. work_per_step: work one warp does per step (ILP x FMA per mma, or bytes)."""
    r = records.parse(rec, warps)
    lat = ((r.t1 - r.t0) / steps).mean(axis=1)
    thr = warps * work_per_step * steps / r.span_cycles
    return lat, thr, r.sm[:, 0]


def sm_clock_hz(rec: np.ndarray, warps: int) -> np.ndarray:
    """Per block: clock64 cycles over %globaltimer nanoseconds of its span (the SM clock it ran at)."""
    r = records.parse(rec, warps)
    return r.span_cycles / (r.span_ns * 1e-9)


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
