"""GPU <-> GPU bandwidth and latency matrices, the link suite's peer-to-peer benchmark (Jia ch. 5,
Table 5.1): every ordered GPU pair through the copy engine and the SM, uni- and bidirectional, one
thread's dependent loads from the peer's memory, and NVML's view of the links between them. Needs two
or more GPUs and says so instead of measuring; every copy is verified by checksum.
"""

from __future__ import annotations

import statistics
from contextlib import ExitStack

import numpy as np

from ...analysis import topology
from ...device import hostmem
from ...device.cuda import Arg, Buffer, Device
from ...models import Point
from ..context import BenchContext
from ..registry import Param, benchmark, parse_size
from .rig import GB, LINK, Rig, chase_chain, chase_end, check_copy_size, gpus_or_skip

P2P_KINDS = ("ce_write", "ce_read", "sm_write", "sm_read")


@benchmark(
    name="p2p_matrix",
    title="GPU<->GPU bandwidth and latency matrices (copy engine and SM, uni/bidirectional)",
    axes={
        "pair": "every ordered GPU pair",
        "engine": "copy engine (write: source's stream, read: destination's stream), "
        "SM (read: kernel on destination loads peer memory, write: kernel on source stores)",
        "direction": "uni, bidir",
    },
    kernels=[LINK],
    params={"size": Param(None, "bytes per copy (default 256 MiB quick, 1 GiB full)", parse_size, check_copy_size)},
    timeout_s=900,
    paper="002 §5.1 Table 5.1; CUDA samples p2pBandwidthLatencyTest; nvbandwidth device_to_device_*",
)
def p2p_matrix(ctx: BenchContext) -> None:
    n = gpus_or_skip(ctx, "link.p2p.gpus", "peer-to-peer needs")
    size = ctx.params["size"] or ((256 << 20) if ctx.quick else (1 << 30))
    reps = 5 if ctx.quick else 11
    devs = [ctx.device] + [Device(i) for i in range(1, n)]
    with ExitStack() as stack:
        stack.callback(hostmem.set_current, devs[0])  # the last exit: the context's GPU current again
        rigs = [stack.enter_context(Rig(ctx) if i == 0 else Rig(ctx, d)) for i, d in enumerate(devs)]
        bufs = []
        for i, r in enumerate(rigs):
            src, dst = r.alloc(size), r.alloc(size)
            r.fill(src.ptr, size, 0x100 + i)
            bufs.append((src, dst))
        labels, peak = _topology_series(ctx, n)
        res: dict[str, dict[tuple[int, int], float]] = {
            k: {} for k in (*P2P_KINDS, "ce_bidir", "sm_latency_us", "ce_latency_us")
        }
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
        _p2p_report(ctx, res, n, labels, size, no_peer, peak)


