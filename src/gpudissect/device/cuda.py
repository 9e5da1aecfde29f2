"""One GPU through the CUDA driver API: its primary context, memory, modules, launches and events.

Built on cuda.bindings.driver (device/driver.py); every call's status is checked. Launches go through
device/launch.py, which gemm/launch.py shares for the context torch made current.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import NoGpuError
from .compiler import arch_for
from .driver import CudaError, check_result, driver
from .launch import Dim3, dim3, launch_kernel, param_array

_check = check_result  # short name; CudaError and check_result stay importable from here (the suites use them)


@dataclass
class Buffer:
    ptr: int
    nbytes: int


@dataclass(frozen=True)
class Arg:
    """A kernel argument with its C type: Arg.u64(ptr), Arg.i32(n)..."""

    value: Any
    ctype: Any

    @staticmethod
    def ptr(b: Buffer | int) -> Arg:
        return Arg(b.ptr if isinstance(b, Buffer) else int(b), ctypes.c_uint64)

    @staticmethod
    def u64(v: int) -> Arg:
        return Arg(int(v), ctypes.c_uint64)

    @staticmethod
    def i64(v: int) -> Arg:
        return Arg(int(v), ctypes.c_int64)

    @staticmethod
    def i32(v: int) -> Arg:
        return Arg(int(v), ctypes.c_int32)

    @staticmethod
    def u32(v: int) -> Arg:
        return Arg(int(v), ctypes.c_uint32)

    @staticmethod
    def f32(v: float) -> Arg:
        return Arg(float(v), ctypes.c_float)

    @staticmethod
    def raw(data: bytes) -> Arg:
        """A by-value struct parameter given as its bytes (e.g. a 128-byte CUtensorMap)."""
        return Arg(bytes(data), ctypes.c_ubyte * len(data))

    def c_value(self) -> Any:
        """The ctypes object holding the value, whose address goes into the kernelParams array."""
        return self.ctype.from_buffer_copy(self.value) if isinstance(self.value, bytes) else self.ctype(self.value)


def pack_args(args: Sequence[Arg]) -> tuple[list[Any], Any]:
    """(holders, kernelParams array) of a launch's arguments; keep the holders until the launch is issued."""
    holders = [a.c_value() for a in args]
    return holders, param_array(holders)


