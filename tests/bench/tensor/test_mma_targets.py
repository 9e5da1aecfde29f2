"""The tensor suite on every target from Volta to Blackwell: what `plan` runs where and why it skips the rest,
the variants each GPU runs, the SASS each family is held to, the native-or-emulated label read from a SASS,
and (marked sass) the real builds of the variants whose SASS differs between families."""

from __future__ import annotations

import pytest

from gpudissect.bench.plan import plan
from gpudissect.bench.registry import select
from gpudissect.bench.tensor import mma as T
from gpudissect.capability import CI_ARCHES, Target
from gpudissect.sass.disasm import find_tool

V = T.MmaVariant
WGMMA = ("wgmma_throughput", "wgmma_sparse", "wgmma_n_sweep", "wgmma_power")
# arch -> benchmark -> (variants that run, variants skipped); None: the benchmark is skipped
PLAN = {
    "sm_70": {"mma_latency_throughput": (2, 38), "mma_sparse": None, "ldmatrix": None, "mma_power": None},
    "sm_75": {"mma_latency_throughput": (9, 31), "mma_sparse": None, "ldmatrix": (6, 0), "mma_power": None},
    "sm_80": {"mma_latency_throughput": (29, 11), "mma_sparse": (16, 2), "ldmatrix": (6, 0), "mma_power": (4, 1)},
    "sm_86": {"mma_latency_throughput": (29, 11), "mma_sparse": (16, 2), "ldmatrix": (6, 0), "mma_power": (4, 1)},
    "sm_89": {"mma_latency_throughput": (37, 3), "mma_sparse": (18, 0), "ldmatrix": (6, 0), "mma_power": (5, 0)},
    "sm_90a": {"mma_latency_throughput": (40, 0), "mma_sparse": (18, 0), "ldmatrix": (6, 0), "mma_power": (5, 0)},
    "sm_100a": {"mma_latency_throughput": (40, 0), "mma_sparse": (18, 0), "ldmatrix": (6, 0), "mma_power": (5, 0)},
    "sm_120a": {"mma_latency_throughput": (40, 0), "mma_sparse": (18, 0), "ldmatrix": (6, 0), "mma_power": (5, 0)},
}
WHY = {"mma_sparse": "mma.sp", "ldmatrix": "ldmatrix", "mma_power": "mma.sync m16n8k16"}


# ---------------------------------------------------------------------------------------
# plan: which benchmarks and variants run on which target (no compiler)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", CI_ARCHES)
def test_plan_per_target(arch):
    t = Target.parse(arch)
    entries = {e.bench: e for e in plan(select(["tensor"]), t)}
    assert entries["cublas_gemm"].status == "run"  # every GPU; a type it lacks says n/a
    for name in WGMMA:  # sm_90a only: Blackwell has tcgen05 instead, which this suite does not cover
        e = entries[name]
        if arch == "sm_90a":
            assert e.status == "run" and e.variants and not e.skipped_variants, name
        else:
            assert e.status == "skip" and "wgmma (sm_90a only)" in e.reason and f"this GPU: {arch}" in e.reason
    for name, want in PLAN[arch].items():
        e = entries[name]
        if want is None:
            assert e.status == "skip" and WHY[name] in e.reason and f"this GPU: {arch}" in e.reason, e.reason
        else:
            assert e.status == "run" and (len(e.variants), len(e.skipped_variants)) == want, (name, e)


def _skips(arch: str, bench: str) -> dict[str, str]:
    b = select(None, [bench])[0]
    return {s.label: why for s, why in b.variants(Target.parse(arch))[1]}


