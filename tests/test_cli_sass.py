"""Issue 10 item 12: `sass` names each variant, words absent patterns as such, shows progress, compiles
cold kernels in a process pool, and says when a benchmark has no kernels of its own."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gpudissect import sasscheck
from gpudissect.bench.registry import REGISTRY, Benchmark, KernelSpec
from gpudissect.cli import app
from gpudissect.sass.disasm import SassCheck, find_tool

pytestmark = pytest.mark.sass  # compiles with NVRTC / disassembles: the slow tier

runner = CliRunner()
needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")
NO = r"\A(?![\s\S]*{})"  # the form bench/tensor_mma/ uses for "must be absent"


def _register(monkeypatch, name, kernels):
    b = Benchmark("fake", name, lambda ctx: None, "t", {}, kernels, needs_gpu=False)
    monkeypatch.setitem(REGISTRY, b.key, b)
    return b


def test_variant_names_and_absent_wording():
    a = KernelSpec("memory_bank.cu", {"bank_u32": []}, {"STRIDE": 2, "A": 1})
    assert sasscheck.variant_name(a) == "memory_bank.cu [A=1, STRIDE=2]"
    assert (
        sasscheck.variant_name(KernelSpec("tensor_mma.cu", {}, {"X": 1}, label="tensor_mma.cu[f16]"))
        == "tensor_mma.cu[f16]"
    )
    assert sasscheck.absent_inner(NO.format("LDC")) == "LDC"
    assert sasscheck.absent_inner(r"^(?!.*LDC\.64)") == r"LDC\.64"
    assert sasscheck.absent_inner(r"HMMA\.16816") is None
    funcs = {"k": "/*0010*/ LDC R1, c[0x0][0x210]\n/*0020*/ EXIT\n"}
    ok = SassCheck("k", NO.format("HMMA"), True, "")
    bad = SassCheck("k", NO.format("LDC"), False, "")
    assert sasscheck.describe(ok, funcs) == "k: absent: HMMA"
    assert sasscheck.describe(bad, funcs).startswith("k: PRESENT but must be absent: LDC  /*0010*/ LDC R1")
    assert "found" not in sasscheck.describe(ok, funcs)


def test_benchmark_without_kernels_says_so(monkeypatch):
    _register(monkeypatch, "fake_library", [])
    r = runner.invoke(app, ["sass", "fake_library"])
    assert r.exit_code == 0 and "no kernels of its own" in r.stdout


@needs_cuobjdump
def test_sass_headers_progress_and_pool(monkeypatch, tmp_path):
    # a cold cache of our own: both variants compile, in a process pool, each reported as it ends
    monkeypatch.setenv("GPUDISSECT_CACHE", str(tmp_path / "cold"))
    specs = [
        KernelSpec("memory_bank.cu", {"bank_u32": [r"LDS", NO.format("HGMMA")]}, {"BANK_TEST_PAD": k}) for k in (1, 2)
    ]
    _register(monkeypatch, "fake_two_variants", specs)
    used: list[int] = []
    real = sasscheck.parallel_map

    def spy(fn, specs_, arch, jobs, progress, cold):
        used.append(cold)
        return real(fn, specs_, arch, jobs, progress, cold)

    monkeypatch.setattr(sasscheck, "parallel_map", spy)
    r = runner.invoke(app, ["sass", "fake_two_variants", "-j", "2"])
    assert r.exit_code == 0, (r.stdout, r.stderr)
    assert used == [2]  # both cold: the pool ran
    assert (
        "memory_bank.cu [BANK_TEST_PAD=1] (sm_90a)" in r.stdout
        and "memory_bank.cu [BANK_TEST_PAD=2] (sm_90a)" in r.stdout
    )
    assert "absent: HGMMA" in r.stdout and "found /LDS/" in r.stdout
    assert "compiled 1/2" in r.stderr and "compiled 2/2" in r.stderr
    r = runner.invoke(app, ["sass", "fake_two_variants"])  # now warm: no pool, no progress lines
    assert used == [2, 0] and r.exit_code == 0 and "compiled" not in r.stderr


@needs_cuobjdump
def test_pool_and_serial_agree(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDISSECT_CACHE", str(tmp_path / "c"))
    b = _register(
        monkeypatch,
        "fake_agree",
        [KernelSpec("memory_bank.cu", {"bank_u32": [r"LDS"]}, {"BANK_TEST_PAD": k}) for k in (3, 4)],
    )
    pooled = sasscheck.check_benchmark(b, "sm_90a", jobs=2)
    serial = sasscheck.check_benchmark(b, "sm_90a", jobs=1)
    assert [(s.defines, f, c) for s, f, c in pooled] == [(s.defines, f, c) for s, f, c in serial]
