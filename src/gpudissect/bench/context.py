"""What a benchmark function receives in its (child) process: the device, compiled kernels, sinks.

Besides the sinks (figure, series, progress) it keeps the recurring pieces in one place: a figure or a
point from repeated samples (median with its min..max spread), device buffers that are freed when the
benchmark ends whatever happens, and the compilation of a benchmark's kernels ahead of its sweep.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import keys
from ..analysis.stats import median_spread
from ..capability import Target
from ..device.compiler import compile_spec
from ..device.cuda import Buffer, Device, Module
from ..errors import BenchSkipped, CheckFailed
from ..models import Figure, FigureKind, Point, Series
from ..sass.disasm import disassemble_cached, failed_checks, find_tool
from .registry import Benchmark, KernelSpec

_STRICT_KEYS = os.environ.get("GPUDISSECT_STRICT_KEYS") == "1"


class BenchContext:
    def __init__(
        self,
        bench: Benchmark,
        device: Device,
        mode: str,
        params: dict[str, Any],
        emit: Callable[[str, Any], None],
    ):
        self.bench, self.device, self.mode, self.params = bench, device, mode, params
        self._emit = emit
        self._modules: dict[str, Module] = {}
        self._buffers: dict[int, Buffer] = {}  # allocated through the context, freed by release()
        self.failures: list[str] = []  # soft-check failures: reported at the end, other figures kept

    @property
    def quick(self) -> bool:
        return self.mode == "quick"

    @property
    def props(self) -> dict[str, Any]:
        return self.device.props

    @property
    def target(self) -> Target:
        return Target(int(self.props["cc_major"]), int(self.props["cc_minor"]))

    # ---- kernels ---------------------------------------------------------------------
    def module(self, spec: KernelSpec) -> Module:
        """The loaded module of a kernel variant, after proving its cubin holds the SASS the variant declares
        for this GPU's family: what is timed is what was checked (a mismatch ends the benchmark as failed)."""
        if spec.name not in self._modules:
            cubin = compile_spec(spec, self.device.arch)
            self._check_sass(spec, cubin)
            self._modules[spec.name] = self.device.load(cubin)
        return self._modules[spec.name]

    def sass(self, spec: KernelSpec) -> dict[str, str]:
        """The SASS of a variant as built for this GPU, function by function (cached on disk)."""
        return disassemble_cached(compile_spec(spec, self.device.arch))

    def _check_sass(self, spec: KernelSpec, cubin: bytes) -> None:
        required = spec.required_for(self.target)
        if not required or find_tool("cuobjdump") is None:  # no disassembler: `gpudissect doctor` says so
            return
        bad = failed_checks(disassemble_cached(cubin), required)
        if bad:
            raise CheckFailed(f"{spec.variant} on {self.target.arch}: " + "; ".join(bad))

    def runnable(self, specs: Iterable[KernelSpec]) -> list[KernelSpec]:
        """The variants this GPU can run; each other one is recorded as skipped, with the reason."""
        out = []
        for spec in specs:
            why = (self.bench.needs & spec.needs).why_not(self.target)
            if why is None:
                out.append(spec)
            else:
                self.skip_variant(spec.variant, why)
        return out

    def skip_variant(self, name: str, why: str) -> None:
        """Record that a variant did not run on this GPU and why (stored with the benchmark's result)."""
        self._emit("variant_skipped", (name, why))

    def kernel(self, spec: KernelSpec, function: str):  # -> Function
        return self.module(spec).function(function)

    def precompile(self, specs: Iterable[KernelSpec] | None = None) -> None:
        """Compile `specs` (default: the benchmark's declared kernels) into the cubin cache in threads
        (NVRTC releases the GIL), so a sweep over many variants does not compile one by one."""
        todo = list({s.name: s for s in (self.bench.kernels if specs is None else specs)}.values())
        if len(todo) < 2:
            return
        arch = self.device.arch
        with ThreadPoolExecutor(max(1, min(len(todo), os.cpu_count() or 1, 16))) as ex:
            list(ex.map(lambda s: compile_spec(s, arch), todo))

    # ---- device memory ---------------------------------------------------------------
    def alloc(self, nbytes: int) -> Buffer:
        """A device buffer freed when the benchmark ends (or earlier by free())."""
        buf = self.device.alloc(nbytes)
        self._buffers[buf.ptr] = buf
        return buf

    def upload(self, arr: np.ndarray) -> Buffer:
        """A device copy of `arr`, freed when the benchmark ends (or earlier by free())."""
        buf = self.device.upload(arr)
        self._buffers[buf.ptr] = buf
        return buf

    def free(self, *bufs: Buffer | None) -> None:
        """Free buffers now (those from alloc/upload, or any of the device's)."""
        for b in bufs:
            if b is not None:
                self._buffers.pop(b.ptr, None)
                self.device.free(b)

    @contextmanager
    def scratch(self) -> Iterator[BenchContext]:
        """Buffers allocated inside the block are freed when it ends: one sweep step's memory."""
        before = set(self._buffers)
        try:
            yield self
        except BaseException:
            # a faulted context cannot free: never let that hide the error that ended the block
            self._release([p for p in self._buffers if p not in before])
            raise
        self.free(*[b for p, b in list(self._buffers.items()) if p not in before])

    def release(self) -> None:
        """Free every buffer still held (the runner calls it when the benchmark ends)."""
        self._release(list(self._buffers))

    def _release(self, ptrs: list[int]) -> None:
        """Free these buffers best-effort: after a fault the driver refuses, and the process exit frees."""
        for p in ptrs:
            b = self._buffers.pop(p, None)
            if b is None:
                continue
            try:
                self.device.free(b)
            except Exception:  # noqa: BLE001 - see above
                pass

    # ---- sinks -----------------------------------------------------------------------
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
            self.bench.suite,
            self.bench.name,
            name,
            x_label,
            x_unit,
            y_label,
            y_unit,
            points,
            plot,
            figure,
            params,
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
        if _STRICT_KEYS and (bad := keys.problems(self.bench.suite, key, unit)):
            raise ValueError("; ".join(bad))  # tests run with GPUDISSECT_STRICT_KEYS=1: a new key follows keys.py
        if check != "ok":
            value = "FAILED"  # a failed check records a failure, never a number
        f = Figure(self.bench.suite, self.bench.name, key, value, unit, kind, method, spread, check, note)  # type: ignore[arg-type]
        self._emit("figure", f)
        return f

    def median_figure(
        self,
        key: str,
        samples: Sequence[float],
        unit: str,
        kind: FigureKind,
        method: str,
        check: str = "ok",
        note: str = "",
    ) -> Figure:
        """A figure from repeated samples: their median, with min..max as its spread."""
        med, lo, hi = median_spread(samples)
        return self.figure(key, med, unit, kind, method, (lo, hi), check, note)

    @staticmethod
    def point(x: float, samples: Sequence[float], **extra: Any) -> Point:
        """A series point from repeated samples (median, min, max, count)."""
        return Point.of(x, samples, extra)

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
