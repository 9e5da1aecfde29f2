"""Steps judged against the run-to-run spread, and the grid-independent knee (CPU only)."""

import numpy as np
import pytest

from gpudissect.analysis import plateaus


def _curve(step_at, rel, n=80, noise=0.005, seed=1, base=280.0):
    rng = np.random.default_rng(seed)
    x = np.arange(1, n + 1, dtype=float)
    y = base * (1 + rel * (x >= step_at)) * (1 + noise * rng.standard_normal(n))
    spread = np.full(n, 2 * noise * base)  # max - min of the repeats
    return x, y, spread


def test_a_4_percent_step_is_found():
    x, y, sp = _curve(17, 0.04, noise=0.002)
    steps = plateaus.find_steps(x, y, sp, factor=5)
    assert len(steps) == 1
    assert (steps[0].x_before, steps[0].x_after) == (16, 17)
    assert steps[0].after / steps[0].before == pytest.approx(1.04, abs=0.01)


@pytest.mark.parametrize("noise", [0.002, 0.005])
def test_noise_alone_gives_no_step(noise):
    for seed in range(20):
        x, y, sp = _curve(10**9, 0.0, noise=noise, seed=seed)
        assert plateaus.find_steps(x, y, sp, factor=5) == []


def test_a_step_below_the_spread_is_not_claimed():
    x, y, sp = _curve(30, 0.01, noise=0.004)  # +1% against 0.8% run-to-run spread x 5
    assert plateaus.find_steps(x, y, sp, factor=5) == []


def test_a_single_spike_is_no_step():
    x = np.arange(1, 41, dtype=float)
    y = np.full(40, 300.0)
    y[20] = 340
    assert plateaus.find_steps(x, y, np.full(40, 0.5)) == []


def _sigmoid(x, lo, hi, at, width=0.08):
    return lo + (hi - lo) / (1 + np.exp(-(np.log2(x) - np.log2(at)) / width))


def test_knee_agrees_between_quick_and_full_grids():
    at = 51.0 * 2**20
    quick = np.geomspace(4 * 2**10, 200 * 2**20, 2 * 16)
    full = np.geomspace(4 * 2**10, 200 * 2**20, 4 * 16)
    full = np.sort(np.concatenate([full, np.linspace(45, 56, 7) * 2**20]))  # refined around the knee
    a = plateaus.capacity_by_midpoint(quick, _sigmoid(quick, 530, 690, at), 530, 690)
    b = plateaus.capacity_by_midpoint(full, _sigmoid(full, 530, 690, at), 530, 690)
    assert abs(a - b) / b < 0.05 and abs(b - at) / at < 0.05


def test_knee_needs_a_crossing():
    x = np.array([1.0, 2, 4])
    with pytest.raises(ValueError):
        plateaus.capacity_by_midpoint(x, np.array([1.0, 1, 1]), 1, 2)


def test_a_step_is_placed_at_its_sharp_jump_not_a_window_later():
    x = np.arange(1, 41, dtype=float)
    y = np.where(x >= 17, 290.0, 280.0)
    steps = plateaus.find_steps(x, y, np.zeros(40), min_noise=0.2)
    assert [(s.x_before, s.x_after) for s in steps] == [(16, 17)]
