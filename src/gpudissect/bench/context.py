"""What a benchmark function receives in its (child) process: the device, compiled kernels, sinks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..device.compiler import compile_kernel_file
from ..device.cuda import Device, Module
from ..errors import BenchSkipped, CheckFailed
from ..models import Figure, FigureKind, Point, Series
from .registry import Benchmark, KernelSpec


class BenchContext:
    def __init__(
        self, bench: Benchmark, device: Device, mode: str, params: dict[str, Any], emit: Callable[[str, Any], None]
    ):
        self.bench, self.device, self.mode, self.params = bench, device, mode, params
        self._emit = emit
        self._modules: dict[str, Module] = {}
        self.failures: list[str] = []  # soft-check failures: reported at the end, other figures kept

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    @property
    def props(self) -> dict[str, Any]:
        return self.device.props

    def module(self, spec: KernelSpec) -> Module:
        if spec.name not in self._modules:
            cubin = compile_kernel_file(spec.file, self.device.arch, spec.defines)
            self._modules[spec.name] = self.device.load(cubin)
        return self._modules[spec.name]

    def kernel(self, spec: KernelSpec, function: str):  # -> Function
        return self.module(spec).function(function)

    def progress(self, done: int, total: int, text: str = "") -> None:
        self._emit("progress", (done, total, text))

    def series(
        self,
        name: str,
        x_label: str,
        x_unit: str,
        y_label: str,
        y_unit: str,
        points: list[Point],
        plot: str = "line",
        figure: str = "",
        **params: Any,
    ) -> Series:
        s = Series(
            self.bench.suite, self.bench.name, name, x_label, x_unit, y_label, y_unit, points, plot, figure, params
        )
        self._emit("series", s)
        return s

    def figure(
        self,
        key: str,
        value: float | str,
        unit: str,
        kind: FigureKind,
        method: str,
        spread: tuple[float, float] | None = None,
        check: str = "ok",
        note: str = "",
    ) -> Figure:
        if check != "ok":
            value = "FAILED"  # a failed check records a failure, never a number
        f = Figure(self.bench.suite, self.bench.name, key, value, unit, kind, method, spread, check, note)  # type: ignore[arg-type]
        self._emit("figure", f)
        return f

    def sm_clock(self, mhz: float, method: str, spread: tuple[float, float] | None = None) -> Figure:
        """The SM clock this benchmark's own kernels ran at (clock64 cycles over %globaltimer ns in the same
        launches). The runner converts the benchmark's `*_cycles` figures to ns with it instead of NVML's."""
        return self.figure(f"clock.{self.bench.name}.sm_mhz", round(float(mhz), 1), "MHz", "measured", method, spread)

    @staticmethod
    def skip(why: str) -> None:
        """End this benchmark as skipped (no fault: an optional package or a second GPU is missing)."""
        raise BenchSkipped(why)

    @staticmethod
    def check(cond: bool, message: str) -> None:
        if not cond:
            raise CheckFailed(message)

    def soft_check(self, cond: bool, message: str) -> bool:
        """Like check, but lets the benchmark go on with its other measurements; the benchmark
        still ends as failed, and the caller must record the affected figure as failed."""
        if not cond:
            self.failures.append(message)
        return cond
