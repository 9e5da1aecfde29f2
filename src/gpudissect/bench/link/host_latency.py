"""Host <-> device latency, the link suite's third benchmark (Jia ch. 5, Table 5.1): small copies
through the copy engine, timed with the copy queued behind a gate kernel and on an idle stream, and
one SM thread's dependent loads from mapped pinned host memory (the round trip over PCIe).
"""

from __future__ import annotations

import statistics

import numpy as np

from ...device import hostmem
from ...device.cuda import Arg
from ..context import BenchContext
from ..registry import Param, benchmark, in_range
from .rig import LINK, Rig, chase_chain, chase_end


@benchmark(
    name="host_device_latency",
    title="Host<->device latency: small copies (copy engine), remote loads (SM)",
    axes={"size": "4 B .. 64 KiB (copy engine)", "direction": "h2d, d2h"},
    kernels=[LINK],
    params={
        "samples": Param(
            None,
            "single copies timed per size (default 30 quick, 200 full)",
            int,
            in_range(5, 10000),
        ),
        "steps": Param(2000, "dependent remote loads per chase", int, in_range(16, 100000)),
    },
    timeout_s=200,
    paper="002 §5.1 Table 5.1 (latency); nvbandwidth host_device_latency_sm",
    host_timed=True,  # the idle-stream copy's time includes the host's call
)
def host_device_latency(ctx: BenchContext) -> None:
    n = ctx.params["samples"] or (30 if ctx.quick else 200)
    top = 64 << 10
    with Rig(ctx) as rig:
        d_buf = rig.alloc(top)
        h_buf = rig.pinned(top)
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
                    s.copy(dst, src, size)

                # gated: the copy is queued behind the gate kernel before the start event runs, so the
                # interval is the GPU's alone (issue it on an idle stream and the host's call time counts too)
                t = [rig.gated(s, one) * 1e3 for _ in range(n)]
                u = [hostmem.time_on_stream(s, one) * 1e3 for _ in range(n)]
                pts.append(ctx.point(size, t))
                idle.append(ctx.point(size, u))
                if size == sizes[0]:
                    first[direction] = (statistics.median(t), min(t), max(t))
                    wall[direction] = statistics.median([hostmem.wall_copy_us(s, dst, src, size) for _ in range(n)])
                    unq[direction] = statistics.median(u)
            ctx.series(
                f"{direction} copy engine",
                "copy size",
                "bytes",
                "latency",
                "us",
                pts,
                plot="logx",
                figure="host_device_latency",
                timing="event pair around one cuMemcpyAsync queued behind a gate kernel",
                samples=n,
            )
            ctx.series(
                f"{direction} copy engine, idle stream",
                "copy size",
                "bytes",
                "latency",
                "us",
                idle,
                plot="logx",
                figure="host_device_latency",
                timing="event pair around one cuMemcpyAsync issued on an idle stream (includes the host's call)",
                samples=n,
            )
        ctx.check(
            rig.checksum(d_buf.ptr, top) == rig.checksum(h_buf.dev_ptr, top), "small copies left the buffers different"
        )  # type: ignore[arg-type]
        for key, d in (("link.h2d_latency_us", "h2d"), ("link.d2h_latency_us", "d2h")):
            m, lo, hi = first[d]
            ctx.figure(
                key,
                round(m, 3),
                "us",
                "measured",
                f"{sizes[0]}-byte pinned {d.upper()} cuMemcpyAsync: median of {n} single copies, event pair with the "
                "copy queued behind a gate kernel (copy-engine start-up and completion only)",
                (round(lo, 3), round(hi, 3)),
                note=f"same copy issued on an idle stream: {unq[d]:.2f} us; host round trip: {wall[d]:.2f} us",
            )
            ctx.figure(
                key.replace("_latency_us", "_latency_host_us"),
                round(wall[d], 3),
                "us",
                "measured",
                f"{sizes[0]}-byte {d.upper()} copy, host wall clock from issue to cuStreamSynchronize return, "
                f"median of {n}",
            )
        _sm_chase(ctx, rig)


def _sm_chase(ctx: BenchContext, rig: Rig) -> None:
    """One thread chases a random cycle through pinned host memory: per dependent load, the round
    trip SM -> PCIe -> host memory -> SM. Clock and %globaltimer from the same kernel."""
    steps = ctx.params["steps"]
    nodes, stride = 4096, 256  # 1 MiB: page translations stay cached, lines never repeat within a lap
    dev = rig.dev
    h = rig.pinned(nodes * stride)
    out = rig.alloc(24)
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
    ctx.figure(
        "link.sm_host_load_latency_us",
        round(statistics.median(ns) / 1e3, 3),
        "us",
        "measured",
        f"one thread, {steps} dependent 8-byte volatile (.sys) loads from mapped pinned host memory, random cycle of "
        f"{nodes} slots {stride} B apart; %globaltimer ns per load, median of {reps} launches",
        (round(min(ns) / 1e3, 3), round(max(ns) / 1e3, 3)),
    )
    ctx.figure(
        "link.sm_host_load_latency_cycles",
        round(statistics.median(cyc), 1),
        "cycles",
        "measured",
        "the same chase in clock64 cycles per load",
        (round(min(cyc), 1), round(max(cyc), 1)),
    )
    ctx.sm_clock(mhz, "clock64 cycles over %globaltimer ns in the remote chase launches")
