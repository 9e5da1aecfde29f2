"""1-D clustering of fine-grained per-access latencies.

A fine-grained chase records thousands of integer cycle counts that fall into a few
modes (e.g. L2 near hit / far hit / near miss / far miss). kmeans_1d is exact: in one
dimension optimal k-means clusters are contiguous runs of the sorted values, so a
dynamic programme over the distinct values (weighted by multiplicity) finds the global
optimum deterministically, with no dependence on initialisation. Cycle counts have few
distinct values (hundreds), which keeps the DP cheap; above `max_exact` distinct values
(float data) it falls back to scipy's kmeans2 with k-means++ restarts.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.cluster.vq import ClusterError, kmeans2

from gpudissect.analysis.stats import as_finite_1d

__all__ = ["Cluster", "choose_k", "kmeans_1d", "trim_outliers"]

# Distinct values above which the exact DP (O(k * m^2) time, O(k * m) memory) gives way
# to kmeans2 restarts.
MAX_EXACT = 4096

# scipy >= 1.15 renamed kmeans2's `seed` to `rng`.
_RNG_KW = "rng" if "rng" in inspect.signature(kmeans2).parameters else "seed"


@dataclass(frozen=True)
class Cluster:
    """One latency mode; clusters are contiguous, non-overlapping value ranges."""

    center: float  # mean of the members (the k-means centre)
    median: float
    count: int
    lo: float  # smallest member
    hi: float  # largest member


def _exact_bounds(u: np.ndarray, w: np.ndarray, k_max: int) -> list[np.ndarray]:
    """Optimal 1-D k-means for k = 1..k_max over sorted distinct values u (weights w).

    Returns, per k, the start index in u of each cluster (k starts, first is 0).
    D[c, b] = least SSE of u[:b] in c+1 clusters; the last cluster is u[a:b].
    """
    m = u.size
    v = u - np.average(u, weights=w)  # centring keeps Q - S^2/W well conditioned
    cw = np.concatenate([[0.0], np.cumsum(w)])
    cs = np.concatenate([[0.0], np.cumsum(w * v)])
    cq = np.concatenate([[0.0], np.cumsum(w * v * v)])

    def sse(a: np.ndarray | int, b: int) -> np.ndarray:
        wt = cw[b] - cw[a]
        s = cs[b] - cs[a]
        return np.maximum(cq[b] - cq[a] - s * s / wt, 0.0)

    D = np.full((k_max, m + 1), np.inf)
    arg = np.zeros((k_max, m + 1), dtype=np.int64)
    D[0, 1:] = sse(0, np.arange(1, m + 1))  # type: ignore[arg-type]
    for c in range(1, k_max):
        for b in range(c + 1, m + 1):
            a = np.arange(c, b)
            cost = D[c - 1, a] + sse(a, b)
            t = int(np.argmin(cost))
            D[c, b] = cost[t]
            arg[c, b] = a[t]
    out = []
    for k in range(1, k_max + 1):
        starts = []
        b = m
        for c in range(k - 1, 0, -1):
            b = int(arg[c, b])
            starts.append(b)
        out.append(np.array([0, *reversed(starts)], dtype=np.int64))
    return out


def _clusters_from_edges(sorted_vals: np.ndarray, lows: np.ndarray) -> list[Cluster]:
    """Clusters of sorted values split where value >= each (increasing) lower edge."""
    cuts = np.searchsorted(sorted_vals, lows[1:], side="left")
    return [
        Cluster(
            center=float(g.mean()),
            median=float(np.median(g)),
            count=int(g.size),
            lo=float(g[0]),
            hi=float(g[-1]),
        )
        for g in np.split(sorted_vals, cuts)
    ]


def _lloyd_1d(v: np.ndarray, centers: np.ndarray, iters: int = 100) -> tuple[np.ndarray, float] | None:
    """Polish sorted centres by 1-D Lloyd iterations; None if a cluster empties."""
    c = np.sort(centers)
    for _ in range(iters):
        lab = np.searchsorted((c[:-1] + c[1:]) / 2.0, v, side="right")
        cnt = np.bincount(lab, minlength=c.size)
        if np.any(cnt == 0):
            return None
        new = np.bincount(lab, weights=v, minlength=c.size) / cnt
        if np.allclose(new, c, rtol=0.0, atol=1e-12 * max(1.0, float(np.abs(c).max()))):
            c = new
            break
        c = new
    lab = np.searchsorted((c[:-1] + c[1:]) / 2.0, v, side="right")
    return c, float(np.sum((v - c[lab]) ** 2))


def kmeans_1d(
    values: Sequence[float] | np.ndarray,
    k: int,
    *,
    seed: int = 0,
    restarts: int = 10,
    max_exact: int = MAX_EXACT,
) -> list[Cluster]:
    """k clusters of 1-D values, sorted by centre; every value lands in one cluster.

    Exact (seed/restarts unused) when there are at most max_exact distinct values;
    otherwise the lowest-inertia of `restarts` kmeans2(minit="++") runs seeded
    seed, seed+1, ..., each polished by Lloyd iterations.
    """
    a = as_finite_1d(values, "values")
    if k < 1:
        raise ValueError("k must be >= 1")
    s = np.sort(a)
    u, w = np.unique(s, return_counts=True)
    if k > u.size:
        raise ValueError(f"k={k} exceeds the number of distinct values ({u.size})")
    if u.size <= max_exact:
        starts = _exact_bounds(u, w.astype(np.float64), k)[k - 1]
        return _clusters_from_edges(s, u[starts])

    if restarts < 1:
        raise ValueError("restarts must be >= 1")
    best: tuple[float, np.ndarray] | None = None
    for r in range(restarts):
        try:
            c0, _ = kmeans2(s, k, minit="++", missing="raise", **{_RNG_KW: np.random.default_rng(seed + r)})
        except ClusterError:
            continue
        res = _lloyd_1d(s, np.asarray(c0, dtype=np.float64).ravel())
        if res is not None and (best is None or res[1] < best[0]):
            best = (res[1], res[0])
    if best is None:
        raise RuntimeError(f"kmeans2 produced an empty cluster in all {restarts} restarts")
    c = best[1]
    lab = np.searchsorted((c[:-1] + c[1:]) / 2.0, s, side="right")
    lows = np.array([s[lab == i][0] for i in range(k)])
    return _clusters_from_edges(s, lows)


def choose_k(
    values: Sequence[float] | np.ndarray,
    k_max: int = 6,
    *,
    sep: float = 2.0,
    min_rel_gap: float = 0.02,
    min_frac: float = 0.01,
) -> int:
    """Number of latency modes, for reporting (not used by any inference).

    For each k <= k_max, take the optimal k-clustering, set aside stragglers (clusters
    holding under min_frac of the values: a few interrupts or TLB walks must neither
    count as a mode nor, by claiming a cluster, hide one), and accept it if every pair
    of neighbouring remaining clusters is separated: centre gap >= sep * (sum of the two
    standard deviations) and >= min_rel_gap * the lower centre. The answer is the most
    remaining clusters over the accepted k (1 at least).

    Why these thresholds: splitting one Gaussian mode gives halves whose gap is ~1.3x
    their summed std, so sep=2 rejects it; the relative gap rejects splits of
    integer-quantised modes a cycle or two apart, where the std test degenerates.
    """
    a = as_finite_1d(values, "values")
    if k_max < 1:
        raise ValueError("k_max must be >= 1")
    s = np.sort(a)
    u, w = np.unique(s, return_counts=True)
    k_top = min(k_max, u.size)
    if u.size <= MAX_EXACT:
        candidates = [_clusters_from_edges(s, u[st]) for st in _exact_bounds(u, w.astype(np.float64), k_top)]
    else:
        candidates = [kmeans_1d(s, k) for k in range(1, k_top + 1)]
    chosen = 1
    for cl in candidates[1:]:
        sd = [float(np.std(g)) for g in _split_by_clusters(s, cl)]
        kept = [(c, d) for c, d in zip(cl, sd) if c.count >= min_frac * a.size]
        ok = all(
            b.center - c.center >= max(sep * (dc + db), min_rel_gap * abs(c.center))
            for (c, dc), (b, db) in zip(kept, kept[1:])
        )
        if ok:
            chosen = max(chosen, len(kept))
    return chosen


def _split_by_clusters(sorted_vals: np.ndarray, clusters: list[Cluster]) -> list[np.ndarray]:
    cuts = np.cumsum([c.count for c in clusters])[:-1]
    return np.split(sorted_vals, cuts)


def trim_outliers(values: Sequence[float] | np.ndarray, q: float = 0.999) -> tuple[np.ndarray, int]:
    """Drop the slow tail above the q-quantile (rare interrupts, TLB walks, ...).

    Only the upper tail: latency outliers are one-sided. Returns (kept values in their
    original order, number dropped). Beware that a genuine mode rarer than 1 - q is
    removed as well.
    """
    a = as_finite_1d(values, "values")
    if not 0.0 < q <= 1.0:
        raise ValueError("q must be in (0, 1]")
    thr = np.quantile(a, q)
    keep = a <= thr
    return a[keep], int(a.size - np.count_nonzero(keep))
