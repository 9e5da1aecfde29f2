"""The memory suite's derivations on synthetic curves shaped like an H100's (no GPU)."""

import numpy as np

from fakes import FakeDevice, bench_context
from gpudissect.bench import shared
from gpudissect.bench.memory import bandwidth, dram_copy, geometry
from gpudissect.bench.memory import latency as mem_latency
from gpudissect.bench.shared import capacity_search
from gpudissect.models import Point


def figs(run):
    """key -> (value, check) of what a context emitted ("FAILED" where the check failed)."""
    return {k: (f.value, f.check) for k, f in run.figures.items()}


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
    xs = shared.log_grid(4096, 200 << 20, 4)
    curves = {
        op: (xs, curve(latency if op != "cg" else (lambda x: latency(x) if x > 1 << 20 else 262.0), xs))
        for op in ("ca", "cg", "default")
    }
    ctx, run = bench_context("memory/pchase_latency")
    mem_latency._derive_levels(ctx, curves, 50 << 20)
    f = figs(run)
    assert f["mem.latency.l1_hit_cycles"] == (33.0, "ok")
    assert abs(f["mem.size.l1_bytes"][0] - (224 << 10)) / (224 << 10) < 0.2
    assert f["mem.latency.l2_hit_cycles"][0] == 262.0
    assert f["mem.latency.dram_cycles"][0] == 620.0
    assert abs(f["mem.size.l2_bytes"][0] - (50 << 20)) / (50 << 20) < 0.2


def test_l1_trap_is_flagged():
    """If the first .ca plateau is not the lowest (the chain missed L1), the L1 figures fail."""
    xs = shared.log_grid(4096, 200 << 20, 4)
    bad = lambda x: 262.0 if x < 16 << 10 else latency(x)
    curves = {op: (xs, curve(bad if op == "ca" else latency, xs)) for op in ("ca", "cg", "default")}
    ctx, run = bench_context("memory/pchase_latency")
    mem_latency._derive_levels(ctx, curves, 50 << 20)
    assert figs(run)["mem.latency.l1_hit_cycles"][1] == "failed"


def test_capacity_search_finds_edge():
    calls = []

    def measure(x):
        calls.append(x)
        return Point(x, 32.0 if x <= 200_000 else 250.0)

    pts, cap = capacity_search(measure, 4096, 1 << 20, factor=1.3, fine=8, align=2048)
    assert cap is not None and 180_000 <= cap <= 200_000
    assert max(calls) < 400_000  # stops soon after leaving the level


def test_rotation_reads_cover_every_row_evenly_in_the_middle():
    c = bandwidth.rotation_reads(16, warm=False)
    assert c.sum() == 16 * bandwidth.UNROLL and c[bandwidth.UNROLL - 1] == 16


def test_conflict_ways():
    assert [geometry.conflict_ways(s, 4) for s in (1, 2, 4, 8, 16, 32)] == [1, 2, 4, 8, 16, 32]
    # Sun Table 10: a conflict-free 64-bit warp access is 2-way
    assert [geometry.conflict_ways(s, 8) for s in (1, 2, 4, 8, 16, 32)] == [2, 4, 8, 16, 32, 32]


def test_hash_sum_matches_values():
    assert bandwidth.hash_sum(1000, chunk=300) == int(bandwidth.hash_values(0, 1000).sum())
    assert set(np.unique(bandwidth.hash_values(0, 4096))) == {0, 1, 2, 3}


def test_copy_target_comes_from_alternating_pairs(monkeypatch):
    """The fastest candidate is the one measured; the target ratio is the median of the per-pair
    ratios of our copy and cuMemcpyDtoD timed in alternation, and the copy is verified."""
    gib = 1 << 30
    ms = {"slow": 1.6, "fast": 1.4, "d2d": 1.45}
    last: list[str] = []

    class CopyTimer(FakeDevice):
        """Each timing is that of the last copy run; cuMemcpyDtoD drifts 0/1/2% in alternation."""

        def time_ms(self, fn, reps=1):
            fn()
            return [ms[last[-1]]] * reps

        def alternate_ms(self, a, b, pairs):
            return [(self.time_ms(a)[0], self.time_ms(b)[0] * (1 + 0.01 * (i % 3))) for i in range(pairs)]

        def memset32(self, buf, value, count=None):
            super().memset32(buf, value, count)
            last.append("memset")

        def copy_dtod(self, dst, src, nbytes):
            super().copy_dtod(dst, src, nbytes)
            last.append("d2d")

    dev, verified = CopyTimer(), []
    ctx, run = bench_context("memory/bandwidth", dev)
    src, dst = dev.alloc(64), dev.alloc(64)  # stand-ins: only the byte count says 2 GiB
    monkeypatch.setattr(
        dram_copy,
        "_copy_candidates",
        lambda *a: [("slow kernel", lambda: last.append("slow")), ("fast kernel", lambda: last.append("fast"))],
    )
    pts = dram_copy._copy_vs_d2d(ctx, None, src, dst, 2 * gib, 0, 5, lambda: verified.append(last[-1]), 3)
    assert verified == ["fast"]  # the check ran right after the chosen copy's timed runs
    f = figs(run)
    assert f["mem.bw.dram.copy_gbps"][0] == 2 * 2 * gib / 1.4 / 1e6
    assert f["mem.bw.dram.copy_vs_d2d"][0] == round(1.45 * 1.01 / 1.4, 4)  # median of 1.00x, 1.01x, 1.02x
    assert f["mem.bw.dram.copy_vs_d2d_sequential"][0] == round(1.45 / 1.4, 4)
    assert [p.x for p in pts] == [3, 4] and pts[1].extra["label"] == "cuMemcpyDtoD"
