"""Shared pieces of the CPU-only simulated GPUs that run a memory benchmark end to end
(tests/test_memory_l2_fake.py, tests/test_memory_tlb_fake.py): host-backed small buffers, kernels
dispatched to methods of the fake device by name, and a context that records figures and series."""

from __future__ import annotations

from typing import Any

import numpy as np


class FakeMemory:
    """Small buffers (parameters, permutations, results) live in numpy arrays keyed by address.
    A subclass decides where buffers go (`alloc`) and simulates the kernels as methods named
    like them."""

    def __init__(self) -> None:
        self.small: dict[int, np.ndarray] = {}

    def keep_small(self, va: int, nbytes: int) -> None:
        self.small[va] = np.zeros((nbytes + 7) // 8 * 8, np.uint8)

    def free(self, b: Any) -> None:
        self.small.pop(b.ptr, None)

    def download(self, buf: Any, dtype: Any, count: int, offset: int = 0) -> np.ndarray:
        return self.small[buf.ptr][offset:].view(dtype)[:count].copy()

    def memset32(self, buf: Any, value: int, count: int | None = None) -> None:
        self.small[buf.ptr].view(np.uint32)[:] = value

    def sync(self, what: str = "") -> None:
        pass


class FakeFn:
    """A kernel launch: calls the fake device's method of the kernel's name with the raw arguments."""

    def __init__(self, dev: Any, name: str):
        self.dev, self.name = dev, name

    def __call__(self, grid: Any, block: Any, args: list[Any], smem: int = 0) -> None:
        getattr(self.dev, self.name)(*[a.value for a in args])


class FakeCtx:
    """The part of BenchContext the memory benchmarks use. figures: key -> value ("FAILED" where
    the check failed); series_names and series_figs: what ctx.series was given."""

    quick = True

    def __init__(self, device: Any, props: dict[str, Any], params: dict[str, Any] | None = None):
        self.device = device
        self.props = props
        self.params: dict[str, Any] = params or {}
        self.figures: dict[str, object] = {}
        self.series_names: list[str] = []
        self.series_figs: set[str] = set()

    def kernel(self, spec: Any, name: str) -> FakeFn:
        return FakeFn(self.device, name)

    def check(self, cond: bool, msg: str) -> None:
        assert cond, msg

    def figure(
        self,
        key: str,
        value: object,
        unit: str,
        kind: str,
        method: str,
        spread: Any = None,
        check: str = "ok",
        note: str = "",
    ) -> None:
        self.figures[key] = value if check == "ok" else "FAILED"

    def series(self, name: str, *a: Any, figure: str = "", **k: Any) -> None:
        self.series_names.append(name)
        self.series_figs.add(figure)

    def progress(self, *a: Any) -> None:
        pass

    def sm_clock(self, mhz: float, method: str, spread: Any = None) -> None:
        self.figures["clock"] = mhz