def _p2p_uni(
    ctx: BenchContext,
    rigs: list[Rig],
    bufs: list[tuple[Buffer, Buffer]],
    i: int,
    j: int,
    size: int,
    reps: int,
    kind: str,
) -> float:
    """GB/s from GPU i's source buffer into GPU j's destination buffer, median of `reps`; verified."""
    src, dst = bufs[i][0], bufs[j][1]
    issuer = i if kind.endswith("write") else j  # a write is pushed by the source, a read pulled by the destination
    rig = rigs[issuer]
    hostmem.set_current(rigs[j].dev)
    rigs[j].dev.memset32(dst, 0xA5A5A5A5, size // 4)
    rigs[j].dev.sync("poison")
    hostmem.set_current(rig.dev)
    if kind.startswith("ce"):
        work = lambda: rig.s1.copy(dst.ptr, src.ptr, size)
    else:
        args = [Arg.u64(src.ptr), Arg.u64(dst.ptr), Arg.u64(size // 16)]
        work = lambda: rig.s1.launch(rig.k["copy_v4"], 4 * rig.dev.props["sm_count"], 512, args)
    hostmem.time_on_stream(rig.s1, work)
    v = [size / (hostmem.time_on_stream(rig.s1, work) * 1e-3) / GB for _ in range(reps)]
    _p2p_verify(ctx, rigs, i, j, src, dst, size, kind)
    return statistics.median(v)


def _p2p_verify(
    ctx: BenchContext, rigs: list[Rig], i: int, j: int, src: Buffer, dst: Buffer, size: int, what: str
) -> None:
    hostmem.set_current(rigs[i].dev)
    a = rigs[i].checksum(src.ptr, size)
    hostmem.set_current(rigs[j].dev)
    b = rigs[j].checksum(dst.ptr, size)
    ctx.check(a == b, f"{what} GPU {i} -> GPU {j}: destination checksum differs from the source")


def _p2p_bidir(
    ctx: BenchContext, rigs: list[Rig], bufs: list[tuple[Buffer, Buffer]], i: int, j: int, size: int, reps: int
) -> float:
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


def _p2p_chase(ctx: BenchContext, reader: Rig, owner: Device, reps: int) -> float:
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
                ctx.check(
                    end == chase_end(order, steps, stride, chain.ptr), "the peer chase ended at the wrong address"
                )
                if r:
                    ns.append(t_ns / steps)
            return statistics.median(ns) / 1e3
        finally:
            reader.dev.free(out)
    finally:
        hostmem.set_current(owner)
        owner.free(chain)


def _p2p_small_copy(rig: Rig, bufs: list[tuple[Buffer, Buffer]], i: int, j: int, n: int) -> float:
    """us of one 4-byte copy-engine copy GPU i -> GPU j on an idle stream (event pair), median."""
    hostmem.set_current(rig.dev)
    src, dst = bufs[i][0].ptr, bufs[j][1].ptr
    return statistics.median(hostmem.time_on_stream(rig.s1, lambda: rig.s1.copy(dst, src, 4)) * 1e3 for _ in range(n))


def _topology_series(ctx: BenchContext, n: int) -> tuple[list[str], float | None]:
    """NVML path of every pair (NV<k> or a PCIe level) as a heatmap of NVLink counts; returns the
    labels and, when every pair is joined by the same NVLinks, their per-direction peak (GB/s)."""
    topo = hostmem.nvml_topology()
    if len(topo) < n:
        return ["?"] * (n * n), None
    m = topology.path_matrix(topo[:n])
    pts = []
    for i in range(n):
        for j in range(n):
            kind, count = topology.link_kind(m[i][j])
            pts.append(Point(j, float(count if kind == "nvlink" else 0), extra={"row": i, "path": m[i][j]}))
    ctx.series(
        "nvlinks per pair",
        "destination GPU",
        "",
        "NVLinks",
        "links",
        pts,
        plot="heatmap",
        figure="p2p_topology",
        rows="source GPU",
        source="NVML nvmlDeviceGetNvLinkRemotePciInfo / nvmlDeviceGetTopologyCommonAncestor",
    )
    kinds = sorted({m[i][j] for i in range(n) for j in range(n) if i != j})
    ctx.figure(
        "link.p2p.paths",
        ", ".join(kinds),
        "",
        "measured",
        "NVML topology labels over all GPU pairs (nvidia-smi topo -m names)",
    )
    labels = [m[i][j] for i in range(n) for j in range(n)]
    speeds = {g.get("nvlink_speed_mbps") for g in topo[:n]}
    speed = speeds.pop() if len(speeds) == 1 else None
    peak = topology.nvlink_peak_gbps(kinds[0], speed) if len(kinds) == 1 else None
    if any(topology.link_kind(k)[0] == "nvlink" for k in kinds):
        sw = max(int(g.get("switch_links") or 0) for g in topo[:n])
        ctx.figure(
            "link.nvlink.switch_links_per_gpu",
            sw,
            "links",
            "measured",
            "NVML: active NVLinks of a GPU that end at an NVSwitch (0: GPUs joined directly)",
        )
    if speed is not None and any(topology.link_kind(k)[0] == "nvlink" for k in kinds):
        version = topo[0].get("nvlink_version")
        ctx.figure(
            "link.nvlink.speed_gbps_per_link",
            round(speed / 1e3, 3),
            "GB/s",
            "derived",
            "NVML NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON: one active link, one direction"
            + (f"; NVML NVLink version enum {version}" if version is not None else ""),
        )
    if peak is not None:
        ctx.figure(
            "link.nvlink.peak_gbps",
            round(peak, 1),
            "GB/s",
            "derived",
            f"every pair {kinds[0]}: links x NVML per-link speed, one direction (line rate before packet overhead)",
        )
    return labels, peak


def _p2p_report(
    ctx: BenchContext,
    res: dict[str, dict[tuple[int, int], float]],
    n: int,
    labels: list[str],
    size: int,
    no_peer: list[str],
    peak: float | None = None,
) -> None:
    units = {"sm_latency_us": "us", "ce_latency_us": "us"}
    for kind, vals in res.items():
        if not vals:
            continue
        pts = [Point(j, v, extra={"row": i, "path": labels[i * n + j]}) for (i, j), v in sorted(vals.items())]
        ctx.series(
            kind,
            "destination GPU",
            "",
            kind,
            units.get(kind, "GB/s"),
            pts,
            plot="heatmap",
            figure=f"p2p_{kind}",
            rows="source GPU",
            size=size,
        )
    note = f"no peer access for {', '.join(no_peer)}" if no_peer else ""
    if not res["ce_read"]:
        ctx.figure(
            "link.p2p_read_gbps",
            "n/a: no GPU pair allows peer access",
            "GB/s",
            "measured",
            "cuDeviceCanAccessPeer",
            note=note,
        )
        return
    how = f"median over GPU pairs of the median of timed {size >> 20} MiB copies; every copy verified by checksum"
    for key, kind, what in (
        ("link.p2p_read_gbps", "ce_read", "copy engine, issued by the destination GPU (pull)"),
        ("link.p2p.ce_write_gbps", "ce_write", "copy engine, issued by the source GPU (push)"),
        ("link.p2p.sm_read_gbps", "sm_read", "kernel on the destination loads peer memory"),
        ("link.p2p.sm_write_gbps", "sm_write", "kernel on the source stores to peer memory"),
        ("link.p2p_bidir_gbps", "ce_bidir", "copy engine both ways at once, bytes both ways / time"),
    ):
        m = topology.pair_matrix(res[kind], n)
        vals = list(res[kind].values())
        ctx.figure(
            key,
            round(topology.offdiag_median(m), 2),
            "GB/s",
            "measured",
            f"{what}; {how}",
            (round(min(vals), 2), round(max(vals), 2)),
            note=note,
        )
        if peak and key in ("link.p2p_read_gbps", "link.p2p.ce_write_gbps"):
            ctx.figure(
                key.replace("_gbps", "_pct_peak"),
                round(100 * topology.offdiag_median(m) / peak, 1),
                "%",
                "derived",
                f"{key} / link.nvlink.peak_gbps ({peak:.1f} GB/s, one direction)",
            )
    for key, kind, what in (
        ("link.p2p_latency_us", "sm_latency_us", "one thread's dependent volatile loads from the peer GPU's memory"),
        ("link.p2p.ce_latency_us", "ce_latency_us", "one 4-byte copy-engine copy on an idle stream, event pair"),
    ):
        vals = list(res[kind].values())
        ctx.figure(
            key,
            round(statistics.median(vals), 3),
            "us",
            "measured",
            f"{what}; median over GPU pairs",
            (round(min(vals), 3), round(max(vals), 3)),
        )
