"""The numerics suite on every GPU from Volta to Blackwell, CPU only: what `plan` runs and skips per target
(with the reasons), the three benchmarks run on fake devices of compute capability 8.0, 8.9, 9.0, 10.0 and 12.0
(statuses, the variants skipped by name, only what ran compared), and the native / emulated label read from
the SASS that ran (the real SASS of each family in the `sass` tier)."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import FakeDevice
from gpudissect.bench.context import BenchContext
from gpudissect.bench.numerics import agreement, common, inputs, probe_bench, profiling, targets
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import select
from gpudissect.capability import CI_ARCHES, Target
from gpudissect.sass.disasm import find_tool

BENCHES = ("tc_probes", "tc_model_agreement", "tc_profiling")
MMA = common.MMA_INSTRS  # f16, bf16, tf32: compute capability 8.0
FP8 = common.MMA_FP8_INSTRS  # 8.9
WGMMA = common.WG_INSTRS  # sm_90a only


def _variants(instrs) -> set[str]:
    return {common.SPECS[i].variant for i in instrs}


def _expected(t: Target) -> tuple[set[str], dict[str, str]]:
    """tc_probes' variants that run on `t`, and the skipped ones with the feature each needs."""
    runs = [*MMA, *(FP8 if t.cc >= (8, 9) else []), *(WGMMA if t.arch == "sm_90a" else [])]
    chains = [ci for ci in common.CHAIN_INSTRS if ci.single in runs]
    skipped = {common.SPECS[i].variant: "wgmma (sm_90a only)" for i in WGMMA if i not in runs}
    skipped |= {common.SPECS[ci].variant: "wgmma (sm_90a only)" for ci in common.CHAIN_INSTRS if ci not in chains}
    skipped |= {common.SPECS[i].variant: "fp8 mma.sync" for i in FP8 if i not in runs}
    return _variants(runs + chains), skipped


# ---------------------------------------------------------------------------------------
# plan: no compiler, no GPU
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", [*CI_ARCHES, "sm_87", "sm_103a", "sm_121a"])
def test_plan_per_target(arch):
    t = Target.parse(arch)
    entries = {e.bench: e for e in plan(select(["numerics"]), t)}
    assert set(entries) == set(BENCHES)
    if t.cc < (8, 0):
        for e in entries.values():
            assert e.status == "skip" and "compute capability >= 8.0" in e.reason and t.arch in e.reason
        return
    runs, skipped = _expected(t)
    for name in ("tc_probes", "tc_model_agreement"):
        e = entries[name]
        assert e.status == "run" and set(e.variants) == runs, (arch, name)
        got = {s["variant"]: s["reason"] for s in e.skipped_variants}
        assert set(got) == set(skipped), (arch, name)
        for v, why in got.items():
            assert skipped[v] in why and f"this GPU: {t.arch}" in why, (v, why)
    prof = entries["tc_profiling"]  # only the instructions it profiles: no chains, no fp8 mma.sync
    assert prof.status == "run" and set(prof.variants) == _variants(
        [i for i in profiling.PROFILE_INSTRS if i.needs.why_not(t) is None]
    )
    assert len(prof.variants) == (10 if t.arch == "sm_90a" else 4)


def test_plan_counts_of_the_issue():
    counts = {a: len(plan(select(["numerics"]), Target.parse(a))[0].variants) for a in CI_ARCHES}
    want = {"sm_70": 0, "sm_75": 0, "sm_80": 8, "sm_86": 8, "sm_89": 12, "sm_90a": 28, "sm_100a": 12, "sm_120a": 12}
    assert counts == want


def test_hopper_keeps_its_declared_sass():
    """sm_90a's patterns are `required`, unchanged; families differ only where fp8 mma.sync is one QMMA."""
    for ins, spec in common.SPECS.items():
        assert spec.required_for(Target(9, 0)) is spec.required
        assert spec.required == common.required(ins)
        fams = set(spec.required_by_family)
        assert fams == ({"ada", "blackwell-consumer"} if ins in FP8 else set()), (ins.key, fams)
    qmma = common.SPECS[FP8[0]].required_for(Target(8, 9))["num_mma"]
    assert qmma == [r"QMMA\.16832\.F32\.E4M3\.E4M3 "]
    assert common.SPECS[FP8[0]].required_for(Target(10, 0)) is common.SPECS[FP8[0]].required  # emulated, as sm_90


# ---------------------------------------------------------------------------------------
# native or emulated: from the SASS
# ---------------------------------------------------------------------------------------
EMULATED = """/*0100*/ F2FP.F16.E4M3.UNPACK_B R8, R16
/*0110*/ F2FP.F16.E4M3.UNPACK_B R16, R16.H1
/*0120*/ HMMA.16816.F32 R4, R4, R8, RZ
/*0130*/ HMMA.16816.F32 R4, R8, R16, R4
/*0140*/ FADD R13, R13, R4
"""
NATIVE = "/*0100*/ QMMA.16832.F32.E4M3.E4M3 R8, R12.ROW, R16.COL, R8\n"


