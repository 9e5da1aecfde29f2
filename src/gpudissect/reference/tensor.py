"""Published tensor-core figures, transcribed from the seed papers.

Papers (``paper`` is the seed-file prefix):

* ``"001"`` Sun et al., *Dissecting Tensor Cores via Microbenchmarks*: Table 3 (dense mma, A100),
  Table 4 (dense, RTX3070Ti), Table 5 (dense, RTX2080Ti), Table 6 (sparse mma.sp, A100),
  Table 7 (sparse, RTX3070Ti), Table 8 (ldmatrix / ld.shared bytes per instruction),
  Table 9 (ldmatrix, A100), the Table 3 caption (per-SM peaks), and the §5-§7 text on
  Figs. 6, 7, 10, 11 and 15 (BF16 mma / mma.sp and ldmatrix.x4, values read out in the text).
* ``"000"`` Luo et al., *Dissecting the NVIDIA Hopper Architecture* (journal version), §6.2:
  Table VII (PTX -> SASS, kept apart in ``SASS_MAP_PUBLISHED``), Table VIII (mma dense/sparse,
  A100 / RTX4090 / H800, with peaks in its caption), Table IX (dense wgmma, H800), Table X
  (sparse wgmma), Table XI (wgmma N sweep), Table XII (mma power / efficiency), Table XIII
  (wgmma clock / performance / efficiency), and Table II rows that the tensor figures need.

Values are exactly as printed; anything that needed reading (an "around" in the text, a
compressed sparse shape, an unnamed FP8 format, ...) is said in ``note``.

Key naming rule (the same keys the tensor suite records):

* dense mma: ``tc.mma.<a>_<c>.<shape>.<what>``; sparse: ``tc.mma_sp.<a>_<c>.<shape>.<what>``,
  with ``<shape>`` the PTX instruction's own shape (``m16n8k32`` for the FP16 sparse shape that
  000 Table VIII prints compressed as ``m16n8k16``);
* ``<a>_<c>``: PTX type of A/B and of C/D: ``f16_f16``, ``f16_f32``, ``bf16_f32``, ``tf32_f32``,
  ``e4m3_f16``, ``e4m3_f32``, ``s8_s32``, ``s4_s32``, ``b1_s32``;
* ``latency_cycles``: completion latency (1 warp, ILP 1; one warpgroup for wgmma);
* Sun's two convergence points (4 and 8 warps/SM): ``conv_w4_ilp`` (the ILP printed beside
  ``(#warp,ILP)``), ``conv_w4_latency_cycles``, ``conv_w4_fma_per_clk_sm`` (``..._bytes_per_clk_sm``
  for ldmatrix), likewise ``conv_w8_*``; ``conv_w1_*`` where the text gives the one-warp optimum;
  ``peak_fma_per_clk_sm`` / ``bytes_per_clk_sm`` is the larger of the two convergence points;
* Luo's throughputs: ``peak_tflops`` (integer types: ``peak_tops``) for mma;
  wgmma: ``latency_cycles`` (SS mode), ``rs_latency_cycles``, ``<ss|rs>_<zero|rand>_tflops``
  (``_tops`` for s8);
* ldmatrix: ``tc.ldmatrix.<x1|x2|x4>.<what>``; instruction sizes ``warp_bytes``/``thread_bytes``;
* power: ``tc.power.<mma|mma_sp|wgmma|wgmma_sp>.<a>_<c>.<shape>.<what>`` with ``watts``,
  ``tflops_per_watt`` / ``tops_per_watt`` (Table XII: initialisation not stated, so no
  zero/rand part), ``<ss|rs>_<zero|rand>_{sm_mhz,tflops,tops,tflops_per_watt,tops_per_watt}``;
* vendor peaks quoted by the papers: ``tc.peak.<type>_theoretical_<tflops|tops|fma_per_clk_sm>``;
* device facts from 000 Table II: ``tc.device.{sm_count,tensor_core_count,max_sm_mhz}``;
* the unit is fixed by the key's suffix (``unit_for_key``).

GPU labels: the papers' short names. 000's A100 and H800 are PCIe cards (000 Table II).
"""

from __future__ import annotations

from dataclasses import dataclass

from .memory import Published
from .peaks import H100_SXM5, fma_per_clk_sm
from .peaks import peaks_for as peaks_for  # the per-GPU lookup, beside the old Hopper table

_SUFFIX_UNITS: tuple[tuple[str, str], ...] = (  # longest first where one ends another
    ("tflops_per_watt", "TFLOPS/W"),
    ("tops_per_watt", "TOPS/W"),
    ("fma_per_clk_sm", "FMA/clk/SM"),
    ("bytes_per_clk_sm", "bytes/clk/SM"),
    ("tflops", "TFLOPS"),
    ("tops", "TOPS"),
    ("cycles", "cycles"),
    ("watts", "W"),
    ("mhz", "MHz"),
    ("ilp", "ILP"),
    ("bytes", "bytes"),
    ("count", "count"),
)


def unit_for_key(key: str) -> str:
    """The unit implied by a key's suffix (the last '.' or '_'-separated words)."""
    for suffix, unit in _SUFFIX_UNITS:
        if key.endswith(suffix) and key[-len(suffix) - 1] in "._":
            return unit
    raise ValueError(f"key {key!r} has no known unit suffix")


def _rec(paper: str, table: str, key: str, gpu: str, value: float, note: str = "") -> Published:
    return Published(key, gpu, float(value), unit_for_key(key), paper, table, note)


# ---------------------------------------------------------------- 001: Sun et al.
# Tables 3-7 share one layout: A/B, C/D, shape, completion latency, then two convergence
# points "(#warp,ILP) | latency | throughput", the first always at 4 warps, the second at 8.
_Conv = tuple[str, str, str, float, tuple[int, int], float, float, tuple[int, int], float, float]

