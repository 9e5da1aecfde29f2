"""Published memory-hierarchy figures, transcribed from the seed papers.

Papers (``paper`` is the seed-file prefix):

* ``"000"`` Luo et al., *Dissecting the NVIDIA Hopper Architecture* (journal version), §4:
  Table II (specs), Table III (P-chase latency), Table IV (fine-grained L2 latency),
  Table V (throughput).
* ``"003"`` the conference version of the same study: Table III (specs), Table IV
  (latency), Table V (throughput, which adds an FP64 column).
* ``"002"`` Jia et al., *Dissecting the NVIDIA Volta GPU Architecture via
  Microbenchmarking*, chapter 3 (Tables 3.1-3.4, Fig. 3.2 caption, Fig. 3.12 text,
  §3.3 text) and chapter 5 (Table 5.3, §5.3 text).
* ``"001"`` Sun et al., *Dissecting Tensor Cores via Microbenchmarks*, §7 Table 10.

Values are exactly as printed. A ``~`` (approximately) in the source, a range, a
bound ("up to", ">=") or a reading that needed interpretation is said in ``note``.
Where a paper prints the same quantity twice with different numbers (table vs. text),
both are kept, told apart by ``table``.

Key naming rule: ``mem.<kind>.<what>[_<qualifier>]_<unit suffix>``, where

* ``<kind>`` is ``latency``, ``size``, ``line``, ``granularity``, ``tlb``, ``carveout``,
  ``bw`` or ``bank``;
* the unit suffix fixes the unit: ``_cycles`` -> cycles, ``_ns`` -> ns,
  ``_bytes`` -> bytes, ``_per_clk_sm`` -> bytes/clk/SM, ``_per_clk`` -> bytes/clk,
  ``_gbps`` -> GB/s, ``_gibps`` -> GiB/s (only where the paper prints GiB/s);
* sizes are converted to bytes with binary prefixes (KB = KiB = 2**10, MB = MiB = 2**20,
  GB = 2**30 bytes), which is how the papers use them for capacities;
* per-access-width throughput keys are ``mem.bw.<level>.<width>_<suffix>`` with width
  ``fp32``, ``fp64`` or ``fp32v4``; the headline ``mem.bw.<level>_<suffix>`` holds the
  largest of that table's widths for that GPU;
* ``_theoretical`` marks a printed theoretical/peak bound rather than a measurement;
* ranges printed as one cell become ``..._min_`` / ``..._max_`` keys (L1 size) or the
  low end under the plain key plus ``..._upper_`` (000 L2 latency, see notes);
* TLB page-entry sizes differ per TLB level in 002, so they are per level
  (``mem.tlb.l1_page_bytes``, ``mem.tlb.l2_page_bytes``, ...), not one ``mem.tlb.page_bytes``;
* bank-conflict latency: ``mem.bank.<u32|u64>.latency_<N>way_cycles`` (1way = no conflict).

GPU labels are the papers' short names; ``"V100"`` is the PCIe card (002 measured all of
chapter 3 on PCIe cards) and ``"V100-NVLink"`` the SXM2/NVLink card of 002 chapter 5.
"""

from __future__ import annotations

from dataclasses import dataclass

KiB = 1024
MiB = 1024**2
GiB = 1024**3


@dataclass(frozen=True)
class Published:
    key: str  # a gpudissect figure key
    gpu: str  # short GPU label as the paper names it
    value: float
    unit: str  # "cycles", "bytes", "bytes/clk/SM", "bytes/clk", "GB/s", "GiB/s", "ns"
    paper: str  # seed-file prefix: "000", "001", "002", "003"
    table: str  # e.g. "Table III", "Table 3.3", "Fig. 3.12 (text)"
    note: str = ""


_SUFFIX_UNITS: tuple[tuple[str, str], ...] = (
    ("_cycles", "cycles"),
    ("_ns", "ns"),
    ("_bytes", "bytes"),
    ("_per_clk_sm", "bytes/clk/SM"),
    ("_per_clk", "bytes/clk"),
    ("_gbps", "GB/s"),
    ("_gibps", "GiB/s"),
)


def unit_for_key(key: str) -> str:
    """The unit implied by a key's suffix."""
    for suffix, unit in _SUFFIX_UNITS:
        if key.endswith(suffix):
            return unit
    raise ValueError(f"key {key!r} has no known unit suffix")


