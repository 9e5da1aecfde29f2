"""What the link benchmarks share: the kernels (kernels/link.cu) and the per-device Rig that launches
them (checksum, fill, a gate that holds a stream, two streams) and owns the benchmarks' memory, the
host-side twin of the checksum kernel, the copy-size grid and check, the random pointer-chase
chain of the remote-latency probes, and the skip of a benchmark that needs two or more GPUs.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

import numpy as np

from ...device import hostmem
from ...device.cuda import Arg, Buffer, Device
from ...device.hostmem import Gate, HostBuffer, Stream
from ..context import BenchContext
from ..registry import KernelSpec

_V4 = [r"LDG\.E\.128", r"STG\.E\.128"]
LINK = KernelSpec(
    "link.cu",
    {
        "copy_v4": _V4,
        "copy_bidir_v4": _V4,
        "checksum_u32": [r"LDG\.E\.128\.STRONG\.SYS", r"REDG?\.E\.ADD\.64"],
        "fill_u32": [r"STG\.E"],
        "remote_chase": [r"LDG\.E\.64\.STRONG\.SYS", r"SR_GLOBALTIMER", r"SR_CLOCKLO"],
        "gate_spin": [r"LDG\.E\.STRONG\.SYS", r"NANOSLEEP"],
    },
)
GB = 1e9  # link bandwidths in GB/s = 10^9 bytes/s, as PCIe/NVLink rates and the papers' tables


def size_grid(lo: int, hi: int, factor: int) -> list[int]:
    """lo, lo*factor, ... up to hi, with hi itself always included."""
    out, s = [], lo
    while s < hi:
        out.append(s)
        s *= factor
    return out + [hi]


def host_checksum(words: np.ndarray, first_index: int = 0) -> int:
    """What the checksum_u32 kernel computes, in numpy: sum of (w ^ (u32)(i * 0x9E3779B9)) mod 2^64
    over word index i. Used to prove the kernel right on every run."""
    total = np.uint64(0)
    chunk = 1 << 22
    for a in range(0, words.size, chunk):
        w = words[a : a + chunk].astype(np.uint32, copy=False)
        idx = np.arange(first_index + a, first_index + a + w.size, dtype=np.uint64)
        mixed = (idx * np.uint64(0x9E3779B9)) & np.uint64(0xFFFFFFFF)
        total += np.bitwise_xor(w.astype(np.uint64), mixed).sum(dtype=np.uint64)
    return int(total)


class Rig:
    """Kernels, a checksum, a gate and streams for one device, and the memory a link benchmark takes
    through it (buffers on that device, pinned host memory): one owner per GPU, where the context's
    buffers would cover the first GPU only. Leaving `with Rig(...) as rig:` (or close()) frees all of it,
    with the rig's device current."""

    def __init__(self, ctx: BenchContext, dev: Device | None = None):
        self.ctx, self.dev = ctx, dev or ctx.device
        hostmem.set_current(self.dev)
        mod = ctx.module(LINK) if dev is None else self.dev.load(_cubin(self.dev))
        self.k = {name: mod.function(name) for name in LINK.required}
        self.sums = self.dev.alloc(8)
        self.gate = Gate(self.dev, self.k["gate_spin"])
        self.s1, self.s2 = Stream(self.dev), Stream(self.dev)
        self.blocks = 2 * self.dev.props["sm_count"]
        self._bufs: list[Buffer] = []
        self._host: list[HostBuffer] = []

    def alloc(self, nbytes: int) -> Buffer:
        """A buffer on this rig's GPU (made current), freed by close()."""
        hostmem.set_current(self.dev)
        self._bufs.append(self.dev.alloc(nbytes))
        return self._bufs[-1]

    def pinned(self, nbytes: int) -> HostBuffer:
        """Mapped pinned host memory, freed by close()."""
        self._host.append(hostmem.alloc_pinned(self.dev, nbytes))
        return self._host[-1]

    def close(self) -> None:
        """Free the rig's buffers, pinned memory, gate, streams and checksum word."""
        hostmem.set_current(self.dev)
        for b in self._bufs:
            self.dev.free(b)
        for h in self._host:
            hostmem.free_host(self.dev, h)
        self._bufs, self._host = [], []
        self.gate.free()
        self.s1.close()
        self.s2.close()
        self.dev.free(self.sums)

    def __enter__(self) -> Rig:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.close()
            return
        try:  # a faulted context cannot free: that must not hide the error that ended the block
            self.close()
        except Exception:  # noqa: BLE001 - the process exit frees what is left
            pass

    def checksum(self, ptr: int, nbytes: int) -> int:
        """Checksum of `nbytes` at device-visible address `ptr` (device, peer or mapped host)."""
        self.dev.memset32(self.sums, 0)
        self.dev.launch(
            self.k["checksum_u32"], self.blocks, 256, [Arg.u64(ptr), Arg.u64(nbytes // 16), Arg.ptr(self.sums)]
        )
        self.dev.sync("checksum")
        return int(self.dev.download(self.sums, np.uint64, 1)[0])

    def fill(self, ptr: int, nbytes: int, seed: int) -> None:
        self.dev.launch(self.k["fill_u32"], self.blocks, 256, [Arg.u64(ptr), Arg.u64(nbytes // 4), Arg.u32(seed)])
        self.dev.sync("fill")

    def gated(self, stream: Stream, work: Callable[[], None]) -> float:
        """ms of `work` queued behind the gate: runs back to back whatever the host's issue rate."""
        s, e = stream.event(), stream.event()
        try:
            self.gate.close_on(stream)
            stream.record(s)
            work()
            stream.record(e)
            ok = self.gate.open()
            stream.sync()
            self.ctx.check(ok, "the gate kernel timed out before the copies were queued")
            return float(hostmem._elapsed_ms(self.dev, s, e))
        finally:
            hostmem._destroy(self.dev, s, e)

    def gated_pair(self, work_a: Callable[[], None], work_b: Callable[[], None]) -> tuple[float, float, float]:
        """(ms both, ms a, ms b) with both streams released at once by the gate."""
        self.gate.close_on(self.s1)
        start, ea, eb = self.s1.event(), self.s1.event(), self.s2.event()
        try:
            self.s1.record(start)
            self.s2.wait(start)
            work_a()
            work_b()
            self.s1.record(ea)
            self.s2.record(eb)
            ok = self.gate.open()
            self.s1.sync()
            self.s2.sync()
            self.ctx.check(ok, "the gate kernel timed out before the copies were queued")
            ta, tb = hostmem._elapsed_ms(self.dev, start, ea), hostmem._elapsed_ms(self.dev, start, eb)
            return max(ta, tb), ta, tb
        finally:
            hostmem._destroy(self.dev, start, ea, eb)


def _cubin(dev: Device) -> bytes:
    from ...device.compiler import compile_kernel_file

    return compile_kernel_file(LINK.file, dev.arch, LINK.defines)


def check_copy_size(v: int, f: object) -> str | None:
    """The Param check of a copy size (bytes)."""
    return None if 1 << 16 <= v <= 8 << 30 and v % 4096 == 0 else "64 KiB .. 8 GiB, a multiple of 4 KiB"


def chase_chain(nodes: int, stride: int, base: int, seed: int = 7) -> tuple[np.ndarray, list[int]]:
    """A single random cycle over `nodes` slots `stride` bytes apart: the u64 words to store (slot
    k holds the absolute address of its successor) and the visiting order from slot 0."""
    if stride % 8 or nodes < 2:
        raise ValueError("stride must be a multiple of 8 and nodes >= 2")
    order = [0] + [int(x) + 1 for x in np.random.default_rng(seed).permutation(nodes - 1)]
    words = np.zeros(nodes * stride // 8, dtype=np.uint64)
    for a, b in zip(order, order[1:] + order[:1]):
        words[a * stride // 8] = base + b * stride
    return words, order


def chase_end(order: list[int], steps: int, stride: int, base: int) -> int:
    """Address the chase holds after one untimed step plus `steps` timed ones from slot 0."""
    return base + order[(steps + 1) % len(order)] * stride


def skip_counted(ctx: BenchContext, key: str, count: int, why: str) -> None:
    """Not measurable here: the GPU count it saw as one figure, then the benchmark ends as skipped
    (no failure is stored; the reason stands beside its status)."""
    ctx.progress(1, 1, f"skipped: {why}")
    ctx.figure(
        key,
        count,
        "GPUs",
        "measured",
        "cuDeviceGetCount in the benchmark's process",
        note=f"skipped, nothing measured: {why}",
    )
    ctx.skip(why)


def gpus_or_skip(ctx: BenchContext, key: str, needs: str) -> int:
    """The GPU count this process sees; with fewer than two the benchmark ends here as skipped."""
    n = hostmem.device_count()
    if n < 2:
        skip_counted(ctx, key, n, f"{needs} >= 2 GPUs, this process sees {n}")
    return n