_T3_A100: tuple[_Conv, ...] = (
    ("FP16", "FP32", "m16n8k16", 24.7, (4, 3), 27.4, 897.6, (8, 2), 32.6, 1004.2),
    ("FP16", "FP32", "m16n8k8", 17.7, (4, 4), 20.5, 800.2, (8, 3), 25.3, 974.1),
    ("FP16", "FP16", "m16n8k16", 24.4, (4, 3), 27.1, 907.1, (8, 2), 32.9, 996.6),
    ("FP16", "FP16", "m16n8k8", 17.7, (4, 4), 19.1, 860.9, (8, 3), 24.5, 1002.6),
    ("TF32", "FP32", "m16n8k8", 25, (4, 3), 28.2, 435.9, (8, 2), 33.3, 492.4),
    ("TF32", "FP32", "m16n8k4", 18.1, (4, 4), 20.9, 392.6, (8, 3), 25.7, 477.5),
    ("INT8", "INT32", "m8n8k16", 15.9, (4, 4), 20.1, 813.2, (8, 2), 16.4, 998.3),
    ("INT8", "INT32", "m16n8k32", 24.7, (4, 3), 27.1, 1812.4, (8, 2), 32.9, 1986.5),
    ("INT8", "INT32", "m16n8k16", 17.6, (4, 4), 20.9, 1570.1, (8, 3), 25.1, 1965.1),
    ("INT4", "INT32", "m16n8k32", 18.1, (4, 4), 22.1, 2971.1, (8, 3), 27.1, 3630.0),
    ("INT4", "INT32", "m16n8k64", 26.1, (4, 3), 28.1, 3497.9, (8, 2), 35.8, 3660.8),
    ("Binary", "INT32", "m16n8k128", 18.1, (4, 4), 22.1, 11884.3, (8, 3), 27.1, 14515.1),
    ("Binary", "INT32", "m16n8k256", 26.0, (4, 3), 28.1, 13985.4, (8, 2), 35.8, 14643.4),
)
_T4_3070TI: tuple[_Conv, ...] = (
    ("FP16", "FP32", "m16n8k16", 33, (4, 1), 33, 248.2, (8, 1), 64.8, 252.7),
    ("FP16", "FP32", "m16n8k8", 18.8, (4, 2), 32.3, 253.9, (8, 1), 32.4, 253.2),
    ("FP16", "FP16", "m16n8k16", 24, (4, 2), 32.2, 509.4, (8, 1), 32.3, 506.9),
    ("FP16", "FP16", "m16n8k8", 17.7, (4, 3), 24, 511.8, (8, 2), 32.3, 507.8),
    ("TF32", "FP32", "m16n8k8", 33.3, (4, 1), 33.4, 122.6, (8, 1), 64.6, 126.8),
    ("TF32", "FP32", "m16n8k4", 19.1, (4, 2), 32.7, 125.3, (8, 1), 32.6, 125.7),
    ("INT8", "INT32", "m8n8k16", 15.9, (4, 4), 19.3, 848.9, (8, 2), 16.2, 1008.5),
    ("INT8", "INT32", "m16n8k32", 24.3, (4, 2), 32.2, 1017.2, (8, 1), 32.1, 1023.2),
    ("INT8", "INT32", "m16n8k16", 17.7, (4, 3), 24.1, 1018.2, (8, 2), 32.6, 1005.4),
    ("INT4", "INT32", "m16n8k32", 17.3, (4, 3), 24.9, 1967.9, (8, 2), 32.3, 2031.7),
    ("INT4", "INT32", "m16n8k64", 24.5, (4, 2), 33.3, 1967.9, (8, 1), 32.5, 2013.5),
    ("Binary", "INT32", "m16n8k128", 17.3, (4, 3), 24.8, 7908.3, (8, 2), 32.3, 8127.2),
    ("Binary", "INT32", "m16n8k256", 24.6, (4, 2), 33.3, 7871.9, (8, 1), 32.5, 8053.9),
)
_T5_2080TI: tuple[_Conv, ...] = (
    ("FP16", "FP32", "m16n8k8", 17.3, (4, 2), 32.5, 252.4, (8, 1), 32.1, 255.1),
    ("FP16", "FP16", "m16n8k8", 14.7, (4, 2), 17.5, 467.9, (8, 1), 16.1, 509.4),
    ("INT8", "INT32", "m8n8k16", 11, (4, 3), 14.5, 846.1, (8, 2), 16.2, 1012.6),
)
_T6_A100_SP: tuple[_Conv, ...] = (
    ("FP16", "FP32", "m16n8k32", 24.7, (4, 3), 27.4, 1791.9, (8, 2), 33.1, 1979.1),
    ("FP16", "FP32", "m16n8k16", 17.8, (4, 3), 20.4, 1024.5, (8, 2), 25.4, 1290.5),
    ("FP16", "FP16", "m16n8k32", 24.3, (4, 3), 26.6, 1850.9, (8, 2), 32.4, 2019.8),
    ("FP16", "FP16", "m16n8k16", 17.6, (4, 3), 19.8, 1242.9, (8, 2), 24.9, 1318.2),
    ("TF32", "FP32", "m16n8k16", 24.9, (4, 3), 28.3, 868.2, (8, 2), 33.9, 981.2),
    ("TF32", "FP32", "m16n8k8", 18.2, (4, 3), 20.6, 597.8, (8, 2), 25.5, 643.6),
    ("INT8", "INT32", "m16n8k64", 24.7, (4, 3), 27.7, 3544.7, (8, 2), 33.1, 3961.5),
    ("INT8", "INT32", "m16n8k32", 17.9, (4, 3), 20.4, 2403.9, (8, 2), 25.4, 2665.2),
)
_T7_3070TI_SP: tuple[_Conv, ...] = (
    ("FP16", "FP32", "m16n8k32", 33, (4, 1), 33, 496.5, (8, 1), 64.1, 511.2),
    ("FP16", "FP32", "m16n8k16", 18.8, (4, 2), 32.3, 507.8, (8, 1), 32.4, 506.2),
    ("FP16", "FP16", "m16n8k32", 24.3, (4, 2), 32, 1022.2, (8, 1), 32.1, 1022.3),
    ("FP16", "FP16", "m16n8k16", 17.7, (4, 3), 24.2, 1013.4, (8, 2), 32, 1023.1),
    ("TF32", "FP32", "m16n8k16", 33.2, (4, 1), 33.2, 247, (8, 1), 64.2, 255.1),
    ("TF32", "FP32", "m16n8k8", 19, (4, 2), 32.5, 252.5, (8, 1), 32.4, 253.2),
    ("INT8", "INT32", "m16n8k64", 24.3, (4, 2), 64.2, 2040.2, (8, 1), 32.1, 2039.5),
    ("INT8", "INT32", "m16n8k32", 17.7, (4, 3), 24.2, 2028.8, (8, 2), 32.3, 2031.8),
)

# Paper type names -> PTX type names used in our keys.
_TYPE = {"FP16": "f16", "BF16": "bf16", "TF32": "tf32", "FP32": "f32", "INT8": "s8", "INT32": "s32",
         "INT4": "s4", "Binary": "b1", "FP8": "e4m3"}
_INT_NOTE = "printed as INT8/INT4/Binary; the PTX signedness (s8/u8, s4/u4) is not stated, filed as s8/s4"
_B1_NOTE = "printed as 'Binary'; the PTX operation (and.popc / xor.popc) is not stated"


def _types(ab: str, cd: str) -> str:
    return f"{_TYPE[ab]}_{_TYPE[cd]}"


def _type_note(ab: str) -> str:
    return {"INT8": _INT_NOTE, "INT4": _INT_NOTE, "Binary": _B1_NOTE}.get(ab, "")


