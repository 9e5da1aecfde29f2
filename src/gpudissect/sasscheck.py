"""Compile a benchmark's kernels and check their SASS holds the instructions they must (CPU only).

Cold kernels (and any benchmark with many kernels: disassembly alone takes ~0.5 s per cubin) are
handled in a process pool, reporting each finished kernel so a long `sass` shows signs of life.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Any, TypeVar

from .bench.registry import Benchmark, KernelSpec
from .device.compiler import compile_kernel_file
from .device.sass import SassCheck, check_required, disassemble
from .errors import GpuDissectError

Progress = Callable[[int, int, str], None]  # (done, total, what finished)
T = TypeVar("T")

# A required pattern that asserts absence: "\A(?![\s\S]*X)" (anywhere in the function) or "^(?!.*X)".
_ABSENT = re.compile(r"^(?:\\A|\^)?\(\?!(?:\[\\s\\S\]\*|\.\*)(?P<inner>.*)\)$")


def check_spec(spec: KernelSpec, arch: str = "sm_90a") -> tuple[dict[str, str], list[SassCheck]]:
    funcs = disassemble(compile_kernel_file(spec.file, arch, spec.defines))
    return funcs, check_required(funcs, spec.required)


def check_arch(arch: str) -> None:
    if not re.fullmatch(r"sm_\d{2,3}[af]?", arch):
        raise GpuDissectError(f"--arch takes a real GPU target such as sm_90a, sm_89 or sm_80, not {arch!r}")


def variant_name(spec: KernelSpec) -> str:
    """What tells one variant of a kernel file from another: its label, else the file and its defines."""
    if spec.label:
        return spec.label
    if spec.defines:
        return f"{spec.file} [{', '.join(f'{k}={v}' for k, v in sorted(spec.defines.items()))}]"
    return spec.file


def absent_inner(pattern: str) -> str | None:
    """X for a pattern that requires X to be absent, else None."""
    m = _ABSENT.match(pattern)
    return m.group("inner") if m else None


def describe(c: SassCheck, funcs: dict[str, str]) -> str:
    """One line per check: "found /HMMA/: HMMA.16816…", "absent: LDC", "MISSING /X/", "PRESENT (must be absent) …"."""
    inner = absent_inner(c.pattern)
    if inner is not None:
        if c.found:
            return f"{c.function}: absent: {inner}"
        m = re.search(inner, funcs.get(c.function, ""), re.MULTILINE)
        text = funcs.get(c.function, "")
        line = text[text.rfind("\n", 0, m.start()) + 1 : text.find("\n", m.end())].strip() if m else ""
        return f"{c.function}: PRESENT but must be absent: {inner}  {line}".rstrip()
    if c.function not in funcs:
        return f"{c.function}: MISSING function (not in the cubin) for /{c.pattern}/"
    return f"{c.function}: found /{c.pattern}/  {c.example}" if c.found else f"{c.function}: MISSING /{c.pattern}/"


def _cubin_cached(spec: KernelSpec, arch: str) -> bool:
    """Whether the cubin is in the on-disk cache (same key as compiler.compile_cubin; when that key
    changes, everything reads as cold and compiles in the pool, which is still right)."""
    try:
        from .device.compiler import HEADERS, _options, cache_dir, kernel_source, nvrtc_version

        source = kernel_source(spec.file)
        opts = _options(arch, spec.defines, [])
        key = hashlib.sha256(
            "\0".join([source, *opts, nvrtc_version(), *(kernel_source(h) for h in HEADERS)]).encode()
        ).hexdigest()[:32]
        return (cache_dir() / f"{spec.file.replace('/', '_')}-{key}.cubin").exists()
    except Exception:  # noqa: BLE001 - cannot tell: treat as cold
        return False


# From this many kernels (and CPUs) on, the pool pays even with a warm cache: cuobjdump takes ~0.5 s
# per cubin; on fewer CPUs starting the workers costs more than it saves.
POOL_FROM = 4


def _parallel_work(specs: Sequence[KernelSpec], arch: str) -> int:
    """How many of `specs` are worth a process: the cold ones, or all of them when there are many."""
    if len(specs) >= POOL_FROM and (os.cpu_count() or 1) >= POOL_FROM:
        return len(specs)
    return sum(not _cubin_cached(s, arch) for s in specs)


def _map(
    fn: Callable[[KernelSpec, str], T],
    specs: Sequence[KernelSpec],
    arch: str,
    jobs: int | None,
    progress: Progress | None,
    work: int,
) -> list[T]:
    """fn(spec, arch) for every spec, in order; in a process pool when `work` (see _parallel_work) is 2
    or more, reporting progress whenever there is work to wait for."""
    total = len(specs)
    workers = min(jobs or os.cpu_count() or 1, work)
    if workers < 2:
        out = []
        for i, spec in enumerate(specs, 1):
            out.append(fn(spec, arch))
            if progress and work:
                progress(i, total, variant_name(spec))
        return out
    results: dict[int, T] = {}
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(fn, spec, arch): i for i, spec in enumerate(specs)}
        for done, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            results[i] = fut.result()
            if progress:
                progress(done, total, variant_name(specs[i]))
    return [results[i] for i in range(total)]


def check_benchmark(
    b: Benchmark, arch: str = "sm_90a", jobs: int | None = None, progress: Progress | None = None
) -> list[tuple[KernelSpec, dict[str, str], list[SassCheck]]]:
    specs = list(b.kernels)
    results = _map(check_spec, specs, arch, jobs, progress, _parallel_work(specs, arch))
    return [(spec, funcs, checks) for spec, (funcs, checks) in zip(specs, results)]


def _map_one(spec: KernelSpec, arch: str) -> list[Any]:
    from .sassmap import map_spec

    return map_spec(spec, arch)


def map_all(arch: str = "sm_90a", jobs: int | None = None, progress: Progress | None = None) -> list[Any]:
    """sassmap.ptx_sass_map, with each spec's PTX and cubin built (and disassembled) in a pool."""
    from .sassmap import tensor_specs

    specs = tensor_specs()
    rows = _map(_map_one, specs, arch, jobs, progress, _parallel_work(specs, arch))
    return [r for spec_rows in rows for r in spec_rows]
