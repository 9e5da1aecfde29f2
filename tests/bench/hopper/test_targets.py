"""The hopper suite on every target from Volta to Blackwell, CPU only: what `plan` runs where, the SASS each
declared variant holds on each family (compiled with NVRTC, read with cuobjdump), the hardware-or-emulated
DPX verdict read from that SASS, and the compute_80 PTX cache."""

from __future__ import annotations

import re

import pytest

from gpudissect.bench.hopper import dpx as hd
from gpudissect.bench.hopper import dpx_model as dm
from gpudissect.bench.hopper import smith_waterman as sw
from gpudissect.bench.hopper.dsm import DSM
from gpudissect.bench.hopper.tma import ASYNC, TMA
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import select
from gpudissect.capability import CI_ARCHES, Target
from gpudissect.device import compiler
from gpudissect.sass import disasm
from gpudissect.sass.disasm import find_tool
from helpers import missing_sass

HOPPER = ("tma_latency", "tma_throughput", "async_copy_matmul", "dsm_latency", "dsm_throughput", "dsm_histogram")
EVERYWHERE = ("dpx_latency_throughput", "smith_waterman")
# the first compute capability each benchmark runs on (the rest of the suite: every GPU)
FIRST = {"async_copy_matmul": (8, 0)} | {b: (9, 0) for b in HOPPER if b != "async_copy_matmul"}


# ---------------------------------------------------------------------------------------
# plan: which benchmarks run on which target (no compiler)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", [*CI_ARCHES, "sm_103a", "sm_121a"])
def test_plan_per_target(arch):
    t = Target.parse(arch)
    entries = {e.bench: e for e in plan(select(["hopper"]), t)}
    assert set(entries) == set(HOPPER) | set(EVERYWHERE)
    for name, e in entries.items():
        runs = t.cc >= FIRST.get(name, (7, 0))
        assert e.status == ("run" if runs else "skip"), (arch, name, e.reason)
        if runs:
            assert len(e.variants) >= 1 and not e.skipped_variants, (arch, name)
        else:
            what = {"async_copy_matmul": "cp.async"}.get(name, "distributed shared memory" if "dsm" in name else "TMA")
            assert what in e.reason and f"this GPU: {t.arch}" in e.reason, e.reason


def test_hopper_keeps_its_required_sass():
    """On Hopper (and Blackwell, whose SASS is Hopper's) the variants hold `required`, unchanged."""
    for spec in (hd.DPX_SPEC, sw.SW_SPEC, TMA, ASYNC, DSM):
        for arch in ("sm_90a", "sm_100a", "sm_103a"):
            assert spec.required_for(Target.parse(arch)) is spec.required, (spec.name, arch)
    # Volta has its own emulation (a compare and a select, no IMNMX), the rest of pre-Hopper IMNMX
    for spec in (hd.DPX_SPEC, sw.SW_SPEC):
        assert spec.required_for(Target(7, 0)) != spec.required_for(Target(7, 5))
    assert hd.DPX_SPEC.required_for(Target(8, 9)) == hd.DPX_SPEC.required_for(Target(7, 5))


# ---------------------------------------------------------------------------------------
# The SASS of every declared variant on every family that runs it
# ---------------------------------------------------------------------------------------
needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")
CASES = [
    *[(hd.DPX_SPEC, a) for a in ("sm_70", "sm_75", "sm_80", "sm_89", "sm_100a", "sm_120a")],
    *[(sw.SW_SPEC, a) for a in ("sm_70", "sm_75", "sm_86", "sm_100a", "sm_120a")],
    *[(sw.sw_spec(8), a) for a in ("sm_70", "sm_75", "sm_120a")],
    *[(ASYNC, a) for a in ("sm_80", "sm_89", "sm_100a", "sm_120a")],
    *[(spec, a) for spec in (TMA, DSM) for a in ("sm_100a", "sm_120a")],
]


