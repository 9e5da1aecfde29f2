"""Published figures for Hopper's new features, transcribed from the seed papers.

Papers (``paper`` is the seed-file prefix):

* ``"000"`` Luo et al., *Dissecting the NVIDIA Hopper Architecture* (journal version):
  §5 TMA (text on Figs. 2-4), §7 distributed shared memory (§7.1 latency text, §7.2 throughput
  text on Figs. 10-11), §8 DPX (text on Figs. 13-14) and the Smith-Waterman case (text on Fig. 15).
* ``"003"`` the conference version: §III-D (method; NVIDIA's DSM claim), §IV-E (DPX text on
  Figs. 6-7, Tables XIII-XIV asynchronous copy, DSM text on Fig. 8). It prints no TMA number.

Only numbers printed in the text or tables are here; the plots carry none, so per-function DPX
latencies/throughputs, the TMA curves and the DSM/histogram grids are in ``UNRECOVERED``. Values
are exactly as printed; "approximately", "nearly", "over", "up to" and any reading that needed
interpretation are said in ``note``. Where both papers print the same quantity, both are kept
(told apart by ``paper``).

Keys are the figure keys the Hopper suite records (``bench/hopper/tma/``, ``dsm/``,
``dpx.py``, ``smith_waterman.py``) wherever the paper's quantity is the same one; the few the suite has no figure
for follow the same scheme:

* TMA: ``tma.latency_offset_cycles`` (TMA minus ordinary load, same chain),
  ``tma.<bulk|tensor2d|tensor3d>_peak_gbps``, ``tma.stream_read_gbps``;
* DSM latency: ``dsm.latency.local_direct_cycles`` (ld.shared), ``local_via_cluster_cycles``
  (own shared memory through the cluster window), ``remote_cs2_cycles``,
  ``global_sm_to_sm_cycles`` (one SM's store to another's load through global memory),
  ``global_over_dsm_ratio``, ``remote_cs2_vs_l2_reduction_pct``; not in the suite:
  ``remote_all_cs_{min,max}_cycles`` (the range over cluster sizes 2..16, per-size values not
  printed) and ``global_over_dsm_ratio_vendor_claim`` (NVIDIA's figure quoted by the papers);
* DSM throughput: ``dsm.bw.ring_cs<N>_peak_tbps``, ``dsm.bw.self_via_cluster_gbps_per_sm``; not
  in the suite: ``dsm.bw.shared_theoretical_gbps_per_sm``,
  ``dsm.bw.<self_via_cluster|local_direct>_pct_of_theoretical``;
* DPX: the papers name no function with a number; the one figure is
  ``dpx.16bit.max_speedup_vs_emulation`` (compare with the largest
  ``dpx.<fn>_{s16x2,u16x2}[_relu].speedup_vs_sm80``: the suite's compute_80 build is the software
  emulation the papers' A100/RTX4090 run);
* Smith-Waterman: ``sw.gcups.<type>_<build>`` in the suite; the one printed value (RTX 4090, whose
  build target the paper does not state) is ``sw.gcups.half2`` without a build suffix;
* asynchronous copy (003 Tables XIII-XIV): every cell as
  ``async_copy.<syncshare|asyncpipe>.<bs>x<bs>.bpsm<N>_gflops`` (N blocks per SM), the row's
  largest cell as the suite's ``async_copy.<tag>.<bs>x<bs>.peak_gflops``, and the 'Perf' column
  as the suite's ``async_copy.asyncpipe_mean_gain_<bs>x<bs>_pct``. "AsyncPipe" is the paper's
  CUDA-sample kernel (4-byte cp.async), the suite's ``asyncpipe`` tag.

The unit is fixed by the key (``unit_for_key``) and equals the unit the suite's figure of that key
uses (``results/*/units.json``). GPU labels: the papers' short names; 000/003's A100 and H800 are
PCIe cards.
"""

from __future__ import annotations

from .memory import Published

_UNIT_RULES: tuple[tuple[str, str, str], ...] = (  # (kind, text, unit); first match wins
    ("prefix", "sw.gcups.", "GCUPS"),
    ("suffix", "_cycles", "cycles"),
    ("suffix", "_gbps_per_sm", "GB/s"),
    ("suffix", "_gbps", "GB/s"),
    ("suffix", "_tbps", "TB/s"),
    ("suffix", "_gflops", "GFLOP/s"),
    ("suffix", "_pct", "%"),
    ("suffix", "_pct_of_theoretical", "%"),
    ("suffix", "_ratio", "x"),
    ("suffix", "_ratio_vendor_claim", "x"),
    ("suffix", "speedup_vs_emulation", "x"),
)


