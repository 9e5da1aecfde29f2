"""CPU tests of the memory suite's L2-partition, TLB and bandwidth-window helpers."""

import numpy as np
import pytest

from fakes import bench_context
from gpudissect.bench.memory import bandwidth, geometry
from gpudissect.bench.memory import l2 as memory_l2
from gpudissect.bench.memory import tlb as memory_tlb


def test_labels_split_near_and_far_misses():
    rng = np.random.default_rng(0)
    far = rng.random(2000) < 0.5
    lat = np.where(far, 760, 575) + rng.normal(0, 8, 2000)
    assert np.mean(memory_l2._labels(lat.astype(np.int64)) == far) > 0.99


def test_finding_states_copy_and_side_from_the_numbers():
    def cell(near, far, **kw):
        return {"near": near, "far": far, "far_slow": [0.0] * 4, **kw}

    cells = {}
    for op in memory_l2.OPS:
        for sm in (0, 2):
            cells[(op, "host memcpy", sm)] = cell([290] * 4, [465, 297, 297, 297])
            cells[(op, "kernel write", sm)] = cell(
                [290] * 4, [380, 297, 297, 297], far_mine=[297] * 4, far_other=[465] * 4
            )
            cells[(op, "8-byte kernel write", sm)] = cell([575, 290, 290, 290], [760, 297, 297, 297])
            cells[(op, "read miss after flush", sm)] = cell([577, 290, 290, 290], [760, 297, 297, 297])
    text = memory_l2._finding(cells, [0, 2], [0, 1, 1], {1: (283, 289), 2: (281, 463)}, 0, 1, 2)
    assert "+175 cycles" in text and "leaves a copy in the reader's near partition" in text
    assert "reader's side only" in text and "a write leaves a copy on the writer's side" in text
    assert "the first read misses (575 / 760" in text
    cells[("cg", "host memcpy", 0)] = cell([290] * 4, [465] * 4)
    assert "leaves no near copy" in memory_l2._finding(cells, [0, 2], [0, 1, 1], {}, 0, None, None)


def test_element_grid_is_unit_then_geometric():
    g = memory_tlb.element_grid(8192)
    assert g[:64] == list(range(1, 65)) and g[-1] <= 8192
    assert all(b > a for a, b in zip(g, g[1:])) and g[64] == 72
    assert memory_tlb.element_grid(20) == list(range(1, 21))


def test_union_window_spans_all_blocks_and_measures_the_clock():
    # two blocks on two SMs: clock64 at 2 GHz, %globaltimer ns; they overlap only partly
    rec = np.array(
        [[1000, 1000 + 2 * 500, 0, 100, 600], [5000, 5000 + 2 * 700, 1, 300, 1000]], dtype=np.uint64
    ).reshape(-1)
    ns, ghz = bandwidth.union_window(rec)
    assert ns == 900 and ghz == pytest.approx(2.0)


def test_conflict_free_u64_counts_as_two_way_like_sun():
    assert geometry.conflict_ways(1, 8) == 2 and geometry.conflict_ways(1, 4) == 1


def test_clock_meter_uses_long_windows_or_a_calibration_launch(monkeypatch):
    from gpudissect.bench import shared as chase

    ctx, run = bench_context("memory/pchase_latency")
    m = chase.ClockMeter()
    m.add(3_990_000, 2_000_000)  # 2 ms at 1995 MHz
    m.add(4_010_000, 2_000_000)
    m.add(150_000, 50_000)  # a 50 us window, biased by the timer's step: ignored
    m.report(ctx, "x")
    got = run.figures["clock.pchase_latency.sm_mhz"]
    assert got.value == pytest.approx(2000.0) and "2 timed windows" in got.method
    monkeypatch.setattr(chase, "calibration_chase", lambda ctx: (39_600_000, 20_000_000))
    short = chase.ClockMeter()
    short.add(150_000, 50_000)
    short.report(ctx, "x")
    got = run.figures["clock.pchase_latency.sm_mhz"]
    assert got.value == pytest.approx(1980.0) and "one 2M-step chase launch" in got.method
