"""Independent public measurements of H100-class GPUs, transcribed from their raw output, for
docs/results/independent.md (dev/docs_independent.py) and the report's published columns.

Each record is a ``Published`` whose ``paper`` names its source in ``SOURCES`` (where it is, how it measures)
and whose ``gpu`` names a variant in ``VARIANTS``; ``table`` is the file (at the commit read) or the place in
the thread, and the row or cell the value is printed in. Values are as printed; where one figure stands for
several printed cells (a median of a matrix diagonal), the cells are kept here and the note says so. The key
is one of ours only where the method measures the same thing; ``note`` says where the method differs.

Rows are picked by a fixed rule, not by eye: a latency level at the row whose footprint is nearest a point
inside that level (L1: 16 KiB; L2: 8 MiB, within one 25 MB partition; DRAM: 200 MiB = 4 x L2, our largest
footprint, where TLB misses add to their chase as to ours); a bandwidth at the largest footprint not above ours
(L2: our L2/4 = 12.5 MiB; DRAM: our 2 GiB read); a stream at full occupancy.

``per_spec`` (a ``peaks`` key) marks figures that scale with the card's memory: the page compares them as a
fraction of each card's own datasheet figure (``gpudissect.reference.peaks``), not as raw values.

The tensor-core reproduction of the Hopper study's code (``tensor.REPRODUCTION``) is the source ``"repro"``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from .memory import Published, unit_for_key


@dataclass(frozen=True)
class Source:
    title: str
    url: str
    how: str  # how it measures, as far as the records' notes do not say


@dataclass(frozen=True)
class Variant:
    what: str  # the product, as the source names it and as we know it
    peaks: str | None = None  # its gpudissect.reference.peaks label (datasheet figures), if it has one


@dataclass(frozen=True)
class PublicRun(Published):
    per_spec: str = ""  # a peaks key: compare ours / that figure of our card with theirs / that of theirs


OURS = "H100-SXM5"  # the variant of our committed figures (results/h100-sxm5-80gb)

VARIANTS: dict[str, Variant] = {
    "H100-SXM5": Variant("H100 SXM5 80GB HBM3: 132 SMs, up to 1980 MHz, 700 W (our figures' card)", "H100-SXM5"),
    "H100-PCIe": Variant("H100 PCIe 80GB HBM2e: 114 SMs, up to 1755 MHz, 350 W, 2.0 TB/s", "H100-PCIe"),
    "GH200": Variant("GH200 Grace Hopper: its Hopper GPU has 132 SMs, up to 1980 MHz (the clock the source "
                     "printed); the source names no memory size, so no datasheet figure is used"),
    "H200": Variant("H200 141GB HBM3e: 132 SMs (the files' thread counts), up to 1980 MHz, 4.8 TB/s, 60 MiB L2 (as the "
                    "driver of our H200 runs reports); "
                    "the files name no form factor: scaled by the H200 SXM datasheet", "H200-SXM"),
}

GB = "gpu-benches"
NCCL = "nccl-1264"
SOURCES: dict[str, Source] = {
    "repro": Source(
        "The Hopper study's released benchmark code run on an H100 SXM5 (Johnsonms/NVIDIA-Hopper-Benchmark, "
        "reproduction/H100-dapperdingo, CUDA 12.9; the logs in its raw/)",
        "https://github.com/Johnsonms/NVIDIA-Hopper-Benchmark",
        "mma latency: one warp on one SM, ILP 1, clock64 around a loop of 10000 dependent mma (loop overhead "
        "included); per-SM rate: the same kernel with 1..32 warps, the best kept; wgmma: event-timed TFLOPS of "
        "all 132 SMs at their own clock, N = 256 (gpudissect.reference.tensor.REPRODUCTION).",
    ),
    GB: Source(
        "gpu-benches (Dominik Ernst et al., FAU Erlangen): the result files committed beside each benchmark",
        "https://github.com/te42kyfo/gpu-benches",
        "Cycles are wall or event time multiplied by the SM clock NVML reported under a warm-up load (printed "
        "on the files' first line), not a clock64 count. Bandwidths are bytes / host-timed kernel time. The "
        "newer files are read at commit 23e586dd (te42kyfo's merge of pull request 18, through a fork's "
        "snapshot that holds it), the files removed by then at 1c36d509.",
    ),
    NCCL: Source(
        "NVIDIA/nccl issue 1264 ('Only ~783GByte/s out of theoretical 900GB/s HGX H100 SXM Nvlink4'): "
        "p2pBandwidthLatencyTest output of an 8 x H100 SXM (HGX) host, in its description",
        "https://github.com/NVIDIA/nccl/issues/1264",
        "CUDA samples' p2pBandwidthLatencyTest: 5 cudaMemcpyPeerAsync of 40,000,000 ints (160 MB) queued "
        "behind a spin kernel, event-timed; on the diagonal (a copy within one GPU) it counts the bytes read "
        "and written (NVIDIA/cuda-samples at ca37378c, Samples/5_Domain_Specific/p2pBandwidthLatencyTest, "
        "'gb *= 2').",
    ),
}

_GB_OLD = "1c36d509"
_GB_NEW = "23e586dd"


def _gb(path: str, commit: str, row: str, key: str, gpu: str, value: float, note: str, per_spec: str = "") -> PublicRun:
    return PublicRun(key, gpu, float(value), unit_for_key(key), GB, f"{path}@{commit}, {row}", note, per_spec)


# gpu-latency, the version of Jan 2023 (H100 PCIe): one block of 64 threads chases one chain of 8-byte pointers
# 64 bytes apart in random order; host wall time of 10^6 hops (best of 7) x the printed 1755 MHz.
_LAT_OLD = ("random pointer chase, 64-byte stride, one block of 64 threads on one chain, host wall time "
            "(best of 7 launches) x the NVML clock 1755 MHz printed at the file's top")
# gpu-latency, the version of Jan 2025 (GH200): one thread; 128-byte lines, each chain visits every line once
# before any again; event-timed, 21 random chains, the median column (the one the repository's plot draws).
_LAT_NEW = ("random pointer chase over 128-byte lines (every line once before any again), one thread, "
            "event-timed, median of 21 chains x the NVML clock 1980 MHz printed at the file's top")
_PCIE_LAT = "gpu-latency/h100_pcie.txt"
_GH_LAT = "gpu-latency/gh200.txt"

_LATENCY: tuple[PublicRun, ...] = (
    _gb(_PCIE_LAT, _GB_OLD, "15 kB row", "mem.latency.l1_hit_cycles", "H100-PCIe", 34.2,
        _LAT_OLD + "; cycles are wall time at the clock NVML read under another kernel: if the chase ran "
                   "below 1755 MHz they are overstated. The newer code (event time, one thread) reads 32.1 on a "
                   "GH200 (below), as our clock64 count does"),
    _gb(_PCIE_LAT, _GB_OLD, "8453 kB row", "mem.latency.l2_hit_cycles", "H100-PCIe", 265.6,
        _LAT_OLD + "; 8 MiB fits one L2 partition (25 MB), as our first .cg plateau does"),
    _gb(_PCIE_LAT, _GB_OLD, "206295 kB row", "mem.latency.dram_cycles", "H100-PCIe", 650.0,
        _LAT_OLD + "; HBM2e behind SMs at up to 1755 MHz against our HBM3 behind 1995 MHz: a DRAM latency "
                   "counted in SM cycles need not match across the two cards"),
    _gb(_GH_LAT, _GB_NEW, "16.0 kB row", "mem.latency.l1_hit_cycles", "GH200", 32.1, _LAT_NEW),
    _gb(_GH_LAT, _GB_NEW, "8298.0 kB row", "mem.latency.l2_hit_cycles", "GH200", 280.4,
        _LAT_NEW + "; 8 MiB fits one L2 partition, as our first .cg plateau does"),
    _gb(_GH_LAT, _GB_NEW, "206832.6 kB row", "mem.latency.dram_cycles", "GH200", 680.4,
        _LAT_NEW + "; GH200's HBM (size not named) behind the same SM clock"),
)

# gpu-l2-cache: blocks of 1024 threads each read a 512 kB block of doubles (const __restrict__, so L1-cacheable)
# cycling over the data set; 100,000 blocks (the files' times), host-timed, best of 7 or 11.
_L2 = ("all SMs stream the data set in 512 kB blocks of doubles (8-byte loads, L1-cacheable: the README says a "
       "block can find its data in L1 where the previous one left it, which lifts small data sets on H100); "
       "host wall time. Ours bypasses L1 (.cg) with 4-byte loads (our 8-byte width, mem.bw.l2.fp64_gbps, is "
       "lower still)")
_L2_DRAM = ("the same benchmark past L2 (2 GiB data set, read only, doubles), as a fraction of each card's "
            "datasheet bandwidth; ours reads 16-byte vectors")
_GB_L2 = "gpu-l2-cache/{}.txt"
_L2BW: tuple[PublicRun, ...] = (
    _gb(_GB_L2.format("h100_pcie"), _GB_NEW, "12288 kB row", "mem.bw.l2_gbps", "H100-PCIe", 6992.5,
        _L2 + "; 114 SMs at up to 1755 MHz against our 132 at 1980 MHz (132 x 1980 = 1.31 x 114 x 1755); the "
              "file prints 512 kB blocks where the code of its commit makes 256 kB (32 doubles a thread): it ran "
              "a local change, likely the 64 its next commit names"),
    _gb(_GB_L2.format("h200"), _GB_NEW, "12288 kB row", "mem.bw.l2_gbps", "H200", 9716.0,
        _L2 + "; the same SM count and clock as ours; the file is the code of its commit run with 100,000 "
              "blocks (its times), not the 200,000 that code names"),
    _gb(_GB_L2.format("h100_pcie"), _GB_NEW, "2071552 kB row", "mem.bw.dram_gbps", "H100-PCIe", 1979.5, _L2_DRAM,
        "peak.mem.dram_gbps"),
    _gb(_GB_L2.format("h200"), _GB_NEW, "2071552 kB row", "mem.bw.dram_gbps", "H200", 3888.5, _L2_DRAM,
        "peak.mem.dram_gbps"),
)

# gpu-stream: 128 Mi doubles per buffer, a shared-memory spoiler allows two blocks per SM; the scale kernel
# (A[i] = B[i] * c) counts 2 x 8 bytes per element, host time of two launches / 2, median of 9.
_STREAM = ("gpu-stream 'scale' (A[i] = B[i] * c, one double per thread, bytes read + written) at 1024 threads "
           "x 2 blocks per SM (100 % occupancy), host-timed; ours is our fastest 16-byte copy kernel. As a "
           "fraction of each card's datasheet bandwidth")
_STREAMS: tuple[PublicRun, ...] = (
    _gb("gpu-stream/h100_pcie.txt", _GB_NEW, "blockSize 1024 row, scale column", "mem.bw.dram.copy_gbps",
        "H100-PCIe", 1704, _STREAM, "peak.mem.dram_gbps"),
    _gb("gpu-stream/h200.txt", _GB_OLD, "blockSize 1024 row, scale column", "mem.bw.dram.copy_gbps", "H200", 3165,
        _STREAM + "; on H200 the one-element-per-thread kernel stays far below the memory's rate (its "
                  "'init' store stream reaches 3884 GB/s)", "peak.mem.dram_gbps"),
)

# gpu-strides: one block of 1024 threads on one SM, every thread reads 64 (2 warps') elements at the stride,
# bytes / (host time x the printed 1980 MHz) = B/cycle for that SM.
_STRIDE = ("one block of 1024 threads on one SM reading L1-resident data at stride 1 (a warp's 32 lanes on "
           "consecutive elements), bytes / (host time x the printed 1980 MHz)")
_STRIDES: tuple[PublicRun, ...] = (
    _gb("gpu-strides/h200.txt", _GB_NEW, "'float stride 1' row, B/cycle column", "mem.bw.l1.fp32_bytes_per_clk_sm",
        "H200", 126, _STRIDE + "; 4-byte floats"),
    _gb("gpu-strides/h200.txt", _GB_NEW, "'double stride 1' row, B/cycle column", "mem.bw.l1.fp64_bytes_per_clk_sm",
        "H200", 128, _STRIDE + "; 8-byte doubles, printed without decimals"),
)

# NVIDIA/nccl#1264, description: 'Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)', the diagonal (GPU 0..7).
P2P_DIAGONAL = (2474.76, 2512.44, 2498.88, 2499.38, 2499.63, 2514.71, 2504.76, 2503.38)
_D2D: tuple[PublicRun, ...] = (
    PublicRun(
        "mem.bw.dram.d2d_copy_gbps", "H100-SXM5", statistics.median(P2P_DIAGONAL), "GB/s", NCCL,
        "description, 'Unidirectional P2P=Disabled Bandwidth Matrix', diagonal",
        "median of the 8 GPUs' diagonal cells (2474.76 .. 2514.71), each a copy within one GPU counted as bytes "
        "read + written, like ours (cuMemcpyDtoD of a 2 GiB buffer, read + written); theirs copies 160 MB five "
        "times with cudaMemcpyPeerAsync (the sample's defaults). Why theirs is lower is not established by the source",
    ),
)

GPU_BENCHES: tuple[PublicRun, ...] = (*_LATENCY, *_L2BW, *_STREAMS, *_STRIDES)
INDEPENDENT: tuple[PublicRun, ...] = (*GPU_BENCHES, *_D2D)
