"""Every instruction the project's own kernels compile to: each registered KernelSpec built for an
arch, split into functions, each instruction as its 128-bit word and nvdisasm's text."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from dataclasses import dataclass

from ..device.compiler import compile_kernel_file
from ..device.sass import disassemble_raw
from .cubin import Cubin
from .encoding import relative_text


@dataclass(frozen=True)
class Function:
    spec: str  # KernelSpec name
    name: str
    words: tuple[int, ...]
    texts: tuple[str | None, ...]


def cubin_functions(spec: str, cubin: bytes, arch: str = "SM90a") -> list[Function]:
    """All functions of one cubin, disassembled in one nvdisasm call."""
    c = Cubin(cubin)
    names = c.functions()
    per = [c.words(n) for n in names]
    texts = disassemble_raw([w for ws in per for w in ws], arch)
    out, at = [], 0
    for n, ws in zip(names, per):
        out.append(Function(spec, n, tuple(ws), _own_addresses(texts[at : at + len(ws)], at)))
        at += len(ws)
    return out


def _own_addresses(texts: list[str | None], start: int) -> tuple[str | None, ...]:
    """Branch targets as offsets in the function (the batch put it at 16*start)."""
    return tuple(relative_text(t, start, absolute=True) for t in texts)


def _build(spec, arch: str) -> bytes:  # top level: runs in a worker process
    return compile_kernel_file(spec.file, arch, spec.defines)


def project_functions(arch: str = "sm_90a") -> list[Function]:
    """Every function of every cubin the project builds (one build per distinct KernelSpec)."""
    from ..bench.registry import load_all
    from ..sasscheck import _map, _parallel_work

    specs = dict(sorted({s.name: s for b in load_all().values() for s in b.kernels}.items()))
    todo = list(specs.values())
    if multiprocessing.current_process().daemon:
        # a benchmark child may not start a process pool: a separate interpreter fills the cubin cache
        # in parallel, then every build below is a cache hit
        subprocess.run(
            [sys.executable, "-m", "gpudissect.sass.corpus", arch],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        built = [_build(s, arch) for s in todo]
    else:
        built = _map(_build, todo, arch, None, None, _parallel_work(todo, arch))
    cubins = dict(zip(specs, built))
    raw_arch = "SM" + arch.removeprefix("sm_")
    out: list[Function] = []
    # one nvdisasm call for all cubins together
    parts = [(name, fn, Cubin(cb).words(fn)) for name, cb in cubins.items() for fn in Cubin(cb).functions()]
    texts = disassemble_raw([w for _, _, ws in parts for w in ws], raw_arch)
    at = 0
    for name, fn, ws in parts:
        out.append(Function(name, fn, tuple(ws), _own_addresses(texts[at : at + len(ws)], at)))
        at += len(ws)
    return out


if __name__ == "__main__":  # python -m gpudissect.sass.corpus ARCH: build every kernel into the cache
    from ..bench.registry import load_all
    from ..sasscheck import _map, _parallel_work

    _arch = sys.argv[1] if len(sys.argv) > 1 else "sm_90a"
    _specs = list({s.name: s for b in load_all().values() for s in b.kernels}.values())
    _map(_build, _specs, _arch, None, None, _parallel_work(_specs, _arch))
