"""The CPI/roofline GEMM model (analysis/gemm_model.py) on CPU: Yan's Table VI, the binding resource,
monotonic effects of tile, cluster, stages and tile order, and the inputs read from a summary."""

import json

import pytest

from gpudissect.analysis.gemm_model import Machine, TileConfig, abs_errors, predict, wave_footprint, yan_table_vi
from gpudissect.reference.gemm import PUBLISHED, TABLE_VI
from helpers import ROOT

H100 = Machine(
    sm_count=132,
    clock_mhz=1755.0,
    wgmma_fma_per_clk_sm=2048.0,
    mma_sync_fma_per_clk_sm=1330.0,
    smem_bytes_per_clk_sm=128.0,
    l2_bytes_per_clk=4168.0,
    dram_gbps=3095.0,
    l2_latency_cycles=285.0,
    l2_bytes=50 << 20,
)


def _cpi(name: str) -> float:
    return next(p.value for p in PUBLISHED if p.key == name)


@pytest.mark.parametrize("block,warp,hmma,mio", TABLE_VI)
def test_reproduces_yan_table_vi(block, warp, hmma, mio):
    h, m = yan_table_vi(
        _cpi("cpi.hmma1688_f16"), _cpi("cpi.ldg128_l2"), _cpi("cpi.sts128"), _cpi("cpi.lds32"), *block, *warp
    )
    assert int(h) == hmma and int(m) == mio  # the paper prints the integer part


def test_yan_conclusion_256x256_is_tensor_bound_128x128_is_not():
    args = (_cpi("cpi.hmma1688_f16"), _cpi("cpi.ldg128_l2"), _cpi("cpi.sts128"), _cpi("cpi.lds32"))
    h, m = yan_table_vi(*args, 128, 128, 32, 64, 64, 8)
    assert m > h
    h, m = yan_table_vi(*args, 256, 256, 32, 128, 64, 8)
    assert h > m


def test_big_wgmma_tile_binds_on_l2_without_multicast_and_on_tensor_with_it():
    # 128x256x64 bf16 needs 49152 B per 1024 tensor cycles: 48 B/clk/SM, above the SM's share of the
    # measured L2 bandwidth (4168 / 132 = 31.6 B/clk); a 2x2 cluster halves both operands' L2 reads
    assert predict(H100, TileConfig(128, 256, 64, 4), 8192, 8192, 8192).bound == "l2"
    p = predict(
        H100,
        TileConfig(128, 256, 64, 4, cluster_m=2, cluster_n=2, group_m=8, epilogue_overlapped=True),
        8192,
        8192,
        8192,
    )
    assert p.bound == "tensor"
    peak = 2 * 2048 * 132 * 1755e6 / 1e12
    assert 0.7 * peak < p.tflops <= peak


def test_small_tile_binds_on_memory_and_is_slower():
    small = predict(H100, TileConfig(64, 64, 64, 4), 8192, 8192, 8192)
    big = predict(H100, TileConfig(128, 256, 64, 4), 8192, 8192, 8192)
    assert small.bound in ("shared", "l2", "dram")
    assert small.tflops < big.tflops


def test_multicast_relieves_l2():
    base = predict(H100, TileConfig(128, 128, 64, 4), 8192, 8192, 8192)
    mc = predict(H100, TileConfig(128, 128, 64, 4, cluster_m=2, cluster_n=2), 8192, 8192, 8192)
    c_part = 128 * 128 * 2 / 128 / (H100.l2_bytes_per_clk / 132)  # C writes per k-block: not multicast
    assert mc.cycles_per_kblock["l2"] - c_part == pytest.approx((base.cycles_per_kblock["l2"] - c_part) / 2)


def test_one_stage_is_latency_bound():
    cfg = dict(cluster_m=2, cluster_n=2)
    p = predict(H100, TileConfig(128, 256, 64, 1, **cfg), 8192, 8192, 8192)
    assert p.bound == "latency"
    two = predict(H100, TileConfig(128, 256, 64, 2, **cfg), 8192, 8192, 8192)
    assert two.bound == "tensor" and two.tflops > p.tflops