def test_variants_are_skipped_by_name_with_the_reason():
    volta = _skips("sm_70", "mma_latency_throughput")
    assert "mma.sync f16 m16n8k8 (compute capability >= 7.5)" in volta["tensor_mma.cu[mma.f16_f32.m16n8k8]"]
    assert "compute capability >= 7.5" in volta["tensor_mma.cu[mma.s4_s32.m8n8k32]"]
    turing = _skips("sm_75", "mma_latency_throughput")
    assert "bf16 mma.sync" in turing["tensor_mma.cu[mma.bf16_f32.m16n8k16]"]
    assert "compute capability >= 8.0" in turing["tensor_mma.cu[mma.b1and_s32.m8n8k128]"]  # and.popc: sm_80
    assert "tensor_mma.cu[mma.b1xor_s32.m8n8k128]" not in turing  # xor.popc m8n8k128: Turing has it
    ampere = _skips("sm_80", "mma_latency_throughput")
    assert set(ampere) == {
        *(
            f"tensor_mma.cu[mma.{t}.{s}]"
            for t in ("e4m3_f32", "e5m2_f32", "e4m3_f16", "e5m2_f16")
            for s in ("m16n8k16", "m16n8k32")
        ),
        *(f"tensor_mma.cu[mma.f64_f64.{s}]" for s in ("m16n8k4", "m16n8k8", "m16n8k16")),
    }
    assert "fp8 mma.sync (compute capability >= 8.9)" in ampere["tensor_mma.cu[mma.e4m3_f32.m16n8k32]"]
    assert "compute capability >= 9.0" in ampere["tensor_mma.cu[mma.f64_f64.m16n8k16]"]
    assert set(_skips("sm_80", "mma_sparse")) == {
        "tensor_mma.cu[mma_sp.e4m3_f32.m16n8k64]",
        "tensor_mma.cu[mma_sp.e5m2_f32.m16n8k64]",
    }


# ---------------------------------------------------------------------------------------
# The SASS each family is held to
# ---------------------------------------------------------------------------------------
def _req(v: T.MmaVariant, arch: str) -> list[str]:
    spec = T.SPECS[v]
    pats = spec.required_for(Target.parse(arch))["mma_ilp1"]
    assert all(spec.required_for(Target.parse(arch))[f"mma_ilp{i}"] == pats for i in range(2, 7))
    return pats


def test_hopper_keeps_its_required_sass():
    for v, spec in T.SPECS.items():
        assert spec.required["mma_ilp1"] == T.sass_patterns(v, "hopper")
        assert spec.required_for(Target.parse("sm_90a")) is spec.required
    assert T.sass_patterns(V("f64", "f64", "m16n8k16")) == [r"DMMA\.16x8x16\b"]


def test_fp8_is_native_qmma_on_ada_and_sm120_emulated_on_hopper_and_sm100():
    for sparse, shape in ((False, "m16n8k32"), (True, "m16n8k64")):
        v = V("e4m3", "f32", shape, sparse)
        sp = r"\.SP" if sparse else ""
        for arch in ("sm_89", "sm_120a"):
            assert rf"QMMA{sp}\.{shape[1:].replace('n', '').replace('k', '')}\.F32\.E4M3\.E4M3" in _req(v, arch)
        for arch in ("sm_90a", "sm_100a"):
            pats = _req(v, arch)
            assert r"F2FP\.F16\.E4M3\.UNPACK_B" in pats and T.NO.format(r"(?:QMMA|\.E4M3\.E4M3|\.E5M2\.E5M2)") in pats
    assert not T.lower(V("e5m2", "f16", "m16n8k16"), "hopper").native
    assert T.lower(V("e5m2", "f16", "m16n8k16"), "ada").native


def test_f64_runs_as_dmma_8x8x4_on_blackwell():
    for shape in ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"):
        for arch in ("sm_100a", "sm_120a"):
            assert _req(V("f64", "f64", shape), arch)[0] == r"DMMA\.8x8x4\b"
    assert _req(V("f64", "f64", "m8n8k4"), "sm_80") == [r"DMMA\.884\b"]
    assert _req(V("f64", "f64", "m16n8k8"), "sm_90a") == [r"DMMA\.16x8x8\b"]


