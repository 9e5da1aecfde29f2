"""A non-blocking stream of one GPU's context: asynchronous copies, events, and kernel launches on it.

Device.launch always uses the legacy default stream, which serialises with every other stream; work
that must overlap (two kernels at once, copies beside a kernel) goes on Streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .cuda import Arg, Device, Function, check_result
from .launch import dim3


class Stream:
    """A non-blocking stream of `dev`'s context (made current first: several GPUs share one process)."""

    def __init__(self, dev: Device):
        self.dev, drv = dev, dev._drv
        dev.make_current()
        self.handle = check_result(
            drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING.value), "cuStreamCreate"
        )

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        """cuMemcpyAsync on this stream: unified addressing lets the driver pick the direction
        (host<->device, device<->peer) from the pointers."""
        check_result(self.dev._drv.cuMemcpyAsync(int(dst), int(src), int(nbytes), self.handle), "cuMemcpyAsync")

    def event(self) -> Any:
        return check_result(self.dev._drv.cuEventCreate(0), "cuEventCreate")

    def record(self, ev: Any) -> None:
        check_result(self.dev._drv.cuEventRecord(ev, self.handle), "cuEventRecord")

    def wait(self, ev: Any) -> None:
        check_result(self.dev._drv.cuStreamWaitEvent(self.handle, ev, 0), "cuStreamWaitEvent")

    def sync(self, what: str = "copy") -> None:
        check_result(self.dev._drv.cuStreamSynchronize(self.handle), f"{what} (stream synchronize)")

    def launch(
        self,
        fn: Function,
        grid: int | tuple[int, ...],
        block: int | tuple[int, ...],
        args: Sequence[Arg],
        smem: int = 0,
    ) -> None:
        """A kernel on this stream; dynamic shared memory above 48 KB is opted into as Device.launch does."""
        fn.launch_on(self.handle, dim3(grid), dim3(block), args, smem, f"launch {fn.name} on a stream")

    def close(self) -> None:
        self.dev._drv.cuStreamDestroy(self.handle)
