"""Checks on the per-GPU peak table (reference/peaks.py) and its lookup from a run's device properties."""

from __future__ import annotations

import pytest

from gpudissect.reference import peaks as P
from gpudissect.reference.memory import Published
from gpudissect.reference.tensor import PEAK_FMA_PER_CLK_SM, peaks_for

# The driver's names (cuDeviceGetName / nvidia-smi) and SM counts of every record.
DRIVER = {
    "V100-SXM2": [("Tesla V100-SXM2-16GB", 80), ("Tesla V100-SXM2-32GB", 80)],
    "V100-PCIe": [("Tesla V100-PCIE-16GB", 80), ("Tesla V100-PCIE-32GB", 80)],
    "T4": [("Tesla T4", 40)],
    "A100-SXM4-40GB": [("A100-SXM4-40GB", 108), ("NVIDIA A100-SXM4-40GB", 108)],
    "A100-SXM4-80GB": [("NVIDIA A100-SXM4-80GB", 108)],
    "A100-PCIe-40GB": [("A100-PCIE-40GB", 108), ("NVIDIA A100-PCIE-40GB", 108)],
    "A100-PCIe-80GB": [("NVIDIA A100 80GB PCIe", 108)],
    "A10": [("NVIDIA A10", 72)],
    "L4": [("NVIDIA L4", 58)],
    "L40S": [("NVIDIA L40S", 142)],
    "RTX3090": [("NVIDIA GeForce RTX 3090", 82)],
    "RTX4090": [("NVIDIA GeForce RTX 4090", 128)],
    "RTX5090": [("NVIDIA GeForce RTX 5090", 170)],
    "H100-SXM5": [("NVIDIA H100 80GB HBM3", 132)],
    "H100-PCIe": [("NVIDIA H100 PCIe", 114)],
    "H200-SXM": [("NVIDIA H200", 132)],
    "B200": [("NVIDIA B200", 148)],
}
CASES = [(label, name, sms) for label, rows in DRIVER.items() for name, sms in rows]


def _rows(g: P.GpuPeaks) -> list[tuple[str, float, float]]:
    """(what, printed TFLOPS/TOPS, per-SM rate x 2 x SMs x clock) for every rate with a printed figure."""
    out = []
    for r in g.records:
        if not r.key.endswith(".fma_per_clk_sm"):
            continue
        t = r.key.split(".")[-2]
        if r.key.startswith("peak.tc."):
            printed, clock = P.tensor_tflops(g, t), P.clock_for(g, t)
        else:
            printed, clock = g.value(f"peak.{t}.tflops"), g.boost_mhz
        if printed is not None and clock is not None:
            out.append((r.key, printed, 2 * r.value * g.sm_count * clock / 1e6))
    return out


def test_every_gpu_the_brief_names_has_a_record() -> None:
    assert set(DRIVER) == {g.gpu for g in P.GPUS}
    assert len({g.gpu for g in P.GPUS}) == len(P.GPUS)


@pytest.mark.parametrize("rec", P.PEAKS, ids=lambda r: f"{r.gpu}:{r.key}")
def test_every_value_has_a_source(rec: Published) -> None:
    assert rec.paper in P.SOURCES and P.SOURCES[rec.paper]
    assert rec.table.strip()
    assert rec.value > 0
    assert rec.unit == P.unit_for_key(rec.key)
    if rec.paper == "derived":
        assert rec.note, "a derived value shows its sum"


