"""Robust summaries of timing samples."""

from __future__ import annotations

import numpy as np
import pytest

from gpudissect.analysis.stats import median_spread, summarize


def test_summarize_known_values() -> None:
    s = summarize(np.arange(100, 0, -1))  # 100 .. 1, unsorted on purpose
    assert s == {
        "median": 50.5,
        "min": 1.0,
        "max": 100.0,
        "p10": pytest.approx(10.9),
        "p90": pytest.approx(90.1),
        "n": 100,
    }
    assert isinstance(s["n"], int) and isinstance(s["median"], float)


def test_median_is_robust_to_a_slow_tail() -> None:
    samples = [10.0, 11.0, 10.0, 12.0, 10.0, 1000.0]
    assert median_spread(samples) == (10.5, 10.0, 1000.0)
    assert summarize(samples)["median"] == 10.5


def test_single_sample() -> None:
    assert median_spread([7]) == (7.0, 7.0, 7.0)
    assert summarize([7])["p10"] == 7.0


@pytest.mark.parametrize("bad", [[], [1.0, np.nan], [np.inf], [[1.0, 2.0]]])
def test_bad_samples_raise(bad: list) -> None:
    with pytest.raises(ValueError):
        summarize(bad)
    with pytest.raises(ValueError):
        median_spread(bad)


def test_median_ci_order_statistics() -> None:
    from gpudissect.analysis.stats import median_ci

    # n = 6: x_(1)..x_(6) covers 1 - 2/64 = 0.969; x_(2)..x_(5) only 1 - 14/64 = 0.78
    assert median_ci([6.0, 1.0, 5.0, 2.0, 4.0, 3.0]) == (1.0, 6.0)
    assert median_ci([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # 1 - 2/32 = 0.9375 < 0.95
    assert median_ci([1.0, 2.0, 3.0, 4.0, 5.0], level=0.9) == (1.0, 5.0)
    # n = 100: the textbook ranks 40 and 61
    assert median_ci(np.arange(1.0, 101.0)) == (40.0, 61.0)


def test_median_ci_covers_the_median_at_its_level() -> None:
    from gpudissect.analysis.stats import median_ci

    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2000):
        lo, hi = median_ci(rng.standard_normal(15))  # true median 0
        hits += lo <= 0.0 <= hi
    assert 0.95 <= hits / 2000 <= 0.99  # n = 15: the exact coverage is 0.965


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 2.0])
def test_median_ci_bad_level(level: float) -> None:
    from gpudissect.analysis.stats import median_ci

    with pytest.raises(ValueError):
        median_ci([1.0] * 10, level)
