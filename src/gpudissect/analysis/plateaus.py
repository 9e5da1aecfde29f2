"""Plateaus and knees of latency-vs-footprint curves.

A pointer chase over a growing footprint gives a staircase: one flat level per cache
level, joined by a sharp step or a gradual ramp (set conflicts, address hashing and
non-LRU replacement start missing before the nominal capacity is reached).

Segmentation is an exact dynamic programme rather than a left-to-right scan: a scan
anchors its level on whatever point opened the segment (often the tail of a ramp),
while the DP picks, among all ways of cutting the curve into flat segments, the one
that covers the most points. A candidate segment is "flat" when

* every point is within ``rel_tol`` of the segment median, except isolated single
  outliers strictly inside it (one spike must not split a plateau);
* its first and last points sit within the *noise band* of the median
  (max(3 sigma, rel_tol/2) capped at rel_tol; sigma from noise_rel), so a plateau does
  not absorb the first points of a neighbouring ramp or a smaller step;
* its fitted trend over log(footprint) changes the level by at most ``max_drift``
  (default max(rel_tol/2, 3 sigma)), so a long gentle ramp is not one flat level;
* it holds at least ``min_points`` non-outlier points and spans at least
  ``min_span`` octaves of footprint. The span test is what keeps a finely refined
  ramp (points a few percent apart in footprint, each within rel_tol of the next)
  from being chopped into short pseudo-plateaus: it is grid independent, and real
  cache levels differ in capacity by far more than 2**0.2 = 15%.

The DP maximises (points covered) - (min_points - 0.5) * (plateaus), so splitting a
plateau must buy at least min_points more covered points; afterwards neighbouring
plateaus whose levels agree within the noise band and that are separated by at most
two points are merged (the points between count as outliers, even if they formed a
tiny plateau of their own: two equal spikes are not a cache level), and each point at
a boundary between two plateaus goes to the nearer level.

Points covered by no segment are transition (ramp) points or outliers; they are not
reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpudissect.analysis.stats import as_finite_1d

__all__ = [
    "Knee",
    "Plateau",
    "Step",
    "capacity_by_midpoint",
    "curve_noise",
    "find_steps",
    "capacity_from_knee",
    "find_knees",
    "find_plateaus",
    "first_plateau_is_lowest",
    "lowest_plateau",
    "noise_rel",
    "refine_points",
]

# Merging two same-level plateaus across at most this many uncovered points (e.g. two
# spikes in a row, which no single flat segment may contain).
_MERGE_GAP = 2


@dataclass(frozen=True)
class Plateau:
    """A flat level of a curve; statistics use its inliers only (spikes excluded)."""

    x_first: float
    x_last: float
    level: float  # median y of the inliers
    spread: float  # max - min of the inliers' y
    n: int  # number of inliers


@dataclass(frozen=True)
class Knee:
    """An upward transition between two consecutive plateaus."""

    x_last_low: float  # largest footprint still on the lower plateau
    x_first_high: float  # smallest footprint already on the upper plateau
    low: float
    high: float


def _prepare_xy(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate and sort by x; footprints from refinement passes arrive unsorted."""
    xa = as_finite_1d(x, "x")
    ya = as_finite_1d(y, "y")
    if xa.size != ya.size:
        raise ValueError(f"x and y differ in length ({xa.size} != {ya.size})")
    if np.any(xa <= 0) or np.any(ya <= 0):
        raise ValueError("x (footprints) and y (latencies) must be positive")
    order = np.argsort(xa, kind="stable")
    xa, ya = xa[order], ya[order]
    if np.any(np.diff(xa) == 0):
        raise ValueError("duplicate footprints in x; aggregate repeated measurements first")
    return xa, ya