def unit_for_key(key: str) -> str:
    """The unit implied by a key (the suite's unit for the same key)."""
    for kind, text, unit in _UNIT_RULES:
        if (key.startswith(text) if kind == "prefix" else key.endswith(text)):
            return unit
    raise ValueError(f"key {key!r} has no known unit")


def _rec(paper: str, table: str, key: str, gpu: str, value: float, note: str = "") -> Published:
    return Published(key, gpu, float(value), unit_for_key(key), paper, table, note)


_NEARLY = "printed 'nearly' (approximate)"
_OVER_1800 = ("'In non-tensor, 2D tensor, and 3D tensor scenarios, we reach over 1800GB/s, similar to "
              "Section 4.2': a lower bound; load size and CTA count of the peak not stated (Fig. 3 plot)")
_VENDOR = "NVIDIA's official documentation as quoted by the paper (a claim for Hopper, not a measurement)"

# ---------------------------------------------------------------- 000: journal version
_P000: list[Published] = [
    # §5.1 TMA latency (Fig. 2): only the offset is printed.
    _rec("000", "§5.1 (text, Fig. 2)", "tma.latency_offset_cycles", "H800", 170,
         "'TMA access is approximately 170 cycles higher than regular access' (approximate); "
         "16-byte TMA loads, latency includes mbarrier expect-tx / arrive / wait"),
    # §5.2 TMA throughput (Fig. 3): a bound shared by three copy kinds.
    _rec("000", "§5.2 (text, Fig. 3)", "tma.bulk_peak_gbps", "H800", 1800, "non-tensor copies; " + _OVER_1800),
    _rec("000", "§5.2 (text, Fig. 3)", "tma.tensor2d_peak_gbps", "H800", 1800, _OVER_1800),
    _rec("000", "§5.2 (text, Fig. 3)", "tma.tensor3d_peak_gbps", "H800", 1800, _OVER_1800),
    _rec("000", "Table V (cited by §5.2)", "tma.stream_read_gbps", "H800", 1861.5,
         "the ordinary global-memory read throughput §5.2 compares TMA with ('similar to Section 4.2'): "
         "Table V row 'Global Memory', float4; the same value as mem.bw.dram_gbps in reference/memory.py"),
    # §7.1 DSM latency.
    _rec("000", "§7.1 (text)", "dsm.latency.local_direct_cycles", "H800", 29,
         "'As shown in Table III, when we directly access the shared memory, the latency is 29 cycles'"),
    _rec("000", "§7.1 (text)", "dsm.latency.local_direct_index_chase_cycles", "H800", 29,
         "like-for-like key: the 29 cycles are Table III's shared-memory figure, an index chase (j = s[j], "
         "address arithmetic on every hop) in the method's code lineage; dsm.latency.local_direct_cycles is our "
         "pointer chase"),
    _rec("000", "§7.1 (text)", "dsm.latency.local_via_cluster_cycles", "H800", 33,
         "block's own shared memory through the distributed shared memory interface"),
    _rec("000", "§7.1 (text)", "dsm.latency.remote_cs2_cycles", "H800", 181,
         "cluster size 2, 'the access latency between SMs'; uniform-stride p-chase, one thread per block"),
    _rec("000", "§7.1 (text)", "dsm.latency.remote_cs2_vs_l2_reduction_pct", "H800", 32,
         "'a 32% reduction compared to L2 cache' (L2 latency used not stated; 1 - 181/264.5 (Table III) = 31.6%)"),
    _rec("000", "§7.1 (text)", "dsm.latency.global_sm_to_sm_cycles", "H800", 956,
         "'transferring data from one SM to another via global memory incurs a cost of 956 cycles "
         "(one store and one load)'"),
    _rec("000", "§7.1 (text)", "dsm.latency.global_over_dsm_ratio", "H800", 5.28,
         "'utilizing DSM can reduce this latency by 5.28x' (956 / 181 = 5.28)"),
    _rec("000", "§7.1 (text)", "dsm.latency.global_over_dsm_ratio_vendor_claim", "H800", 7,
         "'close to the 7x reduction reported in NVIDIA's official documentation'; " + _VENDOR),
    _rec("000", "§7.1 (text)", "dsm.latency.remote_all_cs_min_cycles", "H800", 184,
         "'When the cluster size increases from two to sixteen ... the access latencies between different "
         "blocks range from 184 to 213 cycles': low end of one range over all cluster sizes (per-size values "
         "not printed; the cluster-of-2 value 181 printed just before lies below it). Compare with the "
         "smallest dsm.latency.remote_cs<N>_min_cycles"),
    _rec("000", "§7.1 (text)", "dsm.latency.remote_all_cs_max_cycles", "H800", 213,
         "high end of the same range over cluster sizes 2..16; compare with the largest "
         "dsm.latency.remote_cs<N>_max_cycles"),
    # §7.2 DSM throughput.
    _rec("000", "§7.2 (text)", "dsm.bw.shared_theoretical_gbps_per_sm", "H800", 225,
         "printed as '1755MHz x 128Bytes = 225GB/s' (theoretical shared-memory throughput per SM)"),
    _rec("000", "§7.2 (text)", "dsm.bw.self_via_cluster_gbps_per_sm", "H800", 205,
         "'Using the DSM interface to access the block's own memory only reaches 205 GB/s'"),
    _rec("000", "§7.2 (text)", "dsm.bw.self_via_cluster_pct_of_theoretical", "H800", 80,
         "'80% of peak performance' as printed; 205 / 225 is 91%, so one of the printed numbers is off"),
    _rec("000", "§7.2 (text)", "dsm.bw.local_direct_pct_of_theoretical", "H800", 99.8,
         "printed 'over 99.8% of theoretical performance' (lower bound) for shared memory accessed without "
         "the DSM interface, pointing at Table V"),
    _rec("000", "§7.2 (text, Fig. 11)", "dsm.bw.ring_cs2_peak_tbps", "H800", 3.28,
         _NEARLY + "; ring-based pattern, best over block size and ILP; scheduling policy not stated"),
    _rec("000", "§7.2 (text, Fig. 11)", "dsm.bw.ring_cs4_peak_tbps", "H800", 2.78,
         "'reducing to 2.78 TB/s with a cluster size of 4'; ring-based pattern"),
    # §8.1 DPX (Figs. 13-14).
    _rec("000", "§8.1 (text, Figs. 13-14)", "dpx.16bit.max_speedup_vs_emulation", "H800", 13,
         "'For 16-bit operations, H800 also has significant acceleration, up to 13 times' over A100 / "
         "RTX4090 (software emulation); function, and latency vs throughput, not stated"),
    # §8.2 Smith-Waterman (Fig. 15).
    _rec("000", "§8.2 (text, Fig. 15)", "sw.gcups.half2", "RTX4090", 4987.4,
         "'best performance is achieved on the RTX 4090 using half-precision data, reaching 4987.4 GCUPS' "
         "(the largest bar of Fig. 15); half2 uses no DPX; the RTX 4090's build target is not stated"),
]

