"""The cache suite on every GPU from Volta to Blackwell: what `plan` runs per target (the constant-bank immediate
plans stop at compute capability 9.0); simulated (CPU only): const_cache on Ampere runs those plans as built (its
ptxas keeps c[0x3][imm] in the FFMA) and on Blackwell skips them, icache on a GPU without clusters places its
observers without GPC groups; compiled and disassembled: every variant each target runs holds its family's SASS,
and pre-Hopper ptxas emits the constant operand the probe needs itself."""

from __future__ import annotations

import re

import pytest
from test_const import ConstDevice
from test_icache import FakeStream, IcacheDevice

from fakes import FakeContext, run_bench
from gpudissect.bench.cache import const, const_imm, icache_probe
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import load_all
from gpudissect.capability import CI_ARCHES, Needs, Target
from helpers import missing_sass, skip_unless_readable

IMM = [f"cache_const_imm_{lv}.cu" for lv in ("l1", "l1_5", "l2")]  # the constant-bank immediate plans
CONST = ["cache_const.cu", f"cache_const.cu[thrash{const.thrash_sizes(True)[-1]}]", "cache_const_imm_register.cu"]
ICACHE = [s.name for s in load_all()["cache/icache"].kernels]


def _suite() -> list:
    return [b for b in load_all().values() if b.suite == "cache"]


# ---- what runs where (pure) ------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", CI_ARCHES)
def test_the_cache_suite_on_every_gpu(arch):
    """Both benchmarks run everywhere; the immediate-operand patch knows the sm_90 encoding only and Blackwell
    ptxas keeps the constants in uniform registers: the constant-bank plans stop at 9.0 (the register plan runs)."""
    t = Target.parse(arch)
    p = {e.bench: e for e in plan(_suite(), t)}
    assert {b: (e.status, e.reason) for b, e in p.items()} == {"const_cache": ("run", ""), "icache": ("run", "")}
    assert p["icache"].variants == ICACHE and not p["icache"].skipped_variants
    if t.cc >= (10, 0):
        assert p["const_cache"].variants == CONST
        reasons = {v["variant"]: v["reason"] for v in p["const_cache"].skipped_variants}
        assert list(reasons) == IMM
        assert all(r.startswith(f"needs compute capability <= 9.0 (this GPU: {arch}") for r in reasons.values())
    else:
        assert p["const_cache"].variants == CONST + IMM and not p["const_cache"].skipped_variants


def test_imm_plans_need_a_known_encoding():
    specs = const_imm.IMM_SPECS
    assert specs["register"].needs == Needs()
    assert {lv: specs[lv].needs.max_cc for lv in ("l1", "l1_5", "l2")} == dict.fromkeys(("l1", "l1_5", "l2"), (9, 0))
    native = specs["l1"].required_for(Target(8, 6))["const_imm"]
    assert native[0] == r"FFMA R\d+, R\d+, c\[0x3\]\["
    assert specs["l1"].required_for(Target(9, 0))["const_imm"][0].startswith("ULDC")
    assert const_imm.native("sm_75") and const_imm.native("sm_89") and not const_imm.native("sm_90a")


# ---- simulated --------------------------------------------------------------------------------------------------
def _const_run(monkeypatch, cc: tuple[int, int]):
    """const_cache on ConstDevice as compute capability `cc`; imm_build stands in for NVRTC (the source text is
    the "cubin") and records the plans built; no disassembler."""
    built: list[str] = []
    skipped: list[tuple[str, str]] = []
    monkeypatch.setattr(const, "find_tool", lambda tool: None)
    monkeypatch.setattr(const_imm, "find_tool", lambda tool: None)
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, name, why: skipped.append((name, why)))

    def build(level: str, arch: str, check: bool) -> tuple[bytes, list[int]]:
        built.append(level)
        return const_imm.IMM_SPECS[level].source.encode(), const_imm.IMM_PLANS[level][0]

    monkeypatch.setattr(const_imm, "imm_build", build)
    run = run_bench("const_cache", device=ConstDevice(cc_major=cc[0], cc_minor=cc[1]))
    assert run.status == "ok", run.message
    return run, built, dict(skipped)