def test_implementation_from_sass_text():
    fp8 = FP8[0]
    im = targets.implementation(fp8, EMULATED)
    assert im.label == "emulated" and "2 x HMMA.16816.F32" in im.note and "2 x F2FP.F16.E4M3.UNPACK_B" in im.note
    assert "C added by FADD" in im.note
    assert targets.implementation(fp8, NATIVE).label == "native"
    assert targets.implementation(FP8[2], NATIVE).label == "emulated"  # e5m2 is not what that QMMA multiplies
    assert targets.implementation(fp8, "/*0100*/ IADD3 R1, R1, 1\n").label == "unknown"
    f16, bf16, tf32 = MMA[0], MMA[2], MMA[3]
    assert targets.implementation(f16, "HMMA.16816.F32 R4, R4, R8, RZ").native
    assert not targets.implementation(f16, "HMMA.16816.F32.BF16 R4, R4, R8, RZ").native
    assert targets.implementation(bf16, "HMMA.16816.F32.BF16 R4, R4, R8, RZ").native
    assert targets.implementation(tf32, "HMMA.1688.F32.TF32 R4, R4, R8, RZ").native
    wg = WGMMA[4]  # e4m3 -> f32
    assert targets.implementation(wg, "QGMMA.64x8x32.F32.E4M3.E4M3 R24, gdesc[UR4], R24").native


needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


@needs_cuobjdump
@pytest.mark.sass
@pytest.mark.parametrize(
    "arch,label", [("sm_89", "native"), ("sm_90a", "emulated"), ("sm_100a", "emulated"), ("sm_120a", "native")]
)
def test_fp8_mma_label_from_each_familys_sass(arch, label):
    from gpudissect.device.compiler import compile_spec
    from gpudissect.sass.disasm import disassemble_cached

    for ins in FP8:
        sass = disassemble_cached(compile_spec(common.SPECS[ins], arch))["num_mma"]
        im = targets.implementation(ins, sass)
        assert im.label == label, (arch, ins.key, im.note)
    for ins in MMA:
        sass = disassemble_cached(compile_spec(common.SPECS[ins], arch))["num_mma"]
        assert targets.implementation(ins, sass).native, (arch, ins.key)


# ---------------------------------------------------------------------------------------
# the benchmarks on fake GPUs of each compute capability
# ---------------------------------------------------------------------------------------
CCS = [(8, 0), (8, 9), (9, 0), (10, 0), (12, 0)]
SOME = [MMA[0], WGMMA[0], FP8[0]]  # one of each kind: mma.f16_f32, wgmma.f16_f32, mma.e4m3_f32


def _params(ins, nm, target):
    """A 'hardware' for the model runner: fp8 mma.sync one block of 32 where it is one QMMA (the probes must
    then compare it as one block), two of 16 otherwise."""
    native_fp8 = target.family in common.QMMA_FAMILIES
    block = ins.k if ins.a not in ("e4m3", "e5m2") or native_fp8 else 16
    return nm.TCParams(
        in_fmt=ins.a,
        acc_fmt=ins.c,
        k=ins.k,
        block_size=block,
        align_frac_bits=13 if ins.family == "wgmma" and ins.a in ("e4m3", "e5m2") else 25,
        out_rounding="rtz",
        inter_block_rounding="rtz",
        inter_fmt="f32",
    )


@pytest.fixture
def fake_gpu(monkeypatch):
    """(run(cc, bench) -> (BenchRun, skipped variants {name: why})): SOME instructions, a model runner, the SASS
    each variant declares for the fake GPU's family (no disassembler)."""
    nm = pytest.importorskip("gpudissect.numerics.model")
    from fakes import run_bench

    class ModelRunner:
        def __init__(self, ctx):
            self.ctx = ctx

        def run(self, ins, A, B, C):
            assert ins.needs.why_not(self.ctx.target) is None, f"{ins.key} ran on {self.ctx.target}"
            a, b, c, _ = inputs.flatten_dots(ins, A, B, C, C)
            return nm.dot(_params(ins, nm, self.ctx.target), a, b, c).astype(np.uint32).reshape(C.shape)

        def dots(self, ins, a, b, c):
            assert ins.needs.why_not(self.ctx.target) is None, f"{ins.key} ran on {self.ctx.target}"
            return nm.dot(_params(ins, nm, self.ctx.target), a, b, c).astype(np.uint32)

    for mod in (probe_bench, agreement, profiling):
        monkeypatch.setattr(mod, "Runner", ModelRunner)
    monkeypatch.setattr(probe_bench, "INSTRS", SOME)
    monkeypatch.setattr(profiling, "PROFILE_INSTRS", SOME[:2])
    monkeypatch.setattr(targets, "sass_of", lambda ctx, spec, fn: None)
    skips: dict[str, str] = {}
    monkeypatch.setattr(BenchContext, "skip_variant", lambda self, name, why: skips.__setitem__(name, why))

    def run(cc, bench, sass=None):
        skips.clear()
        if sass is not None:
            monkeypatch.setattr(targets, "sass_of", lambda ctx, spec, fn: sass)
        dev = FakeDevice(cc_major=cc[0], cc_minor=cc[1], name=f"fake cc {cc[0]}.{cc[1]}")
        return run_bench(f"numerics/{bench}", device=dev), dict(skips)

    return run


