"""The CUDA driver API binding (cuda.bindings.driver) and the status check every driver call goes through.

Only modules of the device layer import this; everything above reaches the driver through them.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ..errors import GpuDissectError


class CudaError(GpuDissectError):
    pass


def driver() -> ModuleType:
    """cuda.bindings.driver, imported on first use: the package loads (and its CPU tests run) without it."""
    from cuda.bindings import driver as drv

    return drv


def bindings_version() -> str:
    """The installed cuda-bindings version ("?" where it does not say); ImportError when it is missing."""
    import cuda.bindings

    return str(getattr(cuda.bindings, "__version__", "?"))


def check_result(result: Any, what: str) -> Any:
    """cuda.bindings returns (status, *values): the values (None, one, or a tuple); CudaError naming
    `what` on a non-success status."""
    drv = driver()
    if isinstance(result, tuple):
        status, rest = result[0], result[1:]
    else:
        status, rest = result, ()
    if status != drv.CUresult.CUDA_SUCCESS:
        _, name = drv.cuGetErrorName(status)
        _, msg = drv.cuGetErrorString(status)
        name = name.decode() if isinstance(name, bytes) else str(status)
        msg = msg.decode() if isinstance(msg, bytes) else ""
        raise CudaError(f"{what}: {name} ({msg})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest
