"""Shared by the tensor suite's warp-level benchmarks: architectural peaks, timing analysis and the
(#warps, ILP) grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....analysis import records

# ---------------------------------------------------------------------------------------
# Architectural per-SM peaks (kind="assumed"): dense FMA per clock per SM of the tensor cores.
# ---------------------------------------------------------------------------------------
PEAK_FMA_CLK_SM: dict[tuple[int, int], dict[str, int]] = {
    # A100 whitepaper, as Sun et al. Table 3's caption states them
    (8, 0): {"f16": 1024, "tf32": 512, "f64": 64, "int8": 2048, "int4": 4096, "b1": 16384},
    # H100 whitepaper: 989.4 dense FP16 TFLOPS = 2 x 132 SMs x 1830 MHz x 2048; TF32 half, FP8/INT8
    # double that; FP64 tensor 2x A100 per SM. INT4 has no tensor-core path on sm_90 (ptxas unpacks
    # it to IMMA.S8), so the INT8 rate bounds it; no binary rate is published for Hopper.
    (9, 0): {"f16": 2048, "tf32": 1024, "f64": 128, "fp8": 4096, "int8": 4096, "int4": 4096},
}
PEAK_SOURCE = {
    (8, 0): "A100 whitepaper (Sun et al. Table 3 caption)",
    (9, 0): "H100 whitepaper: 989.4 TFLOPS dense FP16 = 2 x 132 SMs x 1830 MHz x 2048 FMA/clk/SM",
}
FAMILY = {
    "f16": "f16",
    "bf16": "f16",
    "tf32": "tf32",
    "f64": "f64",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "s8": "int8",
    "u8": "int8",
    "s4": "int4",
    "u4": "int4",
    "b1": "b1",
}


def arch_peak(cc: tuple[int, int], a: str, sparse: bool) -> float | None:
    """Dense (or 2:4 sparse: twice) FMA/clk/SM the architecture is rated for, None if not published."""
    p = PEAK_FMA_CLK_SM.get(cc, {}).get(FAMILY[a])
    if p is None:
        return None
    return float(p * (2 if sparse and a not in ("f64", "b1") else 1))


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