def _conv_rows(table: str, gpu: str, family: str, rows: tuple[_Conv, ...], extra: str = "") -> list[Published]:
    out: list[Published] = []
    for ab, cd, shape, lat, (w4, ilp4), lat4, thr4, (w8, ilp8), lat8, thr8 in rows:
        assert (w4, w8) == (4, 8)  # every row of Tables 3-7 converges at 4 and 8 warps
        base = f"tc.{family}.{_types(ab, cd)}.{shape}"
        note = "; ".join(t for t in (_type_note(ab), extra) if t)
        out += [
            _rec("001", table, f"{base}.latency_cycles", gpu, lat, note),
            _rec("001", table, f"{base}.conv_w4_ilp", gpu, ilp4, note),
            _rec("001", table, f"{base}.conv_w4_latency_cycles", gpu, lat4, note),
            _rec("001", table, f"{base}.conv_w4_fma_per_clk_sm", gpu, thr4, note),
            _rec("001", table, f"{base}.conv_w8_ilp", gpu, ilp8, note),
            _rec("001", table, f"{base}.conv_w8_latency_cycles", gpu, lat8, note),
            _rec("001", table, f"{base}.conv_w8_fma_per_clk_sm", gpu, thr8, note),
            _rec("001", table, f"{base}.peak_fma_per_clk_sm", gpu, max(thr4, thr8),
                 "; ".join(t for t in ("larger of the table's two convergence points", note) if t)),
        ]
    return out


_FIG6 = ("§5 (text, Fig. 6)", "BF16 inferred: §5 gives 'a detailed analysis for the BF16 data type' and "
         "Table 3 lists 'the rest of the data types'")
_FIG7 = ("§5 (text, Fig. 7)", _FIG6[1])
_FIG10 = ("§6 (text, Fig. 10)", "BF16 inferred: Fig. 8 shows a BF16 mma.sp and the text calls Fig. 11 "
          "'the behavior of the BF16 data type'")
_FIG11 = ("§6 (text, Fig. 11)", _FIG10[1])
_AROUND = "text says 'around'"

_P001: list[Published] = [
    *_conv_rows("Table 3", "A100", "mma", _T3_A100),
    *_conv_rows("Table 4", "RTX3070Ti", "mma", _T4_3070TI),
    *_conv_rows("Table 5", "RTX2080Ti", "mma", _T5_2080TI),
    *_conv_rows("Table 6", "A100", "mma_sp", _T6_A100_SP),
    *_conv_rows("Table 7", "RTX3070Ti", "mma_sp", _T7_3070TI_SP),
    # Table 3 caption: "The peak performance of FP16, TF32, INT8, INT4 and Binary are 1024, 512,
    # 2048, 4096, and 16384 FMA/clock/SM respectively".
    *[_rec("001", "Table 3 (caption)", f"tc.peak.{t}_theoretical_fma_per_clk_sm", "A100", v, "vendor figure")
      for t, v in (("f16", 1024), ("tf32", 512), ("s8", 2048), ("s4", 4096), ("b1", 16384))],
    # §5 text on Fig. 6 (BF16 mma.m16n8k16, A100).
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.latency_cycles", "A100", 25, f"{_AROUND} 25; {_FIG6[1]}"),
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.peak_fma_per_clk_sm", "A100", 1000,
         f"'the measured peak throughput is 1000'; {_FIG6[1]}"),
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.conv_w1_ilp", "A100", 3, _FIG6[1]),
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.conv_w1_fma_per_clk_sm", "A100", 230,
         f"'#warp = 1 ... peak throughput is 230 ... converges at ILP = 3'; {_FIG6[1]}"),
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.conv_w4_ilp", "A100", 3, f"'#warps = 4 with ILP >= 3'; {_FIG6[1]}"),
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.conv_w4_fma_per_clk_sm", "A100", 900, f"'(900 v.s. 1000)'; {_FIG6[1]}"),
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.conv_w8_ilp", "A100", 2, f"'#warps = 8 and ILP >= 2'; {_FIG6[1]}"),
    _rec("001", _FIG6[0], "tc.mma.bf16_f32.m16n8k16.conv_w8_fma_per_clk_sm", "A100", 1000, f"'(900 v.s. 1000)'; {_FIG6[1]}"),
    # §5 text on Fig. 7 (BF16 mma.m16n8k8, A100).
    _rec("001", _FIG7[0], "tc.mma.bf16_f32.m16n8k8.latency_cycles", "A100", 18, f"{_AROUND} 18; {_FIG7[1]}"),
    _rec("001", _FIG7[0], "tc.mma.bf16_f32.m16n8k8.peak_fma_per_clk_sm", "A100", 1000, f"{_AROUND} 1000; {_FIG7[1]}"),
    _rec("001", _FIG7[0], "tc.mma.bf16_f32.m16n8k8.conv_w4_ilp", "A100", 4, _FIG7[1]),
    _rec("001", _FIG7[0], "tc.mma.bf16_f32.m16n8k8.conv_w4_fma_per_clk_sm", "A100", 800, f"'(800 v.s. 1000)'; {_FIG7[1]}"),
    _rec("001", _FIG7[0], "tc.mma.bf16_f32.m16n8k8.conv_w8_ilp", "A100", 3, _FIG7[1]),
    _rec("001", _FIG7[0], "tc.mma.bf16_f32.m16n8k8.conv_w8_fma_per_clk_sm", "A100", 1000, f"'(800 v.s. 1000)'; {_FIG7[1]}"),
    # §6 text on Figs. 10 and 11 (BF16 mma.sp, A100).
    _rec("001", _FIG10[0], "tc.mma_sp.bf16_f32.m16n8k32.latency_cycles", "A100", 24.7, _FIG10[1]),
    _rec("001", _FIG10[0], "tc.mma_sp.bf16_f32.m16n8k32.peak_fma_per_clk_sm", "A100", 2000,
         f"'The peak throughput achieves at 2000'; {_FIG10[1]}"),
    _rec("001", _FIG11[0], "tc.mma_sp.bf16_f32.m16n8k16.latency_cycles", "A100", 17.9, _FIG11[1]),
    _rec("001", _FIG11[0], "tc.mma_sp.bf16_f32.m16n8k16.peak_fma_per_clk_sm", "A100", 1300,
         f"'The peak throughput can only reach 1300'; {_FIG11[1]}"),
]

# Table 8: bytes per instruction (an ISA property; §7 measured on A100).
_T8_NOTE = "instruction size, not a measurement"
_P001 += [
    _rec("001", "Table 8", f"tc.{name}.warp_bytes", "A100", w, _T8_NOTE) for name, w, _ in (
        ("ldmatrix.x1", 128, 4), ("ldmatrix.x2", 256, 8), ("ldmatrix.x4", 512, 16),
        ("ld_shared.u32", 128, 4), ("ld_shared.u64", 256, 8))
] + [
    _rec("001", "Table 8", f"tc.{name}.thread_bytes", "A100", t, _T8_NOTE) for name, _, t in (
        ("ldmatrix.x1", 128, 4), ("ldmatrix.x2", 256, 8), ("ldmatrix.x4", 512, 16),
        ("ld_shared.u32", 128, 4), ("ld_shared.u64", 256, 8))
]