def test_const_cache_on_ampere_runs_the_immediate_plans_as_built(monkeypatch):
    run, built, skipped = _const_run(monkeypatch, (8, 6))
    assert built == list(const_imm.IMM_PLANS) and skipped == {}
    assert [run.value(f"cache.const.imm_{lv}_extra_cycles") for lv in ("l1", "l1_5", "l2")] == [2.0, 2.0, 2.0]
    method = run.figures["cache.const.imm_l1_cycles_per_ffma"].method
    assert const_imm.HOW_NATIVE in method and const_imm.UNCHECKED_NATIVE in method
    # as built: ctx.module of each plan's spec, no patched cubin loaded
    assert not getattr(run.device, "loaded", [])


def test_const_cache_on_blackwell_skips_the_constant_bank_plans(monkeypatch):
    run, built, skipped = _const_run(monkeypatch, (10, 0))
    assert built == ["register"] and list(skipped) == IMM
    assert skipped["cache_const_imm_l1.cu"].startswith("needs compute capability <= 9.0 (this GPU: sm_100a")
    assert run.value("cache.const.imm_register_cycles_per_ffma") == 4.0
    assert not any(k.startswith(("cache.const.imm_l1", "cache.const.imm_l2")) for k in run.figures)


class NoClusterIcache(IcacheDevice):
    """IcacheDevice as an A100: no thread-block clusters, so no launch may ask for one."""

    def __init__(self):
        super().__init__()
        self.props |= {"cc_major": 8, "cc_minor": 0}

    def k_cluster_smid(self, launch, out):
        raise AssertionError("a GPU without clusters launched a cluster")


def test_icache_without_clusters_places_observers_without_gpc_groups(monkeypatch):
    monkeypatch.setattr(icache_probe, "compile_spec", lambda spec, arch: spec.source.encode())
    monkeypatch.setattr(icache_probe, "is_cached", lambda spec, arch: True)  # no compile pool of real NVRTC
    monkeypatch.setattr(icache_probe, "find_tool", lambda tool: None)
    monkeypatch.setattr(icache_probe, "Stream", FakeStream)
    run = run_bench("icache", device=NoClusterIcache())
    assert run.status == "ok", run.message
    assert run.value("cache.icache.l0_bytes") == 16384 and run.value("cache.icache.l1_bytes") == 131072
    assert run.value("cache.icache.l0_private_to") == "sub-core (both methods agree)"
    assert "no GPC grouping" in run.figures["cache.icache.l0_private_to"].method
    # 5 warps of the thrasher's SM and its TPC pair, each method: no same-GPC or far observer
    assert len([s for s in run.series if s.figure.startswith("icache_privacy_l0_")]) == 3 * 6


# ---- compiled and disassembled ----------------------------------------------------------------------------------


def _variants() -> list[tuple[str, str]]:
    # Hopper's builds: tests/bench/test_required_sass.py; the 32768-FFMA thrash build costs minutes of NVRTC a
    # target for the straight-line code the small builds show as well (`gpudissect sass --all` checks it)
    return [
        (a, s.name)
        for a in CI_ARCHES
        if a != "sm_90a"
        for b in _suite()
        for s in b.variants(Target.parse(a))[0]
        if "thrash" not in s.name
    ]


VARIANTS = _variants()


@pytest.mark.parametrize(("arch", "name"), VARIANTS, ids=[f"{a}-{n}" for a, n in VARIANTS])
@pytest.mark.sass
@pytest.mark.slow  # every variant on every arch: the nightly tier (tests/bench/test_every_arch.py in CI)
def test_every_cache_variant_holds_its_family_sass(arch, name):
    from gpudissect.sasscheck import check_spec

    skip_unless_readable(arch)
    spec = next(s for b in _suite() for s in b.kernels if s.name == name)
    _, checks = check_spec(spec, arch)
    missing = missing_sass(checks)
    assert checks and not missing, missing


@pytest.mark.parametrize("arch", ["sm_70", "sm_75", "sm_86"])
@pytest.mark.sass
def test_pre_hopper_ptxas_emits_the_constant_operand_itself(arch):
    """Where no patch is needed: the build as compiled holds exactly the chain's FFMA c[0x3][imm]."""
    from gpudissect.device.compiler import compile_spec
    from gpudissect.sass.disasm import disassemble

    skip_unless_readable(arch)
    for level in ("l1", "l2"):
        _, offsets = const_imm.imm_build(level, arch, True)
        sass = disassemble(compile_spec(const_imm.IMM_SPECS[level], arch))["const_imm"]
        assert const_imm.imm_patch_problems(sass, offsets) == []
        assert len(re.findall(r"FFMA R\d+, R\d+, c\[0x3\]", sass)) == len(offsets)