@pytest.mark.parametrize("g", P.GPUS, ids=lambda g: g.gpu)
def test_record_shape(g: P.GpuPeaks) -> None:
    keys = [r.key for r in g.records]
    assert len(keys) == len(set(keys)), "one value per key"
    assert g.sm_count > 0 and g.names and g.mem_type
    assert g.dram_gbps is not None and g.fp32_tflops is not None
    assert g.value("peak.tc.f16.dense_tflops") is not None, "every GPU here has FP16 tensor cores"
    for t in (*g.lacks, *g.unpublished):
        assert t in P.TENSOR_TYPES
        assert not [k for k in keys if k.startswith(f"peak.tc.{t}.")], f"{t} is said to be absent but has values"
    assert not set(g.lacks) & set(g.unpublished)
    for t in P.TENSOR_TYPES:  # a per-SM rate and a dense figure come together (b1: per-SM only)
        has_rate = g.value(f"peak.tc.{t}.fma_per_clk_sm") is not None
        has_dense = any(k.startswith(f"peak.tc.{t}.dense_") for k in keys)
        if has_rate and t != "b1":
            assert has_dense, t
    for r in g.records:  # sparse is twice dense wherever both are printed
        if ".sparse_" in r.key:
            dense = g.value(r.key.replace(".sparse_", ".dense_"))
            if dense is not None and (g.gpu, r.key.replace(".sparse_", ".dense_")) not in P.INCONSISTENT:
                assert r.value == pytest.approx(2 * dense, rel=0.005), r.key  # printed to 3-4 digits


@pytest.mark.parametrize("g", P.GPUS, ids=lambda g: g.gpu)
def test_per_sm_rates_reproduce_the_printed_figures(g: P.GpuPeaks) -> None:
    """rate x 2 x SMs x clock = the datasheet's TFLOPS, to the datasheets' rounding: within 1%, or a
    printed integer within 0.6 (NVIDIA rounds 33.45 -> 33.5 -> 34). Printed values that contradict
    the rest of their own source are listed in INCONSISTENT and must miss."""
    for key, printed, derived in _rows(g):
        tkey = key.replace(".fma_per_clk_sm", ".dense_tflops")
        if (g.gpu, tkey) in P.INCONSISTENT:
            assert abs(derived - printed) / printed > 0.01, f"{key}: no longer inconsistent"
            continue
        ok = abs(derived - printed) <= 0.01 * printed or (printed == int(printed) and abs(derived - printed) <= 0.6)
        assert ok, f"{g.gpu} {key}: printed {printed}, rate x SMs x clock = {derived:.2f}"


def test_per_sm_rates_are_powers_of_two() -> None:
    for r in P.PEAKS:
        if r.key.endswith("fma_per_clk_sm"):
            v = int(r.value)
            assert v == r.value and v & (v - 1) == 0, (r.gpu, r.key, r.value)


def test_inconsistent_entries_name_real_records() -> None:
    for gpu, key in P.INCONSISTENT:
        assert P.by_label(gpu).record(key) is not None


@pytest.mark.parametrize(("label", "name", "sms"), CASES)
def test_lookup_finds_each_gpu_by_its_driver_name(label: str, name: str, sms: int) -> None:
    g = P.by_label(label)
    props = {"name": name, "cc_major": g.cc[0], "cc_minor": g.cc[1], "sm_count": sms, "mem_bus_bits": 1}
    assert peaks_for(props) is g
    assert P.peaks_for({"gpu_name": name, "sm_count": sms}) is g  # the store's run columns
    assert P.peaks_for({"name": name}) is g  # name alone is enough when nothing else is known


@pytest.mark.parametrize(("label", "name", "sms"), CASES)
def test_lookup_refuses_a_mismatched_sm_count_or_cc(label: str, name: str, sms: int) -> None:
    g = P.by_label(label)
    assert P.peaks_for({"name": name, "sm_count": sms - 2}) is None  # a MIG slice, a cut-down part
    assert P.peaks_for({"name": name, "sm_count": sms + 1}) is None
    assert P.peaks_for({"name": name, "cc_major": g.cc[0] + 1, "cc_minor": 0, "sm_count": sms}) is None


def test_h100_pcie_and_sxm_are_told_apart_by_sm_count() -> None:
    assert P.peaks_for({"name": "NVIDIA H100 PCIe", "sm_count": 114}) is P.H100_PCIE
    assert P.peaks_for({"name": "NVIDIA H100 PCIe", "sm_count": 132}) is None
    assert P.peaks_for({"name": "NVIDIA H100 80GB HBM3", "sm_count": 114}) is None


