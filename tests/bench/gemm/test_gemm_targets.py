"""Our GEMM on every target from Volta to Blackwell, CPU only: what `plan` runs where (rung 1, mma.sync, from
compute capability 8.0; the wgmma rungs on sm_90a only, skipped by name elsewhere), the rung the public
default takes on each GPU, and the one-line refusals where a rung or a dtype cannot run."""

from __future__ import annotations

import pytest

from fakes import FakeContext, FakeDevice, bench_context
from gpudissect.bench.gemm import ladder
from gpudissect.bench.plan import plan
from gpudissect.bench.registry import load_all, resolve_params, select
from gpudissect.capability import CI_ARCHES, Target
from gpudissect.errors import GpuDissectError
from gpudissect.gemm import AUTO, RUNGS, default_rung, public_rung
from gpudissect.gemm.variants import check_rung_runs

BENCHES = ("ladder", "vs_cublas", "api_vs_cublas", "power_split")
# the fake GPUs of the issue: (compute capability, whether it has wgmma)
GPUS = {(8, 0): False, (8, 6): False, (8, 9): False, (9, 0): True, (10, 0): False, (12, 0): False}


def _rung(label: str) -> int:
    return int(label.split("[rung")[1].split(".")[0])


@pytest.mark.parametrize("arch", [*CI_ARCHES, "sm_103a", "sm_121a"])
def test_plan_per_target(arch):
    t = Target.parse(arch)
    entries = {e.bench: e for e in plan(select(["gemm"]), t)}
    assert set(entries) == set(BENCHES)
    for name, e in entries.items():
        if t.cc < (8, 0):
            # one reason that names what rung 1 needs and what this GPU is
            assert e.status == "skip" and not e.variants, (arch, name)
            want = "needs mma.sync m16n8k16 (compute capability >= 8.0), cp.async (compute capability >= 8.0)"
            assert e.reason == f"{want} (this GPU: {t})", e.reason
            continue
        assert e.status == "run" and e.reason == "", (arch, name, e.reason)
        runs = {_rung(v) for v in e.variants}
        skipped = {_rung(s["variant"]) for s in e.skipped_variants}
        if t.arch == "sm_90a":
            assert not e.skipped_variants and max(runs) >= 2, (arch, name)
        else:  # rung 1 only; every wgmma rung skipped by name with the one reason that decides it
            assert runs == {1} and skipped and 1 not in skipped, (arch, name)
            assert {s["reason"] for s in e.skipped_variants} == {f"needs wgmma (sm_90a only) (this GPU: {t})"}
        if name == "vs_cublas" and t.arch != "sm_90a":
            assert {v.split(".")[-1] for v in e.variants} == {"bf16]", "fp16]"}  # no fp8 build without wgmma


def test_hopper_keeps_its_rungs():
    entries = {e.bench: e for e in plan(select(["gemm"]), Target(9, 0))}
    assert [_rung(v) for v in entries["ladder"].variants] == list(RUNGS)  # every rung, 1 .. 10, as before
    assert {_rung(v) for v in entries["vs_cublas"].variants} == set(RUNGS)
    assert any(v.endswith("e4m3]") for v in entries["vs_cublas"].variants)


@pytest.mark.parametrize("cc", list(GPUS))
def test_public_default_per_gpu(cc):
    t = Target(*cc)
    if GPUS[cc]:
        assert public_rung(t, "bf16") == AUTO == default_rung("fp16", t) == public_rung(t, "e4m3")
        return
    assert public_rung(t, "bf16") == public_rung(t, "fp16") == 1 == default_rung("bf16", t)
    with pytest.raises(ValueError) as e:
        public_rung(t, "e4m3")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("no e4m3 GEMM of ours runs on this GPU: e4m3 is built on rungs 6, 7")
    assert msg.endswith(f"and rung 10 needs wgmma (sm_90a only) (this GPU: {t})")
    with pytest.raises(ValueError, match=r"^rung 5 \(.+\) cannot run on this GPU: it needs wgmma \(sm_90a only\)"):
        check_rung_runs(5, t)
    check_rung_runs(1, t)


def test_no_gemm_before_ampere_says_why():
    with pytest.raises(ValueError, match=r"^no GEMM of ours runs on this GPU: rung 1 \(mma.sync\) needs mma.sync"):
        public_rung(Target(7, 5), "bf16")
    assert default_rung("bf16") == AUTO == default_rung("e4m3")  # without a target: the per-shape default


