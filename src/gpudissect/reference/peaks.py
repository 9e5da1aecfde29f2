"""Physical peaks of each GPU model, transcribed from NVIDIA's whitepapers and datasheets, and a lookup
from the device properties a run stores, so that a figure given as a fraction of peak uses the run's
own GPU, and a GPU without a record here gets no fraction (``peaks_for`` returns None).

One ``GpuPeaks`` per product (``GPUS``); every value is a ``Published`` record (reference/memory.py)
whose ``paper`` is a key of ``SOURCES`` (the document) and ``table`` the place in it. Keys:

* ``peak.sm_count``; ``peak.boost_mhz`` (max boost: the clock the non-tensor figures use);
  ``peak.tc_mhz`` only where NVIDIA's 16/8/4-bit and TF32 tensor figures use a lower clock (Hopper:
  1830 MHz SXM, 1620 MHz PCIe; FP64 tensor figures use the boost clock);
* ``peak.tc.<type>.dense_<tflops|tops>`` and ``.sparse_<...>`` (2:4 sparsity, 2x dense where the GPU
  has it) as printed; where a datasheet prints only the sparse figure, the dense one is half of it
  (its footnote says so) and the note says so;
* ``peak.tc.<type>.fma_per_clk_sm``: dense multiply-accumulates per clock per SM (the per-SM rate the
  tensor suite compares with); ``peak.fp32|fp64.tflops`` / ``.fma_per_clk_sm``: non-tensor FMA;
* ``peak.mem.dram_gbps``, ``peak.mem.bus_bits``, ``peak.mem.l2_bytes``, ``peak.link.pcie_gen``,
  ``peak.link.pcie_lanes``, ``peak.link.nvlink_gbps_per_dir`` (one direction; absent: no NVLink).

Tensor types: ``f16`` (FP16 in, FP32 accumulate: the datacenter "FP16 Tensor" figure), ``f16_f16acc``
(FP16 accumulate: GeForce parts run it at twice the FP32-accumulate rate, the GeForce whitepapers
print both rows; datacenter parts print one figure, the same for both accumulators), ``bf16`` (FP32
accumulate), ``tf32``, ``fp8`` (FP32 accumulate), ``fp8_f16acc``, ``int8``, ``int4``, ``b1``, ``fp4``,
``f64`` (FP64 tensor). ``GpuPeaks.lacks`` names the types with no tensor-core path on that GPU;
``GpuPeaks.unpublished`` those that exist but have no figure here.

Per-SM rates NVIDIA does not print are derived (source ``"derived"``): printed dense TFLOPS /
(2 x SMs x clock), which always lands on a power of two; the note shows the sum. Values that come
from the driver (this project's stored runs) or from third-party spec databases say so in ``note``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .memory import KiB, MiB, Published

SOURCES: dict[str, str] = {
    "nv-v100-wp": "NVIDIA Tesla V100 GPU Architecture (whitepaper WP-08608-001_v1.1, 2017)",
    "nv-v100-ds": "NVIDIA Tesla V100 GPU Accelerator datasheet (SXM2 and PCIe columns)",
    "nv-v100pcie-pb": "NVIDIA Tesla V100 PCIe GPU Accelerator product brief",
    "nv-turing-wp": "NVIDIA Turing GPU Architecture (whitepaper WP-09183-001, 2018)",
    "nv-t4-ds": "NVIDIA T4 Tensor Core GPU datasheet",
    "devq-t4": "deviceQuery output on a Tesla T4 (chiemon.github.io/2024/12/25/显卡信息.html)",
    "nv-a100-wp": "NVIDIA A100 Tensor Core GPU Architecture (whitepaper, 2020)",
    "nv-a100-ds": "NVIDIA A100 Tensor Core GPU datasheet (40GB/80GB, PCIe/SXM columns)",
    "nv-ga102-wp": "NVIDIA Ampere GA102 GPU Architecture (whitepaper v2.0)",
    "nv-a10-ds": "NVIDIA A10 Tensor Core GPU datasheet",
    "tpu-a10": "sysrqmts.com 'NVIDIA A10 PCIe' spec page (TechPowerUp GPU database figures)",
    "nv-ada-wp": "NVIDIA Ada GPU Architecture (whitepaper)",
    "nv-l4-ds": "NVIDIA L4 Tensor Core GPU datasheet",
    "tpu-l4": "fpsbench.com 'NVIDIA L4' spec page (TechPowerUp GPU database figures)",
    "nv-l40s-ds": "NVIDIA L40S datasheet",
    "tpu-l40s": "itcreations.com 'NVIDIA L40S GPU Accelerator' spec page",
    "nv-rtxbw-wp": "NVIDIA RTX Blackwell GPU Architecture (whitepaper)",
    "nv-h100-wp": "NVIDIA H100 Tensor Core GPU Architecture (whitepaper)",
    "nv-h100-ds": "NVIDIA H100 Tensor Core GPU datasheet (SXM and PCIe columns)",
    "nv-h100pcie-pb": "NVIDIA H100 PCIe GPU product brief (PB-11133-001)",
    "nv-h200-ds": "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column)",
    "nv-b200-ds": "NVIDIA HGX B200 / Blackwell datasheet, per-GPU figures of the HGX B200 (1,000 W)",
    "3p-b200": "hmc-tech.com 'NVIDIA B200' spec page (third-party GPU database)",
    "run-h100": "gpudissect run results/h100-sxm5-80gb: driver device attributes (cuDeviceGetAttribute)",
    "run-h200": "gpudissect runs results/h200-x2, h200-x4: driver device attributes (cuDeviceGetAttribute)",
    "derived": "derived here from the other records of the same GPU (the note gives the sum)",
}

TENSOR_TYPES = ("f16", "f16_f16acc", "bf16", "tf32", "fp8", "fp8_f16acc", "int8", "int4", "b1", "fp4", "f64")
_INT_TYPES = ("int8", "int4", "b1")

_SUFFIX_UNITS: tuple[tuple[str, str], ...] = (  # longest first where one ends another
    ("fma_per_clk_sm", "FMA/clk/SM"),
    ("gbps_per_dir", "GB/s"),
    ("pcie_lanes", "lanes"),
    ("pcie_gen", "generation"),
    ("sm_count", "count"),
    ("tflops", "TFLOPS"),
    ("tops", "TOPS"),
    ("gbps", "GB/s"),
    ("bytes", "bytes"),
    ("bits", "bits"),
    ("mhz", "MHz"),
)


def unit_for_key(key: str) -> str:
    """The unit implied by a key's suffix (the last '.' or '_'-separated words)."""
    for suffix, unit in _SUFFIX_UNITS:
        if key.endswith(suffix) and key[-len(suffix) - 1] in "._":
            return unit
    raise ValueError(f"key {key!r} has no known unit suffix")