# ---------------------------------------------------------------- 003: conference version
_BPSM = (1, 2, 4, 8, 16, 32)  # the Blocks/SM columns of Tables XIII-XIV

# (table, gpu, block size, AsyncPipe row, SyncShare row, Perf column in %)
_ASYNC: tuple[tuple[str, str, int, tuple[float, ...], tuple[float, ...], float], ...] = (
    ("Table XIII", "H800", 8, (516.69, 998.45, 1808.5, 2931.29, 3315.38, 3615.99),
     (327.86, 646.58, 1191.48, 2117.56, 2736.06, 2861.75), 39.5),
    ("Table XIII", "H800", 16, (2650.06, 4531.02, 5038.26, 5510.76, 5728.71, 5929.61),
     (2372.41, 3821.71, 4713.84, 5147.53, 5309.23, 5512.41), 9.7),
    ("Table XIII", "H800", 32, (5570.17, 6112.92, 6372.73, 6496.21, 6592.66, 6592.87),
     (5782.03, 6280.8, 6465.53, 6600.58, 6649.46, 6631.11), -1.8),
    ("Table XIV", "A100", 8, (379.03, 798.5, 1544.15, 2429.93, 2825.64, 2888.84),
     (379.03, 742.93, 1325.88, 1982.38, 2112.6, 2256.17), 19.6),
    ("Table XIV", "A100", 16, (2198.21, 2566.83, 3821.09, 4205.72, 4413.69, 4527.82),
     (1754.73, 2974.9, 3724.42, 4015.96, 4207.57, 4316.63), 4.9),
    ("Table XIV", "A100", 32, (4453.52, 4863.73, 5020.21, 5106.74, 5150.78, 5129.68),
     (4428.55, 4917.25, 5024.77, 5025.45, 4996.66, 5028.47), 1.7),
)