@pytest.mark.parametrize(
    "name",
    [
        "fake H100",
        "",
        "NVIDIA H100 NVL",
        "NVIDIA H800",
        "NVIDIA H800 PCIe",
        "NVIDIA GH200 480GB",
        "NVIDIA H200 NVL",
        "NVIDIA A10G",
        "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
        "NVIDIA A800-SXM4-80GB",
        "NVIDIA L40",
        "Tesla V100S-PCIE-32GB",
        "Quadro T4000",
        "NVIDIA GeForce RTX 3090 Ti",
        "NVIDIA GeForce RTX 4090 D",
        "NVIDIA GeForce RTX 4090 Laptop GPU",
        "NVIDIA GeForce RTX 5090 D",
        "NVIDIA RTX 6000 Ada Generation",
        "NVIDIA B100",
        "NVIDIA GB200",
    ],
)
def test_unknown_gpus_get_none(name: str) -> None:
    assert P.peaks_for({"name": name, "cc_major": 9, "cc_minor": 0, "sm_count": 132}) is None
    assert P.peaks_for({"name": name}) is None


def test_props_without_a_name_get_none() -> None:
    assert P.peaks_for({}) is None
    assert P.peaks_for({"cc_major": 9, "cc_minor": 0, "sm_count": 132}) is None
    assert P.fma_per_clk_sm(None, "f16") is None and P.tensor_tflops(None, "f16") is None


def test_run_props_as_the_store_keeps_them() -> None:
    """The export's run block (results/h200-x2): gpu_name at the top, cc under extra."""
    run = {"gpu_name": "NVIDIA H200", "sm_count": 132, "mem_bus_bits": 6016, "extra": {"cc_major": 9, "cc_minor": 0}}
    assert P.peaks_for(run) is P.H200_SXM
    run["extra"] = {"cc_major": 10, "cc_minor": 0}
    assert P.peaks_for(run) is None


def test_h100_sxm_equals_what_the_code_used_before() -> None:
    g = P.H100_SXM5
    assert P.tensor_tflops(g, "f16") == 989.4 and P.tensor_tflops(g, "bf16") == 989.4
    assert P.tensor_tflops(g, "f16", sparse=True) == 1978.9
    assert g.sm_count == 132 and g.tc_mhz == 1830 and g.boost_mhz == 1980
    rates = {t: P.fma_per_clk_sm(g, t) for t in ("f16", "bf16", "tf32", "fp8", "int8", "f64")}
    assert rates == {"f16": 2048, "bf16": 2048, "tf32": 1024, "fp8": 4096, "int8": 4096, "f64": 128}
    assert P.fma_per_clk_sm(g, "f16", sparse=True) == 4096
    assert P.fma_per_clk_sm(g, "e4m3", sparse=True) == 8192 == P.fma_per_clk_sm(g, "e5m2", sparse=True)
    assert P.fma_per_clk_sm(g, "s8") == 4096
    assert P.tensor_tflops(g, "f16", clock_mhz=1830) == pytest.approx(989.4, abs=0.05)
    # the old Hopper-only table, unchanged and now derived from the record
    assert PEAK_FMA_PER_CLK_SM == {(9, 0): {"f16": 2048, "tf32": 1024, "fp8": 4096, "int8": 4096}}
    # the same per-SM rates on every GH100 product (what the cc-keyed table assumed)
    for other in (P.H100_PCIE, P.H200_SXM):
        assert {t: P.fma_per_clk_sm(other, t) for t in rates} == rates


