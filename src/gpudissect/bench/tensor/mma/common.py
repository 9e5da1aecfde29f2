"""Shared by the tensor suite's warp-level benchmarks: the GPU's tensor peaks, timing analysis and the
(#warps, ILP) grid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


AT_PEAK = 0.95  # a per-clock figure below this fraction of its peak carries the measured limit in its note


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


def chain_cycles(rec: np.ndarray, warps: int) -> np.ndarray:
    """Per block: clock64 cycles between a warp's two clock reads (mean over its warps)."""
    r = records.parse(rec, warps)
    return (r.t1 - r.t0).mean(axis=1)


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


# ---------------------------------------------------------------------------------------
# Latency net of the loop: a chain-length sweep, the slope of cycles over chain length
# ---------------------------------------------------------------------------------------
# The timed span of a dependent chain holds more than the chain: the loop's entry (the iteration count loaded
# and tested after the first clock read), the first pass through the unrolled body with a cold instruction
# cache, the exit and the stores of the results before the second clock read. That cost does not grow with
# the chain, so the span over n steps is fixed + n x latency: the same kernel run at several lengths gives
# the latency as the slope and the fixed cost as the intercept of a straight line.
# The ILP-1 (latency) build of tensor_mma.cu unrolls its timed loop LATENCY_UNROLL times where the mma is one
# tensor instruction (lowering.latency_unrolled; its define of the same name): 2 x 64 = 128 dependent mma per
# loop-back. The loop-back (counter, test, branch) costs ~20 cycles per body on Hopper, more than the 16-cycle
# slots of an HMMA.1688 hide (the 24 of an HMMA.16816 hide it): with the compiler's own 16x unroll (32 mma per
# body) it put ~0.6 cycle on every m16n8k8 step of the slope, with 128 per body ~0.15. The other ILPs, and the
# emulated variants, keep the compiler's unroll (their SASS unchanged).
LATENCY_UNROLL = 64


def chain_iters(quick: bool) -> tuple[int, ...]:
    """Loop iterations of the latency sweep's launches: multiples of LATENCY_UNROLL, so that every length runs
    the unrolled main loop only (no remainder iterations) and the span grows by whole loop bodies."""
    return (64, 128, 256, 512) if quick else (64, 128, 256, 512, 1024)


@dataclass(frozen=True)
class ChainFit:
    """Least-squares line cycles = fixed + steps x per_step, one per repetition of the sweep."""

    steps: tuple[int, ...]  # dependent steps timed at each length
    slopes: tuple[float, ...]  # cycles per step, per repetition
    intercepts: tuple[float, ...]  # cycles, per repetition
    residual: float  # largest |line - measured| over every length and repetition, cycles
    cycles: tuple[tuple[float, ...], ...] = ()  # what was measured: [repetition][length]

    def span(self, i: int = -1) -> float:
        """The span of the chain of steps[i] divided by its steps (median of repetitions): the latency with
        the fixed cost spread over the chain, as a single chain length measures it."""
        return float(np.median([row[i] for row in self.cycles])) / self.steps[i]

    @property
    def per_step(self) -> float:
        return float(np.median(self.slopes))

    @property
    def fixed(self) -> float:
        return float(np.median(self.intercepts))


def fit_chain(steps: Sequence[int], cycles: Sequence[Sequence[float]]) -> ChainFit:
    """cycles[rep][i]: the span of a chain of steps[i] dependent steps (median over SMs) in repetition rep."""
    x = np.asarray(steps, dtype=float)
    if len(x) < 2 or len(set(steps)) < 2:
        raise ValueError(f"a line needs two distinct chain lengths, not {list(steps)}")
    slopes, intercepts, worst = [], [], 0.0
    for row in cycles:
        y = np.asarray(row, dtype=float)
        b, a = np.polyfit(x, y, 1)
        slopes.append(float(b))
        intercepts.append(float(a))
        worst = max(worst, float(np.max(np.abs(a + b * x - y))))
    rows = tuple(tuple(float(c) for c in row) for row in cycles)
    return ChainFit(tuple(int(s) for s in steps), tuple(slopes), tuple(intercepts), worst, rows)


def measure_chain(
    run: Callable[[int, bool], tuple[float, str]],
    iters: Sequence[int],
    steps_of: Callable[[int], int],
    reps: int,
) -> tuple[ChainFit | None, str]:
    """run(iters, check) -> (cycles between the clock reads, median over SMs; '' or what was wrong with the
    output). Every length once per repetition, the first repetition checking the output; the first error
    ends the sweep."""
    rows = []
    for rep in range(reps):
        row = []
        for it in iters:
            cycles, err = run(it, rep == 0)
            if err:
                return None, f"latency sweep, {it} iterations: {err}"
            row.append(cycles)
        rows.append(row)
    return fit_chain([steps_of(it) for it in iters], rows), ""


def chain_method(what: str, lengths: str, where: str, reps: int, fixed: str = "latency_fixed_cycles") -> str:
    """The method of a latency net of the loop; `fixed`: where the line's intercept is reported."""
    return (
        f"{what}: cycles per dependent step net of the loop, the slope of a least-squares line through the "
        f"clock64 span of the same kernel at {lengths} ({where}), median over {reps} repetitions; the line's "
        "intercept, the fixed cost between the two clock reads (loop entry, the first pass through the unrolled "
        f"body, exit, result stores), is {fixed}"
    )
