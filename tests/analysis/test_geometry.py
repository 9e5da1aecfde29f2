"""Cache/TLB geometry inference from synthetic measurement patterns."""

from __future__ import annotations

import numpy as np
import pytest

from gpudissect.analysis.geometry import (
    line_size_from_tag_capacity,
    miss_period_bytes,
    page_size_from_strides,
    tlb_levels,
)

KB, MB, GB = 1024, 1024**2, 1024**3


def sector_chase(n: int, stride: int, sector: int, seed: int = 0) -> np.ndarray:
    """Per-access latency of a cold sequential chase: the first access to a sector misses."""
    rng = np.random.default_rng(seed)
    addr = np.arange(n) * stride
    miss = addr % sector == 0
    lat = np.where(miss, 600.0, 260.0) + rng.normal(0.0, 6.0, n)
    page_walk = miss & (addr % (64 * KB) == 0)
    lat[page_walk] += 1500.0  # TLB walks land on sector misses
    lat[rng.choice(np.flatnonzero(~miss), 3, replace=False)] = 1400.0  # stray interrupts on hits
    lat[rng.choice(np.flatnonzero(miss)[1:], 5, replace=False)] = 262.0  # misses a prefetch hid
    return np.rint(lat)


@pytest.mark.parametrize(("stride", "sector"), [(8, 32), (4, 32), (16, 64), (8, 128)])
def test_miss_period(stride: int, sector: int) -> None:
    assert miss_period_bytes(sector_chase(8192, stride, sector), stride) == sector


def test_miss_period_errors() -> None:
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="no misses"):
        miss_period_bytes(np.rint(rng.normal(260.0, 6.0, 4096)), 8)  # all hits, only noise
    with pytest.raises(ValueError, match="no misses"):
        miss_period_bytes(np.full(100, 260.0), 8)
    one_miss = np.full(100, 260.0)
    one_miss[40] = 600.0
    with pytest.raises(ValueError, match="two misses"):
        miss_period_bytes(one_miss, 8)
    with pytest.raises(ValueError):
        miss_period_bytes([], 8)
    with pytest.raises(ValueError):
        miss_period_bytes(sector_chase(256, 8, 32), 0)


