"""The per-SM peaks of the native table's units (reference/isa_peaks.py): H100's from its whitepaper, FP32/FP64
from peaks.py's per-GPU records of the same compute capability, and none where no source gives one."""

import pytest

from gpudissect.reference import isa_peaks, peaks


def test_hopper_units():
    got = {k: isa_peaks.unit_peak(k, (9, 0)) for k in ("dfma", "dadd", "dmul", "ffma", "fadd", "fmul", "imad", "hfma2")}
    assert {k: p.per_clk_sm for k, p in got.items() if p} == {
        "dfma": 64,
        "dadd": 64,
        "dmul": 64,
        "ffma": 128,
        "fadd": 128,
        "fmul": 128,
        "imad": 64,
        "hfma2": 128,
    }
    assert "H100" in got["dfma"].describe() and "sm_90" in got["dfma"].describe()


@pytest.mark.parametrize(
    ("cc", "fp32", "fp64"),
    [
        ((7, 0), 64, 32),
        ((7, 5), 64, 2),
        ((8, 0), 64, 32),
        ((8, 6), 128, 2),
        ((8, 9), 128, 2),
        ((12, 0), 128, None),
        ((10, 0), None, None),
    ],
)
def test_fp32_fp64_follow_the_gpu_records(cc, fp32, fp64):
    """GA100 and GV100 run FP64 at half their FP32 rate (32/clk/SM, not 64); consumer parts at 2; an assumed
    value (RTX 5090's FP64) or an unpublished SM (B200) gives no peak, and why_no_peak says so."""
    for k, want in (("ffma", fp32), ("dfma", fp64)):
        p = isa_peaks.unit_peak(k, cc)
        assert (p.per_clk_sm if p else None) == want, (k, cc)
        if want is None:
            assert "no published per-SM" in isa_peaks.why_no_peak(k, cc)
    for g in peaks.GPUS:
        p = isa_peaks.unit_peak("dfma", g.cc)
        if p is not None:
            assert g.value("peak.fp64.fma_per_clk_sm") == p.per_clk_sm, g.gpu


def test_untabled_instructions_have_no_peak():
    assert isa_peaks.unit_peak("mufu_ex2", (9, 0)) is None
    assert isa_peaks.unit_peak("hfma2", (8, 9)) is None  # not transcribed: no ratio rather than a guess
    assert "no per-SM peak is tabled" in isa_peaks.why_no_peak("lds", (9, 0))


def test_peaks_for_an_imported_run_with_odd_properties():
    """Found by the import fuzz: a compute capability stored as a list reached int() in the report's front page."""
    from gpudissect.reference.peaks import peaks_for

    h100 = {"gpu_name": "NVIDIA H100 80GB HBM3", "sm_count": 132}
    assert peaks_for(h100 | {"extra": {"cc_major": [], "cc_minor": 0}}) is None
    assert peaks_for(h100 | {"extra": {"cc_major": True, "cc_minor": 0}}) is None
    assert peaks_for(h100 | {"extra": {"cc_major": 9, "cc_minor": 0}}) is not None
    assert peaks_for(h100 | {"sm_count": "132", "extra": {"cc_major": "9", "cc_minor": 0.0}}) is not None
