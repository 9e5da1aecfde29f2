"""NVRTC compilation of our kernels to cubin, with an on-disk cache.

Always compiles for an explicit arch: CI has no driver to ask, and cubins (not PTX) are what we
load, because a driver cannot JIT PTX made by a newer NVRTC.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TypeVar

from .. import trace
from ..capability import ANY, Needs, Target
from ..errors import CompileError


def cache_dir() -> Path:
    root = os.environ.get("GPUDISSECT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpudissect"
    )
    path = Path(root) / "cubin"
    path.mkdir(parents=True, exist_ok=True)
    return path


def kernel_source(name: str) -> str:
    """Text of a kernel file shipped in gpudissect/kernels."""
    try:
        return resources.files("gpudissect.kernels").joinpath(name).read_text()
    except FileNotFoundError:
        raise CompileError(f"kernel file {name!r} not found in gpudissect/kernels") from None


@cache
def nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC not usable: {err}")
    return f"{major}.{minor}"


HEADERS = ("gpudissect.cuh",)  # our own headers, handed to NVRTC in memory


def _headers() -> tuple[int, list[bytes], list[bytes]]:
    """(count, contents, names) as nvrtcCreateProgram takes them."""
    return len(HEADERS), [kernel_source(h).encode() for h in HEADERS], [h.encode() for h in HEADERS]


def _options(arch: str, defines: dict[str, object], extra: list[str]) -> list[str]:
    opts = [f"-arch={arch}", "-std=c++17", "-lineinfo"]
    opts += [f"-D{k}={v}" for k, v in sorted(defines.items())]
    return opts + list(extra)


@cache
def supported_archs() -> tuple[int, ...]:
    """The targets this NVRTC compiles for, as numbers (75, 80, ..., 121)."""
    from cuda.bindings import nvrtc

    err, archs = nvrtc.nvrtcGetSupportedArchs()
    return tuple(int(a) for a in archs) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else ()


def arch_number(arch: str) -> int:
    """'sm_90a' / 'compute_80' -> 90 / 80."""
    return int("".join(ch for ch in arch.split("_", 1)[-1] if ch.isdigit()))


def unsupported_why(arch: str) -> str | None:
    """Why no installed NVRTC can compile for `arch` (None when one can): one line for the user."""
    known = supported_archs()
    if not known or arch_number(arch) in known:
        return None
    from . import nvrtc_legacy

    if arch_number(arch) < min(known) and nvrtc_legacy.library() is not None:
        return None
    lo, hi = min(known), max(known)
    if arch_number(arch) < lo:
        return f"NVRTC {nvrtc_version()} compiles for sm_{lo} .. sm_{hi}; {arch} needs NVRTC 12: {nvrtc_legacy.INSTALL}"
    newer = "a newer NVRTC (pip install -U nvidia-cuda-nvrtc)"
    return f"NVRTC {nvrtc_version()} compiles for sm_{lo} .. sm_{hi}; {arch} needs {newer}"


def nvrtc_compile(source: str, name: str, arch: str, opts: list[str], output: str) -> bytes:
    """One NVRTC compilation with our in-memory headers; `output` is "cubin" or "ptx". A failure
    raises CompileError with NVRTC's log. A target older than this NVRTC knows goes to NVRTC 12."""
    from cuda.bindings import nvrtc

    known = supported_archs()
    if known and arch_number(arch) not in known:
        why = unsupported_why(arch)
        if why:
            raise CompileError(f"{name}: {why}")
        from . import nvrtc_legacy

        headers = [(h, kernel_source(h)) for h in HEADERS]
        return nvrtc_legacy.compile_program(source, name, opts, headers, output)

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), *_headers())
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"nvrtcCreateProgram failed for {name}: {err}")
    try:
        (res,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        if res != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, log_size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * log_size
            nvrtc.nvrtcGetProgramLog(prog, log)
            text = log.decode(errors="replace").strip()
            raise CompileError(f"{name} failed to compile for {arch} ({' '.join(opts)}):\n{text}")
        size_of, get = (
            (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN)
            if output == "cubin"
            else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        )
        _, size = size_of(prog)
        out = b" " * size
        get(prog, out)
        return out
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _cache_path(source: str, name: str, opts: list[str]) -> Path:
    """Where the cubin of (source, options) lives in the cache: keyed by everything that changes it."""
    key = hashlib.sha256(
        "\0".join([source, *opts, nvrtc_version(), *(kernel_source(h) for h in HEADERS)]).encode()
    ).hexdigest()[:32]
    return cache_dir() / f"{name.replace('/', '_')}-{key}.cubin"


def compile_cubin(
    source: str,
    name: str,
    arch: str,
    defines: dict[str, object] | None = None,
    extra_options: list[str] | None = None,
) -> bytes:
    """Compile CUDA C++ `source` to a cubin for `arch` (e.g. "sm_90a"); cached by content."""
    opts = _options(arch, defines or {}, extra_options or [])
    path = _cache_path(source, name, opts)
    if path.exists():
        return path.read_bytes()

    cubin = nvrtc_compile(source, name, arch, opts, "cubin")
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(cubin)
    tmp.replace(path)  # atomic: parallel children may compile the same kernel
    return cubin


def cached_json(name: str, make: Callable[[], Any], load: Callable[[Any], T]) -> T:
    """`load` of `make()`'s JSON-able value, kept in the cache under `name`: a later call, in any process, reads
    it back instead of making it; an entry that is damaged or that `load` refuses (ValueError, TypeError,
    KeyError) is made again. Written atomically: processes and threads may make the same entry at once."""
    path = cache_dir() / name
    try:
        return load(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        pass
    value = make()
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(value))
    tmp.replace(path)
    return load(value)


def compile_kernel_file(
    file: str, arch: str, defines: dict[str, object] | None = None, extra_options: list[str] | None = None
) -> bytes:
    return compile_cubin(kernel_source(file), file, arch, defines, extra_options)


def _ptx_path(source: str, name: str, arch: str, defines: dict[str, object]) -> Path:
    return _cache_path(source, name, _options(arch, defines, [])).with_suffix(".ptx")


def compile_ptx_cached(source: str, name: str, arch: str, defines: dict[str, object] | None = None) -> bytes:
    """compile_ptx, kept beside the cubins (NVRTC takes seconds over some sources; the driver's JIT cache then
    keeps what it makes of the PTX)."""
    path = _ptx_path(source, name, arch, defines or {})
    if path.exists():
        return path.read_bytes()
    ptx = compile_ptx(source, name, arch, defines)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(ptx)
    tmp.replace(path)  # atomic: two runs may build it at once
    return ptx


@dataclass(frozen=True)
class KernelSpec:
    """One compiled variant of a kernel file (kernels/<suite>[_family].cu with its -D defines) and the
    SASS each of its functions must contain."""

    file: str
    required: dict[str, list[str]]  # function name -> regexes over its SASS
    defines: dict[str, object] = field(default_factory=dict)
    label: str = ""
    prelude: str = ""  # generated source put before the file's text (straight-line code, constant tables)
    standalone: bool = False  # the prelude is the whole program; `file` only names it (no file in kernels/)
    needs: Needs = ANY  # what the GPU must have for this variant to compile and run
    # the SASS by architecture family where the mnemonics differ from `required` (which holds for Hopper):
    # family -> function -> regexes; a family not named here is checked against `required`
    required_by_family: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # a virtual architecture ("compute_80"): the variant is its PTX, which the driver JIT-compiles for the GPU
    # at load (compile_spec gives the PTX; the runner's pool builds it ahead like a cubin)
    virtual: str = ""

    def required_for(self, target: Target) -> dict[str, list[str]]:
        """The required SASS on `target`: its family's patterns where given, else `required`."""
        return self.required_by_family.get(target.family, self.required)

    @property
    def source(self) -> str:
        return self.prelude if self.standalone else self.prelude + kernel_source(self.file)

    @property
    def name(self) -> str:
        return self.label or self.file

    @property
    def variant(self) -> str:
        """What tells one variant of a kernel file from another: its label, else the file and its defines."""
        if self.label:
            return self.label
        if self.defines:
            return f"{self.file} [{', '.join(f'{k}={v}' for k, v in sorted(self.defines.items()))}]"
        return self.file


def compile_spec(spec: KernelSpec, arch: str) -> bytes:
    """The cubin of one kernel variant for `arch` (cached on disk); of a virtual variant its PTX."""
    if spec.virtual:
        return compile_ptx_cached(spec.source, spec.file, spec.virtual, spec.defines)
    return compile_cubin(spec.source, spec.file, arch, spec.defines)


def is_cached(spec: KernelSpec, arch: str) -> bool:
    """Whether the cubin of `spec` for `arch` (a virtual variant: its PTX) is already in the on-disk cache."""
    try:
        if spec.virtual:
            return _ptx_path(spec.source, spec.file, spec.virtual, spec.defines).exists()
        return _cache_path(spec.source, spec.file, _options(arch, spec.defines, [])).exists()
    except Exception:  # noqa: BLE001 - cannot tell (no NVRTC, no file): treat as cold
        return False


# From this many kernels (and CPUs) on, a pool pays even with a warm cache (disassembling alone takes
# ~0.5 s per cubin); on fewer CPUs starting the workers costs more than it saves.
POOL_FROM = 4
Progress = Callable[[int, int, str], None]  # (done, total, what finished)
T = TypeVar("T")


def pool_work(specs: Sequence[KernelSpec], arch: str) -> int:
    """How many of `specs` are worth a process: the cold ones, or all of them when there are many."""
    if len(specs) >= POOL_FROM and (os.cpu_count() or 1) >= POOL_FROM:
        return len(specs)
    return sum(not is_cached(s, arch) for s in specs)


def parallel_map(
    fn: Callable[[KernelSpec, str], T],
    specs: Sequence[KernelSpec],
    arch: str,
    jobs: int | None = None,
    progress: Progress | None = None,
    work: int | None = None,
) -> list[T]:
    """fn(spec, arch) for every spec, in order; in a process pool when `work` (default: pool_work) is 2
    or more, reporting progress whenever there is work to wait for. `fn` must be a module-level function."""
    total = len(specs)
    work = pool_work(specs, arch) if work is None else work
    workers = min(jobs or os.cpu_count() or 1, work)
    if workers < 2:
        out = []
        for i, spec in enumerate(specs, 1):
            out.append(fn(spec, arch))
            if progress and work:
                progress(i, total, spec.variant)
        return out
    results: dict[int, T] = {}
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(fn, spec, arch): i for i, spec in enumerate(specs)}
        for done, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            results[i] = fut.result()
            if progress:
                progress(done, total, specs[i].variant)
    return [results[i] for i in range(total)]


