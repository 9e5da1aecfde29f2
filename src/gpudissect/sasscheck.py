"""Compile a benchmark's kernels and check their SASS holds the instructions they must (CPU only).

Cold kernels (and any benchmark with many kernels: disassembly alone takes ~0.5 s per cubin) are
handled in a process pool, reporting each finished kernel so a long `sass` shows signs of life.
"""

from __future__ import annotations

import re
from typing import Any

from .bench.registry import Benchmark
from .capability import Target
from .device.compiler import KernelSpec, Progress, compile_spec, parallel_map, pool_work
from .errors import GpuDissectError
from .sass.disasm import SassCheck, check_required, disassemble_cached

# A required pattern that asserts absence: "\A(?![\s\S]*X)" (anywhere in the function) or "^(?!.*X)".
_ABSENT = re.compile(r"^(?:\\A|\^)?\(\?!(?:\[\\s\\S\]\*|\.\*)(?P<inner>.*)\)$")


def check_spec(spec: KernelSpec, arch: str = "sm_90a") -> tuple[dict[str, str], list[SassCheck]]:
    """Compile a variant for `arch` and check the SASS it must hold there (its family's patterns)."""
    funcs = disassemble_cached(compile_spec(spec, arch))  # by the cubin's hash: a kernel read once is read once
    return funcs, check_required(funcs, spec.required_for(Target.parse(arch)))


def check_arch(arch: str) -> None:
    if not re.fullmatch(r"sm_\d{2,3}[af]?", arch):
        raise GpuDissectError(f"--arch takes a real GPU target such as sm_90a, sm_89 or sm_80, not {arch!r}")


def variant_name(spec: KernelSpec) -> str:
    """What tells one variant of a kernel file from another (KernelSpec.variant)."""
    return spec.variant


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


def check_benchmark(
    b: Benchmark, arch: str = "sm_90a", jobs: int | None = None, progress: Progress | None = None
) -> list[tuple[KernelSpec, dict[str, str], list[SassCheck]]]:
    specs = list(b.kernels)
    results = parallel_map(check_spec, specs, arch, jobs, progress, pool_work(specs, arch))
    return [(spec, funcs, checks) for spec, (funcs, checks) in zip(specs, results)]


def _map_one(spec: KernelSpec, arch: str) -> list[Any]:
    from .sassmap import map_spec

    return map_spec(spec, arch)


def map_all(arch: str = "sm_90a", jobs: int | None = None, progress: Progress | None = None) -> list[Any]:
    """sassmap.ptx_sass_map, with each spec's PTX and cubin built (and disassembled) in a pool."""
    from .sassmap import tensor_specs

    specs = tensor_specs()
    rows = parallel_map(_map_one, specs, arch, jobs, progress, pool_work(specs, arch))
    return [r for spec_rows in rows for r in spec_rows]