def test_types_a_gpu_lacks_give_none() -> None:
    assert P.fma_per_clk_sm(P.H100_SXM5, "s4") is None  # no INT4 tensor path on Hopper
    assert P.fma_per_clk_sm(P.A100_SXM4_80GB, "e4m3") is None  # no FP8 on Ampere
    assert P.fma_per_clk_sm(P.V100_SXM2, "bf16") is None and P.fma_per_clk_sm(P.V100_SXM2, "s8") is None
    assert P.fma_per_clk_sm(P.V100_SXM2, "f16", sparse=True) is None  # no sparsity before Ampere
    assert P.fma_per_clk_sm(P.T4, "tf32") is None
    assert P.fma_per_clk_sm(P.RTX4090, "f64") is None
    assert P.fma_per_clk_sm(P.A100_SXM4_40GB, "b1") == 16384
    assert P.fma_per_clk_sm(P.A100_SXM4_40GB, "b1", sparse=True) is None
    assert P.fma_per_clk_sm(P.B200, "f16") is None  # no SM clock published: no per-clock rate
    assert P.tensor_tflops(P.B200, "f16") == 2250


def test_geforce_fp32_accumulate_runs_at_half_rate_and_both_rows_are_kept() -> None:
    for g in (P.RTX3090, P.RTX4090, P.RTX5090):
        assert g.half_rate_f32_accumulate, g.gpu
        f32 = P.fma_per_clk_sm(g, "f16")
        f16 = P.fma_per_clk_sm(g, "f16", acc="f16")
        assert f32 is not None and f16 == 2 * f32
        assert P.tensor_tflops(g, "f16_f16acc") == pytest.approx(2 * P.tensor_tflops(g, "f16"), rel=0.002)
    assert P.fma_per_clk_sm(P.RTX4090, "e4m3", acc="f16") == 2 * P.fma_per_clk_sm(P.RTX4090, "e4m3")
    assert P.fma_per_clk_sm(P.RTX5090, "e4m3") is None  # FP8 with FP32 accumulate: not transcribed
    for g in (P.A100_SXM4_80GB, P.A10, P.L4, P.L40S, P.H100_SXM5, P.T4):  # one figure for both accumulators
        assert not g.half_rate_f32_accumulate
        assert P.fma_per_clk_sm(g, "f16", acc="f16") == P.fma_per_clk_sm(g, "f16")


def test_tensor_type_names() -> None:
    assert P.tensor_type("e4m3") == P.tensor_type("e5m2") == "fp8"
    assert P.tensor_type("e4m3", acc="f16") == "fp8_f16acc"
    assert (
        P.tensor_type("u8") == "int8" and P.tensor_type("u4") == "int4" and P.tensor_type("bf16", acc="f16") == "bf16"
    )
    with pytest.raises(ValueError):
        P.tensor_type("f8")


def test_memory_and_links() -> None:
    assert P.H100_SXM5.dram_gbps == 3350 and P.H100_SXM5.bus_bits == 5120 and P.H100_SXM5.l2_bytes == 50 << 20
    assert P.H100_SXM5.pcie == (5, 16) and P.H100_SXM5.nvlink_gbps_per_dir == 450
    assert P.V100_SXM2.nvlink_gbps_per_dir == 150 and P.V100_PCIE.nvlink_gbps_per_dir is None
    assert P.RTX4090.nvlink_gbps_per_dir is None and P.RTX3090.nvlink_gbps_per_dir == 56.25
    assert P.A100_SXM4_80GB.dram_gbps == 2039 and P.A100_PCIE_80GB.dram_gbps == 1935
    assert P.A100_SXM4_40GB.mem_type == "HBM2" and P.A100_SXM4_80GB.mem_type == "HBM2e"
    assert P.T4.pcie == (3, 16) and P.RTX5090.pcie == (5, 16)


def test_sources_name_something() -> None:
    used = {r.paper for r in P.PEAKS}
    assert used <= set(P.SOURCES)
    assert set(P.SOURCES) - used == set(), f"unused sources: {set(P.SOURCES) - used}"
    assert "Table 3" in P.H100_SXM5.source("peak.tc.f16.dense_tflops")
    text = P.tensor_source(P.H100_SXM5, "bf16")
    assert "2048" in text and "989.4" in text and "1830" in text
    assert "no published" in P.tensor_source(P.B200, "f16")
