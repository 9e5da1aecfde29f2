"""The link suite: what connects a GPU to its host and to other GPUs (Jia ch. 5, Tables 5.1/5.2).

Host <-> device over PCIe with the copy engine (cuMemcpyAsync on streams, pinned and pageable host
memory) and with SM-driven copies (a kernel loading or storing mapped pinned host memory), as
NVIDIA's nvbandwidth splits them; small-copy latency; the PCIe generation and width from NVML
beside the peak they allow. Peer-to-peer matrices and NCCL collectives need two or more GPUs and
say so instead of measuring (bench/link_peer.py holds them). Every copy is verified: the
destination's position-sensitive checksum must equal the source's.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..analysis import topology
from ..device import hostmem
from ..device.cuda import Arg, Buffer, Device
from ..device.hostmem import Gate, HostBuffer, Stream
from ..models import Point
from .context import BenchContext
from .registry import KernelSpec, Param, benchmark, parse_size

SUITE = "link"
_V4 = [r"LDG\.E\.128", r"STG\.E\.128"]
LINK = KernelSpec("link.cu", {
    "copy_v4": _V4,
    "copy_bidir_v4": _V4,
    "checksum_u32": [r"LDG\.E\.128\.STRONG\.SYS", r"REDG?\.E\.ADD\.64"],
    "fill_u32": [r"STG\.E"],
    "remote_chase": [r"LDG\.E\.64\.STRONG\.SYS", r"SR_GLOBALTIMER", r"SR_CLOCKLO"],
    "gate_spin": [r"LDG\.E\.STRONG\.SYS", r"NANOSLEEP"],
})
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
        w = words[a: a + chunk].astype(np.uint32, copy=False)
        idx = np.arange(first_index + a, first_index + a + w.size, dtype=np.uint64)
        mixed = (idx * np.uint64(0x9E3779B9)) & np.uint64(0xFFFFFFFF)
        total += np.bitwise_xor(w.astype(np.uint64), mixed).sum(dtype=np.uint64)
    return int(total)


class _Rig:
    """Kernels, a checksum, a gate and streams for one device."""

    def __init__(self, ctx: BenchContext, dev: Device | None = None):
        self.ctx, self.dev = ctx, dev or ctx.device
        hostmem.set_current(self.dev)
        mod = ctx.module(LINK) if dev is None else self.dev.load(_cubin(self.dev))
        self.k = {name: mod.function(name) for name in LINK.required}
        self.sums = self.dev.alloc(8)
        self.gate = Gate(self.dev, self.k["gate_spin"])
        self.s1, self.s2 = Stream(self.dev), Stream(self.dev)
        self.blocks = 2 * self.dev.props["sm_count"]

    def close(self) -> None:
        self.gate.free()
        self.s1.close()
        self.s2.close()
        self.dev.free(self.sums)

    def checksum(self, ptr: int, nbytes: int) -> int:
        """Checksum of `nbytes` at device-visible address `ptr` (device, peer or mapped host)."""
        self.dev.memset32(self.sums, 0)
        self.dev.launch(self.k["checksum_u32"], self.blocks, 256, [Arg.u64(ptr), Arg.u64(nbytes // 16), Arg.ptr(self.sums)])
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
    from ..device.compiler import compile_kernel_file

    return compile_kernel_file(LINK.file, dev.arch, LINK.defines)


@dataclass
class _Ends:
    """One side of a copy: its device-visible address, host address, and how to verify it."""

    dev_ptr: int | None  # None: pageable, not reachable by a kernel
    host: HostBuffer | None = None
    buf: Buffer | None = None

    @property
    def addr(self) -> int:  # the address cuMemcpyAsync gets
        if self.buf is not None:
            return self.buf.ptr
        assert self.host is not None
        return self.host.ptr


def _batch(size: int, quick: bool) -> int:
    """Copies per timing: enough bytes for the timing to last well past event resolution, and at
    most 200 commands, which a stream held by the gate queues without blocking the host."""
    target = (64 if quick else 256) << 20
    return max(1, min(200, target // size))


def _poison(e: _Ends, size: int, rig: _Rig) -> None:
    if e.buf is not None:
        rig.dev.memset32(e.buf, 0xA5A5A5A5, size // 4)
    else:
        assert e.host is not None
        e.host.array(np.uint32, size // 4).fill(0xA5A5A5A5)


# ---------------------------------------------------------------------------------------
# 1. Copy engine: pinned and pageable, H2D, D2H, both at once
# ---------------------------------------------------------------------------------------
_check_max = lambda v, f: None if 1 << 16 <= v <= 8 << 30 and v % 4096 == 0 else "64 KiB .. 8 GiB, a multiple of 4 KiB"  # noqa: E731


@benchmark(
    suite=SUITE, name="host_device_ce", title="Host<->device bandwidth, copy engine (cuMemcpyAsync), pinned and pageable",
    axes={"memory": "pinned, pageable", "direction": "h2d, d2h, bidir (pinned)",
          "size": "4 KiB .. max_size (quick: x16 steps, full: x2 steps)"},
    kernels=[LINK],
    params={"max_size": Param(1 << 30, "largest copy (bytes)", parse_size, _check_max),
            "reps": Param(None, "timed repetitions per point (default 5 quick, 11 full)", int,
                          lambda v, f: None if 3 <= v <= 101 else "3 .. 101")},
    timeout_s=400, paper="002 §5.1 Table 5.2; nvbandwidth host_to_device_memcpy_ce & co.",
)
def host_device_ce(ctx: BenchContext) -> None:
    top = ctx.params["max_size"]
    reps = ctx.params["reps"] or (5 if ctx.quick else 11)
    sizes = size_grid(4096, top, 16 if ctx.quick else 2)
    rig = _Rig(ctx)
    dev = ctx.device
    dbufs: list[Buffer] = []
    hbufs: list[HostBuffer] = []
    try:
        d_src, d_dst = dev.alloc(top), dev.alloc(top)
        dbufs += [d_src, d_dst]
        h_src = hostmem.alloc_pinned(dev, top)
        hbufs.append(h_src)
        h_dst = hostmem.alloc_pinned(dev, top)
        hbufs.append(h_dst)
        p_buf = hostmem.alloc_pageable(top)
        rig.fill(d_src.ptr, top, 0x1234)
        rig.fill(h_src.dev_ptr, top, 0x5678)  # type: ignore[arg-type]
        pcie = _pcie_under_load(ctx, rig, d_dst.ptr, h_src.ptr, top)
        ctx.progress(1, 20, "pinned")
        cases = [
            ("pinned", "h2d", _Ends(h_src.dev_ptr, host=h_src), _Ends(d_dst.ptr, buf=d_dst)),
            ("pinned", "d2h", _Ends(d_src.ptr, buf=d_src), _Ends(h_dst.dev_ptr, host=h_dst)),
            ("pageable", "h2d", _Ends(None, host=p_buf), _Ends(d_dst.ptr, buf=d_dst)),
            ("pageable", "d2h", _Ends(d_src.ptr, buf=d_src), _Ends(None, host=p_buf)),
        ]
        best: dict[str, list[float]] = {}
        for ci, (mem, direction, src, dst) in enumerate(cases):
            if mem == "pageable" and direction == "h2d":
                np.copyto(p_buf.array(np.uint8), h_src.array(np.uint8))  # same pattern as the pinned source
            pts = []
            for si, size in enumerate(sizes):
                samples = _ce_point(ctx, rig, mem, src, dst, size, reps, h_dst if dst.dev_ptr is None else None,
                                    h_src if src.dev_ptr is None else None)
                pts.append(Point(size, statistics.median(samples), min(samples), max(samples), reps))
                ctx.progress(2 + ci * 4 + si * 4 // len(sizes), 20, f"{mem} {direction} {size >> 10} KiB")
            ctx.series(f"{mem} {direction}", "copy size", "bytes", "bandwidth", "GB/s", pts, plot="logx",
                       figure="host_device_bandwidth", engine="copy engine", reps=reps,
                       timing="event pair around a batch of copies" + (" queued behind a gate kernel" if mem == "pinned" else ""))
            best[f"{mem}_{direction}"] = [pts[-1].y, pts[-1].y_min or pts[-1].y, pts[-1].y_max or pts[-1].y]
        bid = _ce_bidir(ctx, rig, sizes, reps, d_src, d_dst, h_src, h_dst)
        _ce_figures(ctx, best, bid, top, pcie)
    finally:
        for b in dbufs:
            dev.free(b)
        for h in hbufs:
            hostmem.free_host(dev, h)
        rig.close()


def _ce_point(ctx: BenchContext, rig: _Rig, mem: str, src: _Ends, dst: _Ends, size: int, reps: int,
              stage_dst: HostBuffer | None, stage_src: HostBuffer | None) -> list[float]:
    """GB/s of `reps` timed batches of copies src -> dst of `size` bytes, the result verified."""
    n = _batch(size, ctx.quick)
    s = rig.s1

    def work() -> None:
        for _ in range(n):
            s.copy(dst.addr, src.addr, size)

    _poison(dst, size, rig)
    time_it = (lambda: rig.gated(s, work)) if mem == "pinned" else (lambda: hostmem.time_on_stream(s, work))
    time_it()  # warm-up
    samples = [size * n / (time_it() * 1e-3) / GB for _ in range(reps)]
    _verify(ctx, rig, src, dst, size, stage_dst, stage_src, f"{mem} copy of {size} bytes")
    return samples


def _verify(ctx: BenchContext, rig: _Rig, src: _Ends, dst: _Ends, size: int,
            stage_dst: HostBuffer | None, stage_src: HostBuffer | None, what: str) -> None:
    """Checksum of the destination must equal the source's. Pageable memory is first copied by
    the CPU into pinned memory (`stage_*`), which the checksum kernel can read."""
    def sum_of(e: _Ends, stage: HostBuffer | None) -> int:
        if e.dev_ptr is not None:
            return rig.checksum(e.dev_ptr, size)
        assert e.host is not None and stage is not None
        np.copyto(stage.array(np.uint8, size), e.host.array(np.uint8, size))
        return rig.checksum(stage.dev_ptr, size)  # type: ignore[arg-type]

    a, b = sum_of(src, stage_src), sum_of(dst, stage_dst)
    ctx.check(a == b, f"{what}: destination checksum {b:#x} != source {a:#x}")


def _ce_bidir(ctx: BenchContext, rig: _Rig, sizes: list[int], reps: int, d_src: Buffer, d_dst: Buffer,
              h_src: HostBuffer, h_dst: HostBuffer) -> dict[str, list[float]]:
    """H2D on one stream and D2H on another, released together: total and per-direction GB/s."""
    tot, up, down = [], [], []
    for size in sizes:
        n = _batch(size, ctx.quick)
        rig.dev.memset32(d_dst, 0xA5A5A5A5, size // 4)
        h_dst.array(np.uint32, size // 4).fill(0xA5A5A5A5)

        def a() -> None:
            for _ in range(n):
                rig.s1.copy(d_dst.ptr, h_src.ptr, size)

        def b() -> None:
            for _ in range(n):
                rig.s2.copy(h_dst.ptr, d_src.ptr, size)

        rig.gated_pair(a, b)
        runs = [rig.gated_pair(a, b) for _ in range(reps)]
        tot.append([2 * size * n / (r[0] * 1e-3) / GB for r in runs])
        up.append([size * n / (r[1] * 1e-3) / GB for r in runs])
        down.append([size * n / (r[2] * 1e-3) / GB for r in runs])
        ctx.check(rig.checksum(d_dst.ptr, size) == rig.checksum(h_src.dev_ptr, size),  # type: ignore[arg-type]
                  f"bidirectional: H2D copy of {size} bytes corrupted")
        ctx.check(rig.checksum(h_dst.dev_ptr, size) == rig.checksum(d_src.ptr, size),  # type: ignore[arg-type]
                  f"bidirectional: D2H copy of {size} bytes corrupted")
    for name, vals in (("pinned bidir total", tot), ("pinned bidir h2d part", up), ("pinned bidir d2h part", down)):
        ctx.series(name, "copy size", "bytes", "bandwidth", "GB/s",
                   [Point(s, statistics.median(v), min(v), max(v), reps) for s, v in zip(sizes, vals)],
                   plot="logx", figure="host_device_bandwidth", engine="copy engine", reps=reps)
    med = lambda v: [statistics.median(v), min(v), max(v)]  # noqa: E731
    return {"total": med(tot[-1]), "h2d": med(up[-1]), "d2h": med(down[-1])}


def _pcie_under_load(ctx: BenchContext, rig: _Rig, dst: int, src: int, nbytes: int) -> dict[str, Any]:
    """NVML's PCIe facts, the current generation read while a long H2D copy keeps the link busy
    (an idle link trains down to save power)."""
    uuid = ctx.props.get("uuid")
    idle = hostmem.pcie_link(uuid)
    for _ in range(8):
        rig.s1.copy(dst, src, nbytes)
    time.sleep(0.02)
    busy = hostmem.pcie_link(uuid)
    rig.s1.sync()
    busy["gen_idle"] = idle.get("gen_current")
    busy["width_idle"] = idle.get("width_current")
    return busy


def _ce_figures(ctx: BenchContext, best: dict[str, list[float]], bid: dict[str, list[float]], top: int,
                pcie: dict[str, Any]) -> None:
    how = (f"median of timed batches of cuMemcpyAsync at {top >> 20} MiB, event pair on a non-blocking stream"
           "; every copy verified by checksum")
    for key, name, extra in (("link.h2d_pinned_gbps", "pinned_h2d", "; copies queued behind a gate kernel"),
                             ("link.d2h_pinned_gbps", "pinned_d2h", "; copies queued behind a gate kernel"),
                             ("link.h2d_pageable_gbps", "pageable_h2d", "; pageable: staged by the driver, host time included"),
                             ("link.d2h_pageable_gbps", "pageable_d2h", "; pageable: staged by the driver, host time included")):
        v = best[name]
        ctx.figure(key, round(v[0], 2), "GB/s", "measured", how + extra, (round(v[1], 2), round(v[2], 2)))
    for key, part, what in (("link.bidir_pinned_gbps", "total", "both directions together (bytes both ways / time until both ended)"),
                            ("link.bidir_pinned_h2d_gbps", "h2d", "H2D share while D2H runs"),
                            ("link.bidir_pinned_d2h_gbps", "d2h", "D2H share while H2D runs")):
        v = bid[part]
        ctx.figure(key, round(v[0], 2), "GB/s", "measured",
                   f"{what}; two streams released together by a gate kernel, {top >> 20} MiB copies",
                   (round(v[1], 2), round(v[2], 2)))
    gen, width = pcie.get("gen_current"), pcie.get("width_current")
    if gen and width:
        peak = topology.pcie_peak_gbps(int(gen), int(width))
        ctx.figure("link.pcie.gen_current", int(gen), "", "measured", "NVML current PCIe generation, read while an H2D copy ran",
                   note=f"idle: gen {pcie.get('gen_idle')} x{pcie.get('width_idle')}")
        ctx.figure("link.pcie.width_current", int(width), "lanes", "measured", "NVML current PCIe link width, read under load")
        ctx.figure("link.pcie_peak_gbps", round(peak, 2), "GB/s", "derived",
                   f"PCIe gen {gen} x{width} (NVML, under load): GT/s per lane x line-code efficiency x lanes / 8, per direction;"
                   " before packet (TLP) overhead")
        eff = topology.tlp_efficiency()
        for key, name in (("link.h2d_pinned_pct_peak", "pinned_h2d"), ("link.d2h_pinned_pct_peak", "pinned_d2h")):
            ctx.figure(key, round(100 * best[name][0] / peak, 1), "%", "derived",
                       f"measured / PCIe peak after line code; a 256-byte-payload TLP stream would carry at most "
                       f"{100 * eff:.0f}% of it (assumed payload size, NVML does not report it)")
    else:
        ctx.figure("link.pcie_peak_gbps", "n/a: NVML reports no PCIe generation/width", "GB/s", "derived", "NVML")
    if pcie.get("gen_max") and pcie.get("width_max"):
        ctx.figure("link.pcie.gen_max", int(pcie["gen_max"]), "", "measured", "NVML max PCIe generation (GPU and system)",
                   note=f"GPU alone: gen {pcie.get('gen_gpu_max')}")
        ctx.figure("link.pcie.width_max", int(pcie["width_max"]), "lanes", "measured", "NVML max PCIe link width")
        ctx.figure("link.pcie_max_peak_gbps", round(topology.pcie_peak_gbps(int(pcie["gen_max"]), int(pcie["width_max"])), 2),
                   "GB/s", "derived", "PCIe peak at NVML's max generation and width (line code only)")


# ---------------------------------------------------------------------------------------
# 2. SM-driven copies: a kernel loads/stores mapped pinned host memory
# ---------------------------------------------------------------------------------------
@benchmark(
    suite=SUITE, name="host_device_sm", title="Host<->device bandwidth, SM copies (kernel on mapped pinned memory)",
    axes={"direction": "h2d (kernel loads host), d2h (kernel stores host), bidir (half the blocks each way)",
          "size": "4 KiB .. max_size"},
    kernels=[LINK],
    params={"max_size": Param(1 << 30, "largest copy (bytes)", parse_size, _check_max),
            "reps": Param(None, "timed repetitions per point (default 5 quick, 11 full)", int,
                          lambda v, f: None if 3 <= v <= 101 else "3 .. 101")},
    timeout_s=300, paper="nvbandwidth host_to_device_memcpy_sm & co. (beyond 002 §5.1)",
)
def host_device_sm(ctx: BenchContext) -> None:
    top = ctx.params["max_size"]
    reps = ctx.params["reps"] or (5 if ctx.quick else 11)
    sizes = size_grid(4096, top, 16 if ctx.quick else 2)
    rig = _Rig(ctx)
    dev = ctx.device
    d_src, d_dst = dev.alloc(top), dev.alloc(top)
    h_src, h_dst = hostmem.alloc_pinned(dev, top), hostmem.alloc_pinned(dev, top)
    try:
        rig.fill(d_src.ptr, top, 0x2345)
        rig.fill(h_src.dev_ptr, top, 0x6789)  # type: ignore[arg-type]
        blocks, threads = rig.blocks, 512
        copy, bidir = rig.k["copy_v4"], rig.k["copy_bidir_v4"]
        s = rig.s1
        results: dict[str, list[float]] = {}
        cases = [("h2d", h_src.dev_ptr, d_dst.ptr), ("d2h", d_src.ptr, h_dst.dev_ptr)]
        for ci, (direction, src, dst) in enumerate(cases):
            pts = []
            for size in sizes:
                n = _batch(size, ctx.quick)
                dev.memset32(d_dst, 0xA5A5A5A5, size // 4)
                h_dst.array(np.uint32, size // 4).fill(0xA5A5A5A5)
                args = [Arg.u64(src), Arg.u64(dst), Arg.u64(size // 16)]

                def work() -> None:
                    for _ in range(n):
                        s.launch(copy, blocks, threads, args)

                rig.gated(s, work)
                v = [size * n / (rig.gated(s, work) * 1e-3) / GB for _ in range(reps)]
                ctx.check(rig.checksum(dst, size) == rig.checksum(src, size), f"SM {direction} copy of {size} bytes corrupted")  # type: ignore[arg-type]
                pts.append(Point(size, statistics.median(v), min(v), max(v), reps))
            ctx.progress(ci + 1, 3, direction)
            ctx.series(f"sm {direction}", "copy size", "bytes", "bandwidth", "GB/s", pts, plot="logx",
                       figure="host_device_bandwidth_sm", engine="SM copy", blocks=blocks, threads=threads, reps=reps)
            results[direction] = [pts[-1].y, pts[-1].y_min or pts[-1].y, pts[-1].y_max or pts[-1].y]
        pts = []
        for size in sizes:
            n = _batch(size, ctx.quick)
            dev.memset32(d_dst, 0xA5A5A5A5, size // 4)
            h_dst.array(np.uint32, size // 4).fill(0xA5A5A5A5)
            args = [Arg.u64(h_src.dev_ptr), Arg.u64(d_dst.ptr), Arg.u64(d_src.ptr), Arg.u64(h_dst.dev_ptr), Arg.u64(size // 16)]  # type: ignore[arg-type]

            def work2() -> None:
                for _ in range(n):
                    s.launch(bidir, 2 * blocks, threads, args)

            rig.gated(s, work2)
            v = [2 * size * n / (rig.gated(s, work2) * 1e-3) / GB for _ in range(reps)]
            ctx.check(rig.checksum(d_dst.ptr, size) == rig.checksum(h_src.dev_ptr, size)  # type: ignore[arg-type]
                      and rig.checksum(h_dst.dev_ptr, size) == rig.checksum(d_src.ptr, size),  # type: ignore[arg-type]
                      f"SM bidirectional copy of {size} bytes corrupted")
            pts.append(Point(size, statistics.median(v), min(v), max(v), reps))
        ctx.series("sm bidir total", "copy size", "bytes", "bandwidth", "GB/s", pts, plot="logx",
                   figure="host_device_bandwidth_sm", engine="SM copy", blocks=2 * blocks, threads=threads, reps=reps)
        results["bidir"] = [pts[-1].y, pts[-1].y_min or pts[-1].y, pts[-1].y_max or pts[-1].y]
        how = (f"copy_v4 kernel ({blocks} blocks x {threads} threads, 16-byte loads/stores) on mapped pinned host memory, "
               f"{top >> 20} MiB, median of timed batches; verified by checksum")
        for key, name, what in (("link.sm.h2d_gbps", "h2d", "kernel loads host memory"),
                                ("link.sm.d2h_gbps", "d2h", "kernel stores to host memory"),
                                ("link.sm.bidir_gbps", "bidir", "both directions together, half the blocks each way")):
            v = results[name]
            ctx.figure(key, round(v[0], 2), "GB/s", "measured", f"{what}; {how}", (round(v[1], 2), round(v[2], 2)))
    finally:
        dev.free(d_src)
        dev.free(d_dst)
        hostmem.free_host(dev, h_src)
        hostmem.free_host(dev, h_dst)
        rig.close()


# ---------------------------------------------------------------------------------------
# 3. Latency: small copies through the copy engine, one load at a time from the SM
# ---------------------------------------------------------------------------------------
@benchmark(
    suite=SUITE, name="host_device_latency", title="Host<->device latency: small copies (copy engine), remote loads (SM)",
    axes={"size": "4 B .. 64 KiB (copy engine)", "direction": "h2d, d2h"},
    kernels=[LINK],
    params={"samples": Param(None, "single copies timed per size (default 30 quick, 200 full)", int,
                             lambda v, f: None if 5 <= v <= 10000 else "5 .. 10000"),
            "steps": Param(2000, "dependent remote loads per chase", int, lambda v, f: None if 16 <= v <= 100000 else "16 .. 100000")},
    timeout_s=200, paper="002 §5.1 Table 5.1 (latency); nvbandwidth host_device_latency_sm",
)
def host_device_latency(ctx: BenchContext) -> None:
    n = ctx.params["samples"] or (30 if ctx.quick else 200)
    rig = _Rig(ctx)
    dev = ctx.device
    top = 64 << 10
    d_buf = dev.alloc(top)
    h_buf = hostmem.alloc_pinned(dev, top)
    try:
        rig.fill(h_buf.dev_ptr, top, 0x11)  # type: ignore[arg-type]
        rig.fill(d_buf.ptr, top, 0x22)
        sizes = [4, 64, 1024, 4096, 16384, 65536]
        s = rig.s1
        first: dict[str, tuple[float, float, float]] = {}
        wall: dict[str, float] = {}
        unq: dict[str, float] = {}
        for direction, dst, src in (("h2d", d_buf.ptr, h_buf.ptr), ("d2h", h_buf.ptr, d_buf.ptr)):
            pts, idle = [], []
            for size in sizes:
                def one() -> None:
                    s.copy(dst, src, size)  # noqa: B023 - called within this iteration

                # gated: the copy is queued behind the gate kernel before the start event runs, so the
                # interval is the GPU's alone (issue it on an idle stream and the host's call time counts too)
                t = [rig.gated(s, one) * 1e3 for _ in range(n)]
                u = [hostmem.time_on_stream(s, one) * 1e3 for _ in range(n)]
                pts.append(Point(size, statistics.median(t), min(t), max(t), n))
                idle.append(Point(size, statistics.median(u), min(u), max(u), n))
                if size == sizes[0]:
                    first[direction] = (statistics.median(t), min(t), max(t))
                    wall[direction] = statistics.median([hostmem.wall_copy_us(s, dst, src, size) for _ in range(n)])
                    unq[direction] = statistics.median(u)
            ctx.series(f"{direction} copy engine", "copy size", "bytes", "latency", "us", pts, plot="logx",
                       figure="host_device_latency", timing="event pair around one cuMemcpyAsync queued behind a gate kernel",
                       samples=n)
            ctx.series(f"{direction} copy engine, idle stream", "copy size", "bytes", "latency", "us", idle, plot="logx",
                       figure="host_device_latency", timing="event pair around one cuMemcpyAsync issued on an idle stream "
                       "(includes the host's call)", samples=n)
        ctx.check(rig.checksum(d_buf.ptr, top) == rig.checksum(h_buf.dev_ptr, top), "small copies left the buffers different")  # type: ignore[arg-type]
        for key, d in (("link.h2d_latency_us", "h2d"), ("link.d2h_latency_us", "d2h")):
            m, lo, hi = first[d]
            ctx.figure(key, round(m, 3), "us", "measured",
                       f"{sizes[0]}-byte pinned {d.upper()} cuMemcpyAsync: median of {n} single copies, event pair with the copy "
                       "queued behind a gate kernel (copy-engine start-up and completion only)", (round(lo, 3), round(hi, 3)),
                       note=f"same copy issued on an idle stream: {unq[d]:.2f} us; host round trip: {wall[d]:.2f} us")
            ctx.figure(key.replace("_latency_us", "_latency_host_us"), round(wall[d], 3), "us", "measured",
                       f"{sizes[0]}-byte {d.upper()} copy, host wall clock from issue to cuStreamSynchronize return, median of {n}")
        _sm_chase(ctx, rig)
    finally:
        dev.free(d_buf)
        hostmem.free_host(dev, h_buf)
        rig.close()


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


def _sm_chase(ctx: BenchContext, rig: _Rig) -> None:
    """One thread chases a random cycle through pinned host memory: per dependent load, the round
    trip SM -> PCIe -> host memory -> SM. Clock and %globaltimer from the same kernel."""
    steps = ctx.params["steps"]
    nodes, stride = 4096, 256  # 1 MiB: page translations stay cached, lines never repeat within a lap
    dev = rig.dev
    h = hostmem.alloc_pinned(dev, nodes * stride)
    out = dev.alloc(24)
    try:
        words, order = chase_chain(nodes, stride, h.dev_ptr)  # type: ignore[arg-type]
        h.array(np.uint64)[:] = words
        reps = 5 if ctx.quick else 15
        ns, cyc = [], []
        for r in range(reps + 1):
            dev.launch(rig.k["remote_chase"], 1, 1, [Arg.u64(h.dev_ptr), Arg.i32(steps), Arg.ptr(out)])  # type: ignore[arg-type]
            dev.sync("remote chase")
            end, t_ns, c = (int(x) for x in dev.download(out, np.uint64, 3))
            ctx.check(end == chase_end(order, steps, stride, h.dev_ptr), "the remote chase ended at the wrong address")  # type: ignore[arg-type]
            if r:  # the first launch warms translations
                ns.append(t_ns / steps)
                cyc.append(c / steps)
        mhz = statistics.median(c / t for c, t in zip(cyc, ns)) * 1e3
        ctx.figure("link.sm_host_load_latency_us", round(statistics.median(ns) / 1e3, 3), "us", "measured",
                   f"one thread, {steps} dependent 8-byte volatile (.sys) loads from mapped pinned host memory, random cycle of "
                   f"{nodes} slots {stride} B apart; %globaltimer ns per load, median of {reps} launches",
                   (round(min(ns) / 1e3, 3), round(max(ns) / 1e3, 3)))
        ctx.figure("link.sm_host_load_latency_cycles", round(statistics.median(cyc), 1), "cycles", "measured",
                   "the same chase in clock64 cycles per load", (round(min(cyc), 1), round(max(cyc), 1)))
        ctx.sm_clock(mhz, "clock64 cycles over %globaltimer ns in the remote chase launches")
    finally:
        dev.free(out)
        hostmem.free_host(dev, h)



# ---------------------------------------------------------------------------------------
# 4. Peer to peer: bandwidth and latency matrices between every GPU pair (>= 2 GPUs)
# ---------------------------------------------------------------------------------------
def _skip(ctx: BenchContext, key: str, count: int, why: str) -> None:
    """Not measurable here: the GPU count it saw as one figure, then the benchmark ends as skipped
    (no failure is stored; the reason stands beside its status)."""
    ctx.progress(1, 1, f"skipped: {why}")
    ctx.figure(key, count, "GPUs", "measured", "cuDeviceGetCount in the benchmark's process",
               note=f"skipped, nothing measured: {why}")
    ctx.skip(why)


P2P_KINDS = ("ce_write", "ce_read", "sm_write", "sm_read")


@benchmark(
    suite=SUITE, name="p2p_matrix", title="GPU<->GPU bandwidth and latency matrices (copy engine and SM, uni/bidirectional)",
    axes={"pair": "every ordered GPU pair", "engine": "copy engine (write: source's stream, read: destination's stream), "
          "SM (read: kernel on destination loads peer memory, write: kernel on source stores)", "direction": "uni, bidir"},
    kernels=[LINK],
    params={"size": Param(None, "bytes per copy (default 256 MiB quick, 1 GiB full)", parse_size, _check_max)},
    timeout_s=900, paper="002 §5.1 Table 5.1; CUDA samples p2pBandwidthLatencyTest; nvbandwidth device_to_device_*",
)
def p2p_matrix(ctx: BenchContext) -> None:
    n = hostmem.device_count()
    if n < 2:
        _skip(ctx, "link.p2p.gpus", n, f"peer-to-peer needs >= 2 GPUs, this process sees {n}")
        return
    size = ctx.params["size"] or ((256 << 20) if ctx.quick else (1 << 30))
    reps = 5 if ctx.quick else 11
    devs = [ctx.device] + [Device(i) for i in range(1, n)]
    rigs = [_Rig(ctx) if i == 0 else _Rig(ctx, d) for i, d in enumerate(devs)]
    bufs = []
    try:
        for i, d in enumerate(devs):
            hostmem.set_current(d)
            src, dst = d.alloc(size), d.alloc(size)
            rigs[i].fill(src.ptr, size, 0x100 + i)
            bufs.append((src, dst))
        labels = _topology_series(ctx, n)
        res: dict[str, dict[tuple[int, int], float]] = {k: {} for k in (*P2P_KINDS, "ce_bidir", "sm_latency_us", "ce_latency_us")}
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
        no_peer = []
        for pi, (i, j) in enumerate(pairs):
            ctx.progress(pi, len(pairs), f"GPU {i} -> GPU {j}")
            if not (hostmem.can_access_peer(devs[i], devs[j]) and hostmem.can_access_peer(devs[j], devs[i])):
                no_peer.append(f"{i}->{j}")
                continue
            hostmem.enable_peer(devs[i], devs[j])
            hostmem.enable_peer(devs[j], devs[i])
            for kind in P2P_KINDS:
                res[kind][(i, j)] = _p2p_uni(ctx, rigs, bufs, i, j, size, reps, kind)
            if i < j:
                res["ce_bidir"][(i, j)] = res["ce_bidir"][(j, i)] = _p2p_bidir(ctx, rigs, bufs, i, j, size, reps)
            res["sm_latency_us"][(i, j)] = _p2p_chase(ctx, rigs[j], devs[i], reps)
            res["ce_latency_us"][(i, j)] = _p2p_small_copy(rigs[i], bufs, i, j, 30 if ctx.quick else 200)
        _p2p_report(ctx, res, n, labels, size, no_peer)
    finally:
        for i, (src, dst) in enumerate(bufs):
            hostmem.set_current(devs[i])
            devs[i].free(src)
            devs[i].free(dst)
        for i, r in enumerate(rigs):
            hostmem.set_current(devs[i])
            r.close()
        hostmem.set_current(devs[0])


def _p2p_uni(ctx: BenchContext, rigs: list[_Rig], bufs: list[tuple[Buffer, Buffer]], i: int, j: int, size: int,
             reps: int, kind: str) -> float:
    """GB/s from GPU i's source buffer into GPU j's destination buffer, median of `reps`; verified."""
    src, dst = bufs[i][0], bufs[j][1]
    issuer = i if kind.endswith("write") else j  # a write is pushed by the source, a read pulled by the destination
    rig = rigs[issuer]
    hostmem.set_current(rigs[j].dev)
    rigs[j].dev.memset32(dst, 0xA5A5A5A5, size // 4)
    rigs[j].dev.sync("poison")
    hostmem.set_current(rig.dev)
    if kind.startswith("ce"):
        work = lambda: rig.s1.copy(dst.ptr, src.ptr, size)  # noqa: E731
    else:
        args = [Arg.u64(src.ptr), Arg.u64(dst.ptr), Arg.u64(size // 16)]
        work = lambda: rig.s1.launch(rig.k["copy_v4"], 4 * rig.dev.props["sm_count"], 512, args)  # noqa: E731
    hostmem.time_on_stream(rig.s1, work)
    v = [size / (hostmem.time_on_stream(rig.s1, work) * 1e-3) / GB for _ in range(reps)]
    _p2p_verify(ctx, rigs, i, j, src, dst, size, kind)
    return statistics.median(v)


def _p2p_verify(ctx: BenchContext, rigs: list[_Rig], i: int, j: int, src: Buffer, dst: Buffer, size: int, what: str) -> None:
    hostmem.set_current(rigs[i].dev)
    a = rigs[i].checksum(src.ptr, size)
    hostmem.set_current(rigs[j].dev)
    b = rigs[j].checksum(dst.ptr, size)
    ctx.check(a == b, f"{what} GPU {i} -> GPU {j}: destination checksum differs from the source")


def _p2p_bidir(ctx: BenchContext, rigs: list[_Rig], bufs: list[tuple[Buffer, Buffer]], i: int, j: int, size: int,
               reps: int) -> float:
    """Copy-engine copies i->j (GPU i's stream) and j->i (GPU j's stream) at once: total GB/s,
    bytes both ways over the longer of the two stream times (each from a common start event)."""
    ri, rj = rigs[i], rigs[j]
    out = []
    for r in range(reps + 1):
        hostmem.set_current(ri.dev)
        start, ei = ri.s1.event(), ri.s1.event()
        hostmem.set_current(rj.dev)
        sj, ej = rj.s1.event(), rj.s1.event()
        try:
            hostmem.set_current(ri.dev)
            ri.s1.record(start)
            rj.s1.wait(start)
            rj.s1.record(sj)
            ri.s1.copy(bufs[j][1].ptr, bufs[i][0].ptr, size)
            rj.s1.copy(bufs[i][1].ptr, bufs[j][0].ptr, size)
            ri.s1.record(ei)
            rj.s1.record(ej)
            ri.s1.sync()
            rj.s1.sync()
            t = max(hostmem._elapsed_ms(ri.dev, start, ei), hostmem._elapsed_ms(rj.dev, sj, ej))
        finally:
            hostmem._destroy(ri.dev, start, ei)
            hostmem._destroy(rj.dev, sj, ej)
        if r:
            out.append(2 * size / (t * 1e-3) / GB)
    _p2p_verify(ctx, rigs, i, j, bufs[i][0], bufs[j][1], size, "bidirectional copy")
    _p2p_verify(ctx, rigs, j, i, bufs[j][0], bufs[i][1], size, "bidirectional copy")
    return statistics.median(out)


def _p2p_chase(ctx: BenchContext, reader: _Rig, owner: Device, reps: int) -> float:
    """us per dependent load from `owner`'s memory by one thread of `reader`'s GPU."""
    steps, nodes, stride = 2000, 4096, 256
    hostmem.set_current(owner)
    chain = owner.alloc(nodes * stride)
    try:
        words, order = chase_chain(nodes, stride, chain.ptr)
        owner.upload(words, chain)
        hostmem.set_current(reader.dev)
        out = reader.dev.alloc(24)
        try:
            ns = []
            for r in range(reps + 1):
                reader.dev.launch(reader.k["remote_chase"], 1, 1, [Arg.u64(chain.ptr), Arg.i32(steps), Arg.ptr(out)])
                reader.dev.sync("peer chase")
                end, t_ns, _ = (int(x) for x in reader.dev.download(out, np.uint64, 3))
                ctx.check(end == chase_end(order, steps, stride, chain.ptr), "the peer chase ended at the wrong address")
                if r:
                    ns.append(t_ns / steps)
            return statistics.median(ns) / 1e3
        finally:
            reader.dev.free(out)
    finally:
        hostmem.set_current(owner)
        owner.free(chain)


def _p2p_small_copy(rig: _Rig, bufs: list[tuple[Buffer, Buffer]], i: int, j: int, n: int) -> float:
    """us of one 4-byte copy-engine copy GPU i -> GPU j on an idle stream (event pair), median."""
    hostmem.set_current(rig.dev)
    src, dst = bufs[i][0].ptr, bufs[j][1].ptr
    return statistics.median(hostmem.time_on_stream(rig.s1, lambda: rig.s1.copy(dst, src, 4)) * 1e3 for _ in range(n))


def _topology_series(ctx: BenchContext, n: int) -> list[str]:
    """NVML path of every pair (NV<k> or a PCIe level) as a heatmap of NVLink counts."""
    topo = hostmem.nvml_topology()
    if len(topo) < n:
        return ["?"] * (n * n)
    m = topology.path_matrix(topo[:n])
    pts = []
    for i in range(n):
        for j in range(n):
            kind, count = topology.link_kind(m[i][j])
            pts.append(Point(j, float(count if kind == "nvlink" else 0), extra={"row": i, "path": m[i][j]}))
    ctx.series("nvlinks per pair", "destination GPU", "", "NVLinks", "links", pts, plot="heatmap", figure="p2p_topology",
               source="NVML nvmlDeviceGetNvLinkRemotePciInfo / nvmlDeviceGetTopologyCommonAncestor")
    kinds = sorted({m[i][j] for i in range(n) for j in range(n) if i != j})
    ctx.figure("link.p2p.paths", ", ".join(kinds), "", "measured", "NVML topology labels over all GPU pairs (nvidia-smi topo -m names)")
    return [m[i][j] for i in range(n) for j in range(n)]


def _p2p_report(ctx: BenchContext, res: dict[str, dict[tuple[int, int], float]], n: int, labels: list[str], size: int,
                no_peer: list[str]) -> None:
    units = {"sm_latency_us": "us", "ce_latency_us": "us"}
    for kind, vals in res.items():
        if not vals:
            continue
        pts = [Point(j, v, extra={"row": i, "path": labels[i * n + j]}) for (i, j), v in sorted(vals.items())]
        ctx.series(kind, "destination GPU", "", kind, units.get(kind, "GB/s"), pts, plot="heatmap", figure=f"p2p_{kind}",
                   rows="source GPU", size=size)
    note = f"no peer access for {', '.join(no_peer)}" if no_peer else ""
    if not res["ce_read"]:
        ctx.figure("link.p2p_read_gbps", "n/a: no GPU pair allows peer access", "GB/s", "measured", "cuDeviceCanAccessPeer", note=note)
        return
    how = f"median over GPU pairs of the median of timed {size >> 20} MiB copies; every copy verified by checksum"
    for key, kind, what in (("link.p2p_read_gbps", "ce_read", "copy engine, issued by the destination GPU (pull)"),
                            ("link.p2p.ce_write_gbps", "ce_write", "copy engine, issued by the source GPU (push)"),
                            ("link.p2p.sm_read_gbps", "sm_read", "kernel on the destination loads peer memory"),
                            ("link.p2p.sm_write_gbps", "sm_write", "kernel on the source stores to peer memory"),
                            ("link.p2p_bidir_gbps", "ce_bidir", "copy engine both ways at once, bytes both ways / time")):
        m = topology.pair_matrix(res[kind], n)
        vals = [v for v in res[kind].values()]
        ctx.figure(key, round(topology.offdiag_median(m), 2), "GB/s", "measured", f"{what}; {how}",
                   (round(min(vals), 2), round(max(vals), 2)), note=note)
    for key, kind, what in (("link.p2p_latency_us", "sm_latency_us", "one thread's dependent volatile loads from the peer GPU's memory"),
                            ("link.p2p.ce_latency_us", "ce_latency_us", "one 4-byte copy-engine copy on an idle stream, event pair")):
        vals = list(res[kind].values())
        ctx.figure(key, round(statistics.median(vals), 3), "us", "measured", f"{what}; median over GPU pairs",
                   (round(min(vals), 3), round(max(vals), 3)))


# ---------------------------------------------------------------------------------------
# 5. NCCL collectives through torch.distributed (>= 2 GPUs, torch optional)
# ---------------------------------------------------------------------------------------
# NVLink multicast (NVLS) stays off in every process this suite starts: a rule of the machines
# this was written on, and NVLS would change which algorithm the figures describe.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NCCL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
KEY_NAME = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
            "all_to_all": "alltoall", "broadcast": "broadcast"}


def nccl_sizes(quick: bool, top: int) -> list[int]:
    return size_grid(8, top, 64 if quick else 4)


def _ints(torch: Any, n: int, dev: Any) -> Any:
    # int32 indices: float32 cannot count past 2^24 exactly, and messages reach 2^30 elements
    return torch.arange(n, device=dev, dtype=torch.int32)


def _fill(torch: Any, op: str, rank: int, n: int, elems: int, dev: Any) -> Any:
    """Per-rank input whose result is known exactly (small integers in float32)."""
    if op == "all_to_all":
        return (_ints(torch, elems, dev) // (elems // n) + (rank * n + 1)).float()
    if op == "broadcast" and rank != 0:
        return torch.zeros(elems, device=dev, dtype=torch.float32)
    return (_ints(torch, elems, dev) % 7 + (1 if op == "broadcast" else rank + 1)).float()


def _expected(torch: Any, op: str, rank: int, n: int, recv: int, dev: Any) -> Any:
    i = _ints(torch, recv, dev)
    if op == "all_reduce":
        return (i % 7 * n + n * (n + 1) // 2).float()
    if op == "all_gather":
        block = recv // n
        return (i % block % 7 + i // block + 1).float()
    if op == "reduce_scatter":
        return ((i + rank * recv) % 7 * n + n * (n + 1) // 2).float()
    if op == "all_to_all":
        return (i // (recv // n) * n + rank + 1).float()
    return (i % 7 + 1).float()  # broadcast from rank 0


def nccl_sweep(rank: int, n: int, sizes: list[int], ops: tuple[str, ...] = NCCL_OPS, quick: bool = True,
               device: Any = None) -> list[dict[str, Any]]:
    """Time every collective at every size on an initialised process group (NCCL: this rank's GPU
    is current); results checked on every rank. Returns rows with the slowest rank's time.
    device="cpu" runs the same sweep over gloo with host timing (the CPU tests use it)."""
    import torch
    import torch.distributed as dist

    from ..analysis import busbw

    dev = torch.device(device) if device is not None else torch.device("cuda", torch.cuda.current_device())
    on_gpu = dev.type == "cuda"
    rows = []
    for op in ops:
        for want in sizes:
            s_bytes = busbw.round_size(op, want, n)
            send_n, recv_n = busbw.buffer_elems(op, s_bytes // 4, n)
            x = _fill(torch, op, rank, n, send_n, dev)
            y = torch.empty(recv_n, device=dev, dtype=torch.float32)

            def run() -> None:
                if op == "all_reduce":
                    dist.all_reduce(x)
                elif op == "all_gather":
                    dist.all_gather_into_tensor(y, x)
                elif op == "reduce_scatter":
                    dist.reduce_scatter_tensor(y, x)
                elif op == "all_to_all":
                    dist.all_to_all_single(y, x)
                else:
                    dist.broadcast(x, 0)

            iters = 20 if s_bytes <= (1 << 20) else (10 if s_bytes <= (64 << 20) else 3)
            iters = iters if quick else iters * 5
            for _ in range(2):
                run()
            if on_gpu:
                torch.cuda.synchronize()
            dist.barrier()
            if on_gpu:
                t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0.record()
                for _ in range(iters):
                    run()
                t1.record()
                torch.cuda.synchronize()
                per_op = t0.elapsed_time(t1) / iters * 1e-3
            else:
                h0 = time.perf_counter()
                for _ in range(iters):
                    run()
                per_op = (time.perf_counter() - h0) / iters
            sec = torch.tensor([per_op], device=dev, dtype=torch.float64)
            dist.all_reduce(sec, op=dist.ReduceOp.MAX)
            # the check: a fresh input, one operation, the exact result on every rank
            x.copy_(_fill(torch, op, rank, n, send_n, dev))
            run()
            got = x if op in ("all_reduce", "broadcast") else y
            ok = torch.tensor([int(torch.equal(got, _expected(torch, op, rank, n, got.numel(), dev)))], device=dev)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            t = float(sec.item())
            rows.append({"op": op, "bytes": s_bytes, "seconds": t, "ok": bool(ok.item()),
                         "algbw_gbps": busbw.algbw_gbps(s_bytes, t), "busbw_gbps": busbw.busbw_gbps(op, s_bytes, t, n),
                         "iters": iters})
            del x, y
    return rows


def nccl_rank_main(spec_path: str) -> None:
    """One rank of the NCCL sweep, started as its own process by nccl_collectives (a benchmark
    runs in a daemon process, which may not fork multiprocessing children of its own). Rank 0
    writes the rows (or the error) as JSON next to the spec."""
    import json
    import os
    from pathlib import Path

    spec = json.loads(Path(spec_path).read_text())
    rank, n = int(spec["rank"]), int(spec["n"])
    os.environ.update(NO_MULTICAST)
    out: dict[str, Any]
    try:
        import torch
        import torch.distributed as dist

        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{spec['port']}", rank=rank, world_size=n,
                                device_id=torch.device("cuda", rank))
        rows = nccl_sweep(rank, n, spec["sizes"], quick=spec["quick"])
        dist.destroy_process_group()
        out = {"status": "ok", "rows": rows}
    except Exception as e:  # noqa: BLE001 - reported by the parent as this benchmark's failure
        out = {"status": "error", "message": f"rank {rank}: {type(e).__name__}: {e}"}
    if rank == 0 or out["status"] != "ok":
        Path(spec["out"] + f".{rank}").write_text(json.dumps(out))


@benchmark(
    suite=SUITE, name="nccl_collectives", title="NCCL collectives (torch.distributed): algorithm and bus bandwidth, latency",
    axes={"op": ", ".join(NCCL_OPS), "size": "8 B .. max_size (quick x64 steps, full x4)"},
    kernels=[LINK],
    params={"max_size": Param(None, "largest message (default 1 GiB quick, 4 GiB full)", parse_size,
                              lambda v, f: None if 1 << 10 <= v <= 16 << 30 else "1 KiB .. 16 GiB")},
    timeout_s=1200, paper="nccl-tests doc/PERFORMANCE.md (bus bandwidth); beyond 002 §5.2",
)
def nccl_collectives(ctx: BenchContext) -> None:
    n = hostmem.device_count()
    if n < 2:
        _skip(ctx, "link.nccl.gpus", n, f"collectives need >= 2 GPUs, this process sees {n}")
        return
    try:
        import torch  # noqa: F401
    except ImportError:
        _skip(ctx, "link.nccl.gpus", n, "torch is not installed (pip install torch) for torch.distributed/NCCL")
        return
    top = ctx.params["max_size"] or ((1 << 30) if ctx.quick else (4 << 30))
    sizes = nccl_sizes(ctx.quick, top)
    status, payload = launch_ranks(n, sizes, ctx.quick, ctx.bench.timeout_s - 30)
    ctx.check(status == "ok", str(payload))
    nccl_report(ctx, payload, n)


def launch_ranks(n: int, sizes: list[int], quick: bool, timeout_s: float) -> tuple[str, Any]:
    """Start one process per GPU running nccl_rank_main, wait, and return ("ok", rows of rank 0)
    or ("error", message)."""
    import json
    import os
    import socket
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, **NO_MULTICAST)
    with tempfile.TemporaryDirectory(prefix="gd-nccl-") as tmp:
        out = str(Path(tmp) / "result")
        procs = []
        for r in range(n):
            spec = Path(tmp) / f"rank{r}.json"
            spec.write_text(json.dumps({"rank": r, "n": n, "port": port, "sizes": sizes, "quick": quick, "out": out}))
            procs.append(subprocess.Popen(
                [sys.executable, "-c", "import sys; from gpudissect.bench.link import nccl_rank_main; nccl_rank_main(sys.argv[1])",
                 str(spec)], env=env, stdout=subprocess.DEVNULL, stderr=open(Path(tmp) / f"rank{r}.err", "wb")))
        deadline = time.monotonic() + timeout_s
        errs = []
        for r, p in enumerate(procs):
            try:
                p.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                    q.wait()
                return "error", f"the NCCL ranks did not finish within {timeout_s:.0f} s"
            if p.returncode:
                tail = (Path(tmp) / f"rank{r}.err").read_text(errors="replace").strip().splitlines()[-1:]
                errs.append(f"rank {r} exit {p.returncode}: {' '.join(tail)}")
        for r in range(n):
            f = Path(f"{out}.{r}")
            if f.exists():
                res = json.loads(f.read_text())
                if res["status"] != "ok":
                    return "error", res["message"]
        f0 = Path(f"{out}.0")
        if not f0.exists():
            return "error", "rank 0 left no result; " + "; ".join(errs)
        return "ok", json.loads(f0.read_text())["rows"]


def nccl_report(ctx: BenchContext, rows: list[dict[str, Any]], n: int) -> None:
    """Series per collective and the headline figures; a failed result check stores a failure."""
    for op in NCCL_OPS:
        mine = [r for r in rows if r["op"] == op]
        if not mine:
            continue
        for what, unit, col in (("busbw", "GB/s", "busbw_gbps"), ("algbw", "GB/s", "algbw_gbps"), ("time", "us", "seconds")):
            pts = [Point(r["bytes"], r[col] * (1e6 if col == "seconds" else 1), reps=r["iters"]) for r in mine]
            ctx.series(f"{op} {what}", "message size S", "bytes", what, unit, pts, plot="loglog" if what == "time" else "logx",
                       figure=f"nccl_{what}", ranks=n, definition="nccl-tests doc/PERFORMANCE.md")
        ok = all(r["ok"] for r in mine)
        bad = [str(r["bytes"]) for r in mine if not r["ok"]]
        last, first = mine[-1], mine[0]
        name = KEY_NAME[op]
        ctx.figure(f"link.nccl.{name}_busbw_gbps", round(last["busbw_gbps"], 2), "GB/s", "measured",
                   f"{n} ranks, S = {last['bytes']} bytes, slowest rank's mean time over {last['iters']} ops (CUDA events), "
                   "busbw = S/t x nccl-tests factor; results checked exactly on every rank",
                   check="ok" if ok else "failed", note=f"wrong results at S = {', '.join(bad)}" if bad else "")
        ctx.figure(f"link.nccl.{name}_{first['bytes']}b_latency_us", round(first["seconds"] * 1e6, 2), "us", "measured",
                   f"{n} ranks, mean time of one {first['bytes']}-byte {op} (slowest rank)", check="ok" if ok else "failed")