# The Perf column is not reproduced exactly by the mean of the printed per-column gains
# (mean of AsyncPipe/SyncShare - 1 over the six columns, the suite's definition):
_PERF_RECOMPUTED = {("H800", 8): 41.63, ("H800", 16): 9.95, ("H800", 32): -1.8,
                    ("A100", 8): 18.05, ("A100", 16): 4.78, ("A100", 32): 1.02}
_ASYNC_HOW = ("globalToShmemAsyncCopy CUDA sample, fp32 tiled GEMM, A's width = B's height = 2048; "
              "printed in 'GFlops/s'")


def _async_rows() -> list[Published]:
    out: list[Published] = []
    for table, gpu, bs, asy, syn, perf in _ASYNC:
        blk = f"{bs}x{bs}"
        for tag, row in (("asyncpipe", asy), ("syncshare", syn)):
            out += [_rec("003", table, f"async_copy.{tag}.{blk}.bpsm{n}_gflops", gpu, v, _ASYNC_HOW)
                    for n, v in zip(_BPSM, row, strict=True)]
            best = max(range(len(row)), key=lambda i: row[i])
            out.append(_rec("003", table, f"async_copy.{tag}.{blk}.peak_gflops", gpu, row[best],
                            f"largest cell of the row (at {_BPSM[best]} blocks/SM); {_ASYNC_HOW}"))
        out.append(_rec("003", table, f"async_copy.asyncpipe_mean_gain_{blk}_pct", gpu, perf,
                        f"column 'Perf' (AsyncPipe over SyncShare); its formula is not stated: the mean of "
                        f"AsyncPipe/SyncShare - 1 over the printed columns is {_PERF_RECOMPUTED[(gpu, bs)]}%"))
    return out


_P003: list[Published] = [
    _rec("003", "§III-D (text)", "dsm.latency.global_over_dsm_ratio_vendor_claim", "H800", 7,
         "'this network can reduce data transfer overhead between blocks on different SMs by up to 7x' "
         "(upper bound); " + _VENDOR),
    _rec("003", "§IV-E (text)", "dpx.16bit.max_speedup_vs_emulation", "H800", 13,
         "'For 16-bit operations, H800 also has significant acceleration, up to 13 times' (Figs. 6-7) over "
         "A100 / RTX4090 (software emulation); function, and latency vs throughput, not stated"),
    *_async_rows(),
    _rec("003", "§IV-E (text)", "dsm.latency.remote_cs2_cycles", "H800", 180,
         "'SM-to-SM network latency is 180 cycles'; two blocks of one thread, clock() around 'adding register "
         "values of the first block to the second one' (§III-D), not 000's p-chase"),
    _rec("003", "§IV-E (text)", "dsm.latency.remote_cs2_vs_l2_reduction_pct", "H800", 32,
         "'a 32% reduction compared to L2 cache' (1 - 180/263.0 (003 Table IV) = 31.6%)"),
    _rec("003", "§IV-E (text, Fig. 8)", "dsm.bw.ring_cs2_peak_tbps", "H800", 3.27,
         _NEARLY + "; ring-based copy (RBC), one block per SM, best over block size and ILP"),
    _rec("003", "§IV-E (text, Fig. 8)", "dsm.bw.ring_cs4_peak_tbps", "H800", 2.65,
         "'reducing to 2.65 TB/s with a cluster size of 4'; ring-based copy (RBC)"),
]

HOPPER: tuple[Published, ...] = (*_P000, *_P003)

