"""Checks on the transcribed memory-hierarchy reference values."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from gpudissect.reference.memory import MEMORY, UNRECOVERED, Published, gpus, keys, published, unit_for_key

SUFFIX_UNITS = {
    "_cycles": "cycles",
    "_ns": "ns",
    "_bytes": "bytes",
    "_per_clk_sm": "bytes/clk/SM",
    "_per_clk": "bytes/clk",
    "_gbps": "GB/s",
    "_gibps": "GiB/s",
}


def _one(key: str, gpu: str, paper: str, table: str | None = None) -> float:
    hits = [p for p in published(key, gpu) if p.paper == paper and (table is None or p.table == table)]
    assert len(hits) == 1, (key, gpu, paper, table, hits)
    return hits[0].value


@pytest.mark.parametrize("rec", MEMORY, ids=lambda r: f"{r.paper}:{r.key}:{r.gpu}")
def test_record_well_formed(rec: Published) -> None:
    suffix = next(s for s in sorted(SUFFIX_UNITS, key=len, reverse=True) if rec.key.endswith(s))
    assert rec.unit == SUFFIX_UNITS[suffix] == unit_for_key(rec.key)
    assert rec.value > 0
    assert rec.key.startswith("mem.") and re.fullmatch(r"[a-z0-9_.]+", rec.key)
    assert rec.paper in {"000", "001", "002", "003"}
    assert rec.table and rec.gpu in gpus()


def test_no_duplicates() -> None:
    dup = [k for k, n in Counter((p.key, p.gpu, p.paper, p.table) for p in MEMORY).items() if n > 1]
    assert not dup


def test_filters_and_listing() -> None:
    assert {p.gpu for p in published("mem.latency.l1_hit_cycles")} >= {"H800", "A100", "RTX4090", "V100", "K80"}
    assert all(
        p.gpu == "H800" and p.key == "mem.latency.dram_cycles" for p in published("mem.latency.dram_cycles", "H800")
    )
    assert {p.paper for p in published("mem.latency.dram_cycles", "H800")} == {"000", "003"}
    assert published("mem.latency.nonexistent_cycles") == []
    assert published("mem.latency.l1_hit_cycles", "NoSuchGPU") == []
    assert keys() == sorted(set(keys())) and "mem.bank.u32.latency_8way_cycles" in keys()
    assert gpus()[:3] == ["H800", "A100", "RTX4090"] and len(gpus()) == len(set(gpus()))
    assert all(isinstance(u, str) and u for u in UNRECOVERED)


def test_h800_headline_values() -> None:
    assert _one("mem.latency.l1_hit_cycles", "H800", "000") == 32.0
    assert _one("mem.latency.shared_cycles", "H800", "000") == 29.0
    assert _one("mem.latency.l2_hit_cycles", "H800", "000") == 264.5
    assert _one("mem.latency.dram_cycles", "H800", "000") == 656
    fine = {
        k: _one(f"mem.latency.l2_{k}_cycles", "H800", "000") for k in ("near_hit", "far_hit", "near_miss", "far_miss")
    }
    assert fine == {"near_hit": 258.0, "far_hit": 414.1, "near_miss": 555.5, "far_miss": 743.7}
    assert _one("mem.latency.l1_hit_cycles", "H800", "003") == 40.7
    assert _one("mem.latency.dram_cycles", "H800", "003") == 478.8


def test_latency_ordering_per_gpu_and_paper() -> None:
    levels = (
        ("mem.latency.l1_hit_cycles", "mem.latency.shared_cycles"),
        ("mem.latency.l2_hit_cycles", "mem.latency.l2_hit_upper_cycles"),
        ("mem.latency.dram_cycles",),
    )
    by: dict[tuple[str, str], list[list[float]]] = defaultdict(lambda: [[] for _ in levels])
    for p in MEMORY:
        for i, ks in enumerate(levels):
            if p.key in ks:
                by[(p.gpu, p.paper)][i].append(p.value)
    checked = 0
    for (gpu, paper), vals in by.items():
        present = [v for v in vals if v]
        for lower, upper in zip(present, present[1:]):
            assert max(lower) < min(upper), (gpu, paper, vals)
            checked += 1
    assert checked >= 10


def test_l2_fine_grained_ordering_and_mean() -> None:
    for gpu in ("A100", "H800"):
        nh, fh, nm, fm = (
            _one(f"mem.latency.l2_{k}_cycles", gpu, "000") for k in ("near_hit", "far_hit", "near_miss", "far_miss")
        )
        assert nh < fh < fm and nh < nm < fm
        # 000: Table III global latency approximates (near miss + far miss) / 2 of Table IV.
        assert _one("mem.latency.dram_cycles", gpu, "000") == pytest.approx((nm + fm) / 2, rel=0.05)
        # 000: Table III's low L2 value aligns with Table IV's near hit.
        assert _one("mem.latency.l2_hit_cycles", gpu, "000", "Table III") == pytest.approx(nh, rel=0.05)


def test_headline_bw_is_best_variant() -> None:
    headline = re.compile(r"mem\.bw\.(l1|l2|shared|dram)_(bytes_per_clk_sm|bytes_per_clk|gbps)$")
    n = 0
    for p in MEMORY:
        if not (m := headline.fullmatch(p.key)):
            continue
        variants = [
            q.value
            for q in MEMORY
            if q.gpu == p.gpu
            and q.paper == p.paper
            and q.table == p.table
            and re.fullmatch(rf"mem\.bw\.{m[1]}\.(fp32|fp64|fp32v4)_{m[2]}", q.key)
        ]
        if variants:
            assert p.value == max(variants), p
            assert "best" in p.note
            n += 1
    assert n >= 20


def test_throughput_relations_printed_in_000() -> None:
    # "our results reach 92%, 90%, and 91% of the theoretical performance"
    for gpu, frac in (("RTX4090", 0.92), ("A100", 0.90), ("H800", 0.91)):
        meas = _one("mem.bw.dram_gbps", gpu, "000")
        peak = _one("mem.bw.dram_theoretical_gbps", gpu, "000")
        assert meas / peak == pytest.approx(frac, abs=0.01)
    # "the H800 is 2.6 times and 2.2 times higher than the RTX 4090 and A100" (L2, bytes/clk)
    h800 = _one("mem.bw.l2_bytes_per_clk", "H800", "000")
    assert h800 / _one("mem.bw.l2_bytes_per_clk", "RTX4090", "000") == pytest.approx(2.6, abs=0.05)
    assert h800 / _one("mem.bw.l2_bytes_per_clk", "A100", "000") == pytest.approx(2.2, abs=0.05)
    # L1/shared stay under the 128 B/clk/SM hardware bound.
    for p in MEMORY:
        if p.unit == "bytes/clk/SM" and "theoretical" not in p.key:
            assert p.value <= 128.0 + 1e-9, p


def test_bank_conflicts_increase() -> None:
    for width in ("u32", "u64"):
        recs = sorted(
            (int(m[1]), p.value)
            for p in MEMORY
            if (m := re.fullmatch(rf"mem\.bank\.{width}\.latency_(\d+)way_cycles", p.key))
        )
        assert len(recs) >= 3
        vals = [v for _, v in recs]
        assert vals == sorted(vals) and vals[-1] > vals[0]
    # 001 §7: "the bank conflict penalty ... is around 2 cycles/way"
    base = _one("mem.bank.u32.latency_1way_cycles", "A100", "001")
    assert _one("mem.bank.u32.latency_8way_cycles", "A100", "001") > base
    for n in (2, 4, 8):
        extra = _one(f"mem.bank.u32.latency_{n}way_cycles", "A100", "001") - base
        assert extra / (n - 1) == pytest.approx(2.0, abs=0.5)
    if published("mem.bank.latency_32way_cycles"):
        for p in published("mem.bank.latency_32way_cycles"):
            assert p.value > _one("mem.bank.u32.latency_1way_cycles", p.gpu, p.paper)


def test_volta_geometry() -> None:
    kib = 1024
    for n in (0, 64, 96):
        detected = _one(f"mem.carveout.smem_{n}kb.l1_bytes", "V100", "002")
        expected = _one(f"mem.carveout.smem_{n}kb.l1_expected_bytes", "V100", "002")
        assert expected + n * kib == 128 * kib
        assert expected - detected == 7 * kib  # "fell 7 KiB short of the nominal L1 data cache size"
    assert _one("mem.size.l2_bytes", "V100", "002") == 6144 * kib
    for gpu in ("V100", "P100", "P4", "M60", "K80"):
        l1c = _one("mem.tlb.l1_coverage_bytes", gpu, "002", "Table 3.1")
        l2c = _one("mem.tlb.l2_coverage_bytes", gpu, "002", "Table 3.1")
        assert _one("mem.tlb.l1_page_bytes", gpu, "002", "Table 3.1") <= l1c < l2c
        assert _one("mem.line.l1_bytes", gpu, "002") <= _one("mem.granularity.l1_update_bytes", gpu, "002")
        assert _one("mem.bw.shared_gibps", gpu, "002") < _one("mem.bw.shared_theoretical_gibps", gpu, "002")
        assert _one("mem.bw.dram_gibps", gpu, "002") < _one("mem.bw.dram_theoretical_gibps", gpu, "002")


def test_fp64_add_bound_note_only_on_fp64_rows():
    """003 says its FP64 cache figures are bounded by FP64 add throughput: that note belongs on the
    fp64 rows alone, not on the fp32/fp32.v4 or headline rows of the same GPUs."""
    from gpudissect.reference.memory import MEMORY

    noted = [p for p in MEMORY if "FP64 add" in p.note]
    assert noted and all(".fp64_" in p.key for p in noted)
    assert {(p.key, p.gpu) for p in noted} >= {
        ("mem.bw.l1.fp64_bytes_per_clk_sm", "H800"),
        ("mem.bw.l2.fp64_bytes_per_clk", "H800"),
    }