# ---------------------------------------------------------------- the record type and its builders
@dataclass(frozen=True)
class GpuPeaks:
    gpu: str  # short label, e.g. "H100-SXM5"
    model: str  # product name
    cc: tuple[int, int]
    names: tuple[str, ...]  # regexes, matched whole against normalize_name(driver name)
    mem_type: str  # as the source names it
    records: tuple[Published, ...]
    lacks: tuple[str, ...] = ()  # tensor types with no tensor-core path
    unpublished: tuple[str, ...] = ()  # tensor types that exist but have no figure here
    note: str = ""

    def record(self, key: str) -> Published | None:
        return next((r for r in self.records if r.key == key), None)

    def value(self, key: str) -> float | None:
        r = self.record(key)
        return None if r is None else r.value

    def source(self, key: str) -> str:
        """'<document>, <place>' of a key's record ('' if there is none)."""
        r = self.record(key)
        return "" if r is None else f"{SOURCES[r.paper]}, {r.table}"

    @property
    def sm_count(self) -> int:
        v = self.value("peak.sm_count")
        assert v is not None, self.gpu  # every record has one (tests/reference/test_peaks.py)
        return int(v)

    @property
    def boost_mhz(self) -> float | None:
        return self.value("peak.boost_mhz")

    @property
    def tc_mhz(self) -> float | None:
        """Clock of the published 16/8/4-bit and TF32 tensor figures (the boost clock unless told)."""
        v = self.value("peak.tc_mhz")
        return self.boost_mhz if v is None else v

    @property
    def dram_gbps(self) -> float | None:
        return self.value("peak.mem.dram_gbps")

    @property
    def bus_bits(self) -> int | None:
        v = self.value("peak.mem.bus_bits")
        return None if v is None else int(v)

    @property
    def l2_bytes(self) -> int | None:
        v = self.value("peak.mem.l2_bytes")
        return None if v is None else int(v)

    @property
    def pcie(self) -> tuple[int, int] | None:
        """(generation, lanes)."""
        g, w = self.value("peak.link.pcie_gen"), self.value("peak.link.pcie_lanes")
        return None if g is None or w is None else (int(g), int(w))

    @property
    def nvlink_gbps_per_dir(self) -> float | None:
        return self.value("peak.link.nvlink_gbps_per_dir")

    @property
    def fp32_tflops(self) -> float | None:
        return self.value("peak.fp32.tflops")

    @property
    def fp64_tflops(self) -> float | None:
        return self.value("peak.fp64.tflops")

    @property
    def half_rate_f32_accumulate(self) -> bool:
        """FP16 with FP32 accumulate at half the FP16-accumulate rate (GeForce parts)."""
        a, b = self.value("peak.tc.f16.fma_per_clk_sm"), self.value("peak.tc.f16_f16acc.fma_per_clk_sm")
        return a is not None and b is not None and 2 * a == b


_Row = tuple[str, float, str, str, str]  # key, value, source, place, note


def _r(key: str, value: float, src: str, where: str, note: str = "") -> _Row:
    return (key, value, src, where, note)


def _tc(t: str, dense: float | None, sparse: float | None, src: str, where: str, note: str = "",
        dense_from_sparse: bool = False) -> list[_Row]:
    """Dense and sparse rows of one tensor type. ``dense_from_sparse``: the source prints only the
    sparse figure, the dense one is half of it (the datasheet's footnote)."""
    u = "tops" if t in _INT_TYPES else "tflops"
    out = []
    if dense_from_sparse:
        assert sparse is not None and dense is None
        half = "; ".join(x for x in ("printed only with sparsity; dense = half (footnote: "
                                     "'one-half lower without sparsity')", note) if x)
        out.append(_r(f"peak.tc.{t}.dense_{u}", sparse / 2, src, where, half))
    elif dense is not None:
        out.append(_r(f"peak.tc.{t}.dense_{u}", dense, src, where, note))
    if sparse is not None:
        out.append(_r(f"peak.tc.{t}.sparse_{u}", sparse, src, where, note))
    return out


def _per_sm(rates: Mapping[str, float], src: str, where: str, note: str = "") -> list[_Row]:
    """Per-SM per-clock FMA rows; ``fp32`` / ``fp64`` are the non-tensor pipes."""
    return [_r(f"peak.{t}.fma_per_clk_sm" if t in ("fp32", "fp64") else f"peak.tc.{t}.fma_per_clk_sm",
               v, src, where, note) for t, v in rates.items()]


def _derived_per_sm(rates: Mapping[str, float], sms: int, mhz: float, what: str) -> list[_Row]:
    """Per-SM rates no source prints: dense TFLOPS / (2 x SMs x clock), rounded to the power of two."""
    return [_r(f"peak.tc.{t}.fma_per_clk_sm", v, "derived", f"dense {t} / (2 x {sms} SMs x {mhz:g} MHz)",
               f"{what}: {v:g} x 2 x {sms} x {mhz:g} MHz = {2 * v * sms * mhz / 1e6:.1f} "
               f"{'TOPS' if t in _INT_TYPES else 'TFLOPS'}")
            for t, v in rates.items()]


def _gpu(gpu: str, model: str, cc: tuple[int, int], names: tuple[str, ...], mem_type: str, rows: list[_Row],
         lacks: tuple[str, ...] = (), unpublished: tuple[str, ...] = (), note: str = "") -> GpuPeaks:
    recs = tuple(Published(k, gpu, float(v), unit_for_key(k), src, where, n) for k, v, src, where, n in rows)
    return GpuPeaks(gpu, model, cc, names, mem_type, recs, lacks, unpublished, note)


_ASSUMED_2FP64 = "two FP64 units per SM (the whitepaper's SM description); FP64 = FP32 / 64"
_DRIVER = "driver-reported in this project's stored runs; NVIDIA's datasheet does not print it"

# ---------------------------------------------------------------- Volta (sm_70)
_V100_T1 = "Table 1 (Comparison of NVIDIA Tesla GPUs, Tesla V100 column)"
_GV100_SM = _per_sm({"f16": 512, "fp32": 64, "fp64": 32}, "nv-v100-wp", _V100_T1 + " and §Tensor Cores (text)",
                    "8 Tensor Cores/SM x 64 FP16 FMA/clk each ('mixed-precision': FP16 or FP32 accumulate); "
                    "64 FP32 and 32 FP64 cores per SM")
_V100_MEM = [
    _r("peak.mem.bus_bits", 4096, "nv-v100-wp", _V100_T1, "'4096-bit HBM2'"),
    _r("peak.mem.l2_bytes", 6144 * KiB, "nv-v100-wp", _V100_T1, "printed 6144 KB"),
    _r("peak.mem.dram_gbps", 900, "nv-v100-ds", "Memory Bandwidth row"),
    _r("peak.link.pcie_gen", 3, "nv-v100-ds", "Interconnect Bandwidth row", "PCIe Gen3 x16, '32 GB/s'"),
    _r("peak.link.pcie_lanes", 16, "nv-v100-ds", "Interconnect Bandwidth row"),
]
_VOLTA_LACKS = ("bf16", "tf32", "fp8", "int8", "int4", "b1", "fp4", "f64")  # Volta tensor cores: FP16 only
V100_SXM2 = _gpu("V100-SXM2", "Tesla V100 SXM2 (16/32 GB)", (7, 0), (r"V100-SXM2-(16|32)GB",), "HBM2", [
    _r("peak.sm_count", 80, "nv-v100-wp", _V100_T1),
    _r("peak.boost_mhz", 1530, "nv-v100-wp", _V100_T1, "GPU Boost Clock"),
    _r("peak.fp32.tflops", 15.7, "nv-v100-wp", _V100_T1),
    _r("peak.fp64.tflops", 7.8, "nv-v100-wp", _V100_T1),
    *_tc("f16", 125, None, "nv-v100-wp", _V100_T1, "'Peak Tensor TFLOPS'; no sparsity on Volta"),
    *_GV100_SM, *_V100_MEM,
    _r("peak.link.nvlink_gbps_per_dir", 150, "nv-v100-ds", "Interconnect Bandwidth row",
       "printed 'NVLink 300 GB/s' (both directions): 6 links x 25 GB/s per direction (seed 002 §5.1)"),
], _VOLTA_LACKS)
V100_PCIE = _gpu("V100-PCIe", "Tesla V100 PCIe (16/32 GB)", (7, 0), (r"V100-PCIE-(16|32)GB",), "HBM2", [
    _r("peak.sm_count", 80, "nv-v100-ds", "CUDA Cores row", "5,120 CUDA cores / 64 per SM (GV100)"),
    _r("peak.boost_mhz", 1380, "nv-v100pcie-pb", "specifications table", "GPU Boost Clock"),
    _r("peak.fp32.tflops", 14, "nv-v100-ds", "PCIe column",
       "the datasheet's 7 / 14 / 112 correspond to ~1370 MHz (NVIDIA's own forum: 112 TFLOPS / 81,920 "
       "FLOP/clk = 1367 MHz)"),
    _r("peak.fp64.tflops", 7, "nv-v100-ds", "PCIe column"),
    *_tc("f16", 112, None, "nv-v100-ds", "PCIe column, Tensor Performance row", "no sparsity on Volta"),
    *_GV100_SM, *_V100_MEM,
], _VOLTA_LACKS, note="V100S PCIe (1134 GB/s, 1597 MHz) is another product: no record")

