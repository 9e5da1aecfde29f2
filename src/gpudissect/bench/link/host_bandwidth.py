"""Host <-> device bandwidth, the link suite's first two benchmarks (Jia ch. 5, Table 5.2): copies
through the copy engine (cuMemcpyAsync on streams, pinned and pageable host memory, each direction
and both at once) and SM-driven copies (a kernel loading or storing mapped pinned host memory), as
NVIDIA's nvbandwidth splits them; the PCIe generation and width from NVML beside the peak they allow.
Every copy is verified: the destination's position-sensitive checksum must equal the source's.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...analysis import topology
from ...device import hostmem
from ...device.cuda import Arg, Buffer
from ...device.hostmem import HostBuffer
from ...models import Point
from ..context import BenchContext
from ..registry import Param, benchmark, in_range, parse_size
from .rig import GB, LINK, Rig, check_copy_size, size_grid


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


def _poison(e: _Ends, size: int, rig: Rig) -> None:
    if e.buf is not None:
        rig.dev.memset32(e.buf, 0xA5A5A5A5, size // 4)
    else:
        assert e.host is not None
        e.host.array(np.uint32, size // 4).fill(0xA5A5A5A5)


def _poison_both(rig: Rig, d_dst: Buffer, h_dst: HostBuffer, size: int) -> None:
    """Both destinations of a sweep poisoned before a size: a copy that wrote nothing cannot pass."""
    _poison(_Ends(d_dst.ptr, buf=d_dst), size, rig)
    _poison(_Ends(h_dst.dev_ptr, host=h_dst), size, rig)


def _bandwidth_series(ctx: BenchContext, name: str, pts: list[Point], figure: str, **params: Any) -> None:
    """A bandwidth over copy size curve, drawn with the others of `figure`."""
    ctx.series(name, "copy size", "bytes", "bandwidth", "GB/s", pts, plot="logx", figure=figure, **params)


def _gbps_figure(ctx: BenchContext, key: str, v: list[float], method: str) -> None:
    """A measured GB/s figure from _last's [median, min, max]."""
    ctx.figure(key, round(v[0], 2), "GB/s", "measured", method, (round(v[1], 2), round(v[2], 2)))


def _bandwidth_params() -> dict[str, Param]:
    """max_size and reps, as the two host<->device bandwidth benchmarks take them."""
    return {
        "max_size": Param(1 << 30, "largest copy (bytes)", parse_size, check_copy_size),
        "reps": Param(
            None,
            "timed repetitions per point (default 5 quick, 11 full)",
            int,
            in_range(3, 101),
        ),
    }


def _bandwidth_sweep(ctx: BenchContext) -> tuple[int, int, list[int]]:
    """(largest size, timed repetitions, sizes) from the parameters of _bandwidth_params."""
    top = ctx.params["max_size"]
    reps = ctx.params["reps"] or (5 if ctx.quick else 11)
    return top, reps, size_grid(4096, top, 16 if ctx.quick else 2)


def _last(pts: list[Point]) -> list[float]:
    """[median, min, max] of the largest size of a sweep."""
    p = pts[-1]
    return [p.y, p.y_min or p.y, p.y_max or p.y]


