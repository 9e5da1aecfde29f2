"""The cubin patcher: the patched cubin must disassemble to exactly the intended text (CPU only)."""

from __future__ import annotations

import pytest

from gpudissect.sass.disasm import disassemble_raw, find_tool

pytestmark = [
    pytest.mark.sass,
    pytest.mark.skipif(find_tool("nvdisasm") is None, reason="nvdisasm not installed"),
]  # compiles and disassembles: the slow tier

from gpudissect.device.compiler import compile_cubin  # noqa: E402
from gpudissect.sass.control import PROBE_SOURCE, default_layout  # noqa: E402
from gpudissect.sass.cubin import Cubin, CubinError  # noqa: E402
from gpudissect.sass.patch import Patch, Patcher, PatchError, patch_cubin, verify  # noqa: E402


@pytest.fixture(scope="module")
def cubin():
    return compile_cubin(PROBE_SOURCE, "isa_probe.cu", "sm_90a")


def _first(cubin, prefix):
    texts = disassemble_raw(Cubin(cubin).words("isa_probe"))
    return next(i for i, t in enumerate(texts) if t and t.startswith(prefix)), texts


def test_registers_reuse_and_stall_patched_exactly(cubin):
    i, texts = _first(cubin, "FFMA ")
    p = Patcher(default_layout())
    out, want = patch_cubin(
        cubin, "isa_probe", [Patch(i, {0: 200, 1: 97, 2: 99, 3: 101}, {"stall": 2, "yield": 1, "reuse": 0b101})], p
    )
    assert want[i] == "FFMA R200, R97.reuse, R99, R101.reuse"
    assert verify(out, "isa_probe", want) == []
    assert default_layout().decode(Cubin(out).words("isa_probe")[i]).stall == 2
    # nothing else moved
    before, after = Cubin(cubin).words("isa_probe"), Cubin(out).words("isa_probe")
    assert [k for k, (a, b) in enumerate(zip(before, after)) if a != b] == [i]
    assert len(out) == len(cubin)


def test_reuse_is_hidden_without_yield_and_verify_catches_a_wrong_claim(cubin):
    i, texts = _first(cubin, "FFMA ")
    p = Patcher(default_layout())
    out, want = patch_cubin(cubin, "isa_probe", [Patch(i, {}, {"yield": 0, "reuse": 0b001})], p)
    assert ".reuse" not in want[i]
    assert verify(out, "isa_probe", want) == []
    assert verify(out, "isa_probe", {i: want[i] + " "}) != []


def test_refuses_fields_it_has_not_discovered(cubin):
    i, texts = _first(cubin, "LDG")
    p = Patcher(default_layout())
    with pytest.raises(PatchError):
        patch_cubin(cubin, "isa_probe", [Patch(i, {7: 3})], p)
    with pytest.raises(PatchError):
        patch_cubin(cubin, "isa_probe", [Patch(i, {}, {"colour": 1})], p)


def test_cubin_errors():
    with pytest.raises(CubinError):
        Cubin(b"not an elf file at all, not at all" * 3)
    c = Cubin(compile_cubin(PROBE_SOURCE, "isa_probe.cu", "sm_90a"))
    with pytest.raises(CubinError):
        c.words("no_such_kernel")
    with pytest.raises(CubinError):
        c.with_words("isa_probe", {10**6: 0})
