"""The capability model (gpudissect/capability.py): targets, features, needs; and what the runner and
`gpudissect plan` make of it on fake GPUs of every family, with no GPU."""

import json

import pytest
from typer.testing import CliRunner

from gpudissect.capability import CI_ARCHES, FEATURES, Needs, Target
from gpudissect.cli import app


@pytest.mark.parametrize(
    ("text", "cc", "arch", "family"),
    [
        ("sm_70", (7, 0), "sm_70", "volta"),
        ("sm_75", (7, 5), "sm_75", "turing"),
        ("8.0", (8, 0), "sm_80", "ampere"),
        ("sm_89", (8, 9), "sm_89", "ada"),
        ("sm_90", (9, 0), "sm_90a", "hopper"),
        ("compute_100", (10, 0), "sm_100a", "blackwell"),
        ("120", (12, 0), "sm_120a", "blackwell-consumer"),
    ],
)
def test_targets(text, cc, arch, family):
    t = Target.parse(text)
    assert (t.cc, t.arch, t.family) == (cc, arch, family)


def test_bad_targets_are_named():
    with pytest.raises(ValueError, match="no GPU target"):
        Target.parse("hopper")


def test_features_by_family():
    def has(feature, arch):
        return FEATURES[feature].test(Target.parse(arch))

    assert has("wgmma", "sm_90a") and not has("wgmma", "sm_100a") and not has("wgmma", "sm_120a")
    assert has("tcgen05", "sm_100a") and not has("tcgen05", "sm_120a") and not has("tcgen05", "sm_90a")
    assert has("mma_fp8", "sm_89") and not has("mma_fp8", "sm_86")
    assert has("tma", "sm_90a") and has("tma", "sm_120a") and not has("tma", "sm_89")
    assert has("ldmatrix", "sm_75") and not has("ldmatrix", "sm_70")


def test_needs_say_what_is_missing():
    n = Needs((8, 0), features=("wgmma",))
    assert n.why_not(Target.parse("sm_90a")) is None
    why = n.why_not(Target.parse("sm_75"))
    assert "compute capability >= 8.0" in why and "wgmma" in why and "sm_75" in why
    assert (Needs((8, 0)) & Needs((7, 5), features=("tma",))) == Needs((8, 0), None, ("tma",))
    with pytest.raises(ValueError, match="unknown feature"):
        Needs(features=("warp_drive",))


@pytest.mark.parametrize("arch", CI_ARCHES)
def test_plan_json_refuses_nothing(arch):
    r = CliRunner().invoke(app, ["plan", "--arch", arch, "--json"])
    assert r.exit_code == 0, r.output
    entries = json.loads(r.stdout)
    assert {e["status"] for e in entries} <= {"run", "skip"}
    for e in entries:
        assert set(e) >= {"suite", "bench", "status", "reason", "variants"}
        assert (e["status"] == "skip") == bool(e["reason"])
    if arch == "sm_90a":
        assert all(e["status"] == "run" for e in entries if e["suite"] != "fake")


# benchmarks that must run per arch (issue 23's floor); sm_90a runs all 49
FLOOR = {"sm_70": 24, "sm_75": 24, "sm_80": 34, "sm_86": 34, "sm_89": 36, "sm_90a": 50, "sm_100a": 38, "sm_120a": 38}


def test_plan_runs_at_least_the_floor_per_arch():
    from gpudissect.bench.plan import plan
    from gpudissect.bench.registry import load_all

    benches = [b for b in load_all().values() if b.suite not in ("fake", "fake_suite")]
    assert len(benches) == 50
    for arch, floor in FLOOR.items():
        runs = [e.bench for e in plan(benches, Target.parse(arch)) if e.status == "run"]
        assert len(runs) >= floor, (arch, len(runs))
    wgmma = {"wgmma_throughput", "wgmma_sparse", "wgmma_n_sweep", "wgmma_power"}
    for arch in ("sm_89", "sm_100a", "sm_120a"):  # wgmma is sm_90a's only
        skipped = {e.bench: e.reason for e in plan(benches, Target.parse(arch)) if e.status == "skip"}
        assert wgmma <= set(skipped) and all("wgmma" in skipped[b] for b in wgmma), arch