def _row(
    paper: str,
    table: str,
    key: str,
    values: dict[str, float],
    note: str = "",
    notes: dict[str, str] | None = None,
) -> list[Published]:
    """One table row: the same key for several GPUs. ``notes`` adds per-GPU notes."""
    unit = unit_for_key(key)
    out = []
    for gpu, value in values.items():
        extra = (notes or {}).get(gpu, "")
        text = "; ".join(t for t in (note, extra) if t)
        out.append(Published(key, gpu, float(value), unit, paper, table, text))
    return out


def _variants(
    paper: str, table: str, level: str, suffix: str, values: dict[str, dict[str, float]],
    notes: dict[str, str] | None = None, width_notes: dict[str, dict[str, str]] | None = None,
) -> list[Published]:
    """Per-width throughput records plus the headline (largest width) per GPU. ``width_notes``
    (width -> GPU -> note) annotate one width's rows only."""
    out: list[Published] = []
    for width in dict.fromkeys(w for per_gpu in values.values() for w in per_gpu):
        wn = (width_notes or {}).get(width, {})
        merged = {g: "; ".join(t for t in ((notes or {}).get(g, ""), wn.get(g, "")) if t)
                  for g in set(notes or {}) | set(wn)}
        out += _row(paper, table, f"mem.bw.{level}.{width}_{suffix}",
                    {g: v[width] for g, v in values.items() if width in v}, notes=merged)
    best = {g: max(v.values()) for g, v in values.items()}
    out += _row(paper, table, f"mem.bw.{level}_{suffix}", best,
                "best of the table's access widths", notes)
    return out


_APPROX = "printed with '~' (approximate)"
_INDEX = ("like-for-like key: the shared-memory chase of the method's code lineage (Jia et al.) is an index chase "
          "(j = s[j], address arithmetic on every hop); gpudissect's mem.latency.shared_cycles is a pointer chase")

# ---------------------------------------------------------------- 000: Hopper journal version
_P000: list[Published] = [
    *_row("000", "Table II", "mem.size.l2_bytes",
          {"A100": 40 * MiB, "RTX4090": 72 * MiB, "H800": 50 * MiB}, "printed in MB"),
    *_row("000", "Table II", "mem.size.l1_smem_combined_per_sm_bytes",
          {"A100": 192 * KiB, "RTX4090": 128 * KiB, "H800": 256 * KiB},
          "row 'Combined L1 Cache & Shared Memory per SM'"),
    *_row("000", "Table II", "mem.size.dram_bytes",
          {"A100": 40 * GiB, "RTX4090": 24 * GiB, "H800": 80 * GiB}, "row 'Mem. Size', printed in GB"),
    *_row("000", "Table II", "mem.bw.dram_theoretical_gbps",
          {"A100": 1555, "RTX4090": 1008, "H800": 2039}, "row 'Mem. Bandwidth' (spec)"),
    # Table III: traditional P-chase with random strides.
    *_row("000", "Table III", "mem.latency.l1_hit_cycles", {"RTX4090": 32.0, "A100": 33.0, "H800": 32.0}),
    *_row("000", "Table III", "mem.latency.shared_cycles", {"RTX4090": 30.1, "A100": 29.0, "H800": 29.0},
          "an index chase (j = s[j]) in the method's code lineage: compare mem.latency.shared_index_chase_cycles"),
    *_row("000", "Table III", "mem.latency.l2_hit_cycles", {"RTX4090": 273.0, "A100": 202.8, "H800": 264.5},
          notes={g: f"printed as range '{r}'; low end kept (the text ties it to arrays under half "
                    "the L2, matching the Table IV near hit)"
                 for g, r in (("A100", "202.8~408"), ("H800", "264.5~502"))}),
    *_row("000", "Table III", "mem.latency.l2_hit_upper_cycles", {"A100": 408, "H800": 502},
          "high end of the printed L2 range (two L2 latencies from the partitioned L2)"),
    *_row("000", "Table III", "mem.latency.dram_cycles", {"RTX4090": 571, "A100": 566, "H800": 656},
          "row 'Global Memory'"),
    # The shared-memory row under its like-for-like key: in the microbenchmark code this study's
    # method descends from (Jia et al.'s, as in accel-sim), the shared-memory chase is an index
    # chase (j = s[j]) while the L1 chase is a u64 pointer chase (ld.global.ca.u64 of the next
    # address), like ours: 32 cycles matches our pointer chase, 29 our index chase.
    *_row("000", "Table III", "mem.latency.shared_index_chase_cycles", {"RTX4090": 30.1, "A100": 29.0, "H800": 29.0},
          _INDEX),
    *_row("000", "§4.1 (text)", "mem.latency.l2_hit_cycles", {"RTX4090": 284.8},
          "text says 'approximately 284.8 clocks'; Table III prints 273.0 for the same figure"),
    # Table IV: fine-grained P-chase, K-means cluster centres.
    *_row("000", "Table IV", "mem.latency.l2_near_hit_cycles", {"A100": 208.0, "H800": 258.0}),
    *_row("000", "Table IV", "mem.latency.l2_far_hit_cycles", {"A100": 356.6, "H800": 414.1}),
    *_row("000", "Table IV", "mem.latency.l2_near_miss_cycles", {"A100": 474.9, "H800": 555.5}),
    *_row("000", "Table IV", "mem.latency.l2_far_miss_cycles", {"A100": 622.7, "H800": 743.7}),
    # Table V: throughput.
    *_variants("000", "Table V", "l1", "bytes_per_clk_sm", {
        "RTX4090": {"fp32": 63.7, "fp32v4": 121.2},
        "A100": {"fp32": 99.5, "fp32v4": 106.8},
        "H800": {"fp32": 125.8, "fp32v4": 124.1}}),
    *_variants("000", "Table V", "l2", "bytes_per_clk", {
        "RTX4090": {"fp32": 1622.2, "fp32v4": 1708.0},
        "A100": {"fp32": 1853.7, "fp32v4": 2007.9},
        "H800": {"fp32": 4472.3, "fp32v4": 3942.4}}),
    *_variants("000", "Table V", "shared", "bytes_per_clk_sm", {
        "RTX4090": {"fp32": 63.7, "fp32v4": 126.5},
        "A100": {"fp32": 127.9, "fp32v4": 126.2},
        "H800": {"fp32": 127.4, "fp32v4": 127.9}}),
    *_variants("000", "Table V", "dram", "gbps", {
        "RTX4090": {"fp32v4": 929.8}, "A100": {"fp32v4": 1407.2}, "H800": {"fp32v4": 1861.5}},
        notes=dict.fromkeys(("RTX4090", "A100", "H800"), "row 'Global Memory'; float4 reads/writes only (§4.2 text)")),
]