# Table 9: ldmatrix on A100 (its Bytes/warp column repeats Table 8).
for _x, _lat, (_w4, _i4), _l4, _t4, (_w8, _i8), _l8, _t8 in (
    ("x1", 23.1, (4, 5), 26.8, 95.4, (8, 4), 32.1, 127.7),
    ("x2", 25.1, (4, 4), 32.1, 127.8, (8, 2), 32.1, 127.7),
    ("x4", 29.3, (4, 2), 32.2, 127.3, (8, 1), 32.6, 125.9),
):
    _b = f"tc.ldmatrix.{_x}"
    _P001 += [
        _rec("001", "Table 9", f"{_b}.latency_cycles", "A100", _lat),
        _rec("001", "Table 9", f"{_b}.conv_w4_ilp", "A100", _i4),
        _rec("001", "Table 9", f"{_b}.conv_w4_latency_cycles", "A100", _l4),
        _rec("001", "Table 9", f"{_b}.conv_w4_bytes_per_clk_sm", "A100", _t4),
        _rec("001", "Table 9", f"{_b}.conv_w8_ilp", "A100", _i8),
        _rec("001", "Table 9", f"{_b}.conv_w8_latency_cycles", "A100", _l8),
        _rec("001", "Table 9", f"{_b}.conv_w8_bytes_per_clk_sm", "A100", _t8),
        _rec("001", "Table 9", f"{_b}.bytes_per_clk_sm", "A100", max(_t4, _t8),
             "larger of the table's two convergence points"),
    ]
_P001 += [
    _rec("001", "§7 (text, Fig. 15)", "tc.ldmatrix.x4.latency_cycles", "A100", 29,
         "text says 29 cycles; Table 9 prints 29.3"),
    _rec("001", "§7 (text, Fig. 15)", "tc.ldmatrix.x4.conv_w1_ilp", "A100", 4),
    _rec("001", "§7 (text, Fig. 15)", "tc.ldmatrix.x4.conv_w1_bytes_per_clk_sm", "A100", 64,
         "'If there is only one warp, the peak measured throughput is only around 64'"),
]

# ---------------------------------------------------------------- 000: Luo et al., §6.2
_G3 = ("A100", "RTX4090", "H800")
_SP_SHAPE = ("Table VIII prints the compressed sparse shape; the instruction's k is twice it "
             "(§6.2 text), so m16n8k{k} is filed as m16n8k{k2}")
_LAT_TPUT = tuple[float, float]
# Table VIII rows: A/B, C/D, printed shape, then (LAT, throughput) dense/sparse per GPU in _G3 order.
_T8: tuple[tuple[str, str, str, tuple[_LAT_TPUT, ...]], ...] = (
    ("FP16", "FP16", "m16n8k8", ((17.7, 310.0), (17.3, 408.4), (17.7, 355.3), (17.3, 713.2), (16.0, 368.6), (16.0, 493.8))),
    ("FP16", "FP16", "m16n8k16", ((24.6, 310.6), (24.5, 622.8), (24.6, 357.6), (24.5, 711.8), (24.1, 494.4), (24.0, 722.8))),
    ("FP16", "FP32", "m16n8k8", ((17.5, 299.6), (18.0, 394.1), (18.8, 177.8), (18.8, 357.4), (16.0, 363.7), (16.0, 488.7))),
    ("FP16", "FP32", "m16n8k16", ((26.0, 303.4), (24.5, 603.3), (33.0, 178.9), (33.0, 356.0), (24.1, 490.7), (24.0, 721.8))),
    ("TF32", "FP32", "m16n8k4", ((17.8, 149.5), (18.2, 196.8), (19.2, 89.0), (19.0, 178.0), (16.5, 180.6), (16.4, 240.7))),
    ("TF32", "FP32", "m16n8k8", ((26.3, 151.5), (26.7, 301.5), (33.4, 89.0), (33.3, 178.7), (24.5, 246.4), (24.4, 363.3))),
    ("INT8", "INT32", "m16n8k16", ((17.6, 594.8), (18.0, 788.5), (17.3, 707.6), (17.3, 1412), (16.1, 730.3), (16.1, 970.0))),
    ("INT8", "INT32", "m16n8k32", ((26.0, 607.6), (26.6, 1210), (24.5, 711.7), (24.6, 1423), (24.0, 977.9), (24.2, 1435))),
)


def _double_k(shape: str) -> str:
    head, k = shape.split("k")
    return f"{head}k{2 * int(k)}"


def _tput_suffix(ab: str) -> str:
    return "tops" if ab.startswith("INT") else "tflops"


_P000: list[Published] = []
for _ab, _cd, _shape, _cells in _T8:
    _t = _types(_ab, _cd)
    _sfx = _tput_suffix(_ab)
    for _i, _gpu in enumerate(_G3):
        (_dl, _dt), (_sl, _st) = _cells[2 * _i], _cells[2 * _i + 1]
        _sp = _double_k(_shape)
        _spn = _SP_SHAPE.format(k=_shape.split("k")[1], k2=_sp.split("k")[1])
        _n = _type_note(_ab)
        _P000 += [
            _rec("000", "Table VIII", f"tc.mma.{_t}.{_shape}.latency_cycles", _gpu, _dl, _n),
            _rec("000", "Table VIII", f"tc.mma.{_t}.{_shape}.peak_{_sfx}", _gpu, _dt, _n),
            _rec("000", "Table VIII", f"tc.mma_sp.{_t}.{_sp}.latency_cycles", _gpu, _sl, "; ".join(x for x in (_spn, _n) if x)),
            _rec("000", "Table VIII", f"tc.mma_sp.{_t}.{_sp}.peak_{_sfx}", _gpu, _st, "; ".join(x for x in (_spn, _n) if x)),
        ]
# Table VIII caption: vendor peaks.
for _gpu, (_f16, _tf32, _i8) in {"A100": (312, 156, 624), "RTX4090": (330.3, 82.6, 660.6),
                                  "H800": (756.5, 378, 1513)}.items():
    _P000 += [
        _rec("000", "Table VIII (caption)", "tc.peak.f16_theoretical_tflops", _gpu, _f16),
        _rec("000", "Table VIII (caption)", "tc.peak.tf32_theoretical_tflops", _gpu, _tf32),
        _rec("000", "Table VIII (caption)", "tc.peak.s8_theoretical_tops", _gpu, _i8, "printed 'INT8 (... TOPS)'"),
    ]
