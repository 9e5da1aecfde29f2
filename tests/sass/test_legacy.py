"""The CUDA 12 cuobjdump for Volta: found by env or in the cache, used only where the default one refuses a
cubin, and a GPU whose code no installed cuobjdump reads is one line before a run (fake tools, no network)."""

import os
import stat

import pytest

from gpudissect.errors import GpuDissectError
from gpudissect.sass import disasm, legacy

pytestmark = pytest.mark.sass  # runs (fake) cuobjdumps


def _find_tool_cache_clear() -> None:
    getattr(disasm.find_tool, "__wrapped__", disasm.find_tool).cache_clear()


SASS = """
\tcode for sm_70
\t\tFunction : k
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;   /* 0x00000a00ff017624 */
"""


def _tool(tmp_path, name: str, release: str, refuses: bool):
    """A fake cuobjdump of a CUDA release; `refuses`: it says Volta is deprecated, as CUDA 13's does."""
    path = tmp_path / name
    body = (
        'echo "nvdisasm fatal : CUDA architecture \\"SM70\\" is deprecated" >&2; exit 1'
        if refuses
        else "cat <<'X'\n" + SASS + "X"
    )
    path.write_text(
        f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Cuda compilation tools, release {release}, V{release}.1"; '
        f"exit 0; fi\n{body}\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def tools(tmp_path, monkeypatch):
    new = _tool(tmp_path, "cuobjdump13", "13.0", refuses=True)
    old = _tool(tmp_path, "cuobjdump12", "12.8", refuses=False)
    monkeypatch.setenv("GPUDISSECT_CUOBJDUMP", new)
    monkeypatch.setenv("GPUDISSECT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GPUDISSECT_CUOBJDUMP12", raising=False)
    _find_tool_cache_clear()
    legacy.tool_version.cache_clear()
    yield new, old
    _find_tool_cache_clear()


def test_a_cubin_cuda13_refuses_goes_to_the_cuda12_tool(tools, monkeypatch):
    new, old = tools
    with pytest.raises(GpuDissectError, match=r"no longer reads that architecture; run `gpudissect doctor --fetch"):
        disasm.disassemble(b"\x7fELF")
    monkeypatch.setenv("GPUDISSECT_CUOBJDUMP12", old)
    assert "IMAD.MOV.U32 R1" in disasm.disassemble(b"\x7fELF")["k"]


def test_the_fetched_tool_is_found_in_the_cache(tools):
    _, old = tools
    assert legacy.cuobjdump() is None
    legacy.home().mkdir(parents=True)
    os.symlink(old, legacy.home() / "cuobjdump")
    assert legacy.cuobjdump() == str(legacy.home() / "cuobjdump")


def test_a_cuda13_tool_in_place_of_the_cuda12_one_is_not_taken(tools, monkeypatch):
    new, _ = tools
    monkeypatch.setenv("GPUDISSECT_CUOBJDUMP12", new)
    assert legacy.cuobjdump() is None


def test_volta_without_a_reader_is_said_before_a_run(tools, monkeypatch):
    new, old = tools
    why = disasm.unreadable_why("sm_70")
    assert why and "CUDA 13.0" in why and "--fetch-cuda12" in why
    assert disasm.unreadable_why("sm_75") is None  # CUDA 13 reads Turing on
    monkeypatch.setenv("GPUDISSECT_CUOBJDUMP12", old)
    assert disasm.unreadable_why("sm_70") is None
    monkeypatch.delenv("GPUDISSECT_CUOBJDUMP12")
    monkeypatch.setenv("GPUDISSECT_CUOBJDUMP", old)  # a CUDA 12 toolkit as the default tool reads Volta itself
    _find_tool_cache_clear()
    assert disasm.unreadable_why("sm_70") is None


def test_run_refuses_a_volta_gpu_it_cannot_check_with_one_line(tools):
    from gpudissect.cli import _check_compiler_knows

    with pytest.raises(GpuDissectError, match=r"cannot check kernels for this GPU \(Tesla V100\).*--fetch-cuda12"):
        _check_compiler_knows({"arch": "sm_70", "name": "Tesla V100"})