# ---------------------------------------------------------------- 003: Hopper conference version
_FP64_BOUND = ("the paper says this FP64 figure is bounded by FP64 add throughput "
               "(16 byte/clk/SM), not by the cache")
_P003: list[Published] = [
    *_row("003", "Table III", "mem.size.dram_bytes",
          {"A100": 40 * GiB, "RTX4090": 24 * GiB, "H800": 80 * GiB}, "row 'Mem. Size', printed in GB"),
    *_row("003", "Table III", "mem.bw.dram_theoretical_gbps",
          {"A100": 1555, "RTX4090": 1008, "H800": 2039}, "row 'Mem. Bandwidth' (spec)"),
    *_row("003", "Table IV", "mem.latency.l1_hit_cycles", {"RTX4090": 43.4, "A100": 37.9, "H800": 40.7}),
    # The same row under its like-for-like key: the study's released code (HPMLL/NVIDIA-Hopper-Benchmark,
    # RegularUnits/l1_lat/l1_lat.cu) times 32768 hops of a u64 pointer chase over 4096 sequential elements it
    # has just written, with no pass before the first clock read; memory_pchase.cu's paper_l1_lat runs
    # that form. 000 Table III's 32.0 comes from its random_latency benchmark (a warm random chase).
    *_row("003", "Table IV", "mem.latency.l1_papers_code_cycles", {"RTX4090": 43.4, "A100": 37.9, "H800": 40.7},
          "like-for-like key: the released l1_lat code times the first pass over its freshly written chain "
          "(32768 ld.global.ca.u64 hops over 4096 sequential u64, no warm-up); gpudissect's "
          "mem.latency.l1_hit_cycles is a warm random chase"),
    *_row("003", "Table IV", "mem.latency.shared_cycles", {"RTX4090": 30.1, "A100": 29.0, "H800": 29.0}),
    *_row("003", "Table IV", "mem.latency.l2_hit_cycles", {"RTX4090": 273.0, "A100": 261.5, "H800": 263.0},
          "superseded by 000 Table III/IV, which the journal says overturns these L2 results"),
    *_row("003", "Table IV", "mem.latency.dram_cycles", {"RTX4090": 541.5, "A100": 466.3, "H800": 478.8},
          "row 'Global'; 32-byte transactions at a fixed stride after TLB warm-up (§III-A)"),
    *_variants("003", "Table V", "l1", "bytes_per_clk_sm", {
        "RTX4090": {"fp32": 63.7, "fp64": 13.3, "fp32v4": 121.2},
        "A100": {"fp32": 99.5, "fp64": 120.0, "fp32v4": 106.8},
        "H800": {"fp32": 125.8, "fp64": 16.0, "fp32v4": 124.1}},
        width_notes={"fp64": {"RTX4090": _FP64_BOUND, "H800": _FP64_BOUND}}),
    *_variants("003", "Table V", "l2", "bytes_per_clk", {
        "RTX4090": {"fp32": 1622.2, "fp64": 1500.8, "fp32v4": 1708.0},
        "A100": {"fp32": 1853.7, "fp64": 1990.4, "fp32v4": 2007.9},
        "H800": {"fp32": 4472.3, "fp64": 1817.3, "fp32v4": 3942.4}},
        width_notes={"fp64": {"RTX4090": _FP64_BOUND, "H800": _FP64_BOUND}}),
    *_row("003", "Table V", "mem.bw.shared_bytes_per_clk_sm",
          {"RTX4090": 127.9, "A100": 128.0, "H800": 127.9},
          "one value per GPU; the table prints no access width for shared memory"),
    *_variants("003", "Table V", "dram", "gbps", {
        "RTX4090": {"fp32v4": 929.8}, "A100": {"fp32v4": 1407.2}, "H800": {"fp32v4": 1861.5}},
        notes=dict.fromkeys(("RTX4090", "A100", "H800"), "row 'Global Memory'; float4 reads (§III-A)")),
]