# ---------------------------------------------------------------- Turing (sm_75)
T4 = _gpu("T4", "Tesla T4", (7, 5), (r"T4",), "GDDR6", [
    _r("peak.sm_count", 40, "devq-t4", "'(40) Multiprocessors'", "2,560 CUDA cores / 64 (T4 datasheet)"),
    _r("peak.boost_mhz", 1590, "devq-t4", "'GPU Max Clock rate: 1590 MHz'"),
    _r("peak.fp32.tflops", 8.1, "nv-t4-ds", "Single-Precision row"),
    _r("peak.fp64.tflops", 2 * 40 * 2 * 1590 / 1e6, "derived", "fp64 FMA/clk/SM x 2 x SMs x boost",
       "2 x 40 x 2 x 1590 MHz; the datasheet prints no FP64 figure"),
    *_tc("f16", 65, None, "nv-t4-ds", "Mixed-Precision (FP16/FP32) row",
         "FP32 accumulate at full rate (a datacenter part); no sparsity on Turing"),
    *_tc("int8", 130, None, "nv-t4-ds", "INT8 row"),
    *_tc("int4", 260, None, "nv-t4-ds", "INT4 row"),
    *_per_sm({"f16": 512, "int8": 1024, "int4": 2048}, "nv-turing-wp", "§Turing Tensor Cores (text)",
             "8 Tensor Cores/SM: 64 FP16, 128 INT8, 256 INT4 FMA/clk each"),
    *_per_sm({"fp32": 64}, "nv-turing-wp", "§Turing SM (text)", "64 FP32 cores per SM"),
    *_per_sm({"fp64": 2}, "nv-turing-wp", "§Turing SM (text)", _ASSUMED_2FP64),
    _r("peak.mem.dram_gbps", 320, "nv-t4-ds", "GPU Memory Bandwidth row", "printed '320+ GB/s'"),
    _r("peak.mem.bus_bits", 256, "devq-t4", "'Memory Bus Width: 256-bit'"),
    _r("peak.mem.l2_bytes", 4 * MiB, "devq-t4", "'L2 Cache Size: 4194304 bytes'"),
    _r("peak.link.pcie_gen", 3, "nv-t4-ds", "System Interface row", "'x16 PCIe Gen3'"),
    _r("peak.link.pcie_lanes", 16, "nv-t4-ds", "System Interface row"),
], ("bf16", "tf32", "fp8", "fp4", "f64"), ("b1",))

# ---------------------------------------------------------------- Ampere GA100 (sm_80)
_A100_SPEC = "comparison table of NVIDIA data center GPUs (A100 column)"
_A100_PERF = "specifications table (A100 80GB/40GB PCIe/SXM)"
_GA100_SM = [
    *_per_sm({"f16": 1024, "bf16": 1024, "tf32": 512, "int8": 2048, "int4": 4096, "b1": 16384, "f64": 64,
              "fp32": 64, "fp64": 32}, "nv-a100-wp", "table 'A100 speedup over V100' (per-SM FMA/clk, dense)",
             "the same per-SM peaks as seed 001 Table 3's caption quotes from this whitepaper"),
]


def _a100(gpu: str, model: str, names: tuple[str, ...], mem_type: str, gbps: float, column: str) -> GpuPeaks:
    return _gpu(gpu, model, (8, 0), names, mem_type, [
        _r("peak.sm_count", 108, "nv-a100-wp", _A100_SPEC),
        _r("peak.boost_mhz", 1410, "nv-a100-wp", _A100_SPEC, "GPU Boost Clock"),
        _r("peak.fp32.tflops", 19.5, "nv-a100-ds", _A100_PERF),
        _r("peak.fp64.tflops", 9.7, "nv-a100-ds", _A100_PERF),
        *_tc("f64", 19.5, None, "nv-a100-ds", _A100_PERF, "FP64 Tensor Core"),
        *_tc("tf32", 156, 312, "nv-a100-ds", _A100_PERF),
        *_tc("bf16", 312, 624, "nv-a100-ds", _A100_PERF),
        *_tc("f16", 312, 624, "nv-a100-ds", _A100_PERF, "one FP16 figure: FP16 and FP32 accumulate run alike"),
        *_tc("int8", 624, 1248, "nv-a100-ds", _A100_PERF),
        *_tc("int4", 1248, 2496, "nv-a100-wp", _A100_SPEC, "Peak INT4 Tensor TOPS"),
        *_GA100_SM,
        _r("peak.mem.dram_gbps", gbps, "nv-a100-ds", f"GPU Memory Bandwidth row, {column} column"),
        _r("peak.mem.bus_bits", 5120, "nv-a100-wp", _A100_SPEC, "'5120-bit HBM2'"),
        _r("peak.mem.l2_bytes", 40 * MiB, "nv-a100-wp", _A100_SPEC, "printed 40960 KB"),
        _r("peak.link.pcie_gen", 4, "nv-a100-ds", "Interconnect row", "'PCIe Gen4: 64 GB/s'"),
        _r("peak.link.pcie_lanes", 16, "nv-a100-ds", "Interconnect row"),
        _r("peak.link.nvlink_gbps_per_dir", 300, "nv-a100-ds", f"Interconnect row, {column} column",
           "printed 'NVLink: 600 GB/s' (both directions)"
           + ("; PCIe cards: 'NVLink Bridge for 2 GPUs'" if "PCIe" in gpu else "")),
    ], ("fp8", "fp4"))


A100_SXM4_40GB = _a100("A100-SXM4-40GB", "A100 SXM4 40GB", (r"A100-SXM4-40GB",), "HBM2", 1555, "A100 40GB SXM")
A100_SXM4_80GB = _a100("A100-SXM4-80GB", "A100 SXM4 80GB", (r"A100-SXM4-80GB",), "HBM2e", 2039, "A100 80GB SXM")
A100_PCIE_40GB = _a100("A100-PCIe-40GB", "A100 PCIe 40GB", (r"A100-PCIE-40GB",), "HBM2", 1555, "A100 40GB PCIe")
A100_PCIE_80GB = _a100("A100-PCIe-80GB", "A100 PCIe 80GB", (r"A100 80GB PCIE", r"A100-PCIE-80GB"), "HBM2e", 1935,
                       "A100 80GB PCIe")

