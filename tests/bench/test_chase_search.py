"""The pointer-chase search pieces on their own (CPU only): capacity_search as every user gets it, its opt-in
single-point stop and bisection (quick cache_lines), pchase_latency's quick refinement limit, random_cycle."""

from __future__ import annotations

import numpy as np
import pytest

from gpudissect.analysis.plateaus import second_plateau_start
from gpudissect.bench.shared import capacity_search, random_cycle
from gpudissect.models import Point


def _curve(edge: int, base: float = 276.0):
    calls: list[int] = []

    def measure(x: int) -> Point:
        calls.append(x)
        return Point(x, base if x <= edge else base * (1.2 + x / edge))  # a ramp that never comes back

    return measure, calls


def test_capacity_search_default_is_unchanged():
    """Two highs in a row end the growth, then every fine point, in order (what every other user gets)."""
    measure, calls = _curve(200_000)
    pts, cap = capacity_search(measure, 4096, 1 << 22, factor=1.5, fine=6)
    grown = [4096, 6144, 9216, 13824, 20736, 31104, 46656, 69984, 104976, 157464, 236196, 354294]
    fine = [int(round(v)) for v in np.linspace(157464, 236196, 8)[1:-1]]
    assert calls == grown + fine
    assert cap == max(x for x in grown + fine if x <= 200_000) and [p.x for p in pts] == sorted(calls)


@pytest.mark.parametrize("edge", [160_000, 168_000, 175_000, 190_000, 200_000, 222_000, 236_000])
def test_capacity_search_bisection_finds_what_the_full_fill_finds(edge):
    full, fcalls = _curve(edge)
    quick, qcalls = _curve(edge)
    _, want = capacity_search(full, 4096, 1 << 22, factor=1.5, fine=6)
    _, got = capacity_search(quick, 4096, 1 << 22, factor=1.5, fine=6, confirm=1, bisect=True)
    assert got == want
    assert qcalls[:11] == fcalls[:11] and 354294 not in qcalls  # no second high
    assert len(qcalls) - 11 <= 3 < len(fcalls) - 12  # log2(7) bisection steps instead of six points


def test_capacity_search_bisection_trusts_a_level_that_does_not_come_back():
    """Where the latency dips back to the level after leaving it, the bisection can land past the first
    departure: why quick mode's use of it is proven on the committed curves above."""
    fine = [int(round(v)) for v in np.linspace(157464, 236196, 8)[1:-1]]
    ys = dict(zip(fine, [276.0, 400.0, 276.0, 400.0, 400.0, 400.0]))  # fine[2] dips back to the level

    def measure(x: int) -> Point:
        return Point(x, ys.get(x, 276.0 if x <= 157464 else 600.0))

    _, full = capacity_search(measure, 4096, 1 << 22, factor=1.5, fine=6)
    _, quick = capacity_search(measure, 4096, 1 << 22, factor=1.5, fine=6, confirm=1, bisect=True)
    assert (full, quick) == (fine[0], fine[2])


def test_the_quick_pchase_refines_up_to_where_the_second_plateau_starts():
    xs = [4096 * 2**i for i in range(16)]
    ys = [32.0] * 6 + [90.0, 200.0] + [276.0] * 8
    assert second_plateau_start(xs, ys) == xs[8]
    assert second_plateau_start(xs, [32.0] * 16) == float("inf")  # one level: refine everything


@pytest.mark.parametrize("n", [2, 3, 1000, 65537, 1_749_600])
def test_random_cycle_is_the_int64_permutation(n):
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    got, want = random_cycle(n, a), b.permutation(n).astype(np.uint32)
    assert got.dtype == np.uint32 and np.array_equal(got, want)
    assert a.integers(1 << 62) == b.integers(1 << 62)  # the generator moved on alike: later chains agree too