# Table IX caption (H800): "The peak throughputs for FP16, TF32, FP8, and INT8 are 756.5, 373, 1513, and 1513".
_P000 += [
    _rec("000", "Table IX (caption)", "tc.peak.f16_theoretical_tflops", "H800", 756.5),
    _rec("000", "Table IX (caption)", "tc.peak.tf32_theoretical_tflops", "H800", 373,
         "Table VIII's caption prints 378 for the same peak"),
    _rec("000", "Table IX (caption)", "tc.peak.fp8_theoretical_tflops", "H800", 1513),
    _rec("000", "Table IX (caption)", "tc.peak.s8_theoretical_tops", "H800", 1513),
]

_FP8_NOTE = ("printed as 'FP8' without the format; filed as e4m3: the authors' public benchmark "
             "(HPMLL/NVIDIA-Hopper-Benchmark, TensorCores/wgmma) builds e4m3 wgmma tests")
_RAND_LAT = "'Rand' has the same latency as 'Zero' (caption)"
_N128_TEXT = ("§6.2 text says these 128.0-cycle latencies are 'with N set to 128', but the table prints "
              "m64n256 and Table XI gives 64.0 cycles at N = 128")


def _wgmma_rows(table: str, family: str, t: str, shape: str, ss: _LAT_TPUT, rs: _LAT_TPUT,
                ss_rand: float, rs_rand: float, sfx: str, note: str = "") -> list[Published]:
    base = f"tc.{family}.{t}.{shape}"
    lat_note = "; ".join(x for x in ("SS mode, zero operands", _RAND_LAT, note) if x)
    return [
        _rec("000", table, f"{base}.latency_cycles", "H800", ss[0], lat_note),
        _rec("000", table, f"{base}.rs_latency_cycles", "H800", rs[0],
             "; ".join(x for x in ("RS mode, zero operands", _RAND_LAT, note) if x)),
        _rec("000", table, f"{base}.ss_zero_{sfx}", "H800", ss[1], note),
        _rec("000", table, f"{base}.rs_zero_{sfx}", "H800", rs[1], note),
        _rec("000", table, f"{base}.ss_rand_{sfx}", "H800", ss_rand, note),
        _rec("000", table, f"{base}.rs_rand_{sfx}", "H800", rs_rand, note),
    ]


# Table IX (dense) and Table X (sparse): A/B, C/D, shape, (SS zero LAT/T), (RS zero LAT/T), SS rand, RS rand.
_T9 = (
    ("FP16", "FP16", "m64n256k16", (128.0, 729.3), (128.0, 729.2), 704.5, 703.7),
    ("FP16", "FP32", "m64n256k16", (128.0, 728.5), (128.0, 731.9), 665.4, 667.5),
    ("TF32", "FP32", "m64n256k8", (128.0, 364.4), (128.0, 364.6), 357.1, 357.3),
    ("FP8", "FP16", "m64n256k32", (128.0, 1448.4), (128.0, 1448.0), 1439.2, 1440.3),
    ("FP8", "FP32", "m64n256k32", (128.0, 1447.5), (128.0, 1455.0), 1417.2, 1419.8),
    ("INT8", "INT32", "m64n256k32", (128.0, 1448.7), (128.0, 1447.9), 1442.3, 1442.2),
)
_T10 = (
    ("FP16", "FP16", "m64n256k32", (144.0, 1308.0), (128.0, 1472.0), 1257.8, 1362.3),
    ("FP16", "FP32", "m64n256k32", (144.0, 1312.3), (128.0, 1476.2), 1194.3, 1277.5),
    ("TF32", "FP32", "m64n256k16", (144.0, 656.8), (128.0, 735.4), 644.9, 721.7),
    ("FP8", "FP16", "m64n256k64", (144.0, 2619.9), (128.0, 2945.0), 2588.6, 2782.4),
    ("FP8", "FP32", "m64n256k64", (144.0, 2622.8), (128.0, 2931.0), 2588.7, 2722.3),
    ("INT8", "INT32", "m64n256k64", (144.0, 2612.4), (128.0, 2933.0), 2593.9, 2898.3),
)
for _ab, _cd, _shape, _ss, _rs, _ssr, _rsr in _T9:
    _n = "; ".join(x for x in (_FP8_NOTE if _ab == "FP8" else _type_note(_ab), _N128_TEXT) if x)
    _P000 += _wgmma_rows("Table IX", "wgmma", _types(_ab, _cd), _shape, _ss, _rs, _ssr, _rsr, _tput_suffix(_ab), _n)
for _ab, _cd, _shape, _ss, _rs, _ssr, _rsr in _T10:
    _n = _FP8_NOTE if _ab == "FP8" else _type_note(_ab)
    _n = "; ".join(x for x in ("table prints 'sp.' + the instruction shape", _n) if x)
    _P000 += _wgmma_rows("Table X", "wgmma_sp", _types(_ab, _cd), _shape, _ss, _rs, _ssr, _rsr, _tput_suffix(_ab), _n)

# Table XI: wgmma.m64nNk16.f32.f16.f16 over N; the sparse half is the FP16->FP32 sp.m64nNk32
# instruction of Table X (its N = 256 row repeats Table X's FP16/FP32 row exactly).
_T11 = (
    (256, (128.0, 728.5), (128.0, 731.9), 665.4, 667.5, (144.0, 1312.3), (128.0, 1476.2), 1194.3, 1277.5),
    (128, (64.0, 728.5), (64.0, 725.4), 659.8, 661.7, (80.0, 1176.4), (64.0, 1463.3), 1109.6, 1270.5),
    (64, (32.0, 719.6), (32.0, 719.7), 648.3, 649.9, (48.0, 977.4), (32.0, 1450.1), 969.9, 1263.4),
    (32, (24.0, 477.3), (16.0, 710.3), 471.5, 634.4, (32.0, 727.1), (18.0, 1272.4), 723.4, 1135.7),
    (16, (20.0, 287.0), (13.0, 434.2), 283.5, 426.2, (24.0, 482.3), (18.0, 638.6), 479.8, 636.3),
    (8, (18.0, 158.2), (13.0, 216.7), 157.6, 215.2, (20.0, 289.0), (16.0, 359.4), 286.1, 356.7),
)
for _N, _dss, _drs, _dssr, _drsr, _sss, _srs, _sssr, _srsr in _T11:
    _P000 += _wgmma_rows("Table XI", "wgmma", "f16_f32", f"m64n{_N}k16", _dss, _drs, _dssr, _drsr, "tflops",
                         "wgmma.m64nNk16.f32.f16.f16 (§6.2 text)")
    _P000 += _wgmma_rows("Table XI", "wgmma_sp", "f16_f32", f"m64n{_N}k32", _sss, _srs, _sssr, _srsr, "tflops",
                         "sparse FP16->FP32 sp.m64nNk32 inferred: the N = 256 row equals Table X's FP16/FP32 row")

