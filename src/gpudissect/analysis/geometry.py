"""Cache and TLB geometry inferred from measured curves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gpudissect.analysis.clustering import kmeans_1d
from gpudissect.analysis.plateaus import find_knees, find_plateaus
from gpudissect.analysis.stats import as_finite_1d

__all__ = [
    "line_size_from_tag_capacity",
    "miss_period_bytes",
    "page_size_from_strides",
    "tlb_levels",
]


def _sorted_pairs(
    xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray, xname: str, yname: str, min_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """Validate positive paired data, sort by x, reject duplicate x."""
    x = as_finite_1d(xs, xname)
    y = as_finite_1d(ys, yname)
    if x.size != y.size:
        raise ValueError(f"{xname} and {yname} differ in length ({x.size} != {y.size})")
    if x.size < min_len:
        raise ValueError(f"need at least {min_len} points, got {x.size}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError(f"{xname} and {yname} must be positive")
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    if np.any(np.diff(x) == 0):
        raise ValueError(f"duplicate values in {xname}")
    return x, y


def miss_period_bytes(latencies: Sequence[float] | np.ndarray, stride_bytes: int, *, min_contrast: float = 0.3) -> int:
    """Fetch granularity (sector size) from a fine-stride chase over cold memory.

    Accesses are split into fast/slow by exact 2-means on log(latency) (log, so that a
    few very slow TLB walks/interrupts do not claim a cluster of their own); the answer
    is the most common distance in bytes between successive slow accesses (ties: the
    smaller). A split whose slow median is not at least (1 + min_contrast) x the fast
    median is noise, i.e. there were no misses -> ValueError.
    """
    lat = as_finite_1d(latencies, "latencies")
    if stride_bytes <= 0:
        raise ValueError("stride_bytes must be > 0")
    if np.any(lat <= 0):
        raise ValueError("latencies must be positive")
    if np.unique(lat).size < 2:
        raise ValueError("no misses: all latencies are equal")
    lg = np.log(lat)
    fast, slow = kmeans_1d(lg, 2)
    if np.exp(slow.median) < (1.0 + min_contrast) * np.exp(fast.median):
        raise ValueError("no misses: latencies form a single level")
    idx = np.flatnonzero(lg >= slow.lo)
    if idx.size < 2:
        raise ValueError("need at least two misses to measure their spacing")
    dist, cnt = np.unique(np.diff(idx) * stride_bytes, return_counts=True)
    return int(dist[np.argmax(cnt)])


def line_size_from_tag_capacity(
    strides_bytes: Sequence[float] | np.ndarray,
    knee_counts: Sequence[float] | np.ndarray,
    *,
    tol: float = 0.15,
) -> int:
    """Cache line size from how many strided elements fit before the latency knee.

    With elements `s` bytes apart the cache (capacity C, line L) holds N(s) = C / s
    elements while s < L (elements share lines) and N(s) = C / L once s >= L (each
    element pins a whole line / tag). N falls as 1/s and then flattens. The plateau
    starts at the smallest stride whose next stride keeps N within tol; C is the median
    of s * N over the falling part plus that first plateau point, and the line size is
    C / median(N on the plateau), rounded to a power of two.

    Only the first flattening counts: at very large strides set conflicts can make N
    fall again, which must not hide the line plateau. Raises ValueError when N is flat
    from the smallest stride (line <= smallest stride: measure smaller strides) or
    never flattens (line > largest stride).
    """
    s, n = _sorted_pairs(strides_bytes, knee_counts, "strides_bytes", "knee_counts", 3)
    flat_next = n[1:] >= (1.0 - tol) * n[:-1]
    if not np.any(flat_next):
        raise ValueError("knee counts never stop falling: line is larger than the largest stride")
    i = int(np.argmax(flat_next))
    if i == 0:
        raise ValueError("knee counts flat from the smallest stride: line <= smallest stride")
    end = i + 1
    while end < n.size and n[end] >= (1.0 - tol) * n[i]:
        end += 1
    capacity = float(np.median(s[: i + 1] * n[: i + 1]))
    line = capacity / float(np.median(n[i:end]))
    return int(2 ** round(np.log2(line)))


def tlb_levels(
    footprints: Sequence[float] | np.ndarray, latencies: Sequence[float] | np.ndarray, **kw: Any
) -> list[dict[str, float]]:
    """TLB levels from a page-stride chase over growing footprints.

    Each upward knee of the curve is a TLB level running out of entries:
    coverage_bytes (entries x page size) is the largest footprint still at the lower
    latency. kw go to plateaus.find_plateaus.
    """
    return [
        {"coverage_bytes": k.x_last_low, "latency_before": k.low, "latency_after": k.high}
        for k in find_knees(footprints, latencies, **kw)
    ]


def page_size_from_strides(
    strides: Sequence[float] | np.ndarray,
    latencies_at_fixed_count: Sequence[float] | np.ndarray,
    *,
    high_frac: float = 0.75,
    min_contrast: float = 0.1,
) -> int:
    """TLB page (entry) size from a chase with a fixed element count and varying stride.

    The count is chosen to overflow a TLB level when every element needs its own entry.
    At stride s < page, page/s consecutive elements share one entry, so only about a
    fraction s/page of accesses miss and latency rises gradually with s; from s = page
    every access misses and latency stays at the high level. Method: high = level of
    the highest plateau (plateaus.find_plateaus over the strides), low = the minimum
    latency; the answer is the smallest stride whose latency, and that of the next
    stride, reach low + high_frac * (high - low) -- the next-stride check stops a single
    noisy point below the page from being taken. Raises ValueError when high is not at
    least (1 + min_contrast) x low (no TLB effect in the range) or no stride qualifies.
    """
    if not 0.0 < high_frac <= 1.0:
        raise ValueError("high_frac must be in (0, 1]")
    s, y = _sorted_pairs(strides, latencies_at_fixed_count, "strides", "latencies_at_fixed_count", 3)
    plateaus = find_plateaus(s, y)
    if not plateaus:
        raise ValueError("no flat high level: extend the strides beyond the page size")
    high = max(p.level for p in plateaus)
    low = float(y.min())
    if high < (1.0 + min_contrast) * low:
        raise ValueError("no TLB effect: latency barely changes with stride")
    thr = low + high_frac * (high - low)
    hi_mask = y >= thr
    for i in range(y.size):
        if hi_mask[i] and (i == y.size - 1 or hi_mask[i + 1]):
            return int(round(s[i]))
    raise ValueError("latency never reaches the high level")


def element_delta_curve(per_element: Sequence[np.ndarray]) -> np.ndarray:
    """Latency change of a chase as its element set grows, with each element's own L2 latency
    cancelled: per_element[i][e] is the mean latency of element e at the i-th footprint, and the
    element sets are nested (footprint i holds elements 0..n_i-1). Step i adds the mean over the
    common elements of (latency now - latency at footprint i-1). Element-to-element latency
    differences (L2 slice and partition distance) move a plain average whenever elements are
    added; they cancel here, so what remains is what changed for the same addresses (the TLB)."""
    out = [0.0]
    for prev, cur in zip(per_element, per_element[1:]):
        m = min(len(prev), len(cur))
        if m == 0:
            raise ValueError("empty footprint")
        out.append(out[-1] + float(np.mean(np.asarray(cur[:m], np.float64) - np.asarray(prev[:m], np.float64))))
    return np.array(out)


def per_element_means(latencies: np.ndarray, elements: np.ndarray, n: int) -> np.ndarray:
    """Mean latency of each element 0..n-1 from per-access latencies and the element each access read."""
    lat = np.asarray(latencies, np.float64)
    el = np.asarray(elements, np.int64)
    sums = np.bincount(el, weights=lat, minlength=n)[:n]
    cnt = np.bincount(el, minlength=n)[:n]
    if np.any(cnt == 0):
        raise ValueError("an element was never accessed")
    return sums / cnt


def tlb_geometry(first_step_counts: dict[int, int]) -> dict[str, float]:
    """L1 TLB entries, entry reach and coverage from the element count at which a sequential
    chase first steps up, per stride. At strides from the entry reach up each element needs an
    entry of its own, so the step comes after `entries` elements; below it reach/stride
    consecutive elements share one, so it comes after entries x reach / stride. Hence entries =
    the smallest (count - 1) over strides, reach = median over the strides whose count exceeds
    that of (count - 1) x stride / entries (or the smallest stride that shows `entries` when none
    does), coverage = entries x reach."""
    if not first_step_counts:
        raise ValueError("no stride with a step")
    before = {s: c - 1 for s, c in first_step_counts.items()}
    entries = min(before.values())
    if entries < 1:
        raise ValueError("a step before the second element is no TLB level")
    shared = [b * s / entries for s, b in before.items() if b > entries]
    reach = float(np.median(shared)) if shared else float(min(s for s, b in before.items() if b == entries))
    reach = float(2 ** round(np.log2(reach)))
    return {"entries": float(entries), "reach_bytes": reach, "coverage_bytes": entries * reach}
