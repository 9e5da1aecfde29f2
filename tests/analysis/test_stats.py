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