# Table XII: mma power (W) and efficiency, "maximum shape" of Table VIII; order A100, H800, RTX4090.
_T12_SHAPES = {"FP16": "m16n8k16", "TF32": "m16n8k8", "INT8": "m16n8k32"}  # largest dense shape in Table VIII
_T12 = (
    ("FP16", "FP16", ((173.4, 1.79), (188.6, 2.62), (189.1, 1.89)), ((198.8, 3.13), (187.2, 3.86), (214.0, 3.33))),
    ("FP16", "FP32", ((188.5, 1.61), (196.7, 2.49), (154.1, 1.16)), ((216.1, 2.79), (194.9, 3.70), (165.9, 2.15))),
    ("TF32", "FP32", ((214.7, 0.71), (254.9, 0.97), (174.3, 0.51)), ((235.7, 1.28), (232.5, 1.56), (187.9, 0.95))),
    ("INT8", "INT32", ((178.4, 3.41), (165.3, 5.92), (201.4, 3.53)), ((193.9, 6.24), (163.3, 8.79), (219.8, 6.47))),
)
_T12_NOTE = ("shape = 'maximum shape' of Table VIII (caption){sp}; operand initialisation not stated; "
             "'P stands for energy, measured in Watts' (caption): a power")
for _ab, _cd, _dense, _sparse in _T12:
    _t, _sfx = _types(_ab, _cd), _tput_suffix(_ab)
    for _fam, _cells, _shape in (("mma", _dense, _T12_SHAPES[_ab]), ("mma_sp", _sparse, _double_k(_T12_SHAPES[_ab]))):
        _n = _T12_NOTE.format(sp=", instruction k (twice the printed compressed k)" if _fam == "mma_sp" else "")
        for _gpu, (_p, _e) in zip(("A100", "H800", "RTX4090"), _cells, strict=True):
            _P000 += [
                _rec("000", "Table XII", f"tc.power.{_fam}.{_t}.{_shape}.watts", _gpu, _p, _n),
                _rec("000", "Table XII", f"tc.power.{_fam}.{_t}.{_shape}.{_sfx}_per_watt", _gpu, _e, _n),
            ]

# Table XIII: wgmma clock (MHz) / performance / efficiency on H800, shapes of Tables IX and X.
_T13 = (  # A/B, C/D, dense-or-sparse, SS zero (f, p), RS zero (f, p), SS rand (f, p, e), RS rand (f, p, e)
    ("FP16", "FP16", "D", (1560, 729), (1590, 743), (1275, 595, 1.70), (1275, 600, 1.71)),
    ("FP16", "FP16", "S", (1440, 1192), (1380, 1290), (1200, 997, 2.85), (1185, 1102, 3.15)),
    ("FP16", "FP32", "D", (1485, 688), (1530, 714), (1260, 583, 1.67), (1290, 594, 1.70)),
    ("FP16", "FP32", "S", (1380, 1142), (1320, 1234), (1230, 998, 2.85), (1170, 1081, 3.09)),
    ("TF32", "FP32", "D", (1755, 383), (1755, 384), (1425, 322, 0.92), (1425, 327, 0.93)),
    ("TF32", "FP32", "S", (1560, 644), (1515, 707), (1320, 553, 1.58), (1245, 581, 1.66)),
    ("FP8", "FP16", "D", (1590, 1484), (1620, 1512), (1305, 1213, 3.47), (1320, 1239, 3.54)),
    ("FP8", "FP16", "S", (1455, 2414), (1395, 2605), (1275, 2122, 6.06), (1200, 2256, 6.45)),
    ("FP8", "FP32", "D", (1500, 1401), (1530, 1426), (1290, 1202, 3.43), (1260, 1180, 3.37)),
    ("FP8", "FP32", "S", (1395, 2316), (1335, 2520), (1245, 2052, 5.86), (1185, 2205, 6.30)),
    ("INT8", "INT32", "D", (1755, 1533), (1755, 1534), (1380, 1285, 3.67), (1395, 1306, 3.73)),
    ("INT8", "INT32", "S", (1755, 2580), (1725, 2899), (1290, 2144, 6.13), (1215, 2275, 6.50)),
)
_SHAPE_9_10 = {("D", r[0], r[1]): r[2] for r in _T9} | {("S", r[0], r[1]): r[2] for r in _T10}
for _ab, _cd, _ds, _ssz, _rsz, _ssr, _rsr in _T13:
    _t, _sfx = _types(_ab, _cd), _tput_suffix(_ab)
    _fam = "wgmma" if _ds == "D" else "wgmma_sp"
    _b = f"tc.power.{_fam}.{_t}.{_SHAPE_9_10[(_ds, _ab, _cd)]}"
    _n = "; ".join(x for x in ("shape of Tables IX/X ('The instruction formats are consistent with those "
                               "described in Tables IX and X')", _FP8_NOTE if _ab == "FP8" else "") if x)
    for _mode, _cells in (("ss_zero", _ssz), ("rs_zero", _rsz), ("ss_rand", _ssr), ("rs_rand", _rsr)):
        _P000 += [
            _rec("000", "Table XIII", f"{_b}.{_mode}_sm_mhz", "H800", _cells[0], _n),
            _rec("000", "Table XIII", f"{_b}.{_mode}_{_sfx}", "H800", _cells[1], _n),
        ]
        if len(_cells) == 3:
            _P000.append(_rec("000", "Table XIII", f"{_b}.{_mode}_{_sfx}_per_watt", "H800", _cells[2], _n))

# Table II rows the tensor figures depend on.
for _gpu, (_sms, _tcs, _mhz) in {"A100": (108, 432, 1410), "RTX4090": (128, 512, 2520), "H800": (114, 456, 1755)}.items():
    _P000 += [
        _rec("000", "Table II", "tc.device.sm_count", _gpu, _sms, "row 'SMs * cores per SM'"),
        _rec("000", "Table II", "tc.device.tensor_core_count", _gpu, _tcs, "row '# of Tensor Core'"),
        _rec("000", "Table II", "tc.device.max_sm_mhz", _gpu, _mhz, "row 'Max Clock Rate'"),
    ]

TENSOR: tuple[Published, ...] = (*_P001, *_P000)


# ---------------------------------------------------------------- an independent H100 run of 000's code
# Johnsonms/NVIDIA-Hopper-Benchmark, reproduction/H100-dapperdingo (H100 80GB HBM3 SXM5, CUDA 12.9): the
# benchmark code released with 000 (HPMLL/NVIDIA-Hopper-Benchmark) run on an H100, raw logs in its raw/. Kept
# apart from TENSOR, which holds the two seed papers only (and which tests/reference pins to them): a caller
# that compares with the reproduction asks for REPRODUCTION. How it measures: mma latency, one block of 1 warp
# on one SM, ILP 1, clock64 around a loop of 10000 iterations of one mma (+ __syncwarp) whose C and D are the
# same registers, cycles / 10000 (loop overhead and the fixed cost both in it, the fixed cost spread over
# 10000 mma); per-SM rate, the same kernel with 1..32 warps (the best of them below); wgmma, event-timed
# TFLOPS of all 132 SMs at their own clock (boost up to 1980 MHz), N = 256.
REPRO = "repro"  # `paper` of these records
REPRO_GPU = "H100-SXM5"
_REPRO_MMA = "1 warp on one SM, ILP 1, 10000 dependent mma, clock64 span / 10000"
_REPRO_RATE = "ILP 1, the best of 1, 2, 4, 8, 16, 32 warps on one SM (FMA/SM/clk as printed)"


