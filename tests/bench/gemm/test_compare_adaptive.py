"""Case.compare's pairs (CPU, no torch): sides alternate every pair; with ci_rel, pairs are added after the fixed
ones until the median ratio's 95 % interval is within +-ci_rel (or the time budget ends), always ending on an even
count so that both orders weigh the same."""

from __future__ import annotations

import itertools

import pytest

from gpudissect.bench.gemm.cases import Case


class Scripted(Case):
    """A Case whose batches return scripted times (ours per pair from `ours`, cuBLAS always 1.0 ms)."""

    def __init__(self, ours: list[float]) -> None:  # no operands: nothing here touches a GPU
        self.ours_times = itertools.cycle(ours)
        self.calls: list[tuple[str, int, int]] = []

    def check(self):  # type: ignore[override]
        return True, "scripted", 0.0, 0.0

    def _batch(self, side: str, iters: int, start: int) -> tuple[float, float, float]:
        self.calls.append((side, iters, start))
        if start < 0 or iters == 1:
            return 0.01, 0.0, 0.0  # the sizing batch
        return (next(self.ours_times) if side == "ours" else 1.0), 0.0, 0.0


@pytest.fixture(autouse=True)
def _no_nvml(monkeypatch):
    import gpudissect.device.telemetry as tel

    monkeypatch.setattr(tel, "nvml_handle", lambda *a, **k: None)


def timed(case: Scripted) -> list[tuple[str, int]]:
    return [(s, p) for s, it, p in case.calls if it != 1][1:]  # drop the sizing batches and cuBLAS's warm-up


def test_fixed_pairs_alternate_the_order() -> None:
    case = Scripted([1.0])
    out = case.compare(4, 1.0, None)
    assert [s for s, _ in timed(case)] == ["ours", "cublas", "cublas", "ours"] * 2
    assert out.ratios == [1.0] * 4 and out.iters == 100  # 1 ms / 0.01 ms capped at 100


def test_max_iters_raises_the_batch() -> None:
    out = Scripted([1.0]).compare(2, 25.0, None, max_iters=1000)
    assert out.iters == 1000


def test_a_steady_ratio_settles_at_the_first_even_count_with_an_interval() -> None:
    out = Scripted([1.0]).compare(7, 1.0, None, ci_rel=0.005, budget_s=60.0)
    assert len(out.ratios) == 8  # 7 fixed, one more to end even; equal ratios: the interval is the point
    assert out.settled(0.005) and out.ci == (1.0, 1.0)


def test_a_noisy_ratio_adds_pairs_until_the_interval_is_narrow() -> None:
    # ours scatters +-3 % around 1.0 ms in a cycle of ten: the interval narrows only with more pairs
    noisy = [0.97, 1.03, 0.99, 1.01, 0.98, 1.02, 1.0, 1.0, 0.995, 1.005]
    out = Scripted(noisy).compare(7, 1.0, None, ci_rel=0.005, budget_s=60.0)
    assert len(out.ratios) > 8 and len(out.ratios) % 2 == 0
    assert out.settled(0.005)
    lo, hi = out.ci
    assert lo >= out.ratio * 0.995 and hi <= out.ratio * 1.005


def test_the_budget_stops_an_unsettled_ratio() -> None:
    # ratios 2.0 and 0.5 in turn never settle: no budget, the fixed pairs and one to end even; a budget, more
    out = Scripted([0.5, 2.0]).compare(7, 1.0, None, ci_rel=0.005, budget_s=0.0)
    assert not out.settled(0.005) and len(out.ratios) == 8
    out = Scripted([0.5, 2.0]).compare(7, 1.0, None, ci_rel=0.005, budget_s=0.05)
    assert not out.settled(0.005) and len(out.ratios) > 8 and len(out.ratios) % 2 == 0


def test_the_method_text_says_how_many_pairs_why_and_the_interval() -> None:
    from gpudissect.bench.gemm import api

    steady = Scripted([1.0]).compare(7, 1.0, None, ci_rel=api.CI_REL, budget_s=60.0)
    text = api._pairs_text(steady, 7, True)
    assert (
        text.startswith("8 alternating pairs (at least 7, until") and "interval of the median ratio 1.000-1.000" in text
    )
    noisy = Scripted([0.5, 2.0]).compare(7, 1.0, None, ci_rel=api.CI_REL, budget_s=0.0)
    assert "s ran out before" in api._pairs_text(noisy, 7, True)
    few = Scripted([1.0]).compare(3, 1.0, None)  # quick mode: 3 pairs, too few for an interval
    assert api._pairs_text(few, 3, False) == "3 alternating pairs"