# ---------------------------------------------------------------- Ampere GA102 (sm_86)
_GA102_APPX = "Appendix A (GeForce RTX 3090 specifications table)"
A10 = _gpu("A10", "A10", (8, 6), (r"A10",), "GDDR6", [
    _r("peak.sm_count", 72, "nv-a10-ds", "CUDA Cores row", "9,216 CUDA cores / 128 per GA10x SM"),
    _r("peak.boost_mhz", 1695, "tpu-a10", "Boost row", "third-party; NVIDIA's datasheet prints no clock"),
    _r("peak.fp32.tflops", 31.2, "nv-a10-ds", "FP32 row"),
    _r("peak.fp64.tflops", 2 * 72 * 2 * 1695 / 1e6, "derived", "fp64 FMA/clk/SM x 2 x SMs x boost",
       "2 x 72 x 2 x 1695 MHz; the datasheet prints no FP64 figure"),
    *_tc("tf32", 62.5, 125, "nv-a10-ds", "TF32 Tensor Core row"),
    *_tc("bf16", 125, 250, "nv-a10-ds", "BFLOAT16 Tensor Core row"),
    *_tc("f16", 125, 250, "nv-a10-ds", "FP16 Tensor Core row", "one FP16 figure (datacenter part: full-rate FP32 accumulate)"),
    *_tc("int8", 250, 500, "nv-a10-ds", "INT8 Tensor Core row"),
    *_tc("int4", 500, 1000, "nv-a10-ds", "INT4 Tensor Core row"),
    *_derived_per_sm({"f16": 512, "bf16": 512, "tf32": 256, "int8": 1024, "int4": 2048}, 72, 1695, "A10"),
    *_per_sm({"fp32": 128}, "nv-ga102-wp", "§GA10x SM (text)", "128 FP32 operations per clock per SM"),
    *_per_sm({"fp64": 2}, "nv-ga102-wp", "§GA10x SM (text)", _ASSUMED_2FP64),
    _r("peak.mem.dram_gbps", 600, "nv-a10-ds", "GPU Memory Bandwidth row"),
    _r("peak.mem.bus_bits", 384, "tpu-a10", "Memory Bus row", "third-party"),
    _r("peak.mem.l2_bytes", 6 * MiB, "tpu-a10", "L2 Cache row", "third-party"),
    _r("peak.link.pcie_gen", 4, "nv-a10-ds", "Interconnect row", "'PCIe Gen4 64 GB/s'"),
    _r("peak.link.pcie_lanes", 16, "nv-a10-ds", "Interconnect row"),
], ("fp8", "fp4", "f64"), ("b1",), note="A10G (AWS, 80 SMs) is another product: no record")

RTX3090 = _gpu("RTX3090", "GeForce RTX 3090", (8, 6), (r"RTX 3090",), "GDDR6X", [
    _r("peak.sm_count", 82, "nv-ga102-wp", _GA102_APPX),
    _r("peak.boost_mhz", 1695, "nv-ga102-wp", _GA102_APPX, "GPU Boost Clock"),
    _r("peak.fp32.tflops", 35.6, "nv-ga102-wp", _GA102_APPX, "Peak FP32 TFLOPS (non-Tensor)"),
    _r("peak.fp64.tflops", 2 * 82 * 2 * 1695 / 1e6, "derived", "fp64 FMA/clk/SM x 2 x SMs x boost",
       "2 x 82 x 2 x 1695 MHz"),
    *_tc("f16_f16acc", 142, 284, "nv-ga102-wp", _GA102_APPX, "Peak FP16 Tensor TFLOPS with FP16 Accumulate"),
    *_tc("f16", 71, 142, "nv-ga102-wp", _GA102_APPX,
         "Peak FP16 Tensor TFLOPS with FP32 Accumulate: half the FP16-accumulate rate on GeForce "
         "(seed 001 §5 measures the same halving on an RTX3070Ti)"),
    *_tc("bf16", 71, 142, "nv-ga102-wp", _GA102_APPX, "Peak BF16 Tensor TFLOPS with FP32 Accumulate"),
    *_tc("tf32", 35.6, 71, "nv-ga102-wp", _GA102_APPX),
    *_tc("int8", 284, 568, "nv-ga102-wp", _GA102_APPX),
    *_tc("int4", 568, 1136, "nv-ga102-wp", _GA102_APPX),
    *_derived_per_sm({"f16": 256, "f16_f16acc": 512, "bf16": 256, "tf32": 128, "int8": 1024, "int4": 2048},
                     82, 1695, "RTX 3090"),
    *_per_sm({"fp32": 128}, "nv-ga102-wp", "§GA10x SM (text)", "128 FP32 operations per clock per SM"),
    *_per_sm({"fp64": 2}, "nv-ga102-wp", "§GA10x SM (text)", _ASSUMED_2FP64),
    _r("peak.mem.dram_gbps", 936, "nv-ga102-wp", _GA102_APPX, "24 GB GDDR6X at 19.5 Gbps"),
    _r("peak.mem.bus_bits", 384, "nv-ga102-wp", _GA102_APPX),
    _r("peak.mem.l2_bytes", 6144 * KiB, "nv-ga102-wp", _GA102_APPX, "printed 6144 KB"),
    _r("peak.link.pcie_gen", 4, "nv-ga102-wp", "§PCIe Gen 4 (text)"),
    _r("peak.link.pcie_lanes", 16, "nv-ga102-wp", "§PCIe Gen 4 (text)"),
    _r("peak.link.nvlink_gbps_per_dir", 56.25, "nv-ga102-wp", "§Third-Generation NVLink (text)",
       "four x4 links, '112.5 GB/s total bandwidth' (both directions)"),
], ("fp8", "fp4", "f64"), ("b1",), note="RTX 3090 Ti (84 SMs) is another product: no record")

# ---------------------------------------------------------------- Ada (sm_89)
_ADA_APPX = "Appendix A (GeForce RTX 4090 specifications table)"
_AD_DC_SM = {"f16": 512, "bf16": 512, "tf32": 256, "fp8": 1024, "int8": 1024}
L4 = _gpu("L4", "L4", (8, 9), (r"L4",), "GDDR6", [
    _r("peak.sm_count", 58, "tpu-l4", "Shading Units row", "third-party: 7,424 shading units / 128; "
       "also FP32 30.3 TFLOPS / (2 x 128 x 2040 MHz) = 58"),
    _r("peak.boost_mhz", 2040, "tpu-l4", "Boost Clock row", "third-party; NVIDIA's datasheet prints no clock"),
    _r("peak.fp32.tflops", 30.3, "nv-l4-ds", "FP32 row"),
    _r("peak.fp64.tflops", 2 * 58 * 2 * 2040 / 1e6, "derived", "fp64 FMA/clk/SM x 2 x SMs x boost",
       "2 x 58 x 2 x 2040 MHz; the datasheet prints no FP64 figure"),
    *_tc("tf32", None, 120, "nv-l4-ds", "TF32 Tensor Core row", "printed 120*: 121.2 at 2040 MHz", True),
    *_tc("bf16", None, 242, "nv-l4-ds", "BFLOAT16 Tensor Core row", dense_from_sparse=True),
    *_tc("f16", None, 242, "nv-l4-ds", "FP16 Tensor Core row", "one FP16 figure", True),
    *_tc("fp8", None, 485, "nv-l4-ds", "FP8 Tensor Core row", dense_from_sparse=True),
    *_tc("int8", None, 485, "nv-l4-ds", "INT8 Tensor Core row", dense_from_sparse=True),
    *_derived_per_sm(_AD_DC_SM, 58, 2040, "L4"),
    *_per_sm({"fp32": 128}, "nv-ada-wp", "§Ada SM (text)", "128 CUDA cores per SM"),
    *_per_sm({"fp64": 2}, "nv-ada-wp", "§Ada SM (text)", _ASSUMED_2FP64),
    _r("peak.mem.dram_gbps", 300, "nv-l4-ds", "GPU Memory Bandwidth row"),
    _r("peak.mem.bus_bits", 192, "tpu-l4", "Memory Bus row", "third-party"),
    _r("peak.mem.l2_bytes", 48 * MiB, "tpu-l4", "L2 Cache row", "third-party"),
    _r("peak.link.pcie_gen", 4, "nv-l4-ds", "Interconnect row", "'PCIe Gen4 x16 64 GB/s'"),
    _r("peak.link.pcie_lanes", 16, "nv-l4-ds", "Interconnect row"),
], ("fp4", "f64"), ("int4", "b1"))

