"""Step detection against the measured spread: synthetic staircases with noise (CPU only)."""

from __future__ import annotations

import numpy as np
import pytest

from gpudissect.analysis import staircase


def _curve(xs, level_of, sigma, reps=3, seed=0):
    rng = np.random.default_rng(seed)
    data = {x: list(level_of(x) + rng.normal(0, sigma, reps)) for x in xs}
    ys = [float(np.median(data[x])) for x in xs]
    return data, ys


XS = [float(x) for x in np.geomspace(2048, 512 * 1024, 40)]


def test_small_real_step_is_found():
    # a 3% step on a 1.0 level with 0.2% noise: small, but far above the spread
    data, ys = _curve(XS, lambda x: 1.0 if x <= 32768 else 1.03, 0.002)
    thr = staircase.threshold(list(data.values()))
    steps = staircase.rising_steps(staircase.find_steps(XS, ys, thr))
    assert len(steps) == 1
    assert steps[0].x_last_low <= 32768 < steps[0].x_first_high


def test_noise_alone_gives_no_step():
    for seed in range(20):
        data, ys = _curve(XS, lambda x: 1.0, 0.01, seed=seed)
        thr = staircase.threshold(list(data.values()))
        assert staircase.find_steps(XS, ys, thr) == [], seed


def test_step_smaller_than_noise_is_not_claimed():
    data, ys = _curve(XS, lambda x: 1.0 if x <= 32768 else 1.005, 0.01, seed=3)
    thr = staircase.threshold(list(data.values()))
    assert staircase.rising_steps(staircase.find_steps(XS, ys, thr)) == []


def test_two_levels_and_outlier():
    def lvl(x):
        return 1.0 if x <= 16384 else (2.5 if x <= 131072 else 6.0)

    data, ys = _curve(XS, lvl, 0.01, seed=1)
    ys[5] += 1.0  # one lone outlier must not become a level
    thr = staircase.threshold(list(data.values()))
    steps = staircase.rising_steps(staircase.find_steps(XS, ys, thr))
    assert [s.x_last_low <= c < s.x_first_high for s, c in zip(steps, (16384, 131072))] == [True, True]
    lv = staircase.levels(XS, ys, steps)
    assert lv == pytest.approx([1.0, 2.5, 6.0], abs=0.05)


def test_threshold_needs_repetitions_and_respects_floor():
    with pytest.raises(ValueError):
        staircase.noise_sigma([[1.0], [2.0]])
    assert staircase.threshold([[1.0, 1.0], [2.0, 2.0]], floor=0.5) == 0.5


def test_set_geometry_from_stages():
    # 3 ways x 16 sets x 256 B lines = 12 KiB; past it one more set overflows per extra line
    cap, sets, line = 12288, 16, 256
    xs = [float(cap + 128 * i) for i in range(48)]

    def y(x):
        over = int(np.clip((x - cap) // line, 0, sets))
        return 1.0 + 0.1 * over

    rng = np.random.default_rng(5)
    ys = [y(x) + rng.normal(0, 0.003) for x in xs]
    geo = staircase.set_geometry(xs, ys, 0.03, float(cap), xs[-1])
    assert geo is not None
    assert (geo.stages, geo.line, geo.ways) == (sets, line, 3.0)


def test_set_geometry_none_without_stages():
    xs = [float(12288 + 128 * i) for i in range(40)]
    assert staircase.set_geometry(xs, [1.0] * 40, 0.03, 12288.0, xs[-1]) is None


def test_saturation_x():
    xs = [4.0, 8, 16, 32, 64, 128, 256]
    line = 64
    ys = [20 + 60 * min(x, line) / line for x in xs]
    assert staircase.saturation_x(xs, ys, 1.0) == 64
    assert staircase.saturation_x(xs, [20.0] * 7, 1.0) is None


def test_doubling_knee():
    xs = [4.0, 8, 16, 32, 64, 128, 256, 512]
    ys = [34 + 70 * min(x, 64) / 64 + (0.02 * x if x > 64 else 0) for x in xs]  # slow tail past the line
    assert staircase.doubling_knee(xs, ys, 0.5) == 64
    assert staircase.doubling_knee(xs, [34.0] * 8, 0.5) is None


def test_set_geometry_uneven_stages_rejected():
    cap = 8192.0
    xs = [cap + 128 * i for i in range(40)]
    edges = [cap + e for e in (128, 256, 768, 896, 1792, 1920, 3200)]  # widths all over the place
    ys = [1.0 + 0.1 * sum(x >= e for e in edges) for x in xs]
    assert staircase.set_geometry(xs, ys, 0.03, cap, xs[-1]) is None


def test_a_size_to_size_wobble_is_no_cache_level():
    """The constant-cache curve of an H100 quick run (2026-11-26): sizes alternate 34.04 / 34.15 cycles on the
    first level and 104.04 / 104.15 on the second while launches agreed to 0.017 cycles. Six launch sigmas
    (0.10) split both levels at a 0.11 wobble (L1 1600 B, L1.5 32 KiB); the size-to-size spread does not."""
    from gpudissect.analysis import staircase

    xs = [256, 320, 384, 512, 640, 832, 1024, 1280, 1600, 2048, 2560, 3264, 4096, 5184, 6528, 8192, 10304, 12992]
    xs += [16384, 20672, 25984, 32768, 41280, 52032, 65536]
    ys = [34.04, 34.15, 34.04, 34.04, 34.04, 34.15, 34.04, 34.04, 34.14, 34.15, 103.81, 104.04, 104.04, 104.15]
    ys += [104.04, 104.04, 104.16, 104.04, 104.04, 104.04, 104.04, 104.04, 104.14, 104.15, 104.04]
    wobbly = staircase.rising_steps(staircase.find_steps(xs, ys, 0.10))
    assert [int(s.x_last_low) for s in wobbly] != [2048]
    thr = max(0.10, 6 * staircase.neighbour_sigma(ys))
    assert 0.3 < thr < 5  # above the wobble, far below the 70-cycle step to the next level
    assert [int(s.x_last_low) for s in staircase.rising_steps(staircase.find_steps(xs, ys, thr))] == [2048]
    assert staircase.neighbour_sigma([1.0]) == 0.0
