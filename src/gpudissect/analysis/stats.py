"""Small robust summaries of repeated timing samples.

Medians (not means) are the headline numbers everywhere in gpudissect: GPU timing
samples have a one-sided tail (clock ramps, interrupts, TLB walks) that drags the
mean but not the median.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

__all__ = ["as_finite_1d", "median_ci", "median_spread", "summarize"]


def as_finite_1d(values: Iterable[float] | np.ndarray, name: str = "samples") -> np.ndarray:
    """Return `values` as a non-empty, finite, 1-D float64 array or raise ValueError."""
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def summarize(samples: Iterable[float] | np.ndarray) -> dict[str, float | int]:
    """Median, min, max, 10th/90th percentile and count of `samples`."""
    a = as_finite_1d(samples)
    p10, med, p90 = np.percentile(a, [10.0, 50.0, 90.0])
    return {
        "median": float(med),
        "min": float(a.min()),
        "max": float(a.max()),
        "p10": float(p10),
        "p90": float(p90),
        "n": int(a.size),
    }


def median_spread(samples: Iterable[float] | np.ndarray) -> tuple[float, float, float]:
    """(median, min, max) of `samples` — the triple reported next to every headline number."""
    a = as_finite_1d(samples)
    return float(np.median(a)), float(a.min()), float(a.max())


def median_ci(samples: Iterable[float] | np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median: the order statistics x_(j) and x_(n+1-j) with
    the largest j whose binomial(n, 1/2) coverage P(j <= #below < n+1-j) is still >= `level`. None where
    no such interval exists (fewer than 6 samples at 95 %): too few to bound the median at all."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    a = np.sort(as_finite_1d(samples))
    n = int(a.size)
    # P(X < j) for X ~ binomial(n, 1/2): the chance the median lies below x_(j)
    cdf, below = 0.0, []
    for i in range(n + 1):
        below.append(cdf)
        cdf += math.comb(n, i) / 2.0**n
    best = None
    for j in range(1, n // 2 + 1):  # x_(j) .. x_(n+1-j) covers the median with 1 - 2 P(X < j)
        if 1.0 - 2.0 * below[j] >= level:
            best = j
    if best is None:
        return None
    return float(a[best - 1]), float(a[n - best])
