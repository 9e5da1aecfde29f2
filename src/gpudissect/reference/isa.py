"""Published instruction-level figures, transcribed from the seed papers.

* ``"002"`` Jia et al., *Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking*:
  Table 4.1 (dependent-issue latency of native instructions on Volta V100 and Pascal P100, in
  cycles; the paper groups instructions with equal latency in one row), Table 2.1 (FFMA GFLOPS of
  two co-running warps on one V100 SM, by warp index) and §2.2 (the mapping it concludes:
  scheduler_id = warp_id % 4, four processing blocks per SM).
* ``"004"`` Yan et al., *Demystifying Tensor Cores to Optimize Half-Precision Matrix Multiply*:
  Table I (HMMA.1688.F16 latency of the two halves of D, CPI) on Turing.

Values are exactly as printed. Keys follow the ``isa`` suite: ``isa.latency.<opcode>_cycles``
with the SASS opcode in lower case, dots as underscores. Where sm_90 names the instruction
differently (Volta's IMNMX is VIMNMX on sm_90, the f32<-s32 conversion I2F is I2FP.F32.S32),
the record carries the sm_90 key and says so in ``note``; Volta's SHF row is printed "SHE" in the
transcription we have (an OCR slip of SHF; kept as SHF, noted).
"""

from __future__ import annotations

from .memory import Published


def unit_for_key(key: str) -> str:
    if key.endswith("_cycles"):
        return "cycles"
    if key.endswith("_gflops"):
        return "GFLOPS"
    if key.endswith("_cpi"):
        return "cycles/instruction"
    if key.endswith("_count"):
        return ""
    raise ValueError(f"key {key!r} has no known unit")


def _lat(gpu: str, cycles: float, opcodes: str, note: str = "") -> list[Published]:
    """One row of Table 4.1: every opcode in it gets the row's latency."""
    return [
        Published(
            f"isa.latency.{op.lower().replace('.', '_')}_cycles", gpu, float(cycles), "cycles", "002", "Table 4.1", note
        )
        for op in opcodes.split()
    ]


_ROW = "Table 4.1 groups this instruction with others of the same latency"
# Table 4.1, Volta rows (V100)
_VOLTA = (
    _lat("V100", 4, "IADD3 LOP3 SEL MOV FADD FFMA FMUL ISETP FSET FSETP", _ROW)
    + _lat("V100", 4, "SHF", _ROW + "; printed 'SHE' in our transcription of 002, read as SHF")
    + _lat("V100", 5, "IMAD FMNMX DSET DSETP", _ROW)
    + _lat("V100", 6, "HADD2 HMUL2 HFMA2", _ROW)
    + _lat("V100", 8, "DADD DMUL DFMA", _ROW)
    + _lat("V100", 10, "POPC")
    + _lat("V100", 14, "FLO BREV", _ROW)
    + _lat("V100", 14, "MUFU", _ROW + "; one row for all MUFU functions (002 does not split EX2, RSQ, SIN ...)")
)
# Table 4.1, Pascal rows (P100)
_PASCAL = (
    _lat(
        "P100",
        6,
        "BFE BFI IADD IADD32I FADD FMUL FFMA FMNMX HADD2 HMUL2 HFMA2 ISCADD LOP LOP32I LOP3 MOV "
        "MOV32I SEL SHL SHR VADD VABSDIFF VMNMX XMAD",
        _ROW,
    )
    + _lat("P100", 6, "VIMNMX", _ROW + "; printed as IMNMX (sm_90 encodes integer min/max as VIMNMX)")
    + _lat("P100", 8, "DADD DMUL DFMA DMNMX", _ROW)
    + _lat("P100", 12, "FSET DSET DSETP ISETP FSETP", _ROW)
    + _lat("P100", 14, "POPC FLO MUFU F2F F2I I2I", _ROW)
    + _lat("P100", 14, "I2FP", _ROW + "; printed as I2F (sm_90's s32->f32 conversion is I2FP.F32.S32)")
    + _lat("P100", 86, "IMUL IMAD", _ROW + "; printed '~86' (emulated on Maxwell/Pascal)")
)

# Table 2.1: FFMA GFLOPS of warps A (index 0..3) and B (4..7) on one V100 SM (8 warps, 6 idle)
_T21 = {
    4: (42.27, 66.05, 66.04, 65.29),
    5: (66.05, 41.98, 66.04, 66.04),
    6: (66.02, 66.04, 42.06, 66.04),
    7: (66.04, 66.04, 66.02, 42.08),
}
_SCHED = tuple(
    Published(
        f"isa.scheduler.pair_w{a}_w{b}_gflops",
        "V100",
        v,
        "GFLOPS",
        "002",
        "Table 2.1",
        "same processing block" if a % 4 == b % 4 else "different processing blocks",
    )
    for b, row in _T21.items()
    for a, v in enumerate(row)
) + (
    Published(
        "isa.scheduler.subcores_per_sm_count",
        "V100",
        4.0,
        "",
        "002",
        "§2.2 (text)",
        "four processing blocks per SM; scheduler_id = warp_id % 4",
    ),
)

# 004 Table I (Turing RTX2070 / T4: the same SM)
_YAN = (
    Published(
        "isa.latency.hmma_1688_f16_first_half_cycles",
        "T4",
        10.0,
        "cycles",
        "004",
        "Table I",
        "latency for the first half of D (16x8)",
    ),
    Published(
        "isa.latency.hmma_1688_f16_second_half_cycles",
        "T4",
        14.0,
        "cycles",
        "004",
        "Table I",
        "latency for the second half of D",
    ),
    Published(
        "isa.throughput.hmma_1688_f16_cpi",
        "T4",
        8.06,
        "cycles/instruction",
        "004",
        "Table I",
        "measured CPI (theoretical 8.00)",
    ),
)

ISA: tuple[Published, ...] = tuple(_VOLTA) + tuple(_PASCAL) + _SCHED + _YAN

# Jia's Table 4.1 as printed (opcode -> cycles), for the side-by-side table of the report
VOLTA_LATENCY = {p.key: p.value for p in ISA if p.gpu == "V100" and p.table == "Table 4.1"}
PASCAL_LATENCY = {p.key: p.value for p in ISA if p.gpu == "P100" and p.table == "Table 4.1"}


def published(key: str, gpu: str | None = None) -> list[Published]:
    return [p for p in ISA if p.key == key and (gpu is None or p.gpu == gpu)]


def gpus() -> list[str]:
    return list(dict.fromkeys(p.gpu for p in ISA))


def keys() -> list[str]:
    return sorted({p.key for p in ISA})