def test_plan_without_a_gpu_asks_for_an_arch(monkeypatch):
    from gpudissect import runner
    from gpudissect.errors import NoGpuError

    def no_gpu():
        raise NoGpuError("no usable NVIDIA GPU")

    monkeypatch.setattr(runner, "probe_device", no_gpu)
    r = CliRunner().invoke(app, ["plan"])
    assert r.exit_code == 2 and "--arch" in r.output


def test_the_runner_stores_a_skip_instead_of_refusing(tmp_path):
    from gpudissect.bench.registry import REGISTRY, benchmark
    from gpudissect.runner import prepare, run_benchmarks, start_run, target_of
    from gpudissect.store import Store

    @benchmark(suite="fake", name="fake_needs_tma", title="t", axes={}, kernels=[], needs=Needs((9, 0)))
    def needs_tma(ctx):  # pragma: no cover - never started on an 8.0 GPU
        raise AssertionError("a benchmark the GPU cannot run was started")

    try:
        facts = {"name": "fake A100", "uuid": "GPU-x", "cc_major": 8, "cc_minor": 0, "sm_count": 108}
        benches = [REGISTRY["fake/fake_needs_tma"]]
        params = prepare(benches, {}, facts)  # no refusal
        s = Store(tmp_path / "s.sqlite")
        rid = start_run(s, facts, "quick", {})
        assert run_benchmarks(s, rid, benches, "quick", params, None, target=target_of(facts)) == "ok"
        (b,) = s.benches(rid)
        assert b.status == "skipped" and "compute capability >= 9.0" in b.message and "sm_80" in b.message
    finally:
        del REGISTRY["fake/fake_needs_tma"]


def test_an_arch_no_nvrtc_compiles_is_named_before_anything_runs(monkeypatch):
    from gpudissect.device import compiler

    monkeypatch.setattr(compiler, "supported_archs", lambda: (75, 80, 90, 120))
    why = compiler.unsupported_why("sm_130")
    assert why and "sm_130" in why and "newer NVRTC" in why
    assert compiler.unsupported_why("sm_90a") is None


@pytest.mark.sass
def test_volta_compiles_with_nvrtc_12():
    from gpudissect.device import compiler, nvrtc_legacy

    if nvrtc_legacy.library() is None:
        assert "NVRTC 12" in (compiler.unsupported_why("sm_70") or "")
        pytest.skip("NVRTC 12 is not installed (pip install 'gpudissect[volta]')")
    cubin = compiler.compile_kernel_file("memory_bank.cu", "sm_70")
    assert cubin[:4] == b"\x7fELF"


def test_plan_lists_parts_that_are_no_kernel_of_ours():
    """The app suite's FP8 types run through torch, not our kernels: plan still names them, run or skipped."""
    from gpudissect.bench.plan import plan
    from gpudissect.bench.registry import REGISTRY, load_all

    load_all()
    (a100,) = plan([REGISTRY["app/layer"]], Target.parse("sm_80"))
    assert a100.status == "run" and a100.variants == ["fp32", "tf32", "bf16"]
    fp8 = ["fp8", "fp8_eager", "fp8_cached", "fp8_fused", "fp8_fused_ours"]
    # the fused FP8 types' cast kernel (ours) is a declared kernel, skipped with them
    assert {s["variant"] for s in a100.skipped_variants} == {*fp8, "app_fp8cast.cu"}
    assert all("compute capability >= 8.9" in s["reason"] for s in a100.skipped_variants)
    (h100,) = plan([REGISTRY["app/layer"]], Target.parse("sm_90a"))
    assert h100.variants == ["app_fp8cast.cu", "fp32", "tf32", "bf16", *fp8]
    assert not h100.skipped_variants
    (l40,) = plan([REGISTRY["app/layer"]], Target.parse("sm_89"))  # FP8, but not our FP8 GEMM (wgmma)
    assert [s["variant"] for s in l40.skipped_variants] == ["fp8_fused_ours"]
