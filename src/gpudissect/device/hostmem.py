"""Host memory (pinned, pageable, mapped), copies and kernels timed on streams (device/stream.py),
peer access, and the NVML link facts (PCIe generation/width, NVLink, topology) for the link suite.

Built on device.cuda.Device: this module only adds the driver calls that suite needs, each status
checked the same way.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .cuda import Arg, CudaError, Device, Function, check_result
from .driver import driver
from .stream import Stream  # the link suite imports Stream from here

PAGE = 4096


@dataclass
class HostBuffer:
    """Host memory: `ptr` is the host address; `dev_ptr` is where a kernel reaches it (mapped
    pinned memory), None for pageable memory, which no kernel can touch."""

    ptr: int
    nbytes: int
    kind: str  # "pinned" | "pageable"
    dev_ptr: int | None = None
    _keep: Any = field(default=None, repr=False)  # owner of pageable memory (a numpy array)

    def array(self, dtype: Any = np.uint32, count: int | None = None) -> np.ndarray:
        """A numpy view of the first `count` elements (all by default), no copy."""
        dt = np.dtype(dtype)
        n = self.nbytes // dt.itemsize if count is None else int(count)
        raw = (ctypes.c_uint8 * (n * dt.itemsize)).from_address(self.ptr)
        return np.frombuffer(raw, dtype=dt, count=n)


def alloc_pinned(dev: Device, nbytes: int) -> HostBuffer:
    """Page-locked host memory, mapped into every context (portable + devicemap), so that the copy
    engine can DMA it and a kernel can load/store it over the link."""
    drv = dev._drv
    flags = drv.CU_MEMHOSTALLOC_PORTABLE | drv.CU_MEMHOSTALLOC_DEVICEMAP
    ptr = int(check_result(drv.cuMemHostAlloc(int(nbytes), flags), f"cuMemHostAlloc({nbytes} bytes)"))
    try:
        dptr = int(check_result(drv.cuMemHostGetDevicePointer(ptr, 0), "cuMemHostGetDevicePointer"))
    except CudaError:
        drv.cuMemFreeHost(ptr)
        raise
    return HostBuffer(ptr, int(nbytes), "pinned", dptr)


def alloc_pageable(nbytes: int) -> HostBuffer:
    """Ordinary (pageable) host memory, page aligned; touched once so every page exists before a
    copy is timed (first-touch page faults are not link time)."""
    raw = np.empty(int(nbytes) + PAGE, dtype=np.uint8)
    off = (-raw.ctypes.data) % PAGE
    view = raw[off : off + int(nbytes)]
    view[::PAGE] = 0
    return HostBuffer(int(view.ctypes.data), int(nbytes), "pageable", None, raw)


def free_host(dev: Device, buf: HostBuffer) -> None:
    if buf.kind == "pinned":
        check_result(dev._drv.cuMemFreeHost(buf.ptr), "cuMemFreeHost")
    buf._keep = None


def set_current(dev: Device) -> None:
    dev.make_current()


class Gate:
    """Holds a stream at a spin kernel until `open()`: the host can queue many small copies
    behind it, and they then run back to back, so the timing is not the host's issue rate.
    The kernel gives up by itself after `timeout_ns` (reported by `open`), so a forgotten gate
    cannot hang the GPU."""

    def __init__(self, dev: Device, spin: Function, timeout_ns: int = 5_000_000_000):
        self.flag = alloc_pinned(dev, 64)
        self.view = self.flag.array(np.uint32)
        self.spin, self.timeout_ns = spin, timeout_ns
        self.dev = dev

    def close_on(self, stream: Stream) -> None:
        self.view[:] = 0
        stream.launch(self.spin, 1, 1, [Arg.u64(self.flag.dev_ptr), Arg.u64(self.timeout_ns)])

    def open(self) -> bool:
        """Release the stream; False when the spin kernel had already timed out."""
        self.view[0] = 1
        self.dev.sync("gate")
        return int(self.view[1]) == 0

    def free(self) -> None:
        free_host(self.dev, self.flag)


def _elapsed_ms(dev: Device, a: Any, b: Any) -> float:
    return float(check_result(dev._drv.cuEventElapsedTime(a, b), "cuEventElapsedTime"))


def _destroy(dev: Device, *events: Any) -> None:
    for e in events:
        dev._drv.cuEventDestroy(e)


def time_on_stream(stream: Stream, work: Callable[[], None]) -> float:
    """Event-timed milliseconds of the work `work()` puts on `stream`."""
    s, e = stream.event(), stream.event()
    try:
        stream.record(s)
        work()
        stream.record(e)
        stream.sync()
        return _elapsed_ms(stream.dev, s, e)
    finally:
        _destroy(stream.dev, s, e)


def time_two_streams(
    a: Stream, b: Stream, work_a: Callable[[], None], work_b: Callable[[], None]
) -> tuple[float, float, float]:
    """Both streams start at one event and run at once: (ms until both ended, ms of a, ms of b),
    each measured from the common start."""
    start, end_a, end_b = a.event(), a.event(), b.event()
    try:
        a.record(start)
        b.wait(start)
        work_a()
        work_b()
        a.record(end_a)
        b.record(end_b)
        a.sync()
        b.sync()
        ta, tb = _elapsed_ms(a.dev, start, end_a), _elapsed_ms(a.dev, start, end_b)
        return max(ta, tb), ta, tb
    finally:
        _destroy(a.dev, start, end_a, end_b)


def wall_copy_us(stream: Stream, dst: int, src: int, nbytes: int) -> float:
    """Host-observed microseconds of one copy: issue, then wait for it (what a caller waits)."""
    t0 = time.perf_counter_ns()
    stream.copy(dst, src, nbytes)
    stream.sync()
    return (time.perf_counter_ns() - t0) / 1e3


# ---- peers ---------------------------------------------------------------------------------
def can_access_peer(a: Device, b: Device) -> bool:
    return bool(check_result(a._drv.cuDeviceCanAccessPeer(a.handle, b.handle), "cuDeviceCanAccessPeer"))


def enable_peer(a: Device, b: Device) -> None:
    """Let `a`'s context load/store/copy `b`'s memory (an already enabled pair is fine)."""
    drv = a._drv
    set_current(a)
    status = drv.cuCtxEnablePeerAccess(b.ctx, 0)
    code = status[0] if isinstance(status, tuple) else status
    if code != drv.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
        check_result(status, f"cuCtxEnablePeerAccess(GPU {a.ordinal} -> GPU {b.ordinal})")


def device_count() -> int:
    """GPUs the driver shows this process (0 when there is no driver)."""
    try:
        drv = driver()
        check_result(drv.cuInit(0), "cuInit")
        return int(check_result(drv.cuDeviceGetCount(), "cuDeviceGetCount"))
    except Exception:  # noqa: BLE001 - no driver or library: no GPU
        return 0


# ---- NVML link facts -------------------------------------------------------------------------
def _nv() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:  # noqa: BLE001 - NVML absent: the facts are simply missing
        return None


def _try(fn: Any, *a: Any) -> Any:
    try:
        return fn(*a)
    except Exception:  # noqa: BLE001 - a query this GPU or driver does not support
        return None


def _field(nv: Any, h: Any, field: int | None, scope: int | None = None) -> float | None:
    """One NVML field value (nvmlDeviceGetFieldValues; scope: a link, for per-link fields) as a
    number, None where unsupported."""
    if field is None:
        return None
    got = _try(nv.nvmlDeviceGetFieldValues, h, [field if scope is None else (field, scope)])
    if not got or getattr(got[0], "nvmlReturn", 1) != 0:
        return None
    v = got[0]
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}.get(
        v.valueType, "uiVal"
    )
    return float(getattr(v.value, member))


def _text(v: Any) -> Any:
    return v.decode() if isinstance(v, bytes) else v


def pcie_link(uuid: str | None = None, index: int = 0) -> dict[str, Any]:
    """PCIe generation and width now and at most (NVML), and NVML's own max link speed. The
    current generation drops when the link idles: read it while traffic flows."""
    nv = _nv()
    if nv is None:
        return {}
    h = _try(nv.nvmlDeviceGetHandleByUUID, uuid) if uuid else _try(nv.nvmlDeviceGetHandleByIndex, index)
    if h is None:
        return {}
    return {
        "gen_current": _try(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
        "gen_max": _try(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
        "gen_gpu_max": _try(getattr(nv, "nvmlDeviceGetGpuMaxPcieLinkGeneration", lambda _h: None), h),
        "width_current": _try(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
        "width_max": _try(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
        "pci_bus_id": _text(getattr(_try(nv.nvmlDeviceGetPciInfo, h), "busId", None)),
    }


def nvlink_speed_mbps(nv: Any, h: Any) -> float | None:
    """Per-direction speed of link 0 in MB/s: the per-link field (Hopper and later answer it, scoped
    to a link), else the older per-link and common fields."""
    for field_name, scope in (
        ("NVML_FI_DEV_NVLINK_GET_SPEED", 0),
        ("NVML_FI_DEV_NVLINK_SPEED_MBPS_L0", None),
        ("NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON", None),
    ):
        v = _field(nv, h, getattr(nv, field_name, None), scope)
        if v:
            return v
    return None


def nvml_topology() -> list[dict[str, Any]]:
    """Per GPU (NVML order): index, uuid, PCI bus id, the PCI bus ids at the far end of each active
    NVLink that ends at a GPU, the number of active NVLinks that end at an NVSwitch, whether NVML
    reports NVLink peer-to-peer to every other GPU, and the common-ancestor level to every other GPU
    (NVML_TOPOLOGY_*: 0 same board, 10 one PCIe switch, 20 several switches, 30 host bridge, 40 same NUMA
    node, 50 across sockets).
    analysis.topology turns this into a path matrix."""
    nv = _nv()
    if nv is None:
        return []
    n = _try(nv.nvmlDeviceGetCount) or 0
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
    max_links = getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)
    switch = getattr(nv, "NVML_NVLINK_DEVICE_TYPE_SWITCH", 2)
    out = []
    for i, h in enumerate(handles):
        links, switch_links = [], 0
        for link in range(max_links):
            state = _try(nv.nvmlDeviceGetNvLinkState, h, link)
            if state is None:
                break
            if state:
                if _try(getattr(nv, "nvmlDeviceGetNvLinkRemoteDeviceType", lambda *_: None), h, link) == switch:
                    switch_links += 1  # NVSwitch systems: links end at a switch, not at the peer GPU
                    continue
                remote = _try(
                    getattr(nv, "nvmlDeviceGetNvLinkRemotePciInfo_v2", nv.nvmlDeviceGetNvLinkRemotePciInfo), h, link
                )
                links.append(_text(getattr(remote, "busId", "?")))
        pci = _try(nv.nvmlDeviceGetPciInfo, h)
        levels = {j: _try(nv.nvmlDeviceGetTopologyCommonAncestor, h, g) for j, g in enumerate(handles) if j != i}
        nvl_p2p = {
            j: _try(nv.nvmlDeviceGetP2PStatus, h, g, nv.NVML_P2P_CAPS_INDEX_NVLINK) == nv.NVML_P2P_STATUS_OK
            for j, g in enumerate(handles)
            if j != i
        }
        # per-direction speed of one active link, MB/s (nvidia-smi nvlink -s prints it as GB/s)
        speed = nvlink_speed_mbps(nv, h) if links or switch_links else None
        version = _try(nv.nvmlDeviceGetNvLinkVersion, h, 0) if links or switch_links else None
        out.append(
            {
                "index": i,
                "uuid": _text(_try(nv.nvmlDeviceGetUUID, h)),
                "pci_bus_id": _text(getattr(pci, "busId", None)),
                "nvlinks": links,
                "switch_links": switch_links,
                "nvlink_p2p": nvl_p2p,
                "nvlink_speed_mbps": speed,
                "nvlink_version": version,
                "levels": {j: lv for j, lv in levels.items() if lv is not None},
            }
        )
    return out


def gpu_list() -> list[dict[str, Any]]:
    """index, uuid, name of every GPU NVML sees (no CUDA context needed)."""
    nv = _nv()
    if nv is None:
        return []
    out = []
    for i in range(_try(nv.nvmlDeviceGetCount) or 0):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        out.append(
            {"index": i, "uuid": _text(_try(nv.nvmlDeviceGetUUID, h)), "name": _text(_try(nv.nvmlDeviceGetName, h))}
        )
    return out