L40S = _gpu("L40S", "L40S", (8, 9), (r"L40S",), "GDDR6", [
    _r("peak.sm_count", 142, "nv-l40s-ds", "CUDA Cores row", "18,176 CUDA cores / 128 (568 Tensor Cores / 4)"),
    _r("peak.boost_mhz", 2520, "tpu-l40s", "boost clock (text)", "third-party; NVIDIA's datasheet prints no clock"),
    _r("peak.fp32.tflops", 91.6, "nv-l40s-ds", "FP32 row"),
    _r("peak.fp64.tflops", 2 * 142 * 2 * 2520 / 1e6, "derived", "fp64 FMA/clk/SM x 2 x SMs x boost",
       "2 x 142 x 2 x 2520 MHz; the datasheet prints no FP64 figure"),
    *_tc("tf32", 183, 366, "nv-l40s-ds", "TF32 Tensor Core row"),
    *_tc("bf16", 362.05, 733, "nv-l40s-ds", "BFLOAT16 Tensor Core row", "see INCONSISTENT"),
    *_tc("f16", 362.05, 733, "nv-l40s-ds", "FP16 Tensor Core row", "one FP16 figure; see INCONSISTENT"),
    *_tc("fp8", 733, 1466, "nv-l40s-ds", "FP8 Tensor Core row"),
    *_tc("int8", 733, 1466, "nv-l40s-ds", "INT8 Tensor Core row"),
    *_derived_per_sm(_AD_DC_SM, 142, 2520, "L40S (from the TF32/FP8/sparse rows; the dense FP16 row is inconsistent)"),
    *_per_sm({"fp32": 128}, "nv-ada-wp", "§Ada SM (text)", "128 CUDA cores per SM"),
    *_per_sm({"fp64": 2}, "nv-ada-wp", "§Ada SM (text)", _ASSUMED_2FP64),
    _r("peak.mem.dram_gbps", 864, "nv-l40s-ds", "GPU Memory Bandwidth row"),
    _r("peak.mem.bus_bits", 384, "tpu-l40s", "memory interface (text)", "third-party"),
    _r("peak.link.pcie_gen", 4, "nv-l40s-ds", "Interconnect Interface row", "'PCIe Gen4 x16: 64GB/s bidirectional'"),
    _r("peak.link.pcie_lanes", 16, "nv-l40s-ds", "Interconnect Interface row"),
], ("fp4", "f64"), ("int4", "b1"),
    note="L2 not recorded: third-party databases disagree (48 vs 96 MB); L40 (no S) is another product")

RTX4090 = _gpu("RTX4090", "GeForce RTX 4090", (8, 9), (r"RTX 4090",), "GDDR6X", [
    _r("peak.sm_count", 128, "nv-ada-wp", _ADA_APPX),
    _r("peak.boost_mhz", 2520, "nv-ada-wp", _ADA_APPX, "GPU Boost Clock"),
    _r("peak.fp32.tflops", 82.6, "nv-ada-wp", _ADA_APPX, "Peak FP32 TFLOPS (non-Tensor)"),
    _r("peak.fp64.tflops", 2 * 128 * 2 * 2520 / 1e6, "derived", "fp64 FMA/clk/SM x 2 x SMs x boost",
       "2 x 128 x 2 x 2520 MHz"),
    *_tc("f16_f16acc", 330.3, 660.6, "nv-ada-wp", _ADA_APPX, "Peak FP16 Tensor TFLOPS with FP16 Accumulate"),
    *_tc("f16", 165.2, 330.4, "nv-ada-wp", _ADA_APPX,
         "Peak FP16 Tensor TFLOPS with FP32 Accumulate: half the FP16-accumulate rate on GeForce"),
    *_tc("bf16", 165.2, 330.4, "nv-ada-wp", _ADA_APPX, "Peak BF16 Tensor TFLOPS with FP32 Accumulate"),
    *_tc("tf32", 82.6, 165.2, "nv-ada-wp", _ADA_APPX),
    *_tc("fp8_f16acc", 660.6, 1321.2, "nv-ada-wp", _ADA_APPX, "Peak FP8 Tensor TFLOPS with FP16 Accumulate"),
    *_tc("fp8", 330.3, 660.6, "nv-ada-wp", _ADA_APPX, "Peak FP8 Tensor TFLOPS with FP32 Accumulate (half rate)"),
    *_tc("int8", 660.6, 1321.2, "nv-ada-wp", _ADA_APPX),
    *_tc("int4", 1321.2, 2642.4, "nv-ada-wp", _ADA_APPX),
    *_derived_per_sm({"f16": 256, "f16_f16acc": 512, "bf16": 256, "tf32": 128, "fp8": 512, "fp8_f16acc": 1024,
                      "int8": 1024, "int4": 2048}, 128, 2520, "RTX 4090"),
    *_per_sm({"fp32": 128}, "nv-ada-wp", "§Ada SM (text)", "128 CUDA cores per SM"),
    *_per_sm({"fp64": 2}, "nv-ada-wp", "§Ada SM (text)", _ASSUMED_2FP64),
    _r("peak.mem.dram_gbps", 1008, "nv-ada-wp", _ADA_APPX, "24 GB GDDR6X at 21 Gbps"),
    _r("peak.mem.bus_bits", 384, "nv-ada-wp", _ADA_APPX),
    _r("peak.mem.l2_bytes", 72 * MiB, "nv-ada-wp", _ADA_APPX, "printed 73728 KB; seed 000 Table II: 72 MB"),
    _r("peak.link.pcie_gen", 4, "nv-ada-wp", _ADA_APPX),
    _r("peak.link.pcie_lanes", 16, "nv-ada-wp", _ADA_APPX),
], ("fp4", "f64"), ("b1",), note="RTX 4090 D (114 SMs) and the Laptop GPU are other products: no record")

