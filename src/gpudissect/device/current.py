"""The CUDA context another library made current in the calling thread (torch's: the device's primary
context): its facts, and kernels loaded and memory allocated there. Our GEMM (gemm/launch.py) works on that
context instead of opening a Device of its own, so its kernels run beside torch's work; it launches them
through device/launch.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import GpuDissectError
from .driver import check_result, driver


@dataclass(frozen=True)
class Context:
    """The current context: `handle` (the CUcontext's value) keys what is loaded or allocated per context."""

    handle: int
    cc: tuple[int, int]  # compute capability
    sm_count: int


def context() -> Context:
    """The calling thread's current context; GpuDissectError where none is current."""
    drv = driver()
    ctx = check_result(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is None or int(ctx) == 0:  # int(): the handle value (getPtr() would be the address of its storage)
        raise GpuDissectError("no CUDA context is current (initialise CUDA first, e.g. through torch)")
    dev = check_result(drv.cuCtxGetDevice(), "cuCtxGetDevice")

    def attr(name: str) -> int:
        return check_result(drv.cuDeviceGetAttribute(getattr(drv.CUdevice_attribute, name), dev), name)

    cc = (attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"), attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"))
    return Context(int(ctx), cc, attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"))


def load_function(cubin: bytes, name: str, dynamic_smem: int, source: str) -> Any:
    """The CUfunction `name` of `cubin` (compiled from `source`), loaded into the current context and
    allowed `dynamic_smem` bytes of dynamic shared memory. The module stays loaded for the process."""
    drv = driver()
    mod = check_result(drv.cuModuleLoadData(cubin), f"cuModuleLoadData({source})")
    fn = check_result(drv.cuModuleGetFunction(mod, name.encode()), name)
    check_result(
        drv.cuFuncSetAttribute(
            fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem
        ),
        "cuFuncSetAttribute(dynamic shared memory)",
    )
    return fn


def alloc(nbytes: int, what: str) -> int:
    """Device address of `nbytes` allocated in the current context (never freed: a per-context workspace)."""
    return int(check_result(driver().cuMemAlloc(nbytes), f"cuMemAlloc({nbytes} B {what})"))


def zero32(ptr: int, count: int, what: str) -> None:
    """`count` 32-bit words at `ptr` set to zero, finished on return. On a private non-blocking stream
    and synchronised there only: legal while another stream of the context captures a CUDA graph (a
    context-wide synchronise or the legacy stream would break the capture)."""
    drv = driver()
    s = check_result(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING), f"cuStreamCreate({what})")
    try:
        check_result(drv.cuMemsetD32Async(ptr, 0, count, s), f"cuMemsetD32Async({what})")
        check_result(drv.cuStreamSynchronize(s), f"cuStreamSynchronize({what})")
    finally:
        drv.cuStreamDestroy(s)