@needs_cuobjdump
@pytest.mark.sass
@pytest.mark.parametrize("spec,arch", CASES, ids=[f"{s.name}-{a}" for s, a in CASES])
@pytest.mark.slow  # every variant on every arch: the nightly tier (tests/bench/test_every_arch.py in CI)
def test_required_sass_per_family(spec, arch):
    from gpudissect.sasscheck import check_spec

    _volta_tools(arch)

    _, checks = check_spec(spec, arch)
    assert checks
    missing = missing_sass(checks)
    assert not missing, f"{spec.name} on {arch}: missing {missing}"


def _volta_tools(arch):
    """sm_70 is built by NVRTC 12 and read by a CUDA 12 cuobjdump (CUDA 13's refuse it). unsupported_why binds
    NVRTC 13 first: loaded before it, NVRTC 12 would serve every later build in this process."""
    from gpudissect.device.compiler import unsupported_why
    from gpudissect.sass import legacy

    if arch == "sm_70" and (unsupported_why(arch) or legacy.cuobjdump() is None):
        pytest.skip("sm_70 needs NVRTC 12 and a CUDA 12 cuobjdump (python -m gpudissect.sass.legacy)")


def _sass(spec, arch):
    from gpudissect.device.compiler import compile_spec
    from gpudissect.sass.disasm import disassemble_cached

    return disassemble_cached(compile_spec(spec, arch))


@needs_cuobjdump
@pytest.mark.sass
@pytest.mark.parametrize(
    "arch,hardware",
    [("sm_70", False), ("sm_75", False), ("sm_89", False), ("sm_90a", True), ("sm_100a", True), ("sm_120a", False)],
)
@pytest.mark.slow  # builds for several arches: the nightly tier (test_every_arch checks the files in CI)
def test_hardware_dpx_is_read_from_the_sass(arch, hardware):
    """sm_90a and sm_100a run the functions as VIMNMX3 / VIADDMNMX; sm_120a has VIMNMX with its 16x2 and .RELU
    forms but neither of those, so its build is labelled emulated, like every build before Hopper."""
    _volta_tools(arch)
    t = Target.parse(arch)
    assert hd.declared_hardware(t) is hardware  # what the label says where no disassembler runs
    dpx = _sass(hd.DPX_SPEC, arch)
    assert hd.has_hardware_dpx(dpx) is hardware
    assert ("hardware DPX" in hd.native_label(t, hd.has_hardware_dpx(dpx))) is hardware
    funcs = _sass(sw.SW_SPEC, arch)
    for kind in sw.DPX_KINDS:
        assert hd.has_hardware_dpx(funcs, [f"sw_{kind}"]) is hardware
    if arch == "sm_120a":
        assert re.search(r"VIMNMX\.S16x2\.RELU ", dpx["dpx_lat_vimax_s16x2_relu"])


@needs_cuobjdump
@pytest.mark.sass
@pytest.mark.parametrize("arch", ["sm_70", "sm_80", "sm_120a"])
@pytest.mark.slow  # builds for several arches: the nightly tier (test_every_arch checks the files in CI)
def test_emulated_patterns_tell_max_from_min(arch):
    """The emulations' required SASS pins the direction: a max function's patterns do not all hold in the min
    function's kernel, so a swapped function cannot pass (on Volta the select's predicate and operand order
    after its compare; a relu's max with zero does not count as the function's max)."""
    from gpudissect.sass.disasm import check_required

    _volta_tools(arch)
    funcs = _sass(hd.DPX_SPEC, arch)
    family = Target.parse(arch).family
    pairs = [("vimax3_s32", "vimin3_s32"), ("viaddmax_u32", "viaddmin_u32"), ("vibmax_s32", "vibmin_s32")]
    pairs += [("vimax3_s16x2", "vimin3_s16x2"), ("vimax3_s32_relu", "vimin3_s32_relu")]
    pairs += [("vibmax_u16x2", "vibmin_u16x2")]
    for hi, lo in pairs:
        for a, b in ((hi, lo), (lo, hi)):
            _, pats = hd.dpx_sass(dm.intrinsic(a), family)
            own = check_required(funcs, {f"dpx_lat_{a}": pats})
            assert all(c.found for c in own), (arch, a, [c.pattern for c in own if not c.found])
            assert not all(c.found for c in check_required(funcs, {f"dpx_lat_{b}": pats})), (arch, a, b)