# ---------------------------------------------------------------- Blackwell GeForce (sm_120)
_BW_APPX = "Appendix A (GeForce RTX 5090 specifications table)"
_BW_CHECK = "not re-checked against NVIDIA's copy in this session"
RTX5090 = _gpu("RTX5090", "GeForce RTX 5090", (12, 0), (r"RTX 5090",), "GDDR7", [
    _r("peak.sm_count", 170, "nv-rtxbw-wp", _BW_APPX, "a PyTorch device query shows multi_processor_count=170"),
    _r("peak.boost_mhz", 2407, "nv-rtxbw-wp", _BW_APPX, "GPU Boost Clock"),
    _r("peak.fp32.tflops", 104.8, "nv-rtxbw-wp", _BW_APPX, "Peak FP32 TFLOPS (non-Tensor)"),
    _r("peak.fp64.tflops", 2 * 170 * 2 * 2407 / 1e6, "derived", "fp64 FMA/clk/SM x 2 x SMs x boost",
       "2 x 170 x 2 x 2407 MHz, assuming the two FP64 units per SM of GA10x/AD10x"),
    *_tc("f16_f16acc", 419, 838, "nv-rtxbw-wp", _BW_APPX, "Peak FP16 Tensor TFLOPS with FP16 Accumulate"),
    *_tc("f16", 209.5, 419, "nv-rtxbw-wp", _BW_APPX,
         "Peak FP16 Tensor TFLOPS with FP32 Accumulate: half rate on GeForce; " + _BW_CHECK
         + " (codesota.com lists 209.5 dense FP16 'from the NVIDIA datasheet')"),
    *_tc("bf16", 209.5, 419, "nv-rtxbw-wp", _BW_APPX, "FP32 accumulate, as FP16 with FP32 accumulate; " + _BW_CHECK),
    *_tc("tf32", 104.8, 209.5, "nv-rtxbw-wp", _BW_APPX),
    *_tc("fp8_f16acc", 838, 1676, "nv-rtxbw-wp", _BW_APPX, "Peak FP8 Tensor TFLOPS with FP16 Accumulate"),
    *_tc("int8", 838, 1676, "nv-rtxbw-wp", _BW_APPX),
    *_tc("fp4", 1676, 3352, "nv-rtxbw-wp", _BW_APPX, "3,352 sparse = NVIDIA's 'AI TOPS'"),
    *_derived_per_sm({"f16": 256, "f16_f16acc": 512, "bf16": 256, "tf32": 128, "fp8_f16acc": 1024, "int8": 1024,
                      "fp4": 2048}, 170, 2407, "RTX 5090"),
    *_per_sm({"fp32": 128}, "nv-rtxbw-wp", "§Blackwell SM (text)", "128 CUDA cores per SM"),
    *_per_sm({"fp64": 2}, "derived", "as GA10x/AD10x", "assumed: " + _ASSUMED_2FP64),
    _r("peak.mem.dram_gbps", 1792, "nv-rtxbw-wp", _BW_APPX, "32 GB GDDR7 at 28 Gbps"),
    _r("peak.mem.bus_bits", 512, "nv-rtxbw-wp", _BW_APPX),
    _r("peak.mem.l2_bytes", 96 * MiB, "nv-rtxbw-wp", _BW_APPX, "a PyTorch device query shows L2_cache_size=96MB"),
    _r("peak.link.pcie_gen", 5, "nv-rtxbw-wp", _BW_APPX),
    _r("peak.link.pcie_lanes", 16, "nv-rtxbw-wp", _BW_APPX),
], ("f64",), ("fp8", "int4", "b1"),
    note="FP8 with FP32 accumulate not transcribed (row not checked here); RTX 5090 D is another product")

# ---------------------------------------------------------------- Hopper (sm_90)
_H100_T3 = "Table 3 (Comparison of NVIDIA A100 and H100 Data Center GPUs)"
_GH100_SM = [
    *_derived_per_sm({"f16": 2048, "bf16": 2048, "tf32": 1024, "fp8": 4096, "int8": 4096}, 132, 1830,
                     "H100 SXM5 (the whitepaper: twice the A100 SM's dense MMA rate per clock)"),
    _r("peak.tc.f64.fma_per_clk_sm", 128, "derived", "dense f64 / (2 x 132 SMs x 1980 MHz)",
       "H100 SXM5: FP64 tensor figures use the boost clock: 128 x 2 x 132 x 1980 MHz = 66.9 TFLOPS"),
    *_per_sm({"fp32": 128, "fp64": 64}, "nv-h100-wp", _H100_T3, "FP32 Cores / SM, FP64 Cores / SM (excl. Tensor)"),
]
_HOPPER_LACKS = ("int4", "b1", "fp4")  # no INT4 tensor path on Hopper (seed 000 §6.2: IMAD), no binary, no FP4
_TC_CLOCK = ("the clock the whitepaper's 16/8-bit and TF32 tensor figures use (NVIDIA developer forum thread "
             "244727: 'table 3 in the H100 white paper indicates that max boost clock for TC usage')")

H100_SXM5 = _gpu("H100-SXM5", "H100 SXM5 80GB", (9, 0), (r"H100 80GB HBM3",), "HBM3", [
    _r("peak.sm_count", 132, "nv-h100-wp", _H100_T3),
    _r("peak.boost_mhz", 1980, "run-h100", "sm_clock_max_mhz", "max boost; FP32 66.9 = 132 x 128 x 2 x 1980 MHz"),
    _r("peak.tc_mhz", 1830, "nv-h100-wp", _H100_T3, _TC_CLOCK + "; 989.4 = 132 x 2048 x 2 x 1830 MHz"),
    _r("peak.fp32.tflops", 66.9, "nv-h100-wp", _H100_T3),
    _r("peak.fp64.tflops", 33.5, "nv-h100-wp", _H100_T3, "datasheet: 34"),
    *_tc("f64", 66.9, None, "nv-h100-wp", _H100_T3, "Peak FP64 Tensor TFLOPS (at the 1980 MHz boost clock)"),
    *_tc("tf32", 494.7, 989.4, "nv-h100-wp", _H100_T3),
    *_tc("bf16", 989.4, 1978.9, "nv-h100-wp", _H100_T3),
    *_tc("f16", 989.4, 1978.9, "nv-h100-wp", _H100_T3, "the FP16- and FP32-accumulate rows print the same"),
    *_tc("fp8", 1978.9, 3957.8, "nv-h100-wp", _H100_T3),
    *_tc("int8", 1978.9, 3957.8, "nv-h100-wp", _H100_T3),
    *_GH100_SM,
    _r("peak.mem.dram_gbps", 3350, "nv-h100-ds", "GPU Memory Bandwidth row, H100 SXM column",
       "printed 3.35 TB/s; the driver's 2619 MHz x 2 x 5120 bits = 3352 GB/s"),
    _r("peak.mem.bus_bits", 5120, "nv-h100-wp", _H100_T3, "'5120-bit HBM3'; driver: 5120"),
    _r("peak.mem.l2_bytes", 50 * MiB, "nv-h100-wp", _H100_T3, "printed 50 MB; driver: 52428800 bytes"),
    _r("peak.link.pcie_gen", 5, "nv-h100-ds", "Interconnect row", "'PCIe Gen5: 128GB/s'"),
    _r("peak.link.pcie_lanes", 16, "nv-h100-ds", "Interconnect row"),
    _r("peak.link.nvlink_gbps_per_dir", 450, "nv-h100-ds", "Interconnect row, H100 SXM column",
       "printed 'NVLink: 900GB/s' (both directions)"),
], _HOPPER_LACKS, note="H100 NVL, H800 and GH200 are other products: no record")