def tag_capacity_counts(strides: np.ndarray, capacity: int, line: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = capacity / np.minimum(strides, line)  # C/s while lines are shared, then C/line
    return np.rint(n * (1.0 + 0.03 * rng.standard_normal(strides.size)))


def test_line_size_power_of_two_strides() -> None:
    s = 2.0 ** np.arange(2, 11)  # 4 B .. 1 KB
    n = tag_capacity_counts(s, 256 * KB, 128)
    assert line_size_from_tag_capacity(s, n) == 128
    # Set conflicts at huge strides make N fall again; only the first flattening counts.
    n_conflict = n.copy()
    n_conflict[-1] /= 4
    assert line_size_from_tag_capacity(s, n_conflict) == 128
    # Input order does not matter.
    assert line_size_from_tag_capacity(s[::-1], n[::-1]) == 128


def test_line_size_irregular_strides_and_other_lines() -> None:
    s = np.array([24.0, 40.0, 56.0, 72.0, 96.0, 160.0, 200.0, 320.0])
    assert line_size_from_tag_capacity(s, tag_capacity_counts(s, 48 * KB, 64, seed=1)) == 64
    s2 = 2.0 ** np.arange(3, 10)
    assert line_size_from_tag_capacity(s2, tag_capacity_counts(s2, 4 * MB, 32, seed=2)) == 32


def test_line_size_errors() -> None:
    s = 2.0 ** np.arange(8, 12)  # all >= line: flat from the start
    with pytest.raises(ValueError, match="smallest stride"):
        line_size_from_tag_capacity(s, tag_capacity_counts(s, 64 * KB, 128))
    s = 2.0 ** np.arange(2, 7)  # all < line: never flattens
    with pytest.raises(ValueError, match="never stop"):
        line_size_from_tag_capacity(s, tag_capacity_counts(s, 64 * KB, 128))
    with pytest.raises(ValueError):
        line_size_from_tag_capacity([8, 16, 32], [100, 50])
    with pytest.raises(ValueError):
        line_size_from_tag_capacity([8, 16], [100, 50])
    with pytest.raises(ValueError):
        line_size_from_tag_capacity([], [])


def test_tlb_levels_from_page_stride_chase() -> None:
    """2 MB pages: 16-entry L1 TLB covers 32 MB, 1024-entry L2 TLB covers 2 GB."""
    rng = np.random.default_rng(4)
    fp = np.unique(np.round(np.geomspace(4 * MB, 16 * GB, 49) / MB) * MB)  # 4 per octave
    lat = np.select([fp <= 32 * MB, fp <= 2 * GB], [480.0, 560.0], 900.0)
    lat *= 1.0 + 0.01 * rng.standard_normal(fp.size)
    levels = tlb_levels(fp, lat)
    assert len(levels) == 2
    for lvl, cov, before, after in zip(levels, (32 * MB, 2 * GB), (480.0, 560.0), (560.0, 900.0)):
        assert set(lvl) == {"coverage_bytes", "latency_before", "latency_after"}
        below, above = fp[fp <= cov].max(), fp[fp > cov].min()
        assert lvl["coverage_bytes"] in (below, above)
        assert lvl["latency_before"] == pytest.approx(before, rel=0.03)
        assert lvl["latency_after"] == pytest.approx(after, rel=0.03)
    assert tlb_levels(fp, np.full(fp.size, 480.0)) == []


def fixed_count_curve(strides: np.ndarray, page: int, seed: int = 0) -> np.ndarray:
    """Miss fraction min(1, s/page): consecutive elements within a page share its entry."""
    rng = np.random.default_rng(seed)
    lat = 300.0 + 300.0 * np.minimum(1.0, strides / page)
    return lat * (1.0 + 0.01 * rng.standard_normal(strides.size))


@pytest.mark.parametrize("page", [64 * KB, 2 * MB])
def test_page_size_from_strides(page: int) -> None:
    s = 2.0 ** np.arange(12, 26)  # 4 KB .. 32 MB
    assert page_size_from_strides(s, fixed_count_curve(s, page)) == page


def test_page_size_ignores_single_high_point_below_page() -> None:
    s = 2.0 ** np.arange(12, 26)
    lat = fixed_count_curve(s, 2 * MB)
    lat[3] = 700.0  # one noisy point at 32 KB
    assert page_size_from_strides(s, lat) == 2 * MB


def test_page_size_errors() -> None:
    s = 2.0 ** np.arange(12, 20)
    with pytest.raises(ValueError, match="no TLB effect"):
        page_size_from_strides(s, np.full(s.size, 300.0))
    with pytest.raises(ValueError):
        page_size_from_strides(s, fixed_count_curve(s, 2 * MB)[:-1])
    with pytest.raises(ValueError):
        page_size_from_strides(s, fixed_count_curve(s, 2 * MB), high_frac=0.0)


# ---- TLB from per-element latency changes ------------------------------------------------
def test_element_delta_curve_cancels_per_element_latency():
    from gpudissect.analysis.geometry import element_delta_curve

    rng = np.random.default_rng(0)
    own = 260 + 60 * rng.random(64)  # each element's L2 latency differs (slices, partitions)
    per = [own[:n] + (10.0 if n > 16 else 0.0) for n in range(1, 65)]
    c = element_delta_curve(per)
    assert np.allclose(c[:16], 0) and np.allclose(c[16:], 10)
    plain = [p.mean() for p in per]
    assert np.ptp(plain[:16]) > 5  # a plain average moves without any TLB effect


def test_per_element_means():
    from gpudissect.analysis.geometry import per_element_means

    lat = np.array([1.0, 3, 5, 7])
    assert per_element_means(lat, np.array([0, 1, 0, 1]), 2).tolist() == [3.0, 5.0]
    with pytest.raises(ValueError):
        per_element_means(lat, np.array([0, 0, 0, 0]), 2)


def test_tlb_geometry_from_first_steps():
    from gpudissect.analysis.geometry import tlb_geometry

    MiB = 2**20
    first = {4 * MiB: 65, 8 * MiB: 33, 16 * MiB: 17, 32 * MiB: 17, 512 * MiB: 17}
    g = tlb_geometry(first)
    assert g == {"entries": 16.0, "reach_bytes": 16.0 * MiB, "coverage_bytes": 256.0 * MiB}
    assert tlb_geometry({32 * MiB: 17, 64 * MiB: 17})["reach_bytes"] == 32 * MiB  # no sharing seen: an upper bound
    with pytest.raises(ValueError):
        tlb_geometry({})
