"""One fake GPU for the CPU tests, and run_bench(): a real benchmark, run through a real BenchContext,
against a simulated device.

FakeDevice stands in for device.cuda.Device: buffers live in numpy arrays at fake device addresses,
launch timings come from `last_ms`, and a kernel launch calls the device's method named after the kernel
function, `k_<function>(launch, *argument values)`. A suite's test subclasses FakeDevice with the kernels
it simulates (an L2 with partitions, a TLB, clusters of SMs...). run_bench() runs a registered benchmark on
it exactly as the runner's child process does (parameters resolved and checked, checks and skips turned
into a status) and returns what the benchmark emitted; bench_context() gives a test the same context for
one part of a benchmark (a derivation, a report) and what that part emits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpudissect.bench.context import BenchContext
from gpudissect.bench.registry import REGISTRY, Benchmark, KernelSpec, load_all, resolve_params
from gpudissect.device.cuda import Buffer
from gpudissect.errors import BenchSkipped, CheckFailed, GpuDissectError
from gpudissect.models import Figure, Series

H100_PROPS: dict[str, Any] = {
    "name": "fake H100",
    "uuid": None,
    "cc_major": 9,
    "cc_minor": 0,
    "sm_count": 132,
    "l2_bytes": 50 << 20,
    "smem_per_sm": 233472,
    "smem_per_block_optin": 232448,
    "max_threads_per_block": 1024,
    "sm_clock_khz": 1980000,
    "mem_clock_khz": 2619000,
    "mem_bus_bits": 5120,
    "free_mem": 70 << 30,
}


@dataclass(frozen=True)
class Launch:
    """How a fake kernel was launched (what a simulator may check or use)."""

    name: str
    grid: Any
    block: Any
    smem: int = 0
    cluster: tuple[int, int, int] | None = None
    attributes: dict[Any, Any] = field(default_factory=dict)
    spec: KernelSpec | None = None
    non_portable: bool = False  # launched with non_portable_cluster=True (clusters above 8 blocks need it)


class FakeFunction:
    def __init__(self, dev: FakeDevice, name: str, spec: KernelSpec | None = None):
        self.dev, self.name, self.spec = dev, name, spec
        self.attrs: dict[str, int] = {}

    def attribute(self, attr: str) -> int:
        return self.attrs.get(attr, self.dev.function_attribute(self.name, attr))

    def set_attribute(self, attr: str, value: int) -> None:
        self.attrs[attr] = value

    def allow_dynamic_smem(self, nbytes: int) -> None:
        self.set_attribute("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", nbytes)

    def set_carveout(self, percent: int) -> None:
        self.set_attribute("CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT", percent)

    def __call__(self, grid: Any, block: Any, args: list[Any], smem: int = 0, **kw: Any) -> None:
        launch = Launch(
            self.name,
            grid,
            block,
            smem,
            kw.get("cluster"),
            dict(kw.get("attributes") or {}),
            self.spec,
            bool(kw.get("non_portable_cluster")),
        )
        self.dev.launches.append(launch)
        sim = getattr(self.dev, f"k_{self.name}", None)
        if sim is None:
            raise AssertionError(f"{type(self.dev).__name__} simulates no kernel {self.name!r}")
        sim(launch, *[a.value for a in args])


class FakeModule:
    def __init__(self, dev: FakeDevice, spec: KernelSpec | None = None, cubin: bytes | None = None):
        self.dev, self.spec = dev, spec
        self.cubin = cubin  # what FakeDevice.load was given (None for FakeContext.module's modules)

    def function(self, name: str) -> FakeFunction:
        return FakeFunction(self.dev, name, self.spec)

    def global_buffer(self, name: str) -> Buffer:
        """The module's global symbol `name` (a `__constant__` array...), FakeDevice.global_nbytes(name) bytes:
        one buffer per spec (FakeContext.module's modules of one spec stand for the context's one load) or
        per loaded module."""
        return self.dev.global_of(self.spec.name if self.spec is not None else self, name)


class FakeDevice:
    """Host memory at fake device addresses; subclasses add `k_<function>` kernel simulators."""

    arch = "sm_90a"

    def __init__(self, **props: Any):
        self.props = H100_PROPS | props
        self.mem: dict[int, np.ndarray] = {}
        self.next = 0x10000
        self.launches: list[Launch] = []
        self.last_ms = 1.0  # what time_ms reports for the next launch
        self.globals: dict[tuple[Any, str], Buffer] = {}  # module globals (FakeModule.global_buffer)

    # memory
    def alloc(self, nbytes: int) -> Buffer:
        b = Buffer(self.next, nbytes)
        self.mem[b.ptr] = np.zeros((nbytes + 7) // 8 * 8, np.uint8)
        self.next += (nbytes + 4095) // 4096 * 4096
        return b

    def free(self, buf: Buffer) -> None:
        del self.mem[buf.ptr]

    def free_memory(self) -> int:
        return int(self.props["free_mem"])

    def buf(self, ptr: int | Buffer) -> np.ndarray:
        """The bytes of the buffer that starts at `ptr`."""
        return self.mem[ptr.ptr if isinstance(ptr, Buffer) else ptr]

    def at(self, addr: int, nbytes: int = 8) -> np.ndarray:
        """The bytes at any device address inside a buffer."""
        base = max(p for p in self.mem if p <= addr)
        return self.mem[base][addr - base : addr - base + nbytes]

    def read_u64(self, addr: int) -> int:
        return int(self.at(addr).view(np.uint64)[0])

    def upload(self, arr: np.ndarray, buf: Buffer | None = None, offset: int = 0) -> Buffer:
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        buf = buf or self.alloc(raw.size)
        self.mem[buf.ptr][offset : offset + raw.size] = raw
        return buf

    def download(self, buf: Buffer | int, dtype: Any, count: int, offset: int = 0) -> np.ndarray:
        nbytes = np.dtype(dtype).itemsize * count
        return self.buf(buf)[offset : offset + nbytes].copy().view(dtype)

    def memset32(self, buf: Buffer, value: int, count: int | None = None) -> None:
        words = self.buf(buf).view(np.uint32)
        words[: len(words) if count is None else count] = value

    def copy_dtod(self, dst: Buffer, src: Buffer, nbytes: int) -> None:
        self.buf(dst)[:nbytes] = self.buf(src)[:nbytes]

    def make_current(self) -> None:  # a thread of a benchmark makes the GPU's context its own
        pass

    # modules, timing
    def load(self, cubin: bytes) -> FakeModule:
        return FakeModule(self, cubin=cubin)

    def global_of(self, owner: Any, name: str) -> Buffer:
        """The buffer of global `name` of one module (`owner`: its spec's name, or the module)."""
        if (owner, name) not in self.globals:
            self.globals[(owner, name)] = self.alloc(self.global_nbytes(name))
        return self.globals[(owner, name)]

    def global_nbytes(self, name: str) -> int:
        """Size of a module global; a subclass whose kernels have globals says."""
        raise AssertionError(f"{type(self).__name__} knows no size of a module global {name!r}")

    def function_attribute(self, name: str, attr: str) -> int:
        return {"CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024, "CU_FUNC_ATTRIBUTE_NUM_REGS": 32}.get(attr, 0)

    def time_ms(self, fn: Any, reps: int = 1) -> list[float]:
        out = []
        for _ in range(reps):
            fn()
            out.append(self.last_ms)
        return out

    def alternate_ms(self, a: Any, b: Any, pairs: int) -> list[tuple[float, float]]:
        return [(self.time_ms(a)[0], self.time_ms(b)[0]) for _ in range(pairs)]

    def sync(self, what: str = "") -> None:
        pass

    def occupancy(self, fn: Any, block: int, smem: int = 0) -> int:
        return max(0, min(2048 // block, 32, self.props["smem_per_sm"] // max(smem + 1024, 1)))


class FakeContext(BenchContext):
    """BenchContext whose kernels come from the fake device (no compilation)."""

    def module(self, spec: KernelSpec) -> FakeModule:  # type: ignore[override]
        return FakeModule(self.device, spec)

    def precompile(self, specs: Any = None) -> None:
        pass


@dataclass
class BenchRun:
    """What a benchmark emitted in a fake run, and how it ended ("ok", "failed", "skipped")."""

    status: str
    message: str
    figures: dict[str, Figure]
    series: list[Series]
    progress: list[tuple[int, int, str]]
    device: Any
    twice: list[str] = field(default_factory=list)  # figure keys emitted again (a run stores one per key)

    def value(self, key: str) -> Any:
        return self.figures[key].value


def run_bench(name: str, overrides: dict[str, str] | None = None, device: Any = None, mode: str = "quick") -> BenchRun:
    """Run the registered benchmark `name` (or "suite/name") on `device` (default: a plain FakeDevice),
    as the runner's child does: parameters resolved and checked, a failed check or a skip as a status."""
    reg = load_all()
    bench = reg.get(name) or next((b for b in reg.values() if b.name == name), None)
    if bench is None:
        raise KeyError(f"no benchmark {name!r}")
    device = device if device is not None else FakeDevice()
    figures: dict[str, Figure] = {}
    series: list[Series] = []
    progress: list[tuple[int, int, str]] = []
    twice: list[str] = []

    def emit(kind: str, payload: Any) -> None:
        if kind == "figure":
            if payload.key in figures:
                twice.append(payload.key)
            figures[payload.key] = payload
        elif kind == "series":
            series.append(payload)
        elif kind == "progress":
            progress.append(payload)

    params = resolve_params(bench, overrides or {}, dict(device.props))
    ctx = FakeContext(bench, device, mode, params, emit)
    status, message = "ok", ""
    try:
        bench.func(ctx)
        if ctx.failures:
            raise CheckFailed("; ".join(ctx.failures))
    except CheckFailed as e:
        status, message = "failed", f"check failed: {e}"
    except BenchSkipped as e:
        status, message = "skipped", str(e)
    except GpuDissectError as e:
        status, message = "failed", str(e)
    finally:
        ctx.release()
    return BenchRun(status, message, figures, series, progress, device, twice)


def bench_context(
    name: str, device: Any = None, overrides: dict[str, str] | None = None, mode: str = "quick"
) -> tuple[FakeContext, BenchRun]:
    """A real context of the registered benchmark `name` on `device` (default: a plain FakeDevice) and the
    BenchRun its figures, series and progress go to, for a test that drives one part of a benchmark (a
    derivation, a report) instead of the whole of it; the run's status stays "ok"."""

    def find(reg: dict[str, Benchmark]) -> Benchmark | None:
        return reg.get(name) or next((b for b in reg.values() if b.name == name), None)

    # a test has imported its benchmark's module: every other suite need not import for it
    bench = find(REGISTRY) or find(load_all())
    if bench is None:
        raise KeyError(f"no benchmark {name!r}")
    device = device if device is not None else FakeDevice()
    run = BenchRun("ok", "", {}, [], [], device)

    def emit(kind: str, payload: Any) -> None:
        if kind == "figure":
            if payload.key in run.figures:
                run.twice.append(payload.key)
            run.figures[payload.key] = payload
        elif kind == "series":
            run.series.append(payload)
        elif kind == "progress":
            run.progress.append(payload)

    params = resolve_params(bench, overrides or {}, dict(device.props))
    return FakeContext(bench, device, mode, params, emit), run