H100_PCIE = _gpu("H100-PCIe", "H100 PCIe 80GB", (9, 0), (r"H100 PCIE",), "HBM2e", [
    _r("peak.sm_count", 114, "nv-h100-wp", _H100_T3),
    _r("peak.boost_mhz", 1755, "nv-h100pcie-pb", "specifications table", "max boost; FP32 51.2 = 114 x 128 x 2 x 1755 MHz"),
    _r("peak.tc_mhz", 1620, "nv-h100-wp", _H100_T3, _TC_CLOCK + "; seed 000 §6.2: '1620 MHz specified in the whitepaper'"),
    _r("peak.fp32.tflops", 51.2, "nv-h100-wp", _H100_T3),
    _r("peak.fp64.tflops", 25.6, "nv-h100-wp", _H100_T3),
    *_tc("f64", 51.2, None, "nv-h100-wp", _H100_T3, "Peak FP64 Tensor TFLOPS (at the 1755 MHz boost clock)"),
    *_tc("tf32", 378, 756, "nv-h100-wp", _H100_T3),
    *_tc("bf16", 756.5, 1513, "nv-h100-wp", _H100_T3),
    *_tc("f16", 756.5, 1513, "nv-h100-wp", _H100_T3, "seed 000 Table VIII caption quotes 756.5 / 378 / 1513"),
    *_tc("fp8", 1513, 3026, "nv-h100-wp", _H100_T3),
    *_tc("int8", 1513, 3026, "nv-h100-wp", _H100_T3),
    *_GH100_SM,
    _r("peak.mem.dram_gbps", 2000, "nv-h100-ds", "GPU Memory Bandwidth row, H100 PCIe column",
       "printed 2TB/s; 1593 MHz x 2 x 5120 bits = 2039 GB/s (seed 000 Table II for the H800 PCIe)"),
    _r("peak.mem.bus_bits", 5120, "nv-h100-wp", _H100_T3, "'5120-bit HBM2e'"),
    _r("peak.mem.l2_bytes", 50 * MiB, "nv-h100-wp", _H100_T3, "printed 50 MB"),
    _r("peak.link.pcie_gen", 5, "nv-h100-ds", "Interconnect row", "'PCIe Gen5: 128GB/s'"),
    _r("peak.link.pcie_lanes", 16, "nv-h100-ds", "Interconnect row"),
    _r("peak.link.nvlink_gbps_per_dir", 300, "nv-h100-ds", "Interconnect row, H100 PCIe column",
       "printed 'NVLink: 600GB/s' (bridge, both directions)"),
], _HOPPER_LACKS)

_H200 = "specifications table, H200 SXM column"
H200_SXM = _gpu("H200-SXM", "H200 SXM 141GB", (9, 0), (r"H200",), "HBM3e", [
    _r("peak.sm_count", 132, "run-h200", "sm_count", _DRIVER),
    _r("peak.boost_mhz", 1980, "run-h200", "sm_clock_max_mhz", _DRIVER + "; FP32 67 = 132 x 128 x 2 x 1980 MHz"),
    _r("peak.tc_mhz", 1830, "derived", "sparse FP16 / (4 x 132 SMs x 2048)",
       "1979 TFLOPS sparse = H100 SXM5's figure: the same 1830 MHz tensor clock"),
    _r("peak.fp32.tflops", 67, "nv-h200-ds", _H200),
    _r("peak.fp64.tflops", 34, "nv-h200-ds", _H200, "33.5 rounded (H100 whitepaper)"),
    *_tc("f64", 67, None, "nv-h200-ds", _H200, "FP64 Tensor Core"),
    *_tc("tf32", None, 989, "nv-h200-ds", _H200, dense_from_sparse=True),
    *_tc("bf16", None, 1979, "nv-h200-ds", _H200, dense_from_sparse=True),
    *_tc("f16", None, 1979, "nv-h200-ds", _H200, "one FP16 figure", True),
    *_tc("fp8", None, 3958, "nv-h200-ds", _H200, dense_from_sparse=True),
    *_tc("int8", None, 3958, "nv-h200-ds", _H200, dense_from_sparse=True),
    *_GH100_SM,
    _r("peak.mem.dram_gbps", 4800, "nv-h200-ds", _H200, "printed 4.8TB/s; driver: 3201 MHz x 2 x 6016 bits = 4814 GB/s"),
    _r("peak.mem.bus_bits", 6016, "run-h200", "mem_bus_bits", _DRIVER),
    _r("peak.mem.l2_bytes", 60 * MiB, "run-h200", "l2_bytes", _DRIVER + " (62914560 bytes)"),
    _r("peak.link.pcie_gen", 5, "nv-h200-ds", _H200, "'PCIe Gen5: 128GB/s'"),
    _r("peak.link.pcie_lanes", 16, "nv-h200-ds", _H200),
    _r("peak.link.nvlink_gbps_per_dir", 450, "nv-h200-ds", _H200, "printed 'NVLink: 900GB/s' (both directions)"),
], _HOPPER_LACKS, note="H200 NVL (PCIe) is another product: no record")

# ---------------------------------------------------------------- Blackwell datacenter (sm_100)
_B200_NOTE = ("NVIDIA's datasheet as transcribed by glennklockwood.com/garden/processors/B200 (HGX variant at "
              "1,000 W); " + _BW_CHECK)
B200 = _gpu("B200", "B200 (HGX, 1000 W)", (10, 0), (r"B200",), "HBM3e", [
    _r("peak.sm_count", 148, "3p-b200", "SMs row", "third-party (NVIDIA publishes no SM count); the lookup's check"),
    _r("peak.fp32.tflops", 80, "nv-b200-ds", "FP32 row", _B200_NOTE),
    _r("peak.fp64.tflops", 40, "nv-b200-ds", "FP64/FP64 Tensor Core row", _B200_NOTE),
    *_tc("f64", 40, None, "nv-b200-ds", "FP64/FP64 Tensor Core row", _B200_NOTE),
    *_tc("tf32", None, 2200, "nv-b200-ds", "TF32 Tensor Core row", _B200_NOTE, True),
    *_tc("bf16", None, 4500, "nv-b200-ds", "FP16/BF16 Tensor Core row", _B200_NOTE, True),
    *_tc("f16", None, 4500, "nv-b200-ds", "FP16/BF16 Tensor Core row", _B200_NOTE, True),
    *_tc("fp8", None, 9000, "nv-b200-ds", "FP8/FP6 Tensor Core row", _B200_NOTE, True),
    *_tc("int8", None, 9000, "nv-b200-ds", "INT8 Tensor Core row", _B200_NOTE, True),
    *_tc("fp4", None, 18000, "nv-b200-ds", "FP4 Tensor Core row", _B200_NOTE, True),
    _r("peak.mem.dram_gbps", 8000, "nv-b200-ds", "GPU Memory Bandwidth row", "printed 8TB/s; " + _B200_NOTE),
    _r("peak.link.nvlink_gbps_per_dir", 900, "nv-b200-ds", "NVLink row", "printed 1.8TB/s (both directions)"),
], (), ("int4", "b1"),
    note="no per-SM rates: NVIDIA publishes neither the SM count nor the clock its B200 figures use, so "
         "per-clock fractions are n/a (TFLOPS fractions work); no boost clock, bus width, L2 or PCIe recorded")

