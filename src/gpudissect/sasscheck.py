"""Compile a benchmark's kernels and check their SASS holds the instructions they must (CPU only)."""

from __future__ import annotations

from .bench.registry import Benchmark, KernelSpec
from .device.compiler import compile_kernel_file
from .device.sass import SassCheck, check_required, disassemble


def check_spec(spec: KernelSpec, arch: str = "sm_90a") -> tuple[dict[str, str], list[SassCheck]]:
    funcs = disassemble(compile_kernel_file(spec.file, arch, spec.defines))
    return funcs, check_required(funcs, spec.required)


def check_benchmark(b: Benchmark, arch: str = "sm_90a") -> list[tuple[KernelSpec, dict[str, str], list[SassCheck]]]:
    return [(spec, *check_spec(spec, arch)) for spec in b.kernels]
