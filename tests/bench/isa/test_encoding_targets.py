"""isa_encoding on other architectures than Hopper's, CPU only: which architecture it analyses (the `arch`
parameter, the run's GPU, GPU 0), the skip where this machine cannot analyse it (no NVRTC for it, or an
nvdisasm that reads none of its raw words: CUDA 13's and sm_70), the control-width check where the compiler
never sets a reuse bit, and the analysis itself on sm_80 over a few kernels."""

from __future__ import annotations

import pytest

from fakes import FakeDevice, run_bench
from gpudissect.bench.isa import corpus, encoding
from gpudissect.capability import Target
from gpudissect.errors import GpuDissectError, NoGpuError
from gpudissect.sass.control import ControlLayout
from gpudissect.sass.disasm import find_tool

CUDA13_RAW = frozenset({"SM75", "SM80", "SM86", "SM89", "SM90", "SM90a", "SM100a", "SM120a"})
FIELDS = {"stall": (105, 4), "yield": (109, 1), "wbar": (110, 3), "rbar": (113, 3), "wait": (116, 6), "reuse": (122, 4)}


def _built_for(arch: str) -> list:
    raise GpuDissectError(f"built for {arch}")  # where the analysis would start building


def _layout(control: str, reuse: str, unused: tuple[int, ...], fit: bool) -> ControlLayout:
    ev = {"control_bits": f"{control} (n bits): never printed alone, set in compiled code", "unused_bits": "-"}
    ev |= {"reuse": f"bits {reuse} print .reuse on source operand slots", "jia_widths_fit": str(fit)}
    return ControlLayout(FIELDS, unused, ev)


def test_widths_fit_with_a_reuse_bit_the_compiler_never_sets():
    """sm_80's ptxas sets no bit 125 (the 4th reuse slot) in any of our cubins: silent and unused like the
    rest of the field, it does not contradict Jia's layout; a bit outside the span or a reuse bit seen
    elsewhere does."""
    assert encoding.widths_fit(_layout("105-125", "122-125", (92, 93), True)) == (True, "")
    assert encoding.widths_fit(_layout("105-124", "122-124", (92, 125, 126, 127), False)) == (True, "125")
    assert encoding.widths_fit(_layout("105-124", "122-124", (92, 126), False))[0] is False  # 125 not silent
    assert encoding.widths_fit(_layout("105-124, 126", "122-124", (125,), False))[0] is False  # 126 outside
    assert encoding.widths_fit(_layout("105-124", "121-124", (125,), False))[0] is False  # reuse below the field
    assert encoding.widths_fit(_layout("106-125", "122-125", (105,), False))[0] is False  # a stall bit unset


@pytest.mark.parametrize("arch", ["sm_70", "sm_75", "sm_90a", "sm_120a"])
def test_the_parameter_names_the_architecture(monkeypatch, arch):
    """--set arch=sm_XX analyses that architecture; an nvdisasm that reads none of its raw words is a skip with
    the reason (CUDA 13's: sm_70), before any build."""
    monkeypatch.setattr(corpus, "raw_arches", lambda: CUDA13_RAW)
    monkeypatch.setattr(encoding, "project_functions", _built_for)
    run = run_bench("isa/isa_encoding", {"arch": arch}, FakeDevice(cc_major=9, cc_minor=0))
    if arch == "sm_70":
        assert run.status == "skipped"
        assert "no raw SM70 words (it knows SM75 .. SM120a)" in run.message and "on sm_70" in run.message
    else:
        assert run.status == "failed" and f"built for {arch}" in run.message


@pytest.mark.parametrize("cc", [(7, 0), (8, 0), (8, 9), (9, 0), (10, 0), (12, 0)])
def test_the_run_gpu_is_analysed(monkeypatch, cc):
    """Without the parameter the run's GPU's own architecture, never sm_90a by default."""
    monkeypatch.setattr(corpus, "raw_arches", lambda: CUDA13_RAW | {"SM70"})
    monkeypatch.setattr(encoding, "project_functions", _built_for)
    run = run_bench("isa/isa_encoding", {}, FakeDevice(cc_major=cc[0], cc_minor=cc[1]))
    assert run.status == "failed" and f"built for {Target(*cc).arch}" in run.message


def test_no_gpu_and_no_parameter_is_a_skip(monkeypatch):
    """The runner opens no device for a CPU-only benchmark: GPU 0 is asked, and without one it is a skip."""
    from gpudissect.bench.context import BenchContext
    from gpudissect.bench.registry import load_all
    from gpudissect.device import cuda
    from gpudissect.errors import BenchSkipped

    def no_gpu(i):
        raise NoGpuError("no CUDA driver")

    monkeypatch.setattr(cuda, "Device", no_gpu)
    b = load_all()["isa/isa_encoding"]
    ctx = BenchContext(b, None, "quick", {"arch": None}, lambda k, p: None)  # type: ignore[arg-type]
    with pytest.raises(BenchSkipped, match=r"no GPU to take the architecture from \(no CUDA driver\); --set arch"):
        b.func(ctx)


def test_an_architecture_no_nvrtc_builds_is_a_skip(monkeypatch):
    monkeypatch.setattr(encoding, "unsupported_why", lambda a: f"NVRTC 13.0 compiles for sm_75 .. sm_121; {a} needs X")
    run = run_bench("isa/isa_encoding", {"arch": "sm_130"}, FakeDevice())
    assert run.status == "skipped" and run.message.startswith("no discovery for sm_130 here: NVRTC 13.0")


@pytest.mark.sass
@pytest.mark.skipif(find_tool("nvdisasm") is None, reason="nvdisasm not installed")
def test_encoding_of_sm80_over_a_few_kernels(monkeypatch):
    """The whole analysis on sm_80 (an A100's architecture) over three kernels: opcodes and control fields
    found in sm_80's words, the consistency check without the H100's latencies."""
    from gpudissect.bench.isa.native import SPECS
    from gpudissect.bench.isa.regbank import SPEC

    specs = [SPEC, SPECS["ffma"], SPECS["lds"]]
    monkeypatch.setattr(corpus, "project_specs", lambda target=None: specs)
    run = run_bench("isa/isa_encoding", {}, FakeDevice(cc_major=8, cc_minor=0))
    assert run.status == "ok", run.message
    assert "built for sm_80" in run.figures["isa.encoding.opcodes"].method
    assert run.value("isa.control.stall_bits") == "108:105" and run.value("isa.control.reuse_bits") == "125:122"
    assert "no measured latencies of sm_80" in run.figures["isa.control.consistency"].method
