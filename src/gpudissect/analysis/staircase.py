"""Steps in a curve measured with repetitions, told from noise by the measured run-to-run spread.

Used for the instruction-cache staircase (inverse throughput vs code size) and the constant-cache
latency curves. A step is a change of level larger than `k` times the noise, where the noise is the
pooled standard deviation of the repetitions at each x (not a fixed percentage).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Step:
    x_last_low: float  # last x on the level before the step
    x_first_high: float  # first x on the level after it
    y_before: float  # level (median) before
    y_after: float  # level (median) after


def noise_sigma(reps: list[list[float]]) -> float:
    """Pooled standard deviation of the repetitions at each x (points with >= 2 repetitions)."""
    var = [np.var(r, ddof=1) for r in reps if len(r) >= 2]
    if not var:
        raise ValueError("need repetitions (>= 2 values at some x) to estimate the noise")
    return float(np.sqrt(np.mean(var)))


def neighbour_sigma(ys: list[float]) -> float:
    """The spread between neighbouring points of a curve, robust to its steps: the median absolute deviation
    of the first differences, as a sigma of one point (MAD x 1.4826 / sqrt 2). Repetitions at one x can agree
    to the cycle while neighbouring sizes wobble by more (one slow access in a timed chase): that wobble is
    noise too, and a step must clear it."""
    d = np.diff(np.asarray(ys, dtype=float))
    if d.size < 2:
        return 0.0
    mad = float(np.median(np.abs(d - np.median(d))))
    return mad * 1.4826 / np.sqrt(2.0)


def threshold(reps: list[list[float]], k: float = 6.0, floor: float = 0.0) -> float:
    """Smallest level change counted as a step: k pooled sigmas of a single value, but at least
    `floor` (the resolution of the measurement, e.g. one cycle over the timed count)."""
    return max(k * noise_sigma(reps), floor)


def find_steps(xs: list[float], ys: list[float], thr: float, confirm: int = 2) -> list[Step]:
    """Segment an x-sorted curve into levels: a point leaves the current level when it differs from
    the level's median by more than thr, and a new level starts when `confirm` consecutive points
    (or the last point of the curve) agree with each other within thr. Returns the steps between
    levels (up or down)."""
    if len(xs) != len(ys):
        raise ValueError("xs and ys differ in length")
    order = np.argsort(xs)
    x = [float(xs[i]) for i in order]
    y = [float(ys[i]) for i in order]
    steps: list[Step] = []
    seg: list[int] = [0] if x else []
    i = 1
    while i < len(x):
        level = float(np.median([y[j] for j in seg]))
        if abs(y[i] - level) <= thr:
            seg.append(i)
            i += 1
            continue
        cand = [i]
        j = i + 1
        while j < len(x) and len(cand) < confirm and abs(y[j] - y[i]) <= thr and abs(y[j] - level) > thr:
            cand.append(j)
            j += 1
        if len(cand) >= confirm or j >= len(x):
            new_level = float(np.median([y[c] for c in cand]))
            steps.append(Step(x[seg[-1]], x[i], level, new_level))
            seg = cand
            i = j
        else:  # a lone outlier: skip it without letting it move the level
            i += 1
    return steps


def rising_steps(steps: list[Step]) -> list[Step]:
    return [s for s in steps if s.y_after > s.y_before]


def levels(xs: list[float], ys: list[float], steps: list[Step]) -> list[float]:
    """Median y of each level between the steps (the first level up to the first step, ...)."""
    bounds = [-np.inf] + [s.x_first_high for s in steps] + [np.inf]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        on = [yy for xx, yy in zip(xs, ys) if lo <= xx < hi]
        if on:
            out.append(float(np.median(on)))
    return out


@dataclass(frozen=True)
class Geometry:
    capacity: float  # bytes before the first stage
    stages: int  # count of equal small steps between capacity and saturation = sets
    line: float  # width of a stage = line size
    ways: float  # capacity / (sets * line)


def set_geometry(xs: list[float], ys: list[float], thr: float, capacity: float, x_end: float) -> Geometry | None:
    """Jia Fig. 3.4: past the capacity of an LRU set-associative cache, a sequentially re-read
    footprint overflows one more set per extra line, so the curve climbs in equal stages, one per
    set, each one line wide, until every set overflows. Counts the rising stages of the (fine,
    evenly spaced) points in (capacity, x_end] and derives line and ways. None when fewer than two
    stages are seen or fewer than 80% of the stage widths equal their median within half a step."""
    pts = [(x, y) for x, y in zip(xs, ys) if capacity <= x <= x_end]
    if len(pts) < 4:
        return None
    px, py = zip(*sorted(pts))
    st = rising_steps(find_steps(list(px), list(py), thr, confirm=1))
    if len(st) < 2:
        return None
    starts = [s.x_first_high for s in st]
    widths = np.diff(starts)
    dx = float(np.median(np.diff(px)))
    line = float(np.median(widths)) if widths.size else dx
    # the last stage can end early where the curve meets the next level; ask 80% of widths to agree
    if widths.size and np.mean(np.abs(widths - line) <= dx / 2 + 1e-9) < 0.8:
        return None
    sets = len(st)
    return Geometry(capacity, sets, line, capacity / (sets * line))


def saturation_x(xs: list[float], ys: list[float], thr: float) -> float | None:
    """For a curve that rises and then stays flat (latency over stride: a line size), the smallest x
    whose y is within thr of the last point's, provided the first point lies more than thr below it
    (otherwise there is no rise to locate)."""
    order = np.argsort(xs)
    x = [float(xs[i]) for i in order]
    y = [float(ys[i]) for i in order]
    if len(x) < 2 or y[-1] - y[0] <= thr:
        return None
    for i in range(len(x)):
        if all(abs(y[j] - y[-1]) <= thr for j in range(i, len(x))):
            return x[i]
    return None


def doubling_knee(xs: list[float], ys: list[float], thr: float) -> float | None:
    """For strides doubling from point to point over a line-structured cache: while the stride is
    below the line, the share of misses doubles with it and so does the rise of the latency; the
    line is the first stride after which the rise stops growing (next rise < half the previous
    one, or below thr). None when the curve never rises by more than thr."""
    order = np.argsort(xs)
    x = [float(xs[i]) for i in order]
    y = [float(ys[i]) for i in order]
    d = np.diff(y)
    for i in range(1, len(d)):
        if d[i - 1] > thr and (d[i] < 0.5 * d[i - 1] or d[i] <= thr):
            return x[i]
    return None