@pytest.mark.parametrize("cc", list(GPUS))
def test_vs_cublas_rung_parameter_is_checked_against_the_gpu(cc):
    b = load_all()["gemm/vs_cublas"]
    facts = {"cc_major": cc[0], "cc_minor": cc[1], "sm_count": 100, "free_mem": 40 << 30}
    assert resolve_params(b, {"rung": "1"}, facts)["rung"] == 1
    assert resolve_params(b, {}, facts)["rung"] == AUTO
    if GPUS[cc]:
        assert resolve_params(b, {"rung": "7"}, facts)["rung"] == 7
    else:
        with pytest.raises(GpuDissectError, match="rung 7 cannot run on this GPU: it needs wgmma"):
            resolve_params(b, {"rung": "7"}, facts)
    with pytest.raises(GpuDissectError, match="built rung"):
        resolve_params(b, {"rung": "14"}, facts)


@pytest.mark.parametrize("cc", list(GPUS))
@pytest.mark.parametrize("name", BENCHES)
def test_a_run_records_the_rungs_it_skips(monkeypatch, cc, name):
    """What the benchmarks ask the context before anything is timed: the declared builds this GPU runs, each
    other one recorded as skipped by name (the runner stores them with the result)."""
    skipped: list[tuple[str, str]] = []
    monkeypatch.setattr(FakeContext, "skip_variant", lambda self, n, why: skipped.append((n, why)))
    ctx, _ = bench_context(name, FakeDevice(cc_major=cc[0], cc_minor=cc[1]))
    runs = ctx.runnable(ctx.bench.kernels)
    t = Target(*cc)
    if GPUS[cc]:
        assert not skipped and len(runs) == len(ctx.bench.kernels)
    else:
        assert {_rung(s.label) for s in runs} == {1}
        assert skipped and all(why == f"needs wgmma (sm_90a only) (this GPU: {t})" for _, why in skipped)
        assert {n for n, _ in skipped} == {s.variant for s in ctx.bench.kernels if _rung(s.label) != 1}


def test_model_inputs_are_an_h100s_only_on_hopper(monkeypatch, tmp_path):
    """The committed model inputs are an H100's figures: read for compute capability 9.0 only, never for
    another GPU; a summary named by the environment is read on any."""
    monkeypatch.delenv("GPUDISSECT_GEMM_MODEL_INPUTS", raising=False)
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "results" / "h100-sxm5-80gb" / "summary.json"
    p.parent.mkdir(parents=True)
    p.write_text("{}")
    assert ladder.summary_path((9, 0)) == p and ladder.summary_path() == p
    for cc in ((8, 0), (8, 9), (10, 0), (12, 0)):
        assert ladder.summary_path(cc) is None
    monkeypatch.setenv("GPUDISSECT_GEMM_MODEL_INPUTS", str(p))
    assert ladder.summary_path((8, 0)) == p


@pytest.mark.parametrize("cc", [c for c, wgmma in GPUS.items() if not wgmma])
def test_launcher_refuses_in_one_line_before_compiling(monkeypatch, cc):
    """A GPU without wgmma: a named TMA rung and the fp8 default are refused before anything is compiled."""
    from types import SimpleNamespace

    from gpudissect.gemm import launch

    monkeypatch.setattr(launch.current, "context", lambda: SimpleNamespace(cc=cc, handle=1, sm_count=100))
    monkeypatch.setattr(launch, "compile_kernel_file", lambda *a, **k: pytest.fail("compiled"))
    with pytest.raises(GpuDissectError, match=r"^rung 10 \(.+\) cannot run on this GPU: it needs wgmma") as e:
        launch.function(RUNGS[10], "bf16")
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="^no e4m3 GEMM of ours runs on this GPU"):
        launch.prepare(AUTO, "e4m3", 1, 2, 3, 256, 256, 256, 4, 5)
    with pytest.raises(ValueError, match=r"^rung 1 \(mma.sync\) needs M a multiple of its tile 128, got 136"):
        launch.prepare(AUTO, "bf16", 1, 2, 3, 136, 256, 256)  # the default is rung 1 here: its tile rules
