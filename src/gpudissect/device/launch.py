"""Kernel launches on driver handles: the kernelParams array, the launch configuration (cluster dimensions,
launch attributes), the launch itself on any stream, and the cluster occupancy queries, which take the
same configuration. Device.launch, Stream.launch and gemm/launch.py (on torch's context) all launch here.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from .driver import CudaError, check_result, driver

Dim3 = tuple[int, int, int]


def dim3(d: int | Sequence[int]) -> Dim3:
    """A grid or block size as (x, y, z), missing dimensions 1."""
    t = (int(d),) if isinstance(d, int) else tuple(int(v) for v in d)
    return (t + (1, 1, 1))[:3]  # type: ignore[return-value]


def param_array(holders: Sequence[Any]) -> Any:
    """The kernelParams array: the address of each ctypes value, in parameter order. The caller keeps
    `holders` alive until the launch has been issued (the driver copies the values at launch)."""
    return (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.addressof(h) for h in holders])


def launch_config(
    grid: Dim3,
    block: Dim3,
    smem: int = 0,
    stream: Any = 0,
    cluster: Dim3 | None = None,
    attributes: dict[str, int] | None = None,
) -> Any:
    """A CUlaunchConfig for cuLaunchKernelEx and the cluster occupancy queries. `attributes`: extra
    CUlaunchAttributeID names with their values (only the cluster scheduling policy is supported)."""
    drv = driver()
    cfg = drv.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = smem
    cfg.hStream = stream
    attrs = []
    if cluster is not None:
        at = drv.CUlaunchAttribute()
        at.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        at.value.clusterDim.x, at.value.clusterDim.y, at.value.clusterDim.z = cluster
        attrs.append(at)
    for name, value in (attributes or {}).items():
        at = drv.CUlaunchAttribute()
        at.id = getattr(drv.CUlaunchAttributeID, name)
        if name.endswith("CLUSTER_SCHEDULING_POLICY_PREFERENCE"):
            at.value.clusterSchedulingPolicyPreference = value
        else:
            raise CudaError(f"launch attribute {name} is not supported by gpudissect")
        attrs.append(at)
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    return cfg


def launch_kernel(
    fn: Any,
    grid: Dim3,
    block: Dim3,
    smem: int,
    stream: Any,
    params: Any,
    what: str,
    cluster: Dim3 | None = None,
    attributes: dict[str, int] | None = None,
) -> None:
    """Launch the CUfunction `fn` on `stream` (0: the legacy default stream) with the kernelParams array
    `params`; cuLaunchKernel, or cuLaunchKernelEx where a cluster or an attribute is asked for.
    A failure raises CudaError naming `what`."""
    drv = driver()
    if cluster is None and not attributes:
        check_result(drv.cuLaunchKernel(fn, *grid, *block, smem, stream, ctypes.addressof(params), 0), what)
        return
    cfg = launch_config(grid, block, smem, stream, cluster, attributes)
    check_result(drv.cuLaunchKernelEx(cfg, fn, ctypes.addressof(params), 0), what)


def max_active_clusters(fn: Any, cluster: Dim3, block: Dim3, smem: int) -> int:
    """Clusters of `cluster` blocks of `fn` that fit the GPU at once (cuOccupancyMaxActiveClusters; the
    configuration's grid is one cluster)."""
    cfg = launch_config(cluster, block, smem, 0, cluster)
    return int(check_result(driver().cuOccupancyMaxActiveClusters(fn, cfg), "cuOccupancyMaxActiveClusters"))


def max_cluster_size(fn: Any, grid: Dim3, block: Dim3, smem: int) -> int:
    """The largest cluster of `fn` the driver would place for this launch shape
    (cuOccupancyMaxPotentialClusterSize; no cluster dimension in the configuration)."""
    cfg = launch_config(grid, block, smem, 0)
    return int(check_result(driver().cuOccupancyMaxPotentialClusterSize(fn, cfg), "cuOccupancyMaxPotentialClusterSize"))