def _repro(log: str, key: str, value: float, note: str) -> Published:
    return Published(key, REPRO_GPU, float(value), unit_for_key(key), REPRO, f"raw/{log}.log", note)


_REPRO_LAT = (  # log, key part, latency printed, per-SM rate printed (best over warps) or None
    ("mma_m16n8k16", "f16_f16.m16n8k16", 24.0622, 1341.12),
    ("mma_m16n8k16", "f16_f32.m16n8k16", 24.0854, 1339.48),
    ("mma_m16n8k16", "s8_s32.m16n8k16", 16.0017, 2030.52),
    ("mma_m16n8k8", "f16_f16.m16n8k8", 16.0011, 1010.46),
    ("mma_m16n8k8", "f16_f32.m16n8k8", 16.0011, 1004.63),
    ("mma_m16n8k8", "tf32_f32.m16n8k8", 24.1065, 669.378),
    ("mma_m16n8k4", "tf32_f32.m16n8k4", 16.0614, 505.006),
    ("mma_m16n8k32", "s8_s32.m16n8k32", 24.0521, 2680.85),
    ("mma_m16n8k32", "s4_s32.m16n8k32", 223.579, 106.908),
    ("mma_m16n8k32", "e4m3_f32.m16n8k32", 8.8226, 2580.36),
    ("mma_m8n8k16", "s8_s32.m8n8k16", 14.0609, 1020.06),
    ("mma_m16n8k128", "b1and_s32.m16n8k128", 16.0122, 15851.4),
    ("mma_m16n8k256", "b1and_s32.m16n8k256", 24.0661, 10865.6),
)
_REPRO_NOTES = {
    "s4_s32.m16n8k32": "emulated on Hopper (000 §6.2: INT4 mma compiles to IMAD): not a tensor-core latency",
    "e4m3_f32.m16n8k32": "not the instruction's latency: the code's operands are loop-invariant, so ptxas hoists "
    "the fp8 conversions out of the loop (Hopper runs fp8 mma.sync as conversions plus two f16 HMMA)",
    "b1and_s32.m16n8k128": "printed as s32.b1.b1.s32 without the operation: filed under .and.popc, the one "
    "Hopper runs natively (BMMA; .xor.popc is emulated, about a hundred cycles)",
    "b1and_s32.m16n8k256": "printed as s32.b1.b1.s32 without the operation: filed under .and.popc, the one "
    "Hopper runs natively (BMMA; .xor.popc is emulated, about a hundred cycles)",
}
_REPRO_WGMMA = (  # log, type, shape, TFLOPS (TOPS for s8) SS zero, RS zero, SS random, RS random
    ("wgmma_fp16", "f16_f32", "m64n256k16", 974.891, 976.599, 901.785, 901.924),
    ("wgmma_fp16fp16", "f16_f16", "m64n256k16", 976.952, 977.349, 965.451, 967.689),
    ("wgmma_tf32", "tf32_f32", "m64n256k8", 488.165, 488.216, 487.601, 486.732),
    ("wgmma_e4m3", "e4m3_f32", "m64n256k32", 1948.88, 1951.15, 1885.24, 1880.48),
    ("wgmma_s8", "s8_s32", "m64n256k32", 1950.16, 1950.73, 1942.8, 1947.2),
)
REPRODUCTION: tuple[Published, ...] = (
    *[
        _repro(log, f"tc.mma.{k}.latency_cycles", lat, "; ".join(x for x in (_REPRO_MMA, _REPRO_NOTES.get(k)) if x))
        for log, k, lat, _ in _REPRO_LAT
    ],
    *[
        _repro(log, f"tc.mma.{k}.peak_fma_per_clk_sm", rate,
               "; ".join(x for x in (_REPRO_RATE, _REPRO_NOTES.get(k)) if x))
        for log, k, _, rate in _REPRO_LAT
    ],
    *[
        _repro(log, f"tc.wgmma.{t}.{shape}.{mode}_{'tops' if t == 's8_s32' else 'tflops'}", v,
               "all 132 SMs, event-timed" + ("; printed as TFLOPS" if t == "s8_s32" else ""))
        for log, t, shape, *vals in _REPRO_WGMMA
        for mode, v in zip(("ss_zero", "rs_zero", "ss_rand", "rs_rand"), vals, strict=True)
    ],
)


# ---------------------------------------------------------------- PTX -> SASS as published
@dataclass(frozen=True)
class PublishedSass:
    """One published PTX -> SASS pairing. ``sass`` is as printed; '×' = the table marks it unsupported."""

    ptx: str  # the instruction family and types as the source names them, e.g. "mma FP16->FP32"
    gpu: str
    sass: str
    paper: str
    table: str
    family: str  # "mma" | "wgmma" | "wmma"
    ab: str  # A/B type as printed ("FP16", "FP8", "INT4", "Binary", ...)
    cd: str  # C/D type as printed ("" where the source names none)
    shape: str = ""  # PTX shape where the source names it
    note: str = ""


_T7_ROWS = (  # A/B, C/D, mma SASS, wgmma SASS (several where the cell lists several)
    ("FP16", "FP16", ("HMMA.16816.F16",), ("HGMMA.64x256x16.F16",)),
    ("FP16", "FP32", ("HMMA.16816.F32",), ("HGMMA.64x256x16.F32",)),
    ("TF32", "FP32", ("HMMA.1688.F32.TF32",), ("HGMMA.64x256x8.F32.TF32",)),
    ("FP8", "FP16", ("×",), ("QGMMA.64x256x32.F16.E5M2.E5M2", "QGMMA.64x256x32.F16.E4M3.E4M3")),
    ("FP8", "FP32", ("HMMA.16816.F32",), ("QGMMA.64x256x32.F32.E4M3.E4M3", "QGMMA.64x256x32.F32.E5M2.E5M2")),
    ("INT8", "INT32", ("IMMA.16832.S8.S8",), ("IGMMA.64x256x32.S8.S8",)),
    ("INT4", "INT32", ("IMAD.MOV.U32",), ("×",)),
    ("Binary", "INT32", ("BMMA.168256.AND.POPC",), ("BGMMA.64x256x256.AND.POPC",)),
)
_T7_NOTES = {
    ("mma", "INT4"): "§6.2: 'INT4 mma instructions are compiled into a series of IMAD instructions' on Hopper",
    ("mma", "FP8"): "§6.2: 'mma do not support FP16 accumulate' for FP8; FP8/FP32 compiles to HMMA.16816.F32",
    ("wgmma", "INT4"): "§6.2: 'wgmma ... does not support the INT4 data type'",
}

