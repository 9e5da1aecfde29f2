"""Every instruction the project's own kernels compile to: each registered KernelSpec an arch can run, built
for it (in a process pool), split into functions, each instruction as its 128-bit word and nvdisasm's text.
The isa suite's encoding discovery and `gpudissect isa encoding` read it; which architectures nvdisasm
reads raw words of (the discovery's condition) is here too."""

from __future__ import annotations

import multiprocessing
import re
import subprocess
import sys
from functools import cache

from ...capability import Target
from ...device.compiler import KernelSpec, Progress, compile_spec, parallel_map
from ...sass.corpus import Function, own_addresses
from ...sass.cubin import Cubin
from ...sass.disasm import disassemble_raw, find_tool
from ..registry import load_all


def raw_arch(arch: str) -> str:
    """nvdisasm's name of an architecture for raw words: sm_90a -> SM90a, sm_80 -> SM80."""
    return "SM" + arch.removeprefix("sm_")


@cache
def raw_arches() -> frozenset[str]:
    """The architectures this nvdisasm disassembles raw instruction words of (its --binary values, e.g.
    SM75 .. SM121f for CUDA 13, which has no SM70); empty without nvdisasm."""
    tool = find_tool("nvdisasm")
    if tool is None:
        return frozenset()
    text = subprocess.run([tool, "--help"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"^--binary\b(.*?)\n--", text, re.S | re.M)  # the option itself, not a mention of it
    return frozenset(re.findall(r"'(SM\w+)'", m.group(1))) if m else frozenset()


def raw_words_why(arch: str, what: str) -> str | None:
    """Why `what` (work on nvdisasm's text of raw instruction words) cannot run on `arch`, None when it can:
    CUDA 13's nvdisasm reads no raw sm_70/sm_72 words."""
    known = raw_arches()
    if raw_arch(arch) in known:
        return None
    if not known:
        return f"no nvdisasm found (pip install nvidia-cuda-nvdisasm): {what} works on its text"
    by_number = sorted(known, key=lambda a: (int(re.sub(r"\D", "", a)), a))
    return (
        f"this nvdisasm disassembles no raw {raw_arch(arch)} words (it knows {by_number[0]} .. {by_number[-1]}): "
        f"{what} has nothing to read on {arch}"
    )


def no_discovery_why(arch: str) -> str | None:
    """Why the bit-flip discovery cannot read `arch` (None when it can)."""
    return raw_words_why(arch, "the bit-flip discovery of the encoding and control fields")


def project_specs(target: Target | None = None) -> list[KernelSpec]:
    """One KernelSpec per distinct build of a kernel file of every registered benchmark, by name: the
    variants `target` runs (of the benchmarks it runs), or every variant without a target. Generated
    builds (a prelude of straight-line code before or instead of the file) are left out: they repeat the
    opcodes of their skeleton, and their size would only weigh on the corpus."""
    benches = list(load_all().values())
    if target is None:
        chosen = [s for b in benches for s in b.kernels]
    else:
        chosen = [s for b in benches if b.why_not(target) is None for s in b.variants(target)[0]]
    specs = {s.name: s for s in chosen if not s.prelude}
    return list(dict(sorted(specs.items())).values())


def project_functions(arch: str = "sm_90a", progress: Progress | None = None) -> list[Function]:
    """Every function of every cubin the project builds for `arch` (one build per distinct KernelSpec that
    arch runs); `progress(done, total, what)` while they compile (a cold cache: 1.5-2 minutes)."""
    todo = project_specs(Target.parse(arch))
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
        built = parallel_map(compile_spec, todo, arch, progress=progress)
    out: list[Function] = []
    # one nvdisasm call for all cubins together
    parts = [(s.name, fn, Cubin(cb).words(fn)) for s, cb in zip(todo, built) for fn in Cubin(cb).functions()]
    texts = disassemble_raw([w for _, _, ws in parts for w in ws], raw_arch(arch))
    at = 0
    for name, fn, ws in parts:
        out.append(Function(name, fn, tuple(ws), own_addresses(texts[at : at + len(ws)], at)))
        at += len(ws)
    return out


if __name__ == "__main__":  # python -m gpudissect.bench.isa.corpus ARCH: build every kernel into the cache
    a = sys.argv[1] if len(sys.argv) > 1 else "sm_90a"
    parallel_map(compile_spec, project_specs(Target.parse(a)), a)