def test_int4_b1_and_int8_per_family():
    s4 = V("s4", "s32", "m8n8k32")
    assert _req(s4, "sm_75") == [r"IMMA\.8832\.S4\.S4\b"] and _req(s4, "sm_89") == [r"IMMA\.8832\.S4\.S4\b"]
    assert _req(s4, "sm_90a")[0] == r"IMMA\.8816\.S8\.S8" and _req(s4, "sm_120a")[0] == r"IMMA\.16816\.S8\.S8"
    assert _req(V("u4", "s32", "m16n8k128", True), "sm_86") == [r"IMMA\.SP\.168128\.U4\.U4\b"]
    xor = V("b1", "s32", "m8n8k128", bitop="xor")
    assert _req(xor, "sm_75") == [r"BMMA\.88128\.XOR\.POPC"] and _req(xor, "sm_80") == [r"BMMA\.88128\.XOR\.POPC"]
    assert r"CALL\.REL" in _req(xor, "sm_90a")
    for arch in ("sm_100a", "sm_120a"):  # no BMMA at all on Blackwell
        assert _req(V("b1", "s32", "m16n8k256", bitop="and"), arch) == [
            r"IMMA\.16832\.U8\.U8",
            r"CALL\.REL",
            T.NO.format("BMMA"),
        ]
        assert _req(V("s8", "s32", "m8n8k16"), arch) == [r"IMMA\.16816\.S8\.S8\b"]  # padded into m16n8k16
    assert _req(V("s8", "s32", "m8n8k16"), "sm_75") == [r"IMMA\.8816\.S8\.S8\b"]


def test_m8n8k4_f16_is_native_only_on_volta_and_turing():
    v = V("f16", "f16", "m8n8k4")
    for arch in ("sm_70", "sm_75"):
        assert _req(v, arch) == [r"HMMA\.884\.F16\.F16\.STEP0", r"HMMA\.884\.F16\.F16\.STEP1"]
    for arch in ("sm_80", "sm_89", "sm_90a", "sm_120a"):
        assert r"SHFL\.IDX" in _req(v, arch)


def test_opaque_build_and_warp_cap_follow_the_emulation():
    from test_mma import arch_define  # the evaluator of lowering's per-arch defines

    fp8_sp = T.SPECS[V("e4m3", "f32", "m16n8k64", True)]
    for arch, emulated in ((890, False), (900, True), (1000, True), (1030, True), (1200, False), (1210, False)):
        assert arch_define(fp8_sp.defines["OPAQUE"], arch) == int(emulated)
        assert arch_define(fp8_sp.defines["MAX_WARPS"], arch) == (8 if emulated else 16)
    quad = T.SPECS[V("f16", "f32", "m8n8k4")]
    assert [arch_define(quad.defines["OPAQUE"], a) for a in (700, 750, 800, 900, 1200)] == [0, 0, 1, 1, 1]
    b1 = T.SPECS[V("b1", "s32", "m8n8k128", bitop="and")]
    assert [arch_define(b1.defines["OPAQUE"], a) for a in (800, 890, 900, 1000, 1200)] == [0, 0, 0, 1, 1]
    assert T.SPECS[V("f16", "f32", "m16n8k16")].defines["OPAQUE"] == 0
    assert T.max_warps(V("e4m3", "f32", "m16n8k64", True), "ada") == 16
    assert T.max_warps(V("e4m3", "f32", "m16n8k64", True), "hopper") == 8


def test_the_latency_chain_is_unrolled_where_the_mma_is_one_tensor_instruction():
    """mma_ilp1 unrolls its loop LATENCY_UNROLL times where the mma is native (0: the compiler's unroll, where an
    emulation or Blackwell's DMMA.8x8x4 make an mma many SASS instructions)."""
    from test_mma import arch_define

    def unroll(v, arches):
        return [arch_define(T.SPECS[v].defines["LATENCY_UNROLL"], a) for a in arches]

    assert T.SPECS[V("f16", "f32", "m16n8k8")].defines["LATENCY_UNROLL"] == T.LATENCY_UNROLL == 64
    assert unroll(V("e4m3", "f32", "m16n8k32"), (890, 900, 1000, 1200)) == [64, 0, 0, 64]
    assert unroll(V("f64", "f64", "m16n8k16"), (900, 1000, 1200)) == [64, 0, 0]
    assert unroll(V("f64", "f64", "m8n8k4"), (800, 890, 900, 1000, 1200)) == [64, 64, 64, 0, 0]
    assert unroll(V("s4", "s32", "m16n8k64"), (800, 890, 900, 1000)) == [64, 64, 0, 0]
    assert unroll(V("f16", "f32", "m8n8k4"), (700, 750, 800, 900)) == [64, 64, 0, 0]
    assert not T.latency_unrolled(V("b1", "s32", "m8n8k128", bitop="xor"), "hopper")  # AND.POPC + a subroutine