SASS_MAP_PUBLISHED: tuple[PublishedSass, ...] = (
    *[PublishedSass(f"{fam} {ab}->{cd}", "H800", s, "000", "Table VII", fam, ab, cd,
                    note=_T7_NOTES.get((fam, ab), "") or ("'×' in the table: no such instruction" if s == "×" else ""))
      for ab, cd, mma_s, wg_s in _T7_ROWS for fam, cells in (("mma", mma_s), ("wgmma", wg_s)) for s in cells],
    *[PublishedSass("mma INT4->INT32", g, "IMMA.16832.S4.S4", "000", "§6.2 (text)", "mma", "INT4", "INT32",
                    note="'on Ampere and Ada Tensor Cores, mma instructions are compiled into IMMA.16832.S4.S4'")
      for g in ("Ampere", "Ada")],
    PublishedSass("mma BF16 m16n8k8", "A100", "HMMA.1688.FP32.BF16", "001", "§5 (text)", "mma", "BF16", "",
                  "m16n8k8", "C/D type not named in the sentence"),
    PublishedSass("mma BF16 m16n8k16", "A100", "HMMA.16816.FP32.BF16", "001", "§5 (text)", "mma", "BF16", "",
                  "m16n8k16", "C/D type not named in the sentence"),
    PublishedSass("mma m8n8k4", "Turing", "HMMA.884", "001", "§2.2 (text, Fig. 3)", "mma", "", "", "m8n8k4",
                  "'compiled into a couple of HMMA.884 instructions'"),
    PublishedSass("mma m8n8k4", "Ampere", "FPU instructions", "001", "§2.2 (text, Fig. 3)", "mma", "", "", "m8n8k4",
                  "'compiled into a set of FPU instructions which will eventually run on the CUDA cores'"),
    PublishedSass("wmma.mma m16n16k16", "Ampere", "2 x HMMA.16816", "001", "§2.2 (text, Fig. 3)", "wmma", "", "",
                  "m16n16k16", "'one legacy wmma.mma.m16n16k16 is compiled into two HMMA.16816'; "
                  "the text says the same holds on Turing"),
)


UNRECOVERED: tuple[str, ...] = (
    "tc.cublas.<type>.<size>.tflops: neither paper prints cuBLAS GEMM throughput; 000 §6.3 shows "
    "te.Linear (Transformer Engine) GEMM throughput over N only as a plot (Fig. 7), no numbers",
    "001 Figs. 6, 7, 10, 11, 15 full (#warps x ILP) grids: plots only; only the points the text "
    "names are transcribed",
    "000 §6.2 per-instruction mma latency/throughput for BF16, FP64, FP8 mma, INT4 and Binary on "
    "H800/A100/RTX4090: not measured in Table VIII",
    "000 Table XII/XIII power with zero vs random operands for mma: Table XII does not say how "
    "operands were initialised",
    "000 Table XIII power (W) of wgmma: not printed (only clock, performance and efficiency); the text "
    "says zero-operand runs stay 'below 200 watts' and random ones reach the 350 W limit (bounds only)",
    "000 §6.2 text: 'mma instructions can only attain an average of 62.9% of the theoretical peak' on "
    "H800 — an average whose set of instructions is not stated (Table VIII's dense H800 rows give "
    "56.6% over all rows, 65.0% over the larger shapes)",
    "001 Table 9 ldmatrix .trans variants and 000 ldmatrix on Hopper: not measured",
)

NOT_TRANSCRIBED: tuple[str, ...] = (
    "001 Tables 1-2 (feature comparison, literature), Table 10 (ld.shared bank conflicts: in "
    "reference/memory.py), Tables 11-15 (numeric formats and errors), Tables 16-17 (appendix GEMM kernels)",
    "000 Table VI (feature list, no numbers), Tables XIV-XV (Transformer Engine layer settings, LLM "
    "inference tokens/s: not tensor-core instruction figures)",
)

_GPU_ORDER = ("H800", "A100", "RTX4090", "RTX3070Ti", "RTX2080Ti")


def published(key: str, gpu: str | None = None) -> list[Published]:
    """Records for ``key`` (optionally one GPU), in paper/table order."""
    return [p for p in TENSOR if p.key == key and (gpu is None or p.gpu == gpu)]


def published_sass(family: str, ab: str, cd: str | None = None, gpu: str | None = None) -> list[PublishedSass]:
    """Published SASS for a PTX family ("mma"/"wgmma") and paper type names ("FP16", "INT8", ...)."""
    return [r for r in SASS_MAP_PUBLISHED if r.family == family and r.ab == ab
            and (cd is None or r.cd == cd) and (gpu is None or r.gpu == gpu)]


def gpus() -> list[str]:
    """GPUs that appear, newest first as in ``_GPU_ORDER``, then any others by first appearance."""
    seen = list(dict.fromkeys(p.gpu for p in TENSOR))
    return [g for g in _GPU_ORDER if g in seen] + [g for g in seen if g not in _GPU_ORDER]


def keys() -> list[str]:
    """All keys, sorted."""
    return sorted({p.key for p in TENSOR})


# Per-GPU peaks live in reference/peaks.py: new code calls peaks_for(props) (the run's own GPU, None for
# one without a record) and fma_per_clk_sm(peaks, type, sparse=..., acc=...). The two names below are the
# old Hopper-only table, kept for its callers: derived from the H100 SXM5 record, dense multiply-
# accumulates per clock per SM (989.4 dense FP16 TFLOPS = 132 SMs x 1830 MHz x 2 x 2048). Every GH100
# product (H100 SXM5/PCIe, H200) has the same per-SM rates. Sparse: twice the dense rate.
def _hopper_rate(t: str) -> int:
    v = fma_per_clk_sm(H100_SXM5, t)
    assert v is not None, t
    return int(v)


PEAK_FMA_PER_CLK_SM: dict[tuple[int, int], dict[str, int]] = {
    H100_SXM5.cc: {t: _hopper_rate(t) for t in ("f16", "tf32", "fp8", "int8")},
}
PEAK_SOURCE = ("H100 whitepaper: 989.4 dense FP16 TFLOPS = 132 SMs x 1830 MHz x 2 x 2048 FMA/clk/SM; TF32 x1/2, "
               "FP8/INT8 x2; sparse x2 (reference/peaks.py)")

# what the report sets beside our figures after the papers' values (report/compare.default_refs)
INDEPENDENT: tuple[Published, ...] = REPRODUCTION