UNRECOVERED: tuple[str, ...] = (
    "tma.latency.l2_hit_cycles / tma.latency.dram_cycles / tma.latency.plateau2_cycles / knees: 000 Fig. 2 "
    "TMA latency-vs-footprint curve is a plot; only the ~170-cycle offset is in the text",
    "tma.bulk_16k_peak_gbps and per-size / per-CTA-count TMA throughput: 000 Fig. 3 plot only; the text "
    "gives 'over 1800GB/s' without a load size (kept under tma.bulk_peak_gbps)",
    "tma.tensor1d_peak_gbps: 000 Fig. 3 plot only (text: limited by the 2 KB box, no number)",
    "tma.shape16k.<shape>_peak_gbps: 000 Fig. 4 plot only (text: larger x dimension is faster)",
    "tma.bulk_vs_stream / tensor2d_vs_stream / tensor3d_vs_stream: no ratio printed",
    "dsm.latency.remote_cs<N>_cycles for N = 4, 8, 16 and their per-rank min/max: 000 §7.1 prints only one "
    "range over cluster sizes 2..16 (kept as remote_all_cs_{min,max}_cycles)",
    "dsm.latency.l2_hit_cycles as used for the '32% reduction': not stated which L2 latency",
    "dsm.bw.<ring|pair|broadcast>_cs<N>_peak_tbps per scheduling policy: 000 Fig. 10 plot only "
    "(text: LoadBalancing slightly best, broadcast falls with cluster size)",
    "dsm.bw.ring_cs8/cs16_peak_tbps and the block size x ILP grid: 000 Fig. 11 / 003 Fig. 8 plot only",
    "dsm.bw.pair_*/broadcast_*: no number printed",
    "dsm.histogram.*_elems_per_s: 000 Fig. 12 / 003 Fig. 9 plot only (text: best CS=4 at block 128, CS=2 at "
    "block 512; drop from 1024 to 2048 bins at CS=1)",
    "dsm.placement.*: 000 §7.2 describes SM assignment per policy in words only",
    "dpx.<fn>.latency_cycles / ops_per_clk_sm (and the _sm80 and speedup keys) for H800, A100, RTX4090: "
    "000 Figs. 13-14 = 003 Figs. 6-7 are plots; the text says A100 ~ RTX4090 (emulation), relu and 16-bit "
    "functions much faster on H800, __viaddmax_s32 close on all three, __vibmax_s32 n/a on A100/RTX4090",
    "dpx.<fn>.sweep_*: the blocks-vs-throughput sweep on H800 is described (drop just past each multiple of "
    "the SM count), no figure or number",
    "sw.gcups.<s16|s32|half2|float>_<sm80|sm90> (H800 under compute_80 / compute_90) and A100/RTX4090 "
    "bars: 000 Fig. 15 plot only; only RTX 4090 half2 (4987.4 GCUPS) is printed; orderings in the text: "
    "S32 RTX4090 > H800 > A100, S32 compute_80 ~ compute_90, S16 compute_90 much better",
    "async_copy.asyncpipe_speedup_<bs>: not printed (a ratio of Table XIII/XIV cells, derivable)",
    "async_copy.asyncpipe_8b / asyncpipe_16b: the papers test only the CUDA sample's 4-byte copies",
)

NOT_TRANSCRIBED: tuple[str, ...] = (
    "experiment settings, not results: TMA CTA counts (114/228/342/456 = 1..4 x SMs), load sizes and box "
    "shapes (§5.2), the 16-byte minimum TMA load (§5.1 footnote), the 2 KB 1D-tensor box limit (256 "
    "elements x int64), 50160 blocks and 16 KB shared memory per block (§7.2), 20 queries of 144..5478 "
    "residues against 10^6 sequences of 1024 (§8.2), K = 2048 and block sizes 8..32 (003 §III-D)",
    "Table II/III device rows (SM count, clocks, 'DPX hardware: No/No/Yes'): in reference/tensor.py and "
    "reference/memory.py where numeric",
)

_GPU_ORDER = ("H800", "A100", "RTX4090")


def published(key: str, gpu: str | None = None) -> list[Published]:
    """Records for ``key`` (optionally one GPU), in paper/table order."""
    return [p for p in HOPPER if p.key == key and (gpu is None or p.gpu == gpu)]


def gpus() -> list[str]:
    """GPUs that appear, newest first as in ``_GPU_ORDER``, then any others by first appearance."""
    seen = list(dict.fromkeys(p.gpu for p in HOPPER))
    return [g for g in _GPU_ORDER if g in seen] + [g for g in seen if g not in _GPU_ORDER]


def keys() -> list[str]:
    """All keys, sorted."""
    return sorted({p.key for p in HOPPER})