class Function:
    def __init__(self, device: Device, handle: Any, name: str):
        self.device, self.handle, self.name = device, handle, name

    def attribute(self, attr: str) -> int:
        drv = self.device._drv
        return _check(drv.cuFuncGetAttribute(getattr(drv.CUfunction_attribute, attr), self.handle), attr)

    def set_attribute(self, attr: str, value: int) -> None:
        drv = self.device._drv
        _check(
            drv.cuFuncSetAttribute(self.handle, getattr(drv.CUfunction_attribute, attr), int(value)),
            f"cuFuncSetAttribute({self.name}, {attr}={value})",
        )

    def allow_dynamic_smem(self, nbytes: int) -> None:
        """Dynamic shared memory above 48 KB must be opted into per function."""
        self.set_attribute("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", nbytes)

    def set_carveout(self, percent: int) -> None:
        """Preferred share of the unified L1/shared array given to shared memory (0..100)."""
        self.set_attribute("CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT", percent)

    def __call__(
        self,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: Sequence[Arg],
        smem: int = 0,
        cluster: tuple[int, int, int] | None = None,
        non_portable_cluster: bool = False,
        attributes: dict[str, int] | None = None,
    ) -> None:
        self.device.launch(self, grid, block, args, smem, cluster, non_portable_cluster, attributes)

    def launch_on(
        self,
        stream: Any,
        grid: Dim3,
        block: Dim3,
        args: Sequence[Arg],
        smem: int,
        what: str,
        cluster: Dim3 | None = None,
        non_portable_cluster: bool = False,
        attributes: dict[str, int] | None = None,
    ) -> None:
        """Launch on `stream` (0: the legacy default stream), as Device.launch and Stream.launch both do:
        dynamic shared memory above 48 KB opted into, a non-portable cluster size allowed where a cluster
        launch asks for it; CudaError naming `what`."""
        holders, params = pack_args(args)  # the holders must live until the launch is issued
        if smem > 48 * 1024:
            self.allow_dynamic_smem(smem)
        if non_portable_cluster and (cluster is not None or attributes):
            self.set_attribute("CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
        launch_kernel(self.handle, grid, block, smem, stream, params, what, cluster, attributes)


class Device:
    """One GPU with its primary context made current in this process."""

    def __init__(self, ordinal: int = 0):
        try:
            drv = driver()
        except ImportError as e:  # pragma: no cover - dependency missing
            raise NoGpuError(f"cuda-bindings is not installed: {e}") from None
        self._drv = drv
        try:
            _check(drv.cuInit(0), "cuInit")
        except CudaError as e:
            raise NoGpuError(f"no usable NVIDIA GPU or driver: {e}") from None
        except Exception as e:  # noqa: BLE001 - libcuda.so missing raises a plain RuntimeError
            raise NoGpuError(f"no NVIDIA driver found (libcuda): {e}") from None
        count = _check(drv.cuDeviceGetCount(), "cuDeviceGetCount")
        if count == 0:
            raise NoGpuError("the NVIDIA driver reports no GPU")
        if ordinal >= count:
            raise NoGpuError(f"GPU {ordinal} requested but only {count} present")
        self.ordinal = ordinal
        self.handle = _check(drv.cuDeviceGet(ordinal), "cuDeviceGet")
        self.ctx = _check(drv.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        _check(drv.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.props = self._properties()
        self.arch = arch_for(self.props["cc_major"], self.props["cc_minor"])
        self._modules: list[Any] = []
        self._mapped: dict[int, tuple[int, int, list[Any]]] = {}  # alloc_scattered: va -> (size, page, handles)

    def make_current(self) -> None:
        """Make this GPU's primary context the calling thread's current one (several GPUs in one process)."""
        _check(self._drv.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    # ---- facts -------------------------------------------------------------------------
    def attr(self, name: str) -> int:
        drv = self._drv
        return _check(
            drv.cuDeviceGetAttribute(getattr(drv.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name), self.handle),
            name,
        )

    def _properties(self) -> dict[str, Any]:
        drv = self._drv
        name = _check(drv.cuDeviceGetName(128, self.handle), "cuDeviceGetName")
        uuid = _check(drv.cuDeviceGetUuid(self.handle), "cuDeviceGetUuid")
        raw = bytes(uuid.bytes) if hasattr(uuid, "bytes") else bytes(uuid)
        h = raw.hex()
        uuid_s = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        free, total = _check(drv.cuMemGetInfo(), "cuMemGetInfo")
        a = self.attr
        driver_v = _check(drv.cuDriverGetVersion(), "cuDriverGetVersion")
        return {
            "name": name.split(b"\0")[0].decode(),
            "uuid": uuid_s,
            "cc_major": a("COMPUTE_CAPABILITY_MAJOR"),
            "cc_minor": a("COMPUTE_CAPABILITY_MINOR"),
            "sm_count": a("MULTIPROCESSOR_COUNT"),
            "l2_bytes": a("L2_CACHE_SIZE"),
            "smem_per_block_optin": a("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            "smem_per_sm": a("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
            "max_threads_per_sm": a("MAX_THREADS_PER_MULTIPROCESSOR"),
            "max_threads_per_block": a("MAX_THREADS_PER_BLOCK"),
            "regs_per_sm": a("MAX_REGISTERS_PER_MULTIPROCESSOR"),
            "sm_clock_khz": a("CLOCK_RATE"),
            "mem_clock_khz": a("MEMORY_CLOCK_RATE"),
            "mem_bus_bits": a("GLOBAL_MEMORY_BUS_WIDTH"),
            "warp_size": a("WARP_SIZE"),
            "total_mem": int(total),
            "free_mem": int(free),
            "cuda_driver": f"{driver_v // 1000}.{(driver_v % 1000) // 10}",
        }

    def free_memory(self) -> int:
        free, _ = _check(self._drv.cuMemGetInfo(), "cuMemGetInfo")
        return int(free)

    # ---- memory ------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Buffer:
        nbytes = max(int(nbytes), 1)
        ptr = _check(self._drv.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes} bytes)")
        return Buffer(int(ptr), nbytes)

    def free(self, buf: Buffer) -> None:
        if buf.ptr in self._mapped:
            self._unmap(buf)
            return
        _check(self._drv.cuMemFree(buf.ptr), "cuMemFree")

    def map_granularity(self) -> int:
        """Smallest physical allocation the virtual-memory API maps (the GPU's large page, 2 MiB)."""
        drv = self._drv
        return int(
            _check(
                drv.cuMemGetAllocationGranularity(
                    self._alloc_prop(), drv.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM
                ),
                "cuMemGetAllocationGranularity",
            )
        )

    def alloc_scattered(self, nbytes: int, seed: int = 0) -> Buffer:
        """`nbytes` of virtually contiguous memory built from separate physical pieces of the map
        granularity, mapped in a shuffled order: no two neighbouring pages are physically adjacent,
        so the driver must describe every piece with its own page-table entry (a plain cuMemAlloc
        of a large buffer may be mapped with much larger pages)."""
        drv = self._drv
        page = self.map_granularity()
        n = max(1, -(-int(nbytes) // page))
        size = n * page
        va = int(_check(drv.cuMemAddressReserve(size, page, 0, 0), f"cuMemAddressReserve({size} bytes)"))
        handles: list[Any] = []
        mapped = 0
        try:
            prop = self._alloc_prop()
            for _ in range(n):
                handles.append(_check(drv.cuMemCreate(page, prop, 0), f"cuMemCreate({page} bytes)"))
            for slot, h in enumerate(np.random.default_rng(seed).permutation(n)):
                _check(drv.cuMemMap(va + slot * page, page, 0, handles[int(h)], 0), "cuMemMap")
                mapped += 1
            self._allow_access(va, size, prop)
        except Exception:
            self._release(va, size, page, mapped, handles)
            raise
        buf = Buffer(va, size)
        self._mapped[va] = (size, page, handles)
        return buf

    def alloc_aliased(self, nbytes: int) -> tuple[Buffer, Buffer]:
        """One physical allocation mapped at two virtual ranges: a load through the second range
        needs translations the first one never created (the forced page-walk control), while the
        data (physically indexed in L2) are shared. Free each buffer on its own."""
        drv = self._drv
        page = self.map_granularity()
        size = max(1, -(-int(nbytes) // page)) * page
        prop = self._alloc_prop()
        handle = _check(drv.cuMemCreate(size, prop, 0), f"cuMemCreate({size} bytes)")
        out: list[Buffer] = []
        try:
            for _ in range(2):
                va = int(_check(drv.cuMemAddressReserve(size, page, 0, 0), f"cuMemAddressReserve({size} bytes)"))
                try:
                    _check(drv.cuMemMap(va, size, 0, handle, 0), "cuMemMap")
                except Exception:
                    drv.cuMemAddressFree(va, size)
                    raise
                self._mapped[va] = (size, size, [])  # one mapping of `size`; the handle is released below
                out.append(Buffer(va, size))
                self._allow_access(va, size, prop)
        except Exception:
            for b in out:
                self.free(b)
            raise
        finally:
            drv.cuMemRelease(handle)  # the memory lives on while a mapping exists
        return out[0], out[1]

    def _alloc_prop(self) -> Any:
        drv = self._drv
        prop = drv.CUmemAllocationProp()
        prop.type = drv.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = drv.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = self.ordinal
        return prop

    def _allow_access(self, va: int, size: int, prop: Any) -> None:
        """Read-write access to a mapped range for the device of `prop` (a new mapping has none)."""
        drv = self._drv
        desc = drv.CUmemAccessDesc()
        desc.location = prop.location
        desc.flags = drv.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        _check(drv.cuMemSetAccess(va, size, [desc], 1), "cuMemSetAccess")

    def _unmap(self, buf: Buffer) -> None:
        size, page, handles = self._mapped.pop(buf.ptr)
        self._release(buf.ptr, size, page, max(len(handles), 1 if page == size else 0), handles)

    def _release(self, va: int, size: int, page: int, mapped: int, handles: list[Any]) -> None:
        drv = self._drv
        for slot in range(mapped):
            drv.cuMemUnmap(va + slot * page, page)
        for h in handles:
            drv.cuMemRelease(h)
        drv.cuMemAddressFree(va, size)

    def upload(self, arr: np.ndarray, buf: Buffer | None = None, offset: int = 0) -> Buffer:
        arr = np.ascontiguousarray(arr)
        if buf is None:
            buf = self.alloc(arr.nbytes)
        if offset + arr.nbytes > buf.nbytes:
            raise ValueError("upload beyond buffer end")
        _check(self._drv.cuMemcpyHtoD(buf.ptr + offset, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD")
        return buf

    def download(self, buf: Buffer | int, dtype: Any, count: int, offset: int = 0) -> np.ndarray:
        out = np.empty(count, dtype=dtype)
        base = buf.ptr if isinstance(buf, Buffer) else int(buf)
        _check(self._drv.cuMemcpyDtoH(out.ctypes.data, base + offset, out.nbytes), "cuMemcpyDtoH")
        return out

    def memset32(self, buf: Buffer, value: int, count: int | None = None) -> None:
        n = buf.nbytes // 4 if count is None else count
        _check(self._drv.cuMemsetD32(buf.ptr, value & 0xFFFFFFFF, n), "cuMemsetD32")

    def copy_dtod(self, dst: Buffer, src: Buffer, nbytes: int) -> None:
        _check(self._drv.cuMemcpyDtoD(dst.ptr, src.ptr, nbytes), "cuMemcpyDtoD")

    # ---- code --------------------------------------------------------------------------
    def load(self, cubin: bytes) -> Module:
        drv = self._drv
        mod = _check(drv.cuModuleLoadData(cubin), "cuModuleLoadData")
        self._modules.append(mod)
        return Module(self, mod)

    def unload_modules(self) -> None:
        """Unload every module loaded through this Device (best effort): a runner worker's next benchmark
        starts without this one's code in device memory."""
        for mod in self._modules:
            try:
                self._drv.cuModuleUnload(mod)
            except Exception:  # noqa: BLE001 - the process's exit frees what the driver refuses here
                pass
        self._modules.clear()

    def launch(
        self,
        fn: Function,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: Sequence[Arg],
        smem: int = 0,
        cluster: tuple[int, int, int] | None = None,
        non_portable_cluster: bool = False,
        attributes: dict[str, int] | None = None,
    ) -> None:
        g, b = dim3(grid), dim3(block)
        shape = f"grid={g} block={b}" + (f" cluster={cluster}" if cluster is not None or attributes else "")
        fn.launch_on(
            0, g, b, args, smem, f"launch {fn.name} {shape} smem={smem}", cluster, non_portable_cluster, attributes
        )

    def sync(self, what: str = "kernel") -> None:
        """Wait for the device; a fault inside a kernel surfaces here."""
        _check(self._drv.cuCtxSynchronize(), f"{what} (synchronize)")

    def time_ms(self, fn: Any, reps: int = 1) -> list[float]:
        """Event-timed milliseconds of `fn()` (which launches work), one entry per repetition."""
        drv = self._drv
        start = _check(drv.cuEventCreate(0), "cuEventCreate")
        stop = _check(drv.cuEventCreate(0), "cuEventCreate")
        out = []
        try:
            for _ in range(reps):
                _check(drv.cuEventRecord(start, 0), "cuEventRecord")
                fn()
                _check(drv.cuEventRecord(stop, 0), "cuEventRecord")
                _check(drv.cuEventSynchronize(stop), "timed work (synchronize)")
                out.append(float(_check(drv.cuEventElapsedTime(start, stop), "cuEventElapsedTime")))
        finally:
            drv.cuEventDestroy(start)
            drv.cuEventDestroy(stop)
        return out

    def alternate_ms(self, a: Any, b: Any, pairs: int) -> list[tuple[float, float]]:
        """Event-timed (ms of a(), ms of b()) for `pairs` pairs run in alternation, so that clock,
        power or temperature drift cannot favour either side of a comparison."""
        a(), b()
        self.sync("warm-up of an alternating comparison")
        return [(self.time_ms(a)[0], self.time_ms(b)[0]) for _ in range(pairs)]

    def occupancy(self, fn: Function, block: int, smem: int = 0) -> int:
        return int(
            _check(
                self._drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(fn.handle, block, smem),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor",
            )
        )


class Module:
    def __init__(self, device: Device, handle: Any):
        self.device, self.handle = device, handle

    def function(self, name: str) -> Function:
        h = _check(self.device._drv.cuModuleGetFunction(self.handle, name.encode()), f"function {name}")
        return Function(self.device, h, name)

    def global_buffer(self, name: str) -> Buffer:
        """Device address and size of the module's global (`__device__` or `__constant__`) symbol `name`."""
        ptr, size = _check(self.device._drv.cuModuleGetGlobal(self.handle, name.encode()), f"cuModuleGetGlobal({name})")
        return Buffer(int(ptr), int(size))
