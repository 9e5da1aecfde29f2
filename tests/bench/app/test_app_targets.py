"""The app suite on every GPU from Ampere on, CPU only: it runs its FP32/TF32/FP16/BF16 parts from compute
capability 8.0, and a GPU without FP8 tensor cores (before 8.9) skips the FP8 types by name with the reason
before anything is measured; the fused FP8 layer on our GEMM runs only where our FP8 GEMM does (sm_90a).
torch is not needed: the workloads are replaced by recorders."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fakes import FakeContext, FakeDevice, run_bench
from gpudissect.bench.app import workloads as wl
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import select
from gpudissect.capability import CI_ARCHES, Target

FP8_CC = (8, 9)
GPUS = ((8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0))


@pytest.mark.parametrize("arch", CI_ARCHES)
def test_plan_per_target(arch):
    t = Target.parse(arch)
    for e in plan(select(["app"]), t):
        if t.cc >= (8, 0):
            assert e.status == "run" and e.reason == "", (arch, e.bench, e.reason)
        else:
            assert e.status == "skip" and e.reason == f"needs bf16 mma.sync (compute capability >= 8.0) (this GPU: {t})"


@pytest.fixture
def recorded(monkeypatch):
    """What each benchmark hands its workload (the workloads are not run), and the variants it skips."""
    got: dict[str, object] = {"skipped": []}
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, n, why: got["skipped"].append((n, why)))
    monkeypatch.setattr(wl, "_torch", lambda: "torch")
    # llm names the Llama classes before its run (their lazy import, ahead of the gc freeze)
    tf = SimpleNamespace(LlamaForCausalLM=None, StaticCache=None, StoppingCriteriaList=None)
    monkeypatch.setattr("gpudissect.app.deps.import_transformers", lambda: tf)
    monkeypatch.setattr("gpudissect.app.linear_run.run_linear", lambda c, t, s, kinds, **k: got.update(linear=kinds))
    monkeypatch.setattr("gpudissect.app.layer_run.run_layers", lambda c, t, h, kinds, *a, **k: got.update(layer=kinds))
    monkeypatch.setattr(
        "gpudissect.app.llm_run.run_llm",
        lambda ctx, torch, tf, plan, *a, fp8, **k: got.update(llm=plan, llm_fp8=fp8),
    )
    return got


def _why(cc: tuple[int, int]) -> str:
    return f"torch._scaled_mm (FP8 tensor cores) needs compute capability >= 8.9 (this GPU: {Target(*cc)})"


def _ours(cc: tuple[int, int]) -> str:
    return f"needs wgmma (sm_90a only) (this GPU: {Target(*cc)})"


@pytest.mark.parametrize("cc", GPUS)
def test_fp8_parts_are_skipped_by_name_where_the_gpu_has_no_fp8(recorded, cc):
    dev = FakeDevice(cc_major=cc[0], cc_minor=cc[1])
    for name in ("linear", "layer", "llm"):
        assert run_bench(f"app/{name}", device=dev).status == "ok", name
    fp8, ours = cc >= FP8_CC, cc == (9, 0)
    assert recorded["linear"] == (list(wl.LINEAR_TYPES) if fp8 else ["fp32", "tf32", "fp16", "bf16"])
    layer = ["fp32", "tf32", "bf16"] + (["fp8", "fp8_eager", "fp8_cached", "fp8_fused"] if fp8 else [])
    assert recorded["layer"] == layer + (["fp8_fused_ours"] if ours else [])
    assert recorded["llm_fp8"] is fp8  # the FP8 GEMM ceiling is measured only where FP8 runs
    llm_plan = recorded["llm"]
    assert set(llm_plan) == {"3b", "7b", "13b"} and ("fp8" in llm_plan["7b"]) is fp8  # quick: FP8 on 7B only
    assert "fp8" not in llm_plan["3b"] + llm_plan["13b"]
    assert all("bf16" in k for k in llm_plan.values())
    if ours:
        assert recorded["skipped"] == []
    elif fp8:  # FP8 GPUs other than Hopper: only the type on our GEMM is skipped, naming wgmma
        assert recorded["skipped"] == [("fp8_fused_ours", f"our FP8 GEMM (gpudissect.gemm, e4m3 on wgmma) {_ours(cc)}")]
    else:
        names = [n for n, _ in recorded["skipped"]]
        assert names == ["fp8", "fp8_fused", "fp8", "fp8_eager", "fp8_cached", "fp8_fused", "fp8_fused_ours", "7b fp8"]
        assert {why for _, why in recorded["skipped"]} == {_why(cc)}


def test_nothing_but_fp8_asked_on_ampere_is_a_skip_that_says_why(recorded):
    dev = FakeDevice(cc_major=8, cc_minor=0)
    r = run_bench("app/linear", {"types": "fp8"}, device=dev)
    assert r.status == "skipped" and r.message == f"every type asked for (fp8) is FP8, and {_why((8, 0))}"
    r = run_bench("app/llm", {"types": "fp8", "sizes": "7b"}, device=dev)
    assert r.status == "skipped" and "(fp8) is FP8" in r.message
    assert "linear" not in recorded and "llm" not in recorded
    r = run_bench("app/layer", {"types": "bf16,fp8_cached"}, device=dev)
    assert r.status == "ok" and recorded["layer"] == ["bf16"]


def test_without_torch_the_skips_are_still_recorded(monkeypatch):
    """The FP8 types are skipped by name before torch is imported: a GPU without torch says both."""
    import sys

    skipped: list[tuple[str, str]] = []
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, n, why: skipped.append((n, why)))
    monkeypatch.setitem(sys.modules, "torch", None)
    r = run_bench("app/linear", device=FakeDevice(cc_major=8, cc_minor=6))
    assert r.status == "skipped" and "needs PyTorch" in r.message
    assert skipped == [("fp8", _why((8, 6))), ("fp8_fused", _why((8, 6)))]