def noise_rel(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Robust relative noise of a curve (1 sigma, as a fraction of the level).

    Each interior point is compared with the straight line (in log footprint) through
    its two neighbours; the median of those residuals is dominated by plateau points.
    Unlike |y[i+1] - y[i]|, this is not inflated by the many smooth ramp points that
    refine_points adds around knees (a smooth ramp is locally straight).
    """
    xa, ya = _prepare_xy(x, y)
    if ya.size < 3:
        return 0.0
    lx = np.log2(xa)
    w = (lx[1:-1] - lx[:-2]) / (lx[2:] - lx[:-2])
    r = ya[1:-1] - ((1.0 - w) * ya[:-2] + w * ya[2:])
    # r carries the noise of three points: scale back to one.
    r_one = np.abs(r) / np.sqrt(1.0 + w**2 + (1.0 - w) ** 2)
    return float(1.4826 * np.median(r_one / ya[1:-1]))


def _median(a: np.ndarray) -> float:
    """Median of a short array (np.median's overhead dominates the segment scan)."""
    s = np.sort(a)
    n = s.size
    return float(s[(n - 1) // 2] + s[n // 2]) / 2.0


def _flat_inliers(
    lx: np.ndarray,
    y: np.ndarray,
    i: int,
    j: int,
    m: float,
    tol: float,
    band: float,
    drift: float,
    min_points: int,
    min_span: float,
) -> np.ndarray | None:
    """Inlier indices of y[i:j] (median m) if it is a flat segment (module doc), else None."""
    seg = y[i:j]
    dev = np.abs(seg - m)
    # A plateau must start and end on points inside the noise band (never on a spike).
    if dev[0] > band * m or dev[-1] > band * m:
        return None
    out = dev > tol * m
    if seg.size > 1 and np.any(out[:-1] & out[1:]):
        return None  # two outliers in a row are a level change, not a spike
    inl = np.flatnonzero(~out)
    if inl.size < min_points or lx[i + inl[-1]] - lx[i + inl[0]] < min_span:
        return None
    if inl.size >= 2:
        lxs = lx[i:j][inl]
        ys = seg[inl]
        dl = lxs - lxs.mean()
        slope = float(dl @ (ys - ys.mean())) / float(dl @ dl)
        if abs(slope) * float(lxs[-1] - lxs[0]) > drift * m:
            return None
    return inl + i


def find_plateaus(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    rel_tol: float = 0.10,
    min_points: int = 2,
    min_span: float = 0.2,
    max_drift: float | None = None,
) -> list[Plateau]:
    """Segment a latency curve into flat levels, in x order (see module doc).

    x: footprints (any order, no duplicates); y: positive latencies.
    rel_tol: points of a plateau lie within rel_tol of its median.
    min_points: fewest non-outlier points a plateau needs.
    min_span: fewest octaves (log2 of x_last/x_first) a plateau must span; 0 allows
        single-point plateaus when min_points == 1.
    max_drift: largest relative level change a plateau's linear trend over
        log(footprint) may show; default max(rel_tol/2, 3 * noise).
    """
    if not 0.0 < rel_tol < 1.0:
        raise ValueError("rel_tol must be in (0, 1)")
    if min_points < 1:
        raise ValueError("min_points must be >= 1")
    if min_span < 0:
        raise ValueError("min_span must be >= 0")
    xa, ya = _prepare_xy(x, y)
    n = ya.size
    lx = np.log2(xa)
    sigma = noise_rel(xa, ya)
    band = min(rel_tol, max(3.0 * sigma, 0.5 * rel_tol))
    drift = max(0.5 * rel_tol, 3.0 * sigma) if max_drift is None else max_drift

    # All flat candidate segments, grouped by their (exclusive) end.
    by_end: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(n + 1)]
    for i in range(n):
        for j in range(i + 1, n + 1):
            m = _median(ya[i:j])
            # Two trailing points off the median: the level has changed, and a longer
            # segment from i cannot be flat again. This pruning keeps the scan at
            # O(n * plateau length) instead of O(n^2).
            if j - i >= 4 and abs(ya[j - 1] - m) > rel_tol * m and abs(ya[j - 2] - m) > rel_tol * m:
                break
            inl = _flat_inliers(lx, ya, i, j, m, rel_tol, band, drift, min_points, min_span)
            if inl is not None:
                by_end[j].append((i, inl))

    # best[j]: max (covered points - penalty * segments) over the prefix y[:j].
    penalty = min_points - 0.5
    best = np.zeros(n + 1)
    choice: list[tuple[int, np.ndarray] | None] = [None] * (n + 1)
    for j in range(1, n + 1):
        best[j] = best[j - 1]
        for i, inl in by_end[j]:  # i ascending: ties keep the longest segment
            v = best[i] + inl.size - penalty
            if v > best[j] + 1e-9:
                best[j] = v
                choice[j] = (i, inl)
    segments: list[np.ndarray] = []
    j = n
    while j > 0:
        c = choice[j]
        if c is None:
            j -= 1
            continue
        segments.append(c[1])
        j = c[0]
    segments.reverse()

    def mergeable(prev: np.ndarray, nxt: np.ndarray) -> bool:
        a, b = float(np.median(ya[prev])), float(np.median(ya[nxt]))
        return nxt[0] - prev[-1] - 1 <= _MERGE_GAP and abs(a - b) <= band * min(a, b)

    merged: list[np.ndarray] = []
    for inl in segments:
        if len(merged) >= 2 and mergeable(merged[-2], inl):
            # At most _MERGE_GAP points between two equal levels form an excursion
            # (e.g. two equal spikes), not a cache level of their own.
            merged.pop()
            merged[-1] = np.concatenate([merged[-1], inl])
        elif merged and mergeable(merged[-1], inl):
            merged[-1] = np.concatenate([merged[-1], inl])
        else:
            merged.append(inl)

    merged = _settle_boundaries(ya, merged, band)
    return [
        Plateau(
            x_first=float(xa[inl[0]]),
            x_last=float(xa[inl[-1]]),
            level=float(np.median(ya[inl])),
            spread=float(np.ptp(ya[inl])),
            n=int(inl.size),
        )
        for inl in merged
        # Boundary settling may have shrunk a plateau below the minimum.
        if inl.size >= min_points and lx[inl[-1]] - lx[inl[0]] >= min_span
    ]


def _settle_boundaries(y: np.ndarray, segs: list[np.ndarray], band: float) -> list[np.ndarray]:
    """Give each point next to a boundary to the nearer of the two adjacent levels.

    The DP only asks that an edge lie within the noise band of its own level; with two
    levels a few sigma apart a boundary point can satisfy that for the wrong one (and a
    few ramp points on a short plateau pull its median). Nearest-level assignment is
    the natural classifier there; a point near neither stays a ramp point.
    """
    segs = [s.copy() for s in segs]
    for k in range(len(segs) - 1):
        a, b = segs[k], segs[k + 1]
        if a.size == 0 or b.size == 0:
            continue
        la, lb = float(np.median(y[a])), float(np.median(y[b]))

        def nearer_a(v: float) -> bool:
            return abs(v - la) / la < abs(v - lb) / lb

        while a.size > 1 and not nearer_a(y[a[-1]]):
            a = a[:-1]
        while b.size > 1 and nearer_a(y[b[0]]):
            b = b[1:]
        # Uncovered points right after a / right before b may join the nearer level.
        while a[-1] + 1 < b[0] and nearer_a(y[a[-1] + 1]) and abs(y[a[-1] + 1] - la) <= band * la:
            a = np.append(a, a[-1] + 1)
        while b[0] - 1 > a[-1] and not nearer_a(y[b[0] - 1]) and abs(y[b[0] - 1] - lb) <= band * lb:
            b = np.insert(b, 0, b[0] - 1)
        segs[k], segs[k + 1] = a, b
    return segs


def find_knees(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, **kw: Any) -> list[Knee]:
    """Upward transitions between consecutive plateaus (kw go to find_plateaus).

    A downward transition is not a capacity knee (more footprint never makes a
    hit faster), so it is not reported; check first_plateau_is_lowest for that.
    """
    ps = find_plateaus(x, y, **kw)
    return [
        Knee(x_last_low=a.x_last, x_first_high=b.x_first, low=a.level, high=b.level)
        for a, b in zip(ps, ps[1:])
        if b.level > a.level
    ]


def capacity_from_knee(knee: Knee) -> float:
    """Capacity estimate of the level below `knee`: its x_last_low.

    The largest footprint still measured on the lower plateau. It is a lower bound up
    to noise: a footprint larger than the capacity must miss in a cyclic chase whatever
    the replacement policy, while set conflicts/hashing only make misses start
    *earlier*. "Up to noise" because with a gradual (non-LRU) ramp the first few
    percent of misses hide in the noise band, so x_last_low can overshoot by a fine
    grid step or two. The true capacity lies near [x_last_low, x_first_high);
    refine_points narrows that interval to a few percent. The midpoint is not used:
    on a ramp it has no physical meaning and on a coarse grid it is off by half a step
    in an unknown direction.
    """
    return knee.x_last_low


def refine_points(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    *,
    rel_jump: float = 0.15,
    per_gap: int = 6,
) -> list[float]:
    """New footprints to measure around every jump of the curve, sorted.

    For each neighbouring pair whose latency changes by more than rel_jump (relative
    to the smaller one), per_gap geometrically spaced footprints strictly between
    them, rounded to multiples of 1024 bytes and not already measured. Narrow gaps
    yield fewer points (rounding collapses them).
    """
    if rel_jump <= 0:
        raise ValueError("rel_jump must be > 0")
    if per_gap < 1:
        raise ValueError("per_gap must be >= 1")
    xa, ya = _prepare_xy(x, y)
    have = set(xa.tolist())
    new: set[float] = set()
    jump = np.abs(np.diff(ya)) / np.minimum(ya[:-1], ya[1:])
    for k in np.flatnonzero(jump > rel_jump):
        lo, hi = xa[k], xa[k + 1]
        cand = np.round(np.geomspace(lo, hi, per_gap + 2)[1:-1] / 1024.0) * 1024.0
        new.update(float(c) for c in cand if lo < c < hi and float(c) not in have)
    return sorted(new)


def lowest_plateau(plateaus: Sequence[Plateau]) -> Plateau:
    """The plateau with the smallest level."""
    if not plateaus:
        raise ValueError("no plateaus")
    return min(plateaus, key=lambda p: p.level)


def first_plateau_is_lowest(plateaus: Sequence[Plateau], tol: float = 0.10) -> bool:
    """True if the first (smallest-footprint) plateau is within tol of the lowest level.

    Guards e.g. an "L1" chain that silently bypasses L1 (H100: loads compiled to
    .cg, or a footprint/carveout mismatch): the curve then starts at L2 latency and a
    later, lower plateau exposes it.
    """
    low = lowest_plateau(plateaus)
    return plateaus[0].level <= low.level * (1.0 + tol)


# ---------------------------------------------------------------------------------------
# Steps judged against the measured run-to-run spread (not a fixed percentage)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """A level shift of a curve: the last x on the lower level, the first on the upper one."""

    x_before: float
    x_after: float
    before: float  # median level of the points before
    after: float  # median level of the points after
    noise: float  # the noise the step was judged against
    factor: float  # (after - before) / noise


def curve_noise(y: Sequence[float] | np.ndarray, spread: Sequence[float] | np.ndarray | None = None) -> float:
    """Noise of a curve: the larger of the median run-to-run spread (max - min of the repeats
    at each point) and the point-to-point scatter (1.4826 MAD of successive differences / sqrt 2)."""
    a = as_finite_1d(y, "y")
    scatter = 0.0
    if a.size >= 3:
        d = np.diff(a)
        scatter = float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2))
    run = float(np.median(as_finite_1d(spread, "spread"))) if spread is not None and len(spread) else 0.0
    return max(run, scatter, 1e-12)


def find_steps(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    spread: Sequence[float] | np.ndarray | None = None,
    *,
    factor: float = 5.0,
    window: int = 3,
    min_noise: float = 0.0,
) -> list[Step]:
    """Upward and downward level shifts larger than `factor` x the curve noise (curve_noise,
    floored at min_noise). A shift at i compares the median of up to `window` points after i
    with the median of up to `window` points before; it counts when both medians, and every one
    of the `window` points after, clear the threshold (a lone spike is no step). Overlapping
    candidates keep the largest; steps are returned in x order."""
    xs, ys = _prepare_xy(x, y)
    order = np.argsort(np.asarray(x, dtype=np.float64), kind="stable")
    sp = None if spread is None else np.asarray(spread, dtype=np.float64)[order]
    noise = max(curve_noise(ys, sp), min_noise)
    thr = factor * noise
    cands: list[tuple[float, int]] = []
    for i in range(1, ys.size):
        before = ys[max(0, i - window) : i]
        after = ys[i : i + window]
        d = float(np.median(after) - np.median(before))
        if abs(d) <= thr:
            continue
        ref = float(np.median(before))
        if not all(abs(v - ref) > thr and np.sign(v - ref) == np.sign(d) for v in after):
            continue
        cands.append((abs(d), abs(float(ys[i] - ys[i - 1])), -i))
    steps: list[Step] = []
    taken: list[int] = []
    # largest shift first; among equal shifts the sharpest point-to-point jump, then the earliest
    for _, _, neg_i in sorted(cands, reverse=True):
        i = -neg_i
        if any(abs(i - j) < window for j in taken):
            continue
        taken.append(i)
    for i in sorted(taken):
        before = float(np.median(ys[max(0, i - window) : i]))
        after = float(np.median(ys[i : i + window]))
        steps.append(Step(float(xs[i - 1]), float(xs[i]), before, after, noise, (after - before) / noise))
    return steps


def capacity_by_midpoint(
    x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, low: float, high: float
) -> float:
    """Footprint at which the curve first crosses halfway between the `low` and `high` levels,
    interpolated linearly in log2(footprint) between the two grid points around the crossing.
    Unlike 'the last grid point before the knee', this does not move with the grid spacing."""
    xs, ys = _prepare_xy(x, y)
    mid = (low + high) / 2
    above = np.flatnonzero(ys >= mid)
    if high <= low or above.size == 0 or above[0] == 0:
        raise ValueError("the curve does not cross halfway between the levels inside the grid")
    i = int(above[0])
    lx0, lx1 = np.log2(xs[i - 1]), np.log2(xs[i])
    f = (mid - ys[i - 1]) / (ys[i] - ys[i - 1])
    return float(2 ** (lx0 + f * (lx1 - lx0)))


def second_plateau_start(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Where the curve's second plateau begins (its first point); infinity with fewer than two plateaus."""
    pl = find_plateaus(xs, ys)
    return pl[1].x_first if len(pl) >= 2 else float("inf")