# ---------------------------------------------------------------------------------------
# The label, from a SASS (fake SASS text: the instructions NVRTC emits for that family)
# ---------------------------------------------------------------------------------------
def _sass(*lines: str) -> str:
    return "".join(f"        /*{16 * i:04x}*/                   {line} ;\n" for i, line in enumerate(lines))


LABELS = [
    (
        V("e4m3", "f32", "m16n8k32"),
        _sass("QMMA.16832.F32.E4M3.E4M3 R4, R8, R12, R4"),
        True,
        "native QMMA.16832.F32.E4M3.E4M3",
    ),
    (
        V("e4m3", "f32", "m16n8k32"),
        _sass("F2FP.F16.E4M3.UNPACK_B R2, R3", "HMMA.16816.F32 R4, R8, R12, R4"),
        False,
        "emulated: HMMA.16816.F32 (F2FP unpack)",
    ),
    (
        V("e5m2", "f32", "m16n8k64", True),
        _sass("QMMA.SP.16864.F32.E5M2.E5M2 R4, R8, R12, R4, R2, 0x0"),
        True,
        "native QMMA.SP.16864.F32.E5M2.E5M2",
    ),
    (
        V("f64", "f64", "m16n8k16"),
        _sass(*["DMMA.8x8x4 R4, R8, R12, R4"] * 8),
        True,
        "native DMMA.8x8x4, 8 per m16n8k16",
    ),
    (V("f64", "f64", "m16n8k4"), _sass("DMMA.16x8x4 R4, R8, R12, R4"), True, "native DMMA.16x8x4"),
    (V("f64", "f64", "m8n8k4"), _sass("DMMA.884 R4, R8, R12, R4"), True, "native DMMA.884"),
    (
        V("s8", "s32", "m8n8k16"),
        _sass("IMMA.16816.S8.S8 R4, R8, R12, R4"),
        True,
        "native IMMA.16816.S8.S8, the m8n8k16 padded into it (0.5 of it used)",
    ),
    (V("s8", "s32", "m8n8k16"), _sass("IMMA.8816.S8.S8 R4, R8.ROW, R12.COL, R4"), True, "native IMMA.8816.S8.S8"),
    (
        V("s4", "s32", "m16n8k64"),
        _sass("CALL.REL.NOINC 0x300", "IMMA.16832.S8.S8 R4, R8, R12, R4"),
        False,
        "emulated: IMMA.16832.S8.S8 (a subroutine)",
    ),
    (V("u4", "s32", "m8n8k32"), _sass("IMMA.8832.U4.U4 R4, R8.ROW, R12.COL, R4"), True, "native IMMA.8832.U4.U4"),
    (
        V("b1", "s32", "m8n8k128", bitop="and"),
        _sass("CALL.REL.NOINC 0x300", "IMMA.16832.U8.U8 R4, R8, R12, R4"),
        False,
        "emulated: IMMA.16832.U8.U8 (a subroutine)",
    ),
    (
        V("b1", "s32", "m8n8k128", bitop="xor"),
        _sass("BMMA.88128.AND.POPC R4, R8.ROW, R12.COL, RZ", "CALL.REL 0x30"),
        False,
        "emulated: BMMA.88128.AND.POPC (a subroutine)",
    ),
    (
        V("b1", "s32", "m16n8k256", bitop="xor"),
        _sass("BMMA.168256.XOR.POPC R4, R8, R12, R4"),
        True,
        "native BMMA.168256.XOR.POPC",
    ),
    (
        V("f16", "f32", "m8n8k4"),
        _sass("HMMA.884.F32.F32.STEP0 R8, R4.ROW, R2.COL, R8", "HMMA.884.F32.F32.STEP1 R10, R4.ROW, R2.COL, R10"),
        True,
        "native HMMA.884.F32.F32",
    ),
    (
        V("f16", "f32", "m8n8k4"),
        _sass("SHFL.IDX PT, R1, R2, R3, 0x1f", "CALL.REL.NOINC 0x400"),
        False,
        "emulated: no tensor-core instruction (a subroutine)",
    ),
    (V("bf16", "f32", "m16n8k16"), _sass("HMMA.16816.F32.BF16 R4, R8, R12, R4"), True, "native HMMA.16816.F32.BF16"),
    (
        V("f16", "f32", "m16n8k16"),
        _sass("HMMA.16816.F32.BF16 R4, R8, R12, R4"),
        False,
        "emulated: HMMA.16816.F32.BF16",
    ),  # not its own type
    (
        V("tf32", "f32", "m16n8k16", True),
        _sass("HMMA.SP.16816.F32.TF32 R4, R8, R12, R4, R2, 0x0"),
        True,
        "native HMMA.SP.16816.F32.TF32",
    ),
]


