"""The memory suite's derivations on synthetic curves shaped like an H100's (no GPU)."""

import numpy as np

from gpudissect.bench import memory
from gpudissect.bench.chase import capacity_search
from gpudissect.models import Point


class FakeCtx:
    def __init__(self):
        self.figs = {}

    def figure(self, key, value, unit, kind, method, spread=None, check="ok", note=""):
        self.figs[key] = (value if check == "ok" else "FAILED", check)


def curve(fn, xs):
    return [Point(x, fn(x)) for x in xs]


def latency(x, l1=224 << 10, half=25 << 20, l2=50 << 20):
    if x <= l1:
        return 33.0
    if x <= half:
        return 262.0
    if x <= l2:
        return 300.0
    return 620.0


def test_levels_from_curves():
    xs = memory.log_grid(4096, 200 << 20, 4)
    curves = {op: (xs, curve(latency if op != "cg" else (lambda x: latency(x) if x > 1 << 20 else 262.0), xs))
              for op in ("ca", "cg", "default")}
    ctx = FakeCtx()
    memory._derive_levels(ctx, curves, 50 << 20)
    f = ctx.figs
    assert f["mem.latency.l1_hit_cycles"] == (33.0, "ok")
    assert abs(f["mem.size.l1_bytes"][0] - (224 << 10)) / (224 << 10) < 0.2
    assert f["mem.latency.l2_hit_cycles"][0] == 262.0
    assert f["mem.latency.dram_cycles"][0] == 620.0
    assert abs(f["mem.size.l2_bytes"][0] - (50 << 20)) / (50 << 20) < 0.2


def test_l1_trap_is_flagged():
    """If the first .ca plateau is not the lowest (the chain missed L1), the L1 figures fail."""
    xs = memory.log_grid(4096, 200 << 20, 4)
    bad = lambda x: 262.0 if x < 16 << 10 else latency(x)  # noqa: E731
    curves = {op: (xs, curve(bad if op == "ca" else latency, xs)) for op in ("ca", "cg", "default")}
    ctx = FakeCtx()
    memory._derive_levels(ctx, curves, 50 << 20)
    assert ctx.figs["mem.latency.l1_hit_cycles"][1] == "failed"


def test_capacity_search_finds_edge():
    calls = []

    def measure(x):
        calls.append(x)
        return Point(x, 32.0 if x <= 200_000 else 250.0)

    pts, cap = capacity_search(measure, 4096, 1 << 20, factor=1.3, fine=8, align=2048)
    assert cap is not None and 180_000 <= cap <= 200_000
    assert max(calls) < 400_000  # stops soon after leaving the level


def test_rotation_reads_cover_every_row_evenly_in_the_middle():
    c = memory.rotation_reads(16, warm=False)
    assert c.sum() == 16 * memory.UNROLL and c[memory.UNROLL - 1] == 16


def test_conflict_ways():
    assert [memory.conflict_ways(s, 4) for s in (1, 2, 4, 8, 16, 32)] == [1, 2, 4, 8, 16, 32]
    assert [memory.conflict_ways(s, 8) for s in (1, 2, 4, 8, 16)] == [1, 2, 4, 8, 16]


def test_hash_sum_matches_values():
    assert memory.hash_sum(1000, chunk=300) == int(memory.hash_values(0, 1000).sum())
    assert set(np.unique(memory.hash_values(0, 4096))) == {0, 1, 2, 3}
