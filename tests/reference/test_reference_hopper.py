"""Checks on the transcribed Hopper-feature reference values (TMA, DSM, DPX, async copy)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from gpudissect.reference import memory
from gpudissect.reference.hopper import (
    HOPPER,
    NOT_TRANSCRIBED,
    UNRECOVERED,
    Published,
    gpus,
    keys,
    published,
    unit_for_key,
)
from helpers import ROOT

UNITS_JSON = ROOT / "results" / "h100-sxm5-80gb" / "units.json"
BPSM = (1, 2, 4, 8, 16, 32)


def _one(key: str, gpu: str, paper: str) -> float:
    hits = [p for p in published(key, gpu) if p.paper == paper]
    assert len(hits) == 1, (key, gpu, paper, hits)
    return hits[0].value


def _row(tag: str, bs: int, gpu: str) -> list[float]:
    return [_one(f"async_copy.{tag}.{bs}x{bs}.bpsm{n}_gflops", gpu, "003") for n in BPSM]


@pytest.mark.parametrize("rec", HOPPER, ids=lambda r: f"{r.paper}:{r.key}:{r.gpu}")
def test_record_well_formed(rec: Published) -> None:
    assert isinstance(rec, Published)
    assert rec.unit == unit_for_key(rec.key)
    assert re.fullmatch(r"[a-z0-9_.]+", rec.key)
    assert rec.key.split(".")[0] in {"tma", "dsm", "dpx", "sw", "async_copy"}
    assert rec.paper in {"000", "003"} and rec.table
    assert rec.gpu in {"H800", "A100", "RTX4090"}
    if not rec.key.endswith("_pct"):  # only 'Perf' gains may be negative
        assert rec.value > 0


def test_units_match_suite() -> None:
    if not UNITS_JSON.exists():
        pytest.skip("no results/h100-sxm5-80gb/units.json")
    units = json.loads(UNITS_JSON.read_text())
    shared = [p for p in HOPPER if p.key in units]
    assert len({p.key for p in shared}) >= 20  # most keys are the suite's own
    bad = [(p.key, p.unit, units[p.key]) for p in shared if p.unit != units[p.key]]
    assert not bad
    # keys the suite has no figure for are few and documented in the module docstring
    extra = {p.key for p in HOPPER if p.key not in units}
    assert all(k.startswith("async_copy.") and ".bpsm" in k for k in extra if k.startswith("async_copy."))
    assert {k for k in extra if not k.startswith("async_copy.")} == {
        "dsm.latency.global_over_dsm_ratio_vendor_claim",
        "dsm.latency.remote_all_cs_min_cycles",
        "dsm.latency.remote_all_cs_max_cycles",
        "dsm.bw.shared_theoretical_gbps_per_sm",
        "dsm.bw.self_via_cluster_pct_of_theoretical",
        "dsm.bw.local_direct_pct_of_theoretical",
        "dpx.16bit.max_speedup_vs_emulation",
        "sw.gcups.half2",
    }


def test_no_duplicates() -> None:
    dup = [k for k, n in Counter((p.key, p.gpu, p.paper) for p in HOPPER).items() if n > 1]
    assert not dup


def test_unit_for_key() -> None:
    assert unit_for_key("dsm.bw.ring_cs2_peak_tbps") == "TB/s"
    assert unit_for_key("dsm.bw.self_via_cluster_gbps_per_sm") == "GB/s"
    assert unit_for_key("sw.gcups.s16_sm90") == "GCUPS"
    assert unit_for_key("async_copy.asyncpipe_mean_gain_8x8_pct") == "%"
    with pytest.raises(ValueError):
        unit_for_key("dpx.vimax3_s16x2.ops_per_clk_sm")


def test_filters_and_listing() -> None:
    assert {p.paper for p in published("dsm.latency.remote_cs2_cycles", "H800")} == {"000", "003"}
    assert published("dsm.latency.remote_cs2_cycles", "A100") == []
    assert published("tma.nonexistent_cycles") == []
    assert keys() == sorted(set(keys())) and "tma.latency_offset_cycles" in keys()
    assert gpus() == ["H800", "A100", "RTX4090"]
    assert all(isinstance(s, str) and s for s in (*UNRECOVERED, *NOT_TRANSCRIBED))
    assert len(HOPPER) == 23 + 6 + 6 * (2 * (6 + 1) + 1)  # 23 records of 000 incl. the DSM index-chase key


def test_printed_values() -> None:
    assert _one("tma.latency_offset_cycles", "H800", "000") == 170
    assert _one("tma.bulk_peak_gbps", "H800", "000") == 1800
    assert _one("dsm.latency.local_direct_cycles", "H800", "000") == 29
    assert _one("dsm.latency.local_via_cluster_cycles", "H800", "000") == 33
    assert _one("dsm.latency.remote_cs2_cycles", "H800", "000") == 181
    assert _one("dsm.latency.remote_cs2_cycles", "H800", "003") == 180
    assert _one("dsm.latency.global_sm_to_sm_cycles", "H800", "000") == 956
    assert _one("dsm.bw.ring_cs2_peak_tbps", "H800", "000") == 3.28
    assert _one("dsm.bw.ring_cs4_peak_tbps", "H800", "003") == 2.65
    assert _one("sw.gcups.half2", "RTX4090", "000") == 4987.4
    assert _row("asyncpipe", 8, "H800")[0] == 516.69 and _row("syncshare", 32, "A100")[-1] == 5028.47


def test_dsm_latency_relations() -> None:
    local = _one("dsm.latency.local_direct_cycles", "H800", "000")
    via = _one("dsm.latency.local_via_cluster_cycles", "H800", "000")
    assert local < via  # the DSM interface adds overhead even for the own block
    for paper in ("000", "003"):
        remote = _one("dsm.latency.remote_cs2_cycles", "H800", paper)
        assert remote > via  # a remote SM's shared memory is slower than one's own, either way
        # '32% reduction compared to L2 cache' against the paper's own L2 hit latency
        l2 = next(p.value for p in memory.published("mem.latency.l2_hit_cycles", "H800") if p.paper == paper)
        assert round(100 * (1 - remote / l2)) == _one("dsm.latency.remote_cs2_vs_l2_reduction_pct", "H800", paper)
    remote = _one("dsm.latency.remote_cs2_cycles", "H800", "000")
    ratio = _one("dsm.latency.global_over_dsm_ratio", "H800", "000")
    assert round(_one("dsm.latency.global_sm_to_sm_cycles", "H800", "000") / remote, 2) == ratio
    assert ratio < _one("dsm.latency.global_over_dsm_ratio_vendor_claim", "H800", "000")  # 'close to' 7x
    lo, hi = (_one(f"dsm.latency.remote_all_cs_{m}_cycles", "H800", "000") for m in ("min", "max"))
    assert local < via < lo < hi


def test_dsm_throughput_relations() -> None:
    theo = _one("dsm.bw.shared_theoretical_gbps_per_sm", "H800", "000")
    assert round(1755e6 * 128 / 1e9) == theo
    assert _one("dsm.bw.self_via_cluster_gbps_per_sm", "H800", "000") < theo
    assert (
        _one("dsm.bw.self_via_cluster_pct_of_theoretical", "H800", "000")
        < _one("dsm.bw.local_direct_pct_of_theoretical", "H800", "000")
        < 100
    )
    for paper in ("000", "003"):  # throughput falls as the cluster grows
        assert _one("dsm.bw.ring_cs2_peak_tbps", "H800", paper) > _one("dsm.bw.ring_cs4_peak_tbps", "H800", paper)


def test_tma_relations() -> None:
    stream = _one("tma.stream_read_gbps", "H800", "000")
    assert stream == next(p.value for p in memory.published("mem.bw.dram_gbps", "H800") if p.paper == "000")
    spec = next(p.value for p in memory.published("mem.bw.dram_theoretical_gbps", "H800") if p.paper == "000")
    for kind in ("bulk", "tensor2d", "tensor3d"):
        assert _one(f"tma.{kind}_peak_gbps", "H800", "000") < stream < spec
    assert published("tma.tensor1d_peak_gbps") == []  # plot only


def test_dpx_and_sw() -> None:
    for paper in ("000", "003"):
        assert _one("dpx.16bit.max_speedup_vs_emulation", "H800", paper) == 13
    assert [p.gpu for p in published("sw.gcups.half2")] == ["RTX4090"]


def test_async_copy_tables() -> None:
    for gpu in ("H800", "A100"):
        for bs in (8, 16, 32):
            for tag in ("asyncpipe", "syncshare"):
                row = _row(tag, bs, gpu)
                assert _one(f"async_copy.{tag}.{bs}x{bs}.peak_gflops", gpu, "003") == max(row)
            # the Perf column is close to the mean per-column gain (formula not stated)
            a, s = _row("asyncpipe", bs, gpu), _row("syncshare", bs, gpu)
            mean_gain = 100 * sum(x / y - 1 for x, y in zip(a, s)) / len(a)
            assert abs(_one(f"async_copy.asyncpipe_mean_gain_{bs}x{bs}_pct", gpu, "003") - mean_gain) < 2.5
    # 'AsyncPipe generally outperforms SyncShare with smaller block sizes (e.g., 8x8 and 16x16) on both GPUs'
    for gpu in ("H800", "A100"):
        for bs in (8, 16):
            assert _one(f"async_copy.asyncpipe_mean_gain_{bs}x{bs}_pct", gpu, "003") > 0
    # 'at a block size of 8x8, AsyncPipe shows an average performance improvement of 39.5% on H800 and 19.6% on A100'
    assert _one("async_copy.asyncpipe_mean_gain_8x8_pct", "H800", "003") == 39.5
    assert _one("async_copy.asyncpipe_mean_gain_8x8_pct", "A100", "003") == 19.6
    # 'as block size increases, the benefits diminish'
    for gpu in ("H800", "A100"):
        gains = [_one(f"async_copy.asyncpipe_mean_gain_{bs}x{bs}_pct", gpu, "003") for bs in (8, 16, 32)]
        assert gains == sorted(gains, reverse=True)
    # 'Even with a block size of 32x32 on H800, the throughputs of AsyncPipe are often worse than SyncShare'
    worse = sum(x < y for x, y in zip(_row("asyncpipe", 32, "H800"), _row("syncshare", 32, "H800")))
    assert worse >= len(BPSM) // 2
    # more blocks per SM, more throughput at 8x8 (latency hiding)
    for gpu in ("H800", "A100"):
        for tag in ("asyncpipe", "syncshare"):
            row = _row(tag, 8, gpu)
            assert row == sorted(row)