def test_mma_sync_rung_is_capped_by_its_measured_rate():
    p = predict(H100, TileConfig(128, 128, 32, 4, path="mma_sync"), 8192, 8192, 8192)
    assert p.tflops <= 2 * 1330 * 132 * 1755e6 / 1e12 + 1e-9


def test_grouped_order_needs_less_dram_than_row_major():
    rows, cols = wave_footprint(64, 32, 132, 0)
    assert (rows, cols) == (5, 32)
    g_rows, g_cols = wave_footprint(64, 32, 132, 8)
    assert (g_rows, g_cols) == (8, 17)
    raster = predict(H100, TileConfig(128, 256, 64, 4), 8192, 8192, 8192)
    grouped = predict(H100, TileConfig(128, 256, 64, 4, group_m=8), 8192, 8192, 8192)
    assert grouped.cycles_per_kblock["dram"] < raster.cycles_per_kblock["dram"]


def test_wave_quantisation():
    p = predict(H100, TileConfig(128, 256, 64, 4), 128 * 133, 256, 4096)  # 133 tiles on 132 SMs
    assert p.waves == 2 and p.wave_efficiency == pytest.approx(133 / 264)


def test_bad_configs_refused():
    with pytest.raises(ValueError, match="multiple of 64"):
        TileConfig(96, 128, 64, 4)
    with pytest.raises(ValueError, match="positive"):
        TileConfig(128, 128, 64, 0)
    with pytest.raises(ValueError, match="positive"):
        predict(H100, TileConfig(128, 128, 64, 4), 0, 8, 8)


def test_abs_errors():
    assert abs_errors([(110.0, 100.0), (90.0, 100.0), (1.0, 0.0)]) == pytest.approx([0.1, 0.1])


def test_machine_from_committed_summary():
    path = ROOT / "results" / "h100-sxm5-80gb" / "summary.json"
    if not path.is_file():
        pytest.skip("no committed H100 summary")
    m = Machine.from_summary(json.loads(path.read_text()), 132)
    assert 1500 < m.wgmma_fma_per_clk_sm <= 2100 and 100 < m.smem_bytes_per_clk_sm <= 130
    assert m.sources["dram_gbps"] == "mem.bw.dram_gbps"
    assert m.clock_mhz > 1000


def test_machine_from_summary_names_missing_inputs():
    with pytest.raises(KeyError, match="smem_bytes_per_clk_sm"):
        Machine.from_summary(
            {
                "tc.wgmma.bf16_f32.m64n256k16.ss_rand_fma_per_clk_sm": 2048.0,
                "tc.mma.bf16_f32.m16n8k16.peak_fma_per_clk_sm": 1330.0,
            },
            132,
            clock_mhz=1700,
        )


def test_fp8_tiles_use_the_measured_e4m3_rate():
    cfg = TileConfig(128, 256, 128, 4, cluster_m=2, group_m=8, epilogue_overlapped=True, in_bytes=1)
    with pytest.raises(ValueError, match="e4m3 wgmma rate"):
        predict(H100, cfg, 8192, 8192, 8192)
    from dataclasses import replace

    fast = replace(H100, wgmma_fp8_fma_per_clk_sm=4096.0)
    p8 = predict(fast, cfg, 8192, 8192, 8192)
    p16 = predict(fast, TileConfig(128, 256, 64, 4, cluster_m=2, group_m=8, epilogue_overlapped=True), 8192, 8192, 8192)
    # the same bytes per k-block row carry twice the K at twice the rate: equal tensor cycles per k-block
    assert p8.cycles_per_kblock["tensor"] == pytest.approx(p16.cycles_per_kblock["tensor"])
    assert p8.tflops > p16.tflops
