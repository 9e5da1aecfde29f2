"""Every instruction the project's own kernels compile to: each registered KernelSpec built for an arch
(in a process pool), split into functions, each instruction as its 128-bit word and nvdisasm's text.
The isa suite's encoding discovery and `gpudissect isa encoding` read it."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys

from ...device.compiler import KernelSpec, compile_spec, parallel_map
from ...sass.corpus import Function, own_addresses
from ...sass.cubin import Cubin
from ...sass.disasm import disassemble_raw
from ..registry import load_all


def project_specs() -> list[KernelSpec]:
    """One KernelSpec per distinct build of a kernel file of every registered benchmark, by name. Generated
    builds (a prelude of straight-line code before or instead of the file) are left out: they repeat the
    opcodes of their skeleton, and their size would only weigh on the corpus."""
    specs = {s.name: s for b in load_all().values() for s in b.kernels if not s.prelude}
    return list(dict(sorted(specs.items())).values())


def project_functions(arch: str = "sm_90a") -> list[Function]:
    """Every function of every cubin the project builds (one build per distinct KernelSpec)."""
    todo = project_specs()
    if multiprocessing.current_process().daemon:
        # a benchmark child may not start a process pool: a separate interpreter fills the cubin cache
        # in parallel, then every build below is a cache hit
        subprocess.run(
            [sys.executable, "-m", __name__, arch],
            check=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        built = [compile_spec(s, arch) for s in todo]
    else:
        built = parallel_map(compile_spec, todo, arch)
    raw_arch = "SM" + arch.removeprefix("sm_")
    out: list[Function] = []
    # one nvdisasm call for all cubins together
    parts = [(s.name, fn, Cubin(cb).words(fn)) for s, cb in zip(todo, built) for fn in Cubin(cb).functions()]
    texts = disassemble_raw([w for _, _, ws in parts for w in ws], raw_arch)
    at = 0
    for name, fn, ws in parts:
        out.append(Function(name, fn, tuple(ws), own_addresses(texts[at : at + len(ws)], at)))
        at += len(ws)
    return out


if __name__ == "__main__":  # python -m gpudissect.bench.isa.corpus ARCH: build every kernel into the cache
    parallel_map(compile_spec, project_specs(), sys.argv[1] if len(sys.argv) > 1 else "sm_90a")