# ---------------------------------------------------------------- 002: Volta technical report
_G5 = ("V100", "P100", "P4", "M60", "K80")  # Table 3.1 column order


def _t31(key: str, values: tuple[float | None, ...], note: str = "",
         notes: dict[str, str] | None = None) -> list[Published]:
    """A Table 3.1 row in column order V100, P100, P4, M60, K80 (None: '-' in the table)."""
    return _row("002", "Table 3.1", key, {g: v for g, v in zip(_G5, values, strict=True) if v is not None},
                note, notes)


_GIB_LABEL = ("printed in 'GiB/s'; the numbers match decimal-GB/s arithmetic "
              "(e.g. NVIDIA's 900 GB/s V100 spec, which §3 text gives as 900 GB/s), so the label is doubtful")
_P002: list[Published] = [
    # Table 3.1 — L1 data cache.
    *_t31("mem.size.l1_bytes", (None, 24 * KiB, 24 * KiB, 24 * KiB, None)),
    *_t31("mem.size.l1_min_bytes", (32 * KiB, None, None, None, 16 * KiB),
          "L1 size printed as a range ('32...128 KiB' V100, '16...48 KiB' K80): low end"),
    *_t31("mem.size.l1_max_bytes", (128 * KiB, None, None, None, 48 * KiB),
          "L1 size printed as a range ('32...128 KiB' V100, '16...48 KiB' K80): high end"),
    *_t31("mem.line.l1_bytes", (32, 32, 32, 32, 128)),
    *_t31("mem.latency.l1_hit_cycles", (28, 82, 82, 82, 35),
          notes={"P100": "§3.1.1 text says 'an average latency of 84 cycles on Pascal'",
                 "K80": "§3.1.1 text says Kepler's L1 hit latency 'was 32 clock cycles'"}),
    *_t31("mem.granularity.l1_load_bytes", (32, 32, 32, 32, 128), "row 'Load granularity'"),
    *_t31("mem.granularity.l1_update_bytes", (128, 128, 128, 128, 128), "row 'Update granularity'"),
    # Table 3.1 — L2 data cache.
    *_t31("mem.size.l2_bytes", (6144 * KiB, 4096 * KiB, 2048 * KiB, 2048 * KiB, 1536 * KiB)),
    *_t31("mem.line.l2_bytes", (64, 32, 32, 32, 32)),
    *_t31("mem.latency.l2_hit_cycles", (193, 234, 216, 207, 200), _APPROX),
    # Table 3.1 — constant caches.
    *_t31("mem.latency.const_l1_broadcast_cycles", (27, 24, 25, 25, 30), _APPROX),
    *_t31("mem.size.const_l1_bytes", (2 * KiB,) * 5),
    *_t31("mem.line.const_l1_bytes", (64,) * 5),
    *_t31("mem.latency.const_l15_broadcast_cycles", (89, 96, 87, 81, 92), _APPROX),
    *_t31("mem.size.const_l15_bytes", (64 * KiB, 64 * KiB, 32 * KiB, 32 * KiB, 32 * KiB),
          notes=dict.fromkeys(("V100", "P100"), "printed '>=64 KiB' (lower bound)")),
    *_t31("mem.line.const_l15_bytes", (256,) * 5),
    *_t31("mem.latency.const_l2_broadcast_cycles", (245, 236, 225, 221, 220), _APPROX),
    # Table 3.1 — instruction caches (Volta names its levels L0/L1/L2, older GPUs L1/L1.5/L2).
    *_t31("mem.size.icache_l0_bytes", (12 * KiB, None, None, None, None), _APPROX),
    *_t31("mem.size.icache_l1_bytes", (128 * KiB, 8 * KiB, 8 * KiB, 8 * KiB, 8 * KiB),
          "levels as the paper names them: Volta's L1 icache plays the role of the older L1.5"),
    *_t31("mem.size.icache_l15_bytes", (None, 128 * KiB, 32 * KiB, 32 * KiB, 32 * KiB)),
    *_t31("mem.size.icache_l2_bytes", (6144 * KiB, 4096 * KiB, 2048 * KiB, 2048 * KiB, 1536 * KiB),
          "unified with the L2 data cache"),
    # Table 3.1 — TLBs.
    *_t31("mem.tlb.l1_coverage_bytes", (32 * MiB, 32 * MiB, 32 * MiB, 2 * MiB, 2 * MiB),
          notes=dict.fromkeys(_G5[1:], _APPROX)),
    *_t31("mem.tlb.l1_page_bytes", (2 * MiB, 2 * MiB, 2 * MiB, 128 * KiB, 128 * KiB), "row 'Page entry'"),
    *_t31("mem.tlb.entry_reach_bytes", (2 * MiB, 2 * MiB, 2 * MiB, 128 * KiB, 128 * KiB),
          "the L1 TLB 'Page entry' row under the key of what gpudissect measures: the address range one "
          "first-level entry covers"),
    *_t31("mem.tlb.l2_coverage_bytes", (8192 * MiB, 2048 * MiB, 2048 * MiB, 128 * MiB, 128 * MiB), _APPROX),
    *_t31("mem.tlb.l2_page_bytes", (32 * MiB, 32 * MiB, 32 * MiB, 2 * MiB, 2 * MiB), "row 'Page entry'"),
    *_t31("mem.tlb.l3_coverage_bytes", (None, None, None, 2048 * MiB, 2048 * MiB), _APPROX),
    *_t31("mem.tlb.l3_page_bytes", (None, None, None, 2 * MiB, 2 * MiB), "row 'Page entry'"),
    # Table 3.1 — shared memory.
    *_t31("mem.size.shared_per_sm_bytes", (96 * KiB, 64 * KiB, 64 * KiB, 96 * KiB, 48 * KiB),
          notes={"V100": "printed 'up to 96 KiB' (configurable)"}),
    *_t31("mem.size.shared_per_chip_bytes", (7689 * KiB, 3584 * KiB, 1280 * KiB, 1536 * KiB, 624 * KiB),
          notes={"V100": "printed 'up to 7,689 KiB'; 80 SMs x 96 KiB would be 7,680 KiB (likely a typo), "
                         "kept as printed"}),
    *_t31("mem.bank.width_bytes", (4, 4, 4, 4, 8), "row 'Bank width (w_s)'"),
    *_t31("mem.latency.shared_cycles", (19, 24, 23, 23, 26), "row 'No-conflict latency'"),
    *_t31("mem.bw.shared_theoretical_gibps", (13800, 9519, 3919, 2410, 2912),
          "chip-wide P*B_s*w_s*f_g; " + _GIB_LABEL,
          notes={"V100": "80*32*4 B*1380 MHz gives 14,131 GB/s, not the printed 13,800"}),
    *_t31("mem.bw.shared_gibps", (12080, 7763, 3555, 2122, 2540), "chip-wide, via nvprof; " + _GIB_LABEL),
    # Table 3.1 — global memory.
    *_t31("mem.size.dram_bytes", (16152 * MiB, 16276 * MiB, 8115 * MiB, 8155 * MiB, 12237 * MiB),
          "row 'Global memory Size' (usable size as reported, in MiB)"),
    *_t31("mem.bw.dram_theoretical_gibps", (900, 732, 192, 160, 240), "whitepaper values; " + _GIB_LABEL),
    *_t31("mem.bw.dram_gibps", (750, 510, 162, 127, 191), "global-to-global copy; " + _GIB_LABEL),
    *_row("002", "Ch. 3 intro (text)", "mem.bw.dram_theoretical_gbps", {"V100": 900},
          "'HBM2 memory, which offers a bandwidth of 900 GB/s (at 877 MHz)' (NVIDIA figure)"),
    # Fig. 3.2 caption: fine-grained p-chase over global memory on V100.
    *_row("002", "Fig. 3.2 (caption)", "mem.latency.l1_hit_cycles", {"V100": 28}),
    *_row("002", "Fig. 3.2 (caption)", "mem.latency.l2_hit_cycles", {"V100": 193}),
    *_row("002", "Fig. 3.2 (caption)", "mem.latency.dram_cycles", {"V100": 375},
          "'L2 cache miss latency with a TLB hit'"),
    *_row("002", "Fig. 3.2 (caption)", "mem.latency.dram_tlb_miss_cycles", {"V100": 1029},
          "first access: 'both L2 cache miss and TLB miss'"),
    # Table 3.2: L1 load throughput per SM, ld.global.ca.f64 kernel (Listing 3.1).
    *_variants("002", "Table 3.2", "l1", "bytes_per_clk_sm", {
        g: {"fp64": v} for g, v in zip(_G5, (108.3, 31.3, 15.7, 15.7, 68.6), strict=True)},
        notes=dict.fromkeys(_G5, "64-bit loads (Listing 3.1), the table's only width")),
    *_row("002", "Table 3.2", "mem.bw.l1_theoretical_bytes_per_clk_sm",
          dict(zip(_G5, (256.0, 128.0, 128.0, 256.0, 256.0), strict=True)), "row 'Theoretical upper bound'"),
    *_row("002", "§3.1.1 (text)", "mem.bw.l1.fp64_bytes_per_clk_sm", {"V100": 109.1},
          "text says 109.1 bytes/cycle/SM; Table 3.2 prints 108.3"),
    # Table 3.3: L1 size detected per shared-memory configuration (V100).
    *[r for n, det, exp in ((0, 121, 128), (64, 57, 64), (96, 25, 32)) for r in (
        *_row("002", "Table 3.3", f"mem.carveout.smem_{n}kb.l1_bytes", {"V100": det * KiB},
              "row 'Detected size of L1 data cache'"),
        *_row("002", "Table 3.3", f"mem.carveout.smem_{n}kb.l1_expected_bytes", {"V100": exp * KiB},
              "row 'Expected size of L1 data cache'"))],
    # Table 3.4: L2 load throughput, ld.global.cg.f64 kernel (Listing 3.2).
    *_variants("002", "Table 3.4", "l2", "gbps", {
        g: {"fp64": v} for g, v in zip(_G5, (2155, 1624, 979, 446, 339), strict=True)},
        notes=dict.fromkeys(_G5, "64-bit loads (Listing 3.2), the table's only width")),
    # §3.3 text: instruction-cache lines on V100.
    *_row("002", "§3.3 (text)", "mem.line.icache_l0_bytes", {"V100": 256}, "3-way, 16 sets"),
    *_row("002", "§3.3 (text)", "mem.line.icache_l1_bytes", {"V100": 512}, "8-way, 32 sets"),
    # Fig. 3.12 text: V100 TLBs.
    *_row("002", "Fig. 3.12 (text)", "mem.tlb.l1_page_bytes", {"V100": 2 * MiB}),
    *_row("002", "Fig. 3.12 (text)", "mem.tlb.l1_coverage_bytes", {"V100": 32 * MiB}),
    *_row("002", "Fig. 3.12 (text)", "mem.tlb.l2_coverage_bytes", {"V100": 8192 * MiB}, "'about 8192 MiB'"),
    # Chapter 5: V100 PCIe vs NVLink.
    *_row("002", "Table 5.3", "mem.bw.l1_per_sm_gbps", {"V100": 150.56, "V100-NVLink": 160.85},
          "row 'L1 cache per SM'", {"V100": "column 'V100 PCIe'"}),
    *_row("002", "Table 5.3", "mem.bw.l2_gbps", {"V100": 2155, "V100-NVLink": 2321},
          "row 'L2 cache per GPU'", {"V100": "column 'V100 PCIe'"}),
    *_row("002", "Table 5.3", "mem.bw.shared_per_sm_gbps", {"V100": 151.76, "V100-NVLink": 168.39},
          "row 'shared memory per SM'", {"V100": "column 'V100 PCIe'"}),
    *_row("002", "§5.3 (text)", "mem.latency.dram_cycles", {"V100": 391, "V100-NVLink": 405},
          "global memory access latency", {"V100": "PCIe card"}),
    *_row("002", "§5.3 (text)", "mem.latency.dram_ns", {"V100": 28.3, "V100-NVLink": 26.5},
          "global memory access latency", {"V100": "PCIe card"}),
]

