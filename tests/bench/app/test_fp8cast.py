"""The fused FP8 cast (kernels/app_fp8cast.cu, gpudissect.app.fp8cast) without a GPU or torch: the host's view
of the kernel (state layout, block size, unroll) agrees with the kernel file, the grid and alignment rules,
and the required SASS on every FP8 architecture: F2FP.SATFINITE.E4M3, 16-byte read-only loads, a warp REDUX
and one amax atomic per CTA, no local memory (the SASS part is the slow `sass` tier)."""

from __future__ import annotations

import re

import pytest

from gpudissect.app import fp8cast
from gpudissect.capability import Target
from gpudissect.device.compiler import kernel_source
from gpudissect.sass.disasm import find_tool

FP8_ARCHES = ("sm_89", "sm_90a", "sm_100a", "sm_120a")


def _defines() -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"^#define (\w+) (\d+)\b", kernel_source(fp8cast.FILE), re.M)}


def test_host_and_kernel_agree_on_the_state_and_the_block():
    d = _defines()
    assert (d["ST_SCALE"], d["ST_SCALE_INV"], d["ST_AMAX"], d["ST_DONE"], d["ST_STEP"], d["ST_LAST"]) == (
        fp8cast.SCALE,
        fp8cast.SCALE_INV,
        fp8cast.AMAX,
        fp8cast.DONE,
        fp8cast.STEP,
        fp8cast.LAST,
    )
    assert d["ST_HIST"] == fp8cast.HEADER_WORDS and d["THREADS"] == fp8cast.THREADS and d["UNROLL"] == fp8cast.UNROLL
    assert set(fp8cast.FUNCTIONS.values()) == set(fp8cast.REQUIRED)
    for name in fp8cast.FUNCTIONS.values():
        assert f"void __launch_bounds__(THREADS) {name}(" in kernel_source(fp8cast.FILE)


def test_state_history_and_margin():
    assert fp8cast.state_words(16) == fp8cast.HEADER_WORDS + 16
    for bad in (0, fp8cast.MAX_HISTORY + 1):
        with pytest.raises(ValueError, match="history"):
            fp8cast.state_words(bad)
    assert fp8cast.fp8max_margin(0) == 448.0 and fp8cast.fp8max_margin(1) == 224.0


def test_grid_covers_one_unroll_step_per_thread_up_to_one_wave():
    step = fp8cast.THREADS * fp8cast.UNROLL
    assert fp8cast.grid(1, "bf16", 1056) == 1  # the tail alone: one CTA
    assert fp8cast.grid(8 * step, "bf16", 1056) == 1
    assert fp8cast.grid(8 * step + 8, "bf16", 1056) == 2
    assert fp8cast.grid(4 * step * 3, "f32", 1056) == 3
    assert fp8cast.grid(8192 * 8192, "bf16", 1056) == 1056  # a weight: one wave, grid-stride over the rest


def test_alignment_rules():
    fp8cast.check_alignment(256, 8, "bf16")
    fp8cast.check_alignment(256, 4, "f32")
    with pytest.raises(ValueError, match="16-byte"):
        fp8cast.check_alignment(258, 8, "bf16")
    with pytest.raises(ValueError, match="8-byte"):
        fp8cast.check_alignment(256, 4, "bf16")


def test_one_pass_is_a_read_and_a_byte_written():
    assert fp8cast.one_pass_bytes(1000, 2) == 3000 and fp8cast.one_pass_bytes(1000, 4) == 5000


def test_the_kernel_needs_fp8_conversion():
    assert fp8cast.SPEC.needs.why_not(Target.parse("sm_86"))
    assert all(fp8cast.SPEC.needs.why_not(Target.parse(a)) is None for a in FP8_ARCHES)


@pytest.fixture(scope="module")
def sass():
    if find_tool("cuobjdump") is None:
        pytest.skip("cuobjdump not installed")
    from gpudissect.sasscheck import check_spec

    return {a: check_spec(fp8cast.SPEC, a) for a in FP8_ARCHES}


@pytest.mark.sass
@pytest.mark.parametrize("arch", FP8_ARCHES)
def test_required_sass(sass, arch):
    _, checks = sass[arch]
    missing = [f"{c.function}: {c.pattern}" for c in checks if not c.found]
    assert checks and not missing, missing


@pytest.mark.sass
@pytest.mark.parametrize("arch", FP8_ARCHES)
def test_the_unrolled_step(sass, arch):
    """UNROLL 16-byte loads before the first convert (Ada, Hopper), each 16 bytes converted in 4 (bf16: 8
    values) or 2 (fp32) F2FP, one amax atomic and one arrival per CTA, the bf16 output in 8-byte stores."""
    funcs, _ = sass[arch]
    for name, per_load in (("fp8cast_bf16", 4), ("fp8cast_f32", 2)):
        text = funcs[name]
        loads = len(re.findall(r"LDG\.E\.128\.CONSTANT", text))
        assert loads >= fp8cast.UNROLL + 1, (name, loads)  # the unrolled step and the remainder loop
        assert len(re.findall(r"F2FP\.SATFINITE\.E4M3", text)) >= per_load * (fp8cast.UNROLL + 1)
        assert len(re.findall(r"ATOMG\.E\.MAX", text)) == 1 and len(re.findall(r"ATOMG\.E\.ADD", text)) == 1
        if arch in ("sm_89", "sm_90a"):  # all loads in flight first (Blackwell's compiler interleaves two and two)
            first_cvt = text.find("F2FP")
            assert text[:first_cvt].count("LDG.E.128.CONSTANT") == fp8cast.UNROLL
    assert len(re.findall(r"STG\.E\.64", funcs["fp8cast_bf16"])) >= fp8cast.UNROLL + 1
