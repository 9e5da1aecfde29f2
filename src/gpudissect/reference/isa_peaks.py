"""Per-SM peaks of the units behind the native instruction table (isa suite): thread instructions per clock
per SM of DFMA/DADD/DMUL (the FP64 pipe), FFMA/FADD/FMUL (FP32), IMAD (the integer multiplier) and HFMA2 (FP16x2:
one instruction is two FP16 FMAs), per compute capability, because the rate is the SM design's, not a product's.

FP32 and FP64 come from the per-GPU records of peaks.py (whitepaper SM descriptions: FP32 / FP64 cores per SM),
taken where every GPU of that compute capability agrees and none is an assumption; IMAD and FP16x2 are rows
here, each with its document. A compute capability without a row has no peak: the benchmark then stores no
ratio and its method says why (Blackwell: NVIDIA publishes neither the SM count nor the clock of its
figures; consumer Blackwell's FP64 is only assumed in peaks.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .peaks import GPUS, SOURCES

CC = tuple[int, int]

ISA_SOURCES: dict[str, str] = {
    "cuda-guide-forum": "CUDA C Programming Guide, Table 'Throughput of Native Arithmetic Instructions (Number of "
    "Results per Clock Cycle per Multiprocessor)', compute capability 7.x column, as quoted in NVIDIA developer "
    "forum thread 108706 ('can 16-bits and 32-bits Native Arithmetic Instructions run independently?')",
    "cuda-guide": "CUDA C++ Programming Guide, §Arithmetic Instructions, table 'Throughput of Native Arithmetic "
    "Instructions (Operations per Clock Cycle per Multiprocessor)', row '32-bit integer multiply, multiply-add, "
    "extended-precision multiply-add'",
}

# the unit each instruction of the table runs on
UNIT: dict[str, str] = {
    "dfma": "fp64",
    "dadd": "fp64",
    "dmul": "fp64",
    "ffma": "fp32",
    "fadd": "fp32",
    "fmul": "fp32",
    "imad": "imad",
    "hfma2": "fp16x2",
}


@dataclass(frozen=True)
class UnitPeak:
    unit: str
    cc: CC
    per_clk_sm: float  # thread instructions per clock per SM
    source: str  # the document, in words
    where: str  # the place in it
    note: str = ""

    def describe(self) -> str:
        """For a figure's method: 'N/clk/SM for the <unit> unit of sm_XY (<document>, <place>; <note>)'."""
        tail = "; ".join(x for x in (self.where, self.note) if x)
        return f"{self.per_clk_sm:g}/clk/SM for the {self.unit} unit of sm_{self.cc[0]}{self.cc[1]} ({self.source}, {tail})"


_IMAD = "64 results per clock per SM for compute capability 7.x, 8.x and 9.0"
_ROWS: tuple[UnitPeak, ...] = (
    *(
        UnitPeak("imad", cc, 64, ISA_SOURCES["cuda-guide"], "columns 7.x-9.0", _IMAD)
        for cc in ((7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0))
    ),
    UnitPeak(
        "fp16x2",
        (7, 0),
        64,
        ISA_SOURCES["cuda-guide-forum"],
        "16-bit floating-point add, multiply, multiply-add row",
        "128 FP16 results per clock per SM = 64 HFMA2 (two results each)",
    ),
    UnitPeak(
        "fp16x2",
        (8, 0),
        128,
        SOURCES["nv-a100-wp"],
        "'Peak FP16 TFLOPS (non-Tensor)' 78 = 4 x FP32's 19.5",
        "256 FP16 FMA per clock per SM = 128 HFMA2",
    ),
    UnitPeak(
        "fp16x2",
        (9, 0),
        128,
        SOURCES["nv-h100-wp"],
        "Table 3, 'Peak FP16 (non-Tensor) TFLOPS' 133.8 (SXM5) = 2 x FP32's 66.9",
        "256 FP16 FMA per clock per SM = 128 HFMA2",
    ),
)


def _from_gpus(unit: str, cc: CC) -> UnitPeak | None:
    """FP32 / FP64 FMA per clock per SM from peaks.py: the GPUs of `cc` must all have it, agree, and not
    assume it (source 'derived' or a note saying 'assumed')."""
    recs = [g.record(f"peak.{unit}.fma_per_clk_sm") for g in GPUS if g.cc == cc]
    if not recs or any(r is None or r.paper == "derived" or "assum" in r.note for r in recs):
        return None
    if len({r.value for r in recs if r is not None}) != 1:
        return None
    r = recs[0]
    assert r is not None
    return UnitPeak(unit, cc, r.value, SOURCES[r.paper], r.table, r.note)


def unit_peak(instruction: str, cc: CC) -> UnitPeak | None:
    """The per-SM peak of the unit `instruction` (a native-table key) runs on, for a
    GPU of compute capability `cc`; None where no source gives it."""
    unit = UNIT.get(instruction)
    if unit is None:
        return None
    if unit in ("fp32", "fp64"):
        return _from_gpus(unit, cc)
    return next((r for r in _ROWS if r.unit == unit and r.cc == cc), None)


def why_no_peak(instruction: str, cc: CC) -> str:
    """Why unit_peak is None, in words for a method text."""
    unit = UNIT.get(instruction)
    if unit is None:
        return f"no per-SM peak is tabled for {instruction}'s unit"
    return (
        f"no published per-SM {unit} rate for compute capability {cc[0]}.{cc[1]} in reference/isa_peaks.py "
        "(none, or only an assumed one): no ratio to another GPU's peak"
    )