# ---------------------------------------------------------------- 001: Ampere tensor cores, §7
_T10_GPU = "GPU inferred: Table 10 names none; §7's other results (Fig. 15, Table 9) are on A100"
_P001: list[Published] = [
    *[r for width, vals in (("u32", {1: 23.0, 2: 25.0, 4: 29.0, 8: 37.0}),
                            ("u64", {2: 25.1, 4: 29.1, 8: 37.0}))
      for n, v in vals.items()
      for r in _row("001", "Table 10", f"mem.bank.{width}.latency_{n}way_cycles", {"A100": v},
                    f"ld.shared.{width}" + (", column 'no-conflict'" if n == 1 else "") + f"; {_T10_GPU}")],
]

MEMORY: tuple[Published, ...] = (*_P000, *_P003, *_P002, *_P001)

UNRECOVERED: tuple[str, ...] = (
    "mem.bank.latency_32way_cycles (and 16-/32-way keys): 001 Table 10 stops at 8-way; "
    "002 Fig. 3.9 shows 1..32-way conflicts on V100/P100/P4/M60/K80 only as a plot, with no numbers",
    "001 Table 10 ld.shared.u64 no-conflict latency: printed 'NA'",
    "002 Fig. 3.12 TLB-miss latency plateaus (V100 etc.): plot only; only sizes are in the text",
    "002 Fig. 3.7 constant-cache latency vs. distinct addresses: plot only",
    "002 Figs. 3.10/3.11 shared/global bandwidth bars: plot only (the same numbers are in Table 3.1)",
    "000 Table IV cluster sizes (K-means group populations): not printed; only cluster centres",
    "000/003 Fig. 2 latency-vs-footprint inflection points (L2 partition knee): only described as "
    "'approximately half of the L2 cache size and the full L2 cache size', no number printed",
)