# ---------------------------------------------------------------------------------------
# Copy engine: pinned and pageable, H2D, D2H, both at once
# ---------------------------------------------------------------------------------------
@benchmark(
    name="host_device_ce",
    title="Host<->device bandwidth, copy engine (cuMemcpyAsync), pinned and pageable",
    axes={
        "memory": "pinned, pageable",
        "direction": "h2d, d2h, bidir (pinned)",
        "size": "4 KiB .. max_size (quick: x16 steps, full: x2 steps)",
    },
    kernels=[LINK],
    params=_bandwidth_params(),
    timeout_s=400,
    paper="002 §5.1 Table 5.2; nvbandwidth host_to_device_memcpy_ce & co.",
    host_timed=True,  # a pageable copy is staged by the host's memcpy: nothing started ahead runs beside it
)
def host_device_ce(ctx: BenchContext) -> None:
    top, reps, sizes = _bandwidth_sweep(ctx)
    with Rig(ctx) as rig:
        d_src, d_dst = rig.alloc(top), rig.alloc(top)
        h_src, h_dst = rig.pinned(top), rig.pinned(top)
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
                samples = _ce_point(
                    ctx,
                    rig,
                    mem,
                    src,
                    dst,
                    size,
                    reps,
                    h_dst if dst.dev_ptr is None else None,
                    h_src if src.dev_ptr is None else None,
                )
                pts.append(ctx.point(size, samples))
                ctx.progress(2 + ci * 4 + si * 4 // len(sizes), 20, f"{mem} {direction} {size >> 10} KiB")
            _bandwidth_series(
                ctx,
                f"{mem} {direction}",
                pts,
                "host_device_bandwidth",
                engine="copy engine",
                reps=reps,
                timing="event pair around a batch of copies"
                + (" queued behind a gate kernel" if mem == "pinned" else ""),
            )
            best[f"{mem}_{direction}"] = _last(pts)
        bid = _ce_bidir(ctx, rig, sizes, reps, d_src, d_dst, h_src, h_dst)
        _ce_figures(ctx, best, bid, top, pcie)


def _ce_point(
    ctx: BenchContext,
    rig: Rig,
    mem: str,
    src: _Ends,
    dst: _Ends,
    size: int,
    reps: int,
    stage_dst: HostBuffer | None,
    stage_src: HostBuffer | None,
) -> list[float]:
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


def _verify(
    ctx: BenchContext,
    rig: Rig,
    src: _Ends,
    dst: _Ends,
    size: int,
    stage_dst: HostBuffer | None,
    stage_src: HostBuffer | None,
    what: str,
) -> None:
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


def _ce_bidir(
    ctx: BenchContext,
    rig: Rig,
    sizes: list[int],
    reps: int,
    d_src: Buffer,
    d_dst: Buffer,
    h_src: HostBuffer,
    h_dst: HostBuffer,
) -> dict[str, list[float]]:
    """H2D on one stream and D2H on another, released together: total and per-direction GB/s."""
    tot, up, down = [], [], []
    for size in sizes:
        n = _batch(size, ctx.quick)
        _poison_both(rig, d_dst, h_dst, size)

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
        ctx.check(
            rig.checksum(d_dst.ptr, size) == rig.checksum(h_src.dev_ptr, size),  # type: ignore[arg-type]
            f"bidirectional: H2D copy of {size} bytes corrupted",
        )
        ctx.check(
            rig.checksum(h_dst.dev_ptr, size) == rig.checksum(d_src.ptr, size),  # type: ignore[arg-type]
            f"bidirectional: D2H copy of {size} bytes corrupted",
        )
    for name, vals in (("pinned bidir total", tot), ("pinned bidir h2d part", up), ("pinned bidir d2h part", down)):
        pts = [ctx.point(s, v) for s, v in zip(sizes, vals)]
        _bandwidth_series(ctx, name, pts, "host_device_bandwidth", engine="copy engine", reps=reps)
    med = lambda v: [statistics.median(v), min(v), max(v)]
    return {"total": med(tot[-1]), "h2d": med(up[-1]), "d2h": med(down[-1])}


def _pcie_under_load(ctx: BenchContext, rig: Rig, dst: int, src: int, nbytes: int) -> dict[str, Any]:
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


def _ce_figures(
    ctx: BenchContext, best: dict[str, list[float]], bid: dict[str, list[float]], top: int, pcie: dict[str, Any]
) -> None:
    how = (
        f"median of timed batches of cuMemcpyAsync at {top >> 20} MiB, event pair on a non-blocking stream"
        "; every copy verified by checksum"
    )
    for key, name, extra in (
        ("link.h2d_pinned_gbps", "pinned_h2d", "; copies queued behind a gate kernel"),
        ("link.d2h_pinned_gbps", "pinned_d2h", "; copies queued behind a gate kernel"),
        ("link.h2d_pageable_gbps", "pageable_h2d", "; pageable: staged by the driver, host time included"),
        ("link.d2h_pageable_gbps", "pageable_d2h", "; pageable: staged by the driver, host time included"),
    ):
        _gbps_figure(ctx, key, best[name], how + extra)
    for key, part, what in (
        ("link.bidir_pinned_gbps", "total", "both directions together (bytes both ways / time until both ended)"),
        ("link.bidir_pinned_h2d_gbps", "h2d", "H2D share while D2H runs"),
        ("link.bidir_pinned_d2h_gbps", "d2h", "D2H share while H2D runs"),
    ):
        _gbps_figure(
            ctx, key, bid[part], f"{what}; two streams released together by a gate kernel, {top >> 20} MiB copies"
        )
    gen, width = pcie.get("gen_current"), pcie.get("width_current")
    if gen and width:
        peak = topology.pcie_peak_gbps(int(gen), int(width))
        ctx.figure(
            "link.pcie.gen_current",
            int(gen),
            "",
            "measured",
            "NVML current PCIe generation, read while an H2D copy ran",
            note=f"idle: gen {pcie.get('gen_idle')} x{pcie.get('width_idle')}",
        )
        ctx.figure(
            "link.pcie.width_current", int(width), "lanes", "measured", "NVML current PCIe link width, read under load"
        )
        ctx.figure(
            "link.pcie_peak_gbps",
            round(peak, 2),
            "GB/s",
            "derived",
            f"PCIe gen {gen} x{width} (NVML, under load): GT/s per lane x line-code efficiency x lanes / 8, per "
            "direction; before packet (TLP) overhead",
        )
        eff = topology.tlp_efficiency()
        for key, name in (("link.h2d_pinned_pct_peak", "pinned_h2d"), ("link.d2h_pinned_pct_peak", "pinned_d2h")):
            ctx.figure(
                key,
                round(100 * best[name][0] / peak, 1),
                "%",
                "derived",
                f"measured / PCIe peak after line code; a 256-byte-payload TLP stream would carry at most "
                f"{100 * eff:.0f}% of it (assumed payload size, NVML does not report it)",
            )
    else:
        ctx.figure("link.pcie_peak_gbps", "n/a: NVML reports no PCIe generation/width", "GB/s", "derived", "NVML")
    if pcie.get("gen_max") and pcie.get("width_max"):
        ctx.figure(
            "link.pcie.gen_max",
            int(pcie["gen_max"]),
            "",
            "measured",
            "NVML max PCIe generation (GPU and system)",
            note=f"GPU alone: gen {pcie.get('gen_gpu_max')}",
        )
        ctx.figure("link.pcie.width_max", int(pcie["width_max"]), "lanes", "measured", "NVML max PCIe link width")
        ctx.figure(
            "link.pcie_max_peak_gbps",
            round(topology.pcie_peak_gbps(int(pcie["gen_max"]), int(pcie["width_max"])), 2),
            "GB/s",
            "derived",
            "PCIe peak at NVML's max generation and width (line code only)",
        )


# ---------------------------------------------------------------------------------------
# SM-driven copies: a kernel loads/stores mapped pinned host memory
# ---------------------------------------------------------------------------------------
@benchmark(
    name="host_device_sm",
    title="Host<->device bandwidth, SM copies (kernel on mapped pinned memory)",
    axes={
        "direction": "h2d (kernel loads host), d2h (kernel stores host), bidir (half the blocks each way)",
        "size": "4 KiB .. max_size",
    },
    kernels=[LINK],
    params=_bandwidth_params(),
    timeout_s=300,
    paper="nvbandwidth host_to_device_memcpy_sm & co. (beyond 002 §5.1)",
)
def host_device_sm(ctx: BenchContext) -> None:
    top, reps, sizes = _bandwidth_sweep(ctx)
    with Rig(ctx) as rig:
        d_src, d_dst = rig.alloc(top), rig.alloc(top)
        h_src, h_dst = rig.pinned(top), rig.pinned(top)
        rig.fill(d_src.ptr, top, 0x2345)
        rig.fill(h_src.dev_ptr, top, 0x6789)  # type: ignore[arg-type]
        blocks, threads = rig.blocks, 512
        s = rig.s1

        def sweep(
            kernel: str, grid: int, args_of: Callable[[int], list[Arg]], ways: int, verify: Callable[[int], None]
        ) -> list[Point]:
            """GB/s over the sizes of timed batches of `kernel` launches moving `ways` x size bytes each,
            the destinations poisoned first and every copy verified."""
            pts = []
            for size in sizes:
                n = _batch(size, ctx.quick)
                _poison_both(rig, d_dst, h_dst, size)
                args = args_of(size)

                def work() -> None:
                    for _ in range(n):
                        s.launch(rig.k[kernel], grid, threads, args)

                rig.gated(s, work)
                v = [ways * size * n / (rig.gated(s, work) * 1e-3) / GB for _ in range(reps)]
                verify(size)
                pts.append(ctx.point(size, v))
            return pts

        results: dict[str, list[float]] = {}
        cases = [("h2d", h_src.dev_ptr, d_dst.ptr), ("d2h", d_src.ptr, h_dst.dev_ptr)]
        for ci, (direction, src, dst) in enumerate(cases):

            def args_of(size: int) -> list[Arg]:
                return [Arg.u64(src), Arg.u64(dst), Arg.u64(size // 16)]  # type: ignore[arg-type]

            def verify(size: int) -> None:
                ctx.check(
                    rig.checksum(dst, size) == rig.checksum(src, size),  # type: ignore[arg-type]
                    f"SM {direction} copy of {size} bytes corrupted",
                )

            pts = sweep("copy_v4", blocks, args_of, 1, verify)
            ctx.progress(ci + 1, 3, direction)
            _bandwidth_series(
                ctx,
                f"sm {direction}",
                pts,
                "host_device_bandwidth_sm",
                engine="SM copy",
                blocks=blocks,
                threads=threads,
                reps=reps,
            )
            results[direction] = _last(pts)

        def verify_bidir(size: int) -> None:
            ctx.check(
                rig.checksum(d_dst.ptr, size) == rig.checksum(h_src.dev_ptr, size)  # type: ignore[arg-type]
                and rig.checksum(h_dst.dev_ptr, size) == rig.checksum(d_src.ptr, size),  # type: ignore[arg-type]
                f"SM bidirectional copy of {size} bytes corrupted",
            )

        pts = sweep(
            "copy_bidir_v4",
            2 * blocks,
            lambda size: [
                Arg.u64(h_src.dev_ptr),  # type: ignore[arg-type]
                Arg.u64(d_dst.ptr),
                Arg.u64(d_src.ptr),
                Arg.u64(h_dst.dev_ptr),  # type: ignore[arg-type]
                Arg.u64(size // 16),
            ],
            2,
            verify_bidir,
        )
        _bandwidth_series(
            ctx,
            "sm bidir total",
            pts,
            "host_device_bandwidth_sm",
            engine="SM copy",
            blocks=2 * blocks,
            threads=threads,
            reps=reps,
        )
        results["bidir"] = _last(pts)
        how = (
            f"copy_v4 kernel ({blocks} blocks x {threads} threads, 16-byte loads/stores) on mapped pinned host memory, "
            f"{top >> 20} MiB, median of timed batches; verified by checksum"
        )
        for key, name, what in (
            ("link.sm.h2d_gbps", "h2d", "kernel loads host memory"),
            ("link.sm.d2h_gbps", "d2h", "kernel stores to host memory"),
            ("link.sm.bidir_gbps", "bidir", "both directions together, half the blocks each way"),
        ):
            _gbps_figure(ctx, key, results[name], f"{what}; {how}")