def _low_priority() -> None:
    """A compile worker yields the CPU to the benchmark that is timing beside it."""
    try:
        os.nice(10)
    except OSError:  # not permitted: compile at normal priority
        pass


class CompilePool:
    """One process pool for a whole run: every benchmark's cold kernels are queued when the run starts, in run
    order, at low priority, so compiling overlaps the GPU work of the benchmarks before; a benchmark waits only
    for its own kernels. A kernel that does not compile is left for its benchmark to compile and report."""

    def __init__(
        self,
        arch: str,
        workers: int | None = None,
        fn: Callable[[KernelSpec, str], object] | None = None,
        low_priority: bool = True,
    ):
        """`low_priority`: the workers yield the CPU (nice 10) to a benchmark timing beside them; a benchmark that
        builds its own generated kernels and waits for them passes False."""
        self.arch = arch
        self.low_priority = low_priority
        self.fn = fn or compile_spec
        self.workers = workers or max(2, (os.cpu_count() or 2) // 2)  # half the cores: the rest time the GPU
        self._pool: ProcessPoolExecutor | None = None
        self._queued: dict[str, object] = {}  # spec name -> future (a spec two benchmarks share is compiled once)
        self._by_key: dict[str, list[tuple[str, object]]] = {}

    def queue(self, key: str | None, specs: Sequence[KernelSpec]) -> int:
        """Queue the cold ones of `specs` for benchmark `key` (None: for whichever benchmark queues them later,
        which then waits for them too); how many were queued."""
        cold = [s for s in {s.name: s for s in specs}.values() if not is_cached(s, self.arch)]
        mine = []
        for s in cold:
            if s.name not in self._queued:
                if self._pool is None:
                    self._pool = ProcessPoolExecutor(
                        self.workers,
                        mp_context=get_context("spawn"),
                        initializer=_low_priority if self.low_priority else None,
                    )
                self._queued[s.name] = fut = self._pool.submit(self.fn, s, self.arch)
                if trace.on():
                    fut.add_done_callback(lambda _f, n=s.variant: trace.event("built", spec=n))
            mine.append((s.variant, self._queued[s.name]))
        if key is not None:
            self._by_key[key] = mine
        return len(mine)

    def wait(self, key: str, progress: Progress | None = None) -> None:
        """Until benchmark `key`'s kernels are compiled (or failed to), reporting progress."""
        mine = self._by_key.pop(key, [])
        for done, (variant, fut) in enumerate(mine, 1):
            try:
                fut.result()  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - the benchmark compiles it again and stores the error
                pass
            if progress:
                progress(done, len(mine), variant)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def arch_for(major: int, minor: int) -> str:
    """The arch we build for: the device's own, with the 'a' suffix where wgmma/setmaxnreg need it."""
    return Target(major, minor).arch


def compile_ptx(source: str, name: str, arch: str = "compute_80", defines: dict[str, object] | None = None) -> bytes:
    """PTX for a virtual arch (e.g. compute_80), NUL-terminated for cuModuleLoadData: the driver JITs it,
    which is how an older build of a kernel is run on a newer GPU (no cubin of sm_80 runs on sm_90)."""
    ptx = nvrtc_compile(source, name, arch, _options(arch, defines or {}, []), "ptx")
    return ptx.rstrip(b"\0 ") + b"\0"