NOT_TRANSCRIBED: tuple[str, ...] = (
    "002 Table 3.1 rows that are counts or policies, not values with a unit: L1 number of sets, "
    "update policy, physical-address indexing, constant-cache sets/associativity, shared banks per SM "
    "(32), register banks/width, memory bus type, clock rates, measured/theoretical ratio",
    "000/003 Table V 'L2 vs. Global' ratios (derived)",
    "DSM/SM-to-SM and TMA latencies and bandwidths in 000 §5/§7 and 003 §IV (not memory hierarchy)",
    "001 Table 9 ldmatrix latency/throughput and the §7 '~2 cycles/way' penalty remark",
)

_GPU_ORDER = ("H800", "A100", "RTX4090", "V100", "V100-NVLink", "P100", "P4", "M60", "K80")


def published(key: str, gpu: str | None = None) -> list[Published]:
    """Records for ``key`` (optionally one GPU), in paper/table order."""
    return [p for p in MEMORY if p.key == key and (gpu is None or p.gpu == gpu)]


def gpus() -> list[str]:
    """GPUs that appear, newest first as in ``_GPU_ORDER``, then any others by first appearance."""
    seen = list(dict.fromkeys(p.gpu for p in MEMORY))
    return [g for g in _GPU_ORDER if g in seen] + [g for g in seen if g not in _GPU_ORDER]


def keys() -> list[str]:
    """All keys, sorted."""
    return sorted({p.key for p in MEMORY})