@pytest.mark.parametrize(
    ("v", "sass", "native", "text"), LABELS, ids=[f"{c[0].family}.{c[0].key}-{c[3][:8]}" for c in LABELS]
)
def test_label_comes_from_the_sass(v, sass, native, text):
    ex = T.execution(v, sass, "hopper")  # the family only matters without a SASS
    assert (ex.native, ex.text) == (native, text)


def test_without_a_disassembler_the_label_is_the_declared_sass_said_so():
    ex = T.execution(V("e4m3", "f32", "m16n8k32"), None, "blackwell-consumer")
    assert ex.native and "declared for blackwell-consumer" in ex.text and "no disassembler" in ex.text
    assert not T.execution(V("e4m3", "f32", "m16n8k32"), None, "hopper").native


def test_ran_as_and_op_shapes():
    assert T.op_shape("HMMA.1684.F32.TF32") == (16, 8, 4) and T.op_shape("IMMA.SP.168128.S4.S4") == (16, 8, 128)
    assert T.op_shape("BMMA.88128.AND.POPC") == (8, 8, 128) and T.op_shape("DMMA.16x8x16") == (16, 8, 16)
    assert T.execution(V("s4", "s32", "m16n8k64"), _sass("IMMA.16832.S8.S8 R4, R8, R12, R4"), "hopper").ran_as == "s8"
    assert T.execution(V("e4m3", "f32", "m16n8k32"), _sass("HMMA.16816.F32 R4, R8, R12, R4"), "hopper").ran_as == "f16"


# ---------------------------------------------------------------------------------------
# Real builds: the variants whose SASS differs between families, on each family (NVRTC + cuobjdump)
# ---------------------------------------------------------------------------------------
def _builds() -> list[tuple[T.MmaVariant, str]]:
    """One variant per kind (its type group, dense or sparse) whose SASS on a family differs from Hopper's."""
    group = {"e5m2": "e4m3", "u4": "s4", "u8": "s8"}
    out, seen = [], set()
    for arch in ("sm_75", "sm_80", "sm_89", "sm_100a", "sm_120a"):
        t = Target.parse(arch)
        for v, spec in reversed(T.SPECS.items()):  # the largest shape of each kind first
            kind = (group.get(v.a, v.a), v.bitop, v.sparse, t.family)
            if t.family in spec.required_by_family and T.needs_of(v).why_not(t) is None and kind not in seen:
                seen.add(kind)
                out.append((v, arch))
    return out


BUILDS = _builds()


@pytest.mark.sass
@pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")
@pytest.mark.parametrize(("v", "arch"), BUILDS, ids=[f"{v.family}.{v.key}-{a}" for v, a in BUILDS])
@pytest.mark.slow  # every variant on every arch: the nightly tier (tests/bench/test_every_arch.py in CI)
def test_family_sass_holds_in_a_real_build(v, arch):
    from gpudissect.sasscheck import check_spec

    funcs, checks = check_spec(T.SPECS[v], arch)
    assert not [c.pattern for c in checks if not c.found]
    ex = T.execution(v, funcs["mma_ilp1"], Target.parse(arch).family)
    assert ex.native == T.lower(v, Target.parse(arch).family).native, ex.text
