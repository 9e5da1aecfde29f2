"""The per-call path of a prepared launch, through ctypes straight into libcuda.

cuda-bindings' wrappers cost microseconds per call (argument objects, the CUlaunchConfig's Python
attributes, result tuples). A GEMM called from a model pays that every call, so a prepared launch keeps
its CUlaunchConfig and kernelParams as C structures and each call only sets the stream, re-points the
tensor maps (cuTensorMapReplaceAddress) and launches (cuLaunchKernelEx): three or four foreign calls.
Everything that is not per call (compiling, loading, encoding, occupancy) stays in cuda-bindings.

The structures follow cuda.h (CUDA 12 and 13): CUlaunchConfig is 7 unsigned ints, the stream, the
attribute array and its length; a CUlaunchAttribute is its id padded to 8 bytes and a 64-byte union.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .driver import CudaError, driver

ATTR_VALUE_BYTES = 64  # CUlaunchAttributeValue: a union padded to 64 bytes
CAPTURE_RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED


class LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * ATTR_VALUE_BYTES)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [
        ("gridDimX", ctypes.c_uint),
        ("gridDimY", ctypes.c_uint),
        ("gridDimZ", ctypes.c_uint),
        ("blockDimX", ctypes.c_uint),
        ("blockDimY", ctypes.c_uint),
        ("blockDimZ", ctypes.c_uint),
        ("sharedMemBytes", ctypes.c_uint),
        ("hStream", ctypes.c_void_p),
        ("attrs", ctypes.POINTER(LaunchAttribute)),
        ("numAttrs", ctypes.c_uint),
    ]


_LIB: Any = None


def libcuda() -> Any:
    """libcuda with the prototypes of the calls made here (loaded once; the same library cuda-bindings uses)."""
    global _LIB
    if _LIB is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError(f"the CUDA driver library (libcuda.so.1) cannot be loaded: {e}") from None
        # cuLaunchKernelEx has no argtypes: it is called with ctypes objects only (a pointer to the config,
        # the function as c_void_p, the parameter array, None), which pass as they are, without conversions
        lib.cuTensorMapReplaceAddress.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.cuThreadExchangeStreamCaptureMode.argtypes = [ctypes.POINTER(ctypes.c_int)]
        for f in (lib.cuLaunchKernelEx, lib.cuTensorMapReplaceAddress, lib.cuThreadExchangeStreamCaptureMode):
            f.restype = ctypes.c_int
        _LIB = lib
    return _LIB


def fail(status: int, what: str) -> CudaError:
    """The CudaError for a non-zero CUresult, named as cuda-bindings names it."""
    drv = driver()
    try:
        code = drv.CUresult(status)
        _, name = drv.cuGetErrorName(code)
        _, msg = drv.cuGetErrorString(code)
        text = f"{name.decode()} ({msg.decode()})"
    except Exception:  # noqa: BLE001 - an unknown code still gets its number
        text = f"CUresult {status}"
    return CudaError(f"{what}: {text}")


def cluster_attribute(cluster: tuple[int, int, int]) -> LaunchAttribute:
    """The CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION attribute (its id read from cuda-bindings' enum)."""
    at = LaunchAttribute()
    at.id = int(driver().CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
    struct.pack_into("III", at.value, 0, *cluster)
    return at


def pdl_attribute() -> LaunchAttribute:
    """CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION set: the grid may start before the previous one in the
    stream has finished (programmatic dependent launch); the kernel must wait (griddepcontrol.wait) before it
    touches global memory."""
    at = LaunchAttribute()
    at.id = int(driver().CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
    struct.pack_into("i", at.value, 0, 1)
    return at


class PreparedLaunch:
    """One kernel with fixed grid, block, shared memory, cluster and kernelParams array: each call launches
    it on a stream. The caller may change the values behind `params` between calls (the driver copies
    them at launch, and into the graph node when the stream is capturing). pdl: launched as a programmatic
    dependent launch (pdl_attribute; the kernel must wait for its predecessor itself)."""

    def __init__(
        self,
        fn: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        smem: int,
        params: Any,
        cluster: tuple[int, int, int] | None = None,
        pdl: bool = False,
    ):
        self.fn = ctypes.c_void_p(int(fn))  # int(): the CUfunction's handle value
        cfg = LaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
        cfg.sharedMemBytes = smem
        attrs = ([cluster_attribute(cluster)] if cluster else []) + ([pdl_attribute()] if pdl else [])
        self.attrs = (LaunchAttribute * len(attrs))(*attrs) if attrs else None
        cfg.attrs = ctypes.cast(self.attrs, ctypes.POINTER(LaunchAttribute)) if self.attrs else None
        cfg.numAttrs = len(attrs)
        self.cfg, self.params, self.pcfg = cfg, params, ctypes.pointer(cfg)
        self.stream = 0  # the stream the configuration holds now
        self.call = libcuda().cuLaunchKernelEx  # call(pcfg, fn, params, None) launches (a caller's own hot path)

    def __call__(self, stream: int, what: str = "launch") -> None:
        if stream != self.stream:
            self.cfg.hStream = self.stream = stream
        status = self.call(self.pcfg, self.fn, self.params, None)
        if status:
            raise fail(status, what)


def repointer(tensor_map: Any) -> Any:
    """A function that points the 128-byte CUtensorMap in the ctypes buffer `tensor_map` at an address
    (cuTensorMapReplaceAddress, the driver checking the alignment), with the library call and the buffer's
    address looked up once: a cached GEMM plan re-points its maps on every call whose operands moved."""
    call, where = libcuda().cuTensorMapReplaceAddress, ctypes.addressof(tensor_map)

    def repoint(address: int) -> None:
        status = call(where, address)
        if status:
            raise fail(status, f"cuTensorMapReplaceAddress({address:#x})")

    return repoint


@contextmanager
def relaxed_capture() -> Iterator[None]:
    """Inside: this thread may make calls that a stream capture in global or thread-local mode forbids
    (allocation, module loading), as in cudaStreamCaptureModeRelaxed; the thread's mode is restored after.
    Used where a GEMM plan is built while torch captures a CUDA graph."""
    lib = libcuda()
    mode = ctypes.c_int(CAPTURE_RELAXED)
    status = lib.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))
    if status:
        raise fail(status, "cuThreadExchangeStreamCaptureMode")
    try:
        yield
    finally:
        lib.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))