@pytest.mark.parametrize("cc", CCS, ids=lambda c: f"cc{c[0]}{c[1]}")
def test_probes_on_every_gpu(fake_gpu, cc):
    t = Target(*cc)
    r, skips = fake_gpu(cc, "tc_probes")
    assert r.status == "ok", r.message
    ran = [i for i in SOME if i.needs.why_not(t) is None]
    chains = [ci for ci in common.CHAIN_INSTRS if ci.single in ran]
    for ins in SOME:
        assert (f"num.{ins.key}.block_size" in r.figures) == (ins in ran), (t.arch, ins.key)
    for ci in common.CHAIN_INSTRS:
        if ci.single in SOME:
            assert (f"num.{ci.key}.between_instructions" in r.figures) == (ci in chains)
    # every variant it cannot run, by name with the reason; nothing else
    want = {common.SPECS[i].variant for i in SOME if i not in ran} | {
        common.SPECS[ci].variant for ci in common.CHAIN_INSTRS if ci.single in SOME and ci not in chains
    }
    assert set(skips) == want
    for name, why in skips.items():
        assert why.startswith("needs ") and f"this GPU: {t.arch}" in why
        assert ("wgmma (sm_90a only)" if "wgmma" in name else "fp8 mma.sync (compute capability >= 8.9)") in why
    # native or emulated as the SASS of this family says (declared here: no disassembler in this test)
    assert r.value("num.mma.f16_f32.implementation") == "native"
    if FP8[0] in ran:
        fp8 = r.figures["num.mma.e4m3_f32.implementation"]
        assert fp8.value == ("native" if t.family in ("ada", "blackwell-consumer") else "emulated"), fp8.note
        assert ("QMMA.16832" in fp8.note) == (fp8.value == "native")
        # the probes find what the fake core does: one block of 32 (native), two of 16 (emulated)
        assert r.value("num.mma.e4m3_f32.block_size") == (32 if fp8.value == "native" else 16)


def test_the_label_is_the_sass_that_ran(fake_gpu):
    """On an 8.9 GPU whose build emulates fp8 mma.sync, the figure says emulated: the SASS decides, not a table."""
    r, _ = fake_gpu((8, 9), "tc_probes", sass=EMULATED)
    assert r.status == "ok", r.message
    assert r.value("num.mma.e4m3_f32.implementation") == "emulated"
    assert "SASS of numerics.cu[mma.e4m3_f32] on sm_89" in r.figures["num.mma.e4m3_f32.implementation"].note


@pytest.mark.parametrize("cc", [(8, 0), (8, 9)], ids=lambda c: f"cc{c[0]}{c[1]}")
def test_agreement_compares_only_what_ran(fake_gpu, cc):
    t = Target(*cc)
    r, skips = fake_gpu(cc, "tc_model_agreement")
    assert r.status == "ok", r.message
    compared = {
        k.removeprefix("num.model.").removesuffix(".agreement_rate")
        for k in r.figures
        if k.endswith(".agreement_rate") and k != "num.model.agreement_rate"
    }
    assert compared == {"mma.f16_f32", "mma.f16_f32.chain4"} | ({"mma.e4m3_f32"} if t.cc >= (8, 9) else set())
    assert r.value("num.model.agreement_rate") == 1.0 and r.value("num.model.multi_block_agreement_rate") == 1.0
    # fp8 mma.sync as one QMMA of one block (the fake core) is compared with the one-block instructions
    one_block = r.figures["num.model.agreement_rate"].method
    assert ("mma.e4m3_f32" in one_block) == (t.cc >= (8, 9)) and "mma.f16_f32" in one_block
    note = r.figures["num.model.agreement_rate"].note
    assert note == r.figures["num.model.multi_block_agreement_rate"].note
    assert note.startswith(f"not run on {t.arch} (skipped variants): ")
    for name in skips:
        assert name in note
    assert ("numerics.cu[mma.e4m3_f32]" in note) == (t.cc < (8, 9)) and "numerics.cu[wgmma.f16_f32]" in note


@pytest.mark.parametrize("cc", [(8, 0), (12, 0)], ids=lambda c: f"cc{c[0]}{c[1]}")
def test_profiling_on_other_gpus(fake_gpu, cc):
    r, skips = fake_gpu(cc, "tc_profiling")
    assert r.status == "ok", r.message
    assert "num.profile.mma.f16_f32.init_f16.mul.mean_abs_err" in r.figures
    assert not any(k.startswith(("num.profile.wgmma", "num.chain.wgmma")) for k in r.figures)
    assert set(skips) == {"numerics.cu[wgmma.f16_f32]"} and "wgmma (sm_90a only)" in skips["numerics.cu[wgmma.f16_f32]"]
