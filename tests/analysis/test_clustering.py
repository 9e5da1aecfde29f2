"""1-D clustering of per-access latencies on synthetic mixtures."""

from __future__ import annotations

import numpy as np
import pytest

from gpudissect.analysis.clustering import Cluster, choose_k, kmeans_1d, trim_outliers

# L2 near hit / far hit / near miss / far miss, unequal weights.
CENTERS = (260.0, 480.0, 620.0, 900.0)
COUNTS = (5000, 2000, 800, 200)
SDS = (6.0, 12.0, 15.0, 25.0)


def mixture(seed: int, integer: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = np.concatenate([rng.normal(c, s, n) for c, s, n in zip(CENTERS, SDS, COUNTS)])
    rng.shuffle(v)
    return np.rint(v) if integer else v


def sse(values: np.ndarray, clusters: list[Cluster]) -> float:
    s = np.sort(values)
    groups = np.split(s, np.cumsum([c.count for c in clusters])[:-1])
    return float(sum(((g - g.mean()) ** 2).sum() for g in groups))


@pytest.mark.parametrize("seed", range(3))
def test_four_mode_mixture(seed: int) -> None:
    v = mixture(seed)
    cl = kmeans_1d(v, 4)
    assert [c.center for c in cl] == sorted(c.center for c in cl)
    assert sum(c.count for c in cl) == v.size  # nothing dropped
    for c, center, count in zip(cl, CENTERS, COUNTS):
        assert c.center == pytest.approx(center, rel=0.03)
        assert c.median == pytest.approx(center, rel=0.03)
        assert c.count == pytest.approx(count, rel=0.02)
        assert c.lo <= c.median <= c.hi
    # Clusters are contiguous, non-overlapping ranges.
    assert all(a.hi < b.lo for a, b in zip(cl, cl[1:]))


def test_kmeans2_fallback_matches_exact() -> None:
    v = mixture(5, integer=False)[:3000]  # all distinct floats
    exact = kmeans_1d(v, 4)
    approx = kmeans_1d(v, 4, max_exact=100, seed=3)  # forces the kmeans2 path
    for a, b in zip(exact, approx):
        assert b.center == pytest.approx(a.center, rel=0.01)
        assert b.count == pytest.approx(a.count, rel=0.01)
    # The exact DP is optimal: no other partition has lower inertia.
    assert sse(v, exact) <= sse(v, approx) + 1e-6
    assert kmeans_1d(v, 4, max_exact=100, seed=3) == approx  # deterministic


def test_exact_is_optimal_on_small_example() -> None:
    v = np.array([1.0, 2.0, 3.0, 10.0, 11.0, 30.0])
    cl = kmeans_1d(v, 3)
    assert [(c.lo, c.hi, c.count) for c in cl] == [(1.0, 3.0, 3), (10.0, 11.0, 2), (30.0, 30.0, 1)]
    assert cl[0].center == pytest.approx(2.0) and cl[1].center == pytest.approx(10.5)
    # k equal to the number of distinct values: one cluster per value, duplicates kept.
    cl = kmeans_1d([5, 5, 7, 7, 7, 9], 3)
    assert [(c.center, c.count) for c in cl] == [(5.0, 2), (7.0, 3), (9.0, 1)]
    (one,) = kmeans_1d([4.0, 6.0, 8.0], 1)
    assert one == Cluster(center=6.0, median=6.0, count=3, lo=4.0, hi=8.0)


def test_kmeans_errors() -> None:
    with pytest.raises(ValueError, match="distinct"):
        kmeans_1d([1, 1, 2, 2], 3)
    with pytest.raises(ValueError):
        kmeans_1d([], 1)
    with pytest.raises(ValueError):
        kmeans_1d([1.0, np.nan, 2.0], 1)
    with pytest.raises(ValueError):
        kmeans_1d([1.0, 2.0], 0)


def test_choose_k() -> None:
    assert choose_k(mixture(0)) == 4
    rng = np.random.default_rng(11)
    assert choose_k(rng.normal(300.0, 10.0, 600)) == 1  # floats: all distinct
    assert choose_k(np.rint(rng.normal(300.0, 10.0, 3000))) == 1
    assert choose_k(np.rint(rng.normal(300.0, 1.0, 3000))) == 1  # integer-quantised mode
    two = np.rint(np.concatenate([rng.normal(260.0, 5.0, 2000), rng.normal(300.0, 5.0, 1000)]))
    assert choose_k(two) == 2
    # A handful of stragglers is below min_frac and does not count as a mode.
    assert choose_k(np.concatenate([two, [5000.0] * 5])) == 2
    assert choose_k(mixture(0), k_max=3) <= 3
    with pytest.raises(ValueError):
        choose_k([])


def test_trim_outliers() -> None:
    rng = np.random.default_rng(2)
    v = np.concatenate([rng.normal(260.0, 5.0, 9990), np.full(10, 20000.0)])
    rng.shuffle(v)
    kept, dropped = trim_outliers(v, q=0.999)
    assert dropped == 10 and kept.size == v.size - 10
    assert kept.max() < 400.0
    assert np.array_equal(kept, v[v < 400.0])  # original order preserved
    kept, dropped = trim_outliers(v, q=1.0)
    assert dropped == 0 and np.array_equal(kept, v)
    for q in (0.0, 1.5):
        with pytest.raises(ValueError):
            trim_outliers(v, q=q)
    with pytest.raises(ValueError):
        trim_outliers([])