GPUS: tuple[GpuPeaks, ...] = (
    V100_SXM2, V100_PCIE, T4, A100_SXM4_40GB, A100_SXM4_80GB, A100_PCIE_40GB, A100_PCIE_80GB, A10, L4, L40S,
    RTX3090, RTX4090, RTX5090, H100_SXM5, H100_PCIE, H200_SXM, B200,
)
PEAKS: tuple[Published, ...] = tuple(r for g in GPUS for r in g.records)

# Printed figures that disagree with the rest of their own source (kept as printed).
INCONSISTENT: dict[tuple[str, str], str] = {
    (g, f"peak.tc.{t}.dense_tflops"): "L40S datasheet: dense 362.05 is twice the L40's 181.05 (2490 MHz); its own "
    "sparse 733, TF32 183 and FP8 733 all give 512 FMA/clk/SM at 2520 MHz, i.e. 366.4 dense"
    for g in ("L40S",) for t in ("f16", "bf16")
}


# ---------------------------------------------------------------- lookup
def normalize_name(name: str) -> str:
    """Upper case, single spaces, without the 'NVIDIA ' / 'Tesla ' / 'GeForce ' prefixes."""
    s = " ".join(name.upper().split())
    for prefix in ("NVIDIA ", "TESLA ", "GEFORCE "):
        s = s.removeprefix(prefix)
    return s


def _prop(props: Mapping[str, Any], key: str) -> Any:
    v = props.get(key)
    extra = props.get("extra")
    return extra.get(key) if v is None and isinstance(extra, Mapping) else v


def peaks_for(props: Mapping[str, Any]) -> GpuPeaks | None:
    """The record of the GPU a run ran on, from its stored device properties: the driver's name
    (``name``, or ``gpu_name`` as the store keeps it) must match a record whole, and the compute
    capability and SM count, where given, must agree (an H100 PCIe has 114 SMs, an SXM5 132; a MIG
    slice reports fewer). None for anything else: no fraction of somebody else's peak.
    ``mem_bus_bits`` is not checked: drivers report values NVIDIA does not print (H200: 6016)."""
    name = _prop(props, "name") or _prop(props, "gpu_name")
    if not isinstance(name, str):
        return None
    norm = normalize_name(name)
    hits = [g for g in GPUS if any(re.fullmatch(p, norm) for p in g.names)]
    if len(hits) != 1:
        return None
    g = hits[0]
    major, minor, sms = _prop(props, "cc_major"), _prop(props, "cc_minor"), _prop(props, "sm_count")
    if any(v is not None and not _whole(v) for v in (major, minor, sms)):
        return None  # an imported property that is no whole number identifies nothing
    if major is not None and minor is not None and (int(major), int(minor)) != g.cc:
        return None
    if sms is not None and int(sms) != g.sm_count:
        return None
    return g


def _whole(v: Any) -> bool:
    """An int, or a float or digit string holding one (stores and exports keep properties as either)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    if isinstance(v, float):
        return v.is_integer()
    return isinstance(v, str) and v.strip().isascii() and v.strip().isdigit()


def by_label(gpu: str) -> GpuPeaks:
    return next(g for g in GPUS if g.gpu == gpu)


# ---------------------------------------------------------------- per-type rates
_ALIASES = {
    "f16": "f16", "fp16": "f16", "half": "f16", "bf16": "bf16", "tf32": "tf32", "fp8": "fp8", "e4m3": "fp8",
    "e5m2": "fp8", "int8": "int8", "s8": "int8", "u8": "int8", "int4": "int4", "s4": "int4", "u4": "int4",
    "b1": "b1", "fp4": "fp4", "e2m1": "fp4", "f64": "f64", "fp64": "f64",
}


def tensor_type(t: str, acc: str | None = None) -> str:
    """A table type from a PTX / suite type name (``e4m3`` -> ``fp8``, ``s8`` -> ``int8``, ...) and the
    accumulator: ``acc="f16"`` picks the FP16-accumulate row of ``f16`` and ``fp8``."""
    if t in TENSOR_TYPES:
        base = t
    else:
        base = _ALIASES.get(t.lower(), "")
        if not base:
            raise ValueError(f"unknown tensor type {t!r}")
    if acc is not None and acc.lower() in ("f16", "fp16") and base in ("f16", "fp8"):
        return f"{base}_f16acc"
    return base


def _row_type(peaks: GpuPeaks, t: str) -> str:
    """FP16-accumulate rows exist only where the accumulator changes the rate; elsewhere the one
    printed figure covers both."""
    if t.endswith("_f16acc") and peaks.record(f"peak.tc.{t}.fma_per_clk_sm") is None \
            and peaks.record(f"peak.tc.{t}.dense_tflops") is None:
        return t.removesuffix("_f16acc")
    return t


def _has_sparse(peaks: GpuPeaks, t: str) -> bool:
    return any(r.key.startswith(f"peak.tc.{t}.sparse_") for r in peaks.records)


def clock_for(peaks: GpuPeaks, t: str) -> float | None:
    """Clock (MHz) of the published figure of tensor type ``t``: FP64 tensor figures use the boost clock."""
    return peaks.boost_mhz if t == "f64" else peaks.tc_mhz


def fma_per_clk_sm(peaks: GpuPeaks | None, t: str, *, sparse: bool = False, acc: str | None = None) -> float | None:
    """Tensor-core multiply-accumulates per clock per SM (dense; 2:4 sparse: twice, where the GPU has
    sparse figures). None where the GPU lacks the type, nothing is published, or ``peaks`` is None."""
    if peaks is None:
        return None
    tt = _row_type(peaks, tensor_type(t, acc))
    v = peaks.value(f"peak.tc.{tt}.fma_per_clk_sm")
    if v is None or (sparse and not _has_sparse(peaks, tt)):
        return None
    return v * (2 if sparse else 1)


def tensor_tflops(peaks: GpuPeaks | None, t: str, *, sparse: bool = False, acc: str | None = None,
                  clock_mhz: float | None = None) -> float | None:
    """Tensor peak in TFLOPS (TOPS for integers): as published, or at ``clock_mhz`` from the per-SM rate
    (2 operations per FMA x SMs)."""
    if peaks is None:
        return None
    if clock_mhz is not None:
        rate = fma_per_clk_sm(peaks, t, sparse=sparse, acc=acc)
        return None if rate is None else 2 * rate * peaks.sm_count * clock_mhz / 1e6
    tt = _row_type(peaks, tensor_type(t, acc))
    u = "tops" if tt in _INT_TYPES else "tflops"
    return peaks.value(f"peak.tc.{tt}.{'sparse' if sparse else 'dense'}_{u}")


def tensor_source(peaks: GpuPeaks, t: str, *, acc: str | None = None) -> str:
    """Where the per-SM rate of ``t`` comes from, in words (for a figure's method text)."""
    tt = _row_type(peaks, tensor_type(t, acc))
    r = peaks.record(f"peak.tc.{tt}.fma_per_clk_sm")
    if r is None:
        return f"{peaks.model}: no published {tt} tensor rate"
    dense = next((x for x in peaks.records if x.key.startswith(f"peak.tc.{tt}.dense_")), None)
    if dense is None:
        return f"{peaks.model}: {r.value:g} FMA/clk/SM dense {tt} ({SOURCES[r.paper]}, {r.table})"
    return (f"{peaks.model}: {r.value:g} FMA/clk/SM dense {tt} = {dense.value:g} {dense.unit} / (2 x "
            f"{peaks.sm_count} SMs x {clock_for(peaks, tt):g} MHz) ({SOURCES[dense.paper]}, {dense.table})")