@pytest.mark.sass
def test_half2_max_before_sm80_is_a_compare_and_select():
    """max.f16x2 is sm_80+: the Turing build of the half2 kind takes each lane from a set.gt mask, and the
    compute_80 PTX (what the JIT build loads on Hopper) keeps max.f16x2."""
    from gpudissect.device.compiler import compile_ptx

    src = sw.SW_SPEC.source
    p75 = compile_ptx(src, sw.SW_SPEC.file, "compute_75", sw.SW_SPEC.defines).decode()
    p80 = compile_ptx(src, sw.SW_SPEC.file, "compute_80", sw.SW_SPEC.defines).decode()
    assert "set.gt.u32.f16x2" in p75 and "max.f16x2" not in p75
    assert "max.f16x2" in p80 and "set.gt.u32.f16x2" not in p80


# ---------------------------------------------------------------------------------------
# The compute_80 PTX of the JIT build is cached like the cubins
# ---------------------------------------------------------------------------------------
@pytest.mark.sass
def test_jit_ptx_is_compiled_once(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUDISSECT_CACHE", str(tmp_path))
    spec = sw.sw_spec(8)
    calls = []
    real = compiler.compile_ptx
    monkeypatch.setattr(compiler, "compile_ptx", lambda *a: calls.append(a) or real(*a))
    first = hd.jit_ptx(spec)
    assert len(calls) == 1 and [p.suffix for p in (tmp_path / "cubin").iterdir()] == [".ptx"]
    assert hd.jit_ptx(spec) == first and len(calls) == 1  # the second run reads it back
    assert first == real(spec.source, spec.file, "compute_80", spec.defines)
    assert first.endswith(b"\0") and b".target sm_80" in first


@pytest.mark.parametrize("arch", CI_ARCHES)
def test_the_jit_ptx_is_a_prebuild_where_the_jit_build_runs(arch):
    """dpx and smith_waterman declare the compute_80 PTX of their kernel as a prebuild, so the runner's pool
    spends NVRTC's seconds ahead, where the JIT build runs; a virtual variant of its own name (the pool
    queues by name), without SASS to check."""
    t = Target.parse(arch)
    for bench, spec in (("dpx_latency_throughput", hd.DPX_SPEC), ("smith_waterman", sw.SW_SPEC)):
        (b,) = select(benches=[bench])
        pre = b.prebuild(t, "quick")
        if hd.jit_unavailable(t) is not None:
            assert pre == [], arch
            continue
        (ps,) = pre
        assert ps.virtual == "compute_80" and ps.source == spec.source and ps.defines == spec.defines
        assert ps.name != spec.name and not ps.required and not ps.required_by_family


@pytest.mark.sass
def test_the_pool_builds_the_ptx_jit_ptx_reads(monkeypatch, tmp_path):
    """A virtual variant through the runner's pool job (build_and_read): its PTX lands where jit_ptx reads it
    (no NVRTC in the benchmark), and nothing is disassembled."""
    monkeypatch.setenv("GPUDISSECT_CACHE", str(tmp_path))
    spec = hd.jit_spec(sw.sw_spec(8))
    assert not compiler.is_cached(spec, "sm_90a")
    monkeypatch.setattr(disasm, "disassemble_cached", lambda cubin: pytest.fail("PTX disassembled"))
    disasm.build_and_read(spec, "sm_90a")
    assert compiler.is_cached(spec, "sm_90a") and not compiler.is_cached(sw.sw_spec(8), "sm_90a")
    monkeypatch.setattr(compiler, "compile_ptx", lambda *a: pytest.fail("compiled again"))
    assert b".target sm_80" in hd.jit_ptx(sw.sw_spec(8))
