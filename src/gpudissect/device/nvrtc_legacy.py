"""NVRTC 12, for the targets NVRTC 13 no longer compiles (Volta, sm_70/sm_72).

cuda-bindings 13 binds NVRTC 13, which starts at sm_75. NVRTC's C API is the same in 12, so an NVRTC 12 library
(`pip install "gpudissect[volta]"`, the nvidia-cuda-nvrtc-cu12 wheel, or a CUDA 12 toolkit) is called through
ctypes for those targets only. Reading their SASS needs a CUDA 12 cuobjdump as well (see sass/disasm.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import sys
from functools import cache

from ..errors import CompileError

INSTALL = 'pip install "gpudissect[volta]" (NVRTC 12), or put a CUDA 12 toolkit\'s lib64 on LD_LIBRARY_PATH'


@cache
def library() -> ctypes.CDLL | None:
    """libnvrtc.so.12 from the cu12 wheel, a CUDA 12 toolkit or the loader's path; None when there is none."""
    candidates = []
    for base in sys.path:
        candidates += glob.glob(os.path.join(base, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so.12"))
    candidates += sorted(glob.glob("/usr/local/cuda-12*/lib64/libnvrtc.so.12"), reverse=True)
    candidates.append("libnvrtc.so.12")
    # NVRTC 13 first: cuda.bindings binds libnvrtc by soname on first use, and with .so.12 already loaded
    # every later build in this process would silently go to NVRTC 12
    with contextlib.suppress(Exception):
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()  # the call that binds NVRTC 13 (compiler.nvrtc_version's, without importing it)
    for c in candidates:
        try:
            return ctypes.CDLL(c)
        except OSError:
            continue
    return None


def compile_program(source: str, name: str, opts: list[str], headers: list[tuple[str, str]], output: str) -> bytes:
    """One compilation with NVRTC 12 (same contract as compiler.nvrtc_compile)."""
    lib = library()
    if lib is None:
        raise CompileError(f"{name}: this target needs NVRTC 12, which is not installed: {INSTALL}")
    prog = ctypes.c_void_p()
    n = len(headers)
    hsrc = (ctypes.c_char_p * n)(*[h[1].encode() for h in headers])
    hname = (ctypes.c_char_p * n)(*[h[0].encode() for h in headers])
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), n, hsrc, hname) != 0:
        raise CompileError(f"nvrtcCreateProgram (NVRTC 12) failed for {name}")
    try:
        copts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        if lib.nvrtcCompileProgram(prog, len(opts), copts) != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            text = log.value.decode(errors="replace").strip()
            raise CompileError(f"{name} failed to compile with NVRTC 12 ({' '.join(opts)}):\n{text}")
        size_of, get = (
            (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN) if output == "cubin" else (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
        )
        size = ctypes.c_size_t()
        size_of(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        get(prog, buf)
        return buf.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def version() -> str | None:
    lib = library()
    if lib is None:
        return None
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return f"{major.value}.{minor.value}"
