"""The plan cache of the public matmul (CPU): a signature made once, hits counted, the oldest evicted past the
limit, a failed make leaves nothing behind, and a plan hands its launch the call's addresses and stream."""

from __future__ import annotations

import pytest

from gpudissect.gemm.plans import Plan, PlanCache


class FakeLaunch:
    rung = 10

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[int, ...]]] = []

    def rebind(self, *addrs: int) -> None:
        self.calls.append(("rebind", addrs))

    def run(self, *args: int) -> None:
        self.calls.append(("run", args))


def _plan() -> Plan:
    return Plan(16, 4096, 4096, True, "bf16", "bfloat16", FakeLaunch())


def test_made_once_then_hit():
    cache = PlanCache()
    made = []
    p = cache.build("k", lambda: made.append(1) or _plan())
    assert cache.build("k", lambda: made.append(1) or _plan()) is p and made == [1]
    assert cache.get("k") is p and cache.get("other") is None and cache.peek("k") is p
    assert cache.info() == {"plans": 1, "limit": 512, "hits": 1, "misses": 1}
    cache.clear()
    assert len(cache) == 0 and cache.info()["misses"] == 0


def test_oldest_evicted_past_the_limit():
    cache = PlanCache(limit=2)
    for k in "abc":
        cache.build(k, _plan)
    assert cache.get("a") is None and cache.get("b") is not None and cache.get("c") is not None
    with pytest.raises(ValueError, match="at least one plan"):
        PlanCache(limit=0)


def test_failed_make_caches_nothing():
    cache = PlanCache()

    def bad() -> Plan:
        raise ValueError("K = 100 is not a multiple of 8")

    with pytest.raises(ValueError, match="K = 100"):
        cache.build("k", bad)
    assert cache.get("k") is None and len(cache) == 0


def test_run_rebinds_then_launches():
    p = _plan()
    p.run(0x100, 0x200, 0x300, 0, 0, 7)
    assert p.launch.calls == [("run", (0x100, 0x200, 0x300, 0, 0, 7))] and p.rung == 10


def test_the_one_frame_path_takes_only_plans_it_can_run():
    """PlanCache.fast: a plan whose `go` was made (16-bit, B column-major: Plan.fast), counted as a hit; an fp8 plan,
    a row-major B, a plan without `go` or an unknown key fall through to the general path (None, no hit)."""
    cache = PlanCache()
    p = cache.build("bf16", _plan)
    assert p.fast and p.mn == (16, 4096) and cache.fast("bf16") is None  # no go made yet: the general path
    p.go = lambda *a: None
    assert cache.fast("bf16") is p and cache.info()["hits"] == 1
    fp8 = cache.build("e4m3", lambda: Plan(16, 4096, 4096, True, "e4m3", "bfloat16", FakeLaunch()))
    row = cache.build("row", lambda: Plan(16, 4096, 4096, False, "fp16", "float16", FakeLaunch()))
    assert not fp8.fast and not row.fast
    assert cache.fast("e4m3") is cache.fast("row") is cache.fast(None) is cache.fast("missing") is None
    assert cache.info()["hits"] == 1
