"""The link suite between GPUs (Jia ch. 5, Table 5.1): peer-to-peer bandwidth and latency matrices
(copy engine and SM, uni- and bidirectional) and NCCL collectives through torch.distributed. Both
need two or more GPUs and say so instead of measuring. The host<->device benchmarks, the kernels
and the per-device Rig they use are in bench/link.py; every copy is verified by checksum.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...analysis import topology
from ...device import hostmem
from ...device.cuda import Arg, Buffer, Device
from ...models import Point
from ..context import BenchContext
from ..registry import Param, benchmark, parse_size
from .host import GB, LINK, Rig, chase_chain, chase_end, check_copy_size, size_grid


# ---------------------------------------------------------------------------------------
# 4. Peer to peer: bandwidth and latency matrices between every GPU pair (>= 2 GPUs)
# ---------------------------------------------------------------------------------------
def _skip(ctx: BenchContext, key: str, count: int, why: str) -> None:
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


def _gpus_or_skip(ctx: BenchContext, key: str, needs: str) -> int:
    """The GPU count this process sees; with fewer than two the benchmark ends here as skipped."""
    n = hostmem.device_count()
    if n < 2:
        _skip(ctx, key, n, f"{needs} >= 2 GPUs, this process sees {n}")
    return n


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
    n = _gpus_or_skip(ctx, "link.p2p.gpus", "peer-to-peer needs")
    size = ctx.params["size"] or ((256 << 20) if ctx.quick else (1 << 30))
    reps = 5 if ctx.quick else 11
    devs = [ctx.device] + [Device(i) for i in range(1, n)]
    rigs = [Rig(ctx) if i == 0 else Rig(ctx, d) for i, d in enumerate(devs)]
    bufs = []
    try:
        for i, d in enumerate(devs):
            hostmem.set_current(d)
            src, dst = d.alloc(size), d.alloc(size)
            rigs[i].fill(src.ptr, size, 0x100 + i)
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
    finally:
        for i, (src, dst) in enumerate(bufs):
            hostmem.set_current(devs[i])
            devs[i].free(src)
            devs[i].free(dst)
        for i, r in enumerate(rigs):
            hostmem.set_current(devs[i])
            r.close()
        hostmem.set_current(devs[0])


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


# ---------------------------------------------------------------------------------------
# 5. NCCL collectives through torch.distributed (>= 2 GPUs, torch optional)
# ---------------------------------------------------------------------------------------
# NVLink multicast (NVLS) stays off in every process this suite starts: a rule of the machines
# this was written on, and NVLS would change which algorithm the figures describe.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
NCCL_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
KEY_NAME = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "all_to_all": "alltoall",
    "broadcast": "broadcast",
}


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


def nccl_sweep(
    rank: int, n: int, sizes: list[int], ops: tuple[str, ...] = NCCL_OPS, quick: bool = True, device: Any = None
) -> list[dict[str, Any]]:
    """Time every collective at every size on an initialised process group (NCCL: this rank's GPU
    is current); results checked on every rank. Returns rows with the slowest rank's time.
    device="cpu" runs the same sweep over gloo with host timing (the CPU tests use it)."""
    import torch
    import torch.distributed as dist

    from ...analysis import busbw

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
            graph_s = _graph_time(torch, dist, run, iters) if on_gpu and s_bytes <= GRAPH_MAX_BYTES else None
            sec = torch.tensor([per_op, graph_s if graph_s is not None else -1.0], device=dev, dtype=torch.float64)
            dist.all_reduce(sec, op=dist.ReduceOp.MAX)
            # the check: a fresh input, one operation, the exact result on every rank
            x.copy_(_fill(torch, op, rank, n, send_n, dev))
            run()
            got = x if op in ("all_reduce", "broadcast") else y
            ok = torch.tensor([int(torch.equal(got, _expected(torch, op, rank, n, got.numel(), dev)))], device=dev)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)
            t, tg = float(sec[0].item()), float(sec[1].item())
            rows.append(
                {
                    "op": op,
                    "bytes": s_bytes,
                    "seconds": t,
                    "ok": bool(ok.item()),
                    "algbw_gbps": busbw.algbw_gbps(s_bytes, t),
                    "busbw_gbps": busbw.busbw_gbps(op, s_bytes, t, n),
                    "iters": iters,
                    "graph_seconds": tg if tg > 0 else None,
                }
            )
            x = y = None  # free this size's buffers now (run() shares these cells)
    return rows


# Messages up to this size are also timed replayed from a CUDA graph: eager calls through
# torch.distributed cost the host tens of microseconds each, so a loop of small collectives times
# the issue rate, not NCCL; the graph replay leaves the GPU-side cost (nccl-tests' -G mode).
GRAPH_MAX_BYTES = 1 << 20
GRAPH_REPLAYS = 7  # the graph figure is the median of these replays (single replays varied from run to run)


def _graph_time(torch: Any, dist: Any, run: Callable[[], None], iters: int) -> float | None:
    """Seconds per op of `iters` ops captured in one CUDA graph and replayed; None where capture
    failed on any rank (every rank agrees before anyone replays, so no rank waits for a peer
    that will never launch)."""
    from ...app.timing import capture

    graph = capture(torch, run, iters)  # warmed on a side stream first: NCCL sets a stream up outside the capture
    ok = torch.tensor([int(graph is not None)], device="cuda")
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if not ok.item():
        return None
    graph.replay()  # warm-up replay, then timed ones, both ranks released together before each
    torch.cuda.synchronize()
    times = []
    for _ in range(GRAPH_REPLAYS):
        dist.barrier()
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        graph.replay()
        t1.record()
        torch.cuda.synchronize()
        times.append(t0.elapsed_time(t1) / iters * 1e-3)
    return statistics.median(times)


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
        dist.init_process_group(
            "nccl",
            init_method=f"tcp://127.0.0.1:{spec['port']}",
            rank=rank,
            world_size=n,
            device_id=torch.device("cuda", rank),
        )
        rows = nccl_sweep(rank, n, spec["sizes"], quick=spec["quick"])
        dist.destroy_process_group()
        out = {"status": "ok", "rows": rows}
    except Exception as e:  # noqa: BLE001 - reported by the parent as this benchmark's failure
        out = {"status": "error", "message": f"rank {rank}: {type(e).__name__}: {e}"}
    if rank == 0 or out["status"] != "ok":
        Path(spec["out"] + f".{rank}").write_text(json.dumps(out))


@benchmark(
    name="nccl_collectives",
    title="NCCL collectives (torch.distributed): algorithm and bus bandwidth, latency",
    axes={"op": ", ".join(NCCL_OPS), "size": "8 B .. max_size (quick x64 steps, full x4)"},
    kernels=[LINK],
    params={
        "max_size": Param(
            None,
            "largest message (default 1 GiB quick, 4 GiB full)",
            parse_size,
            lambda v, f: None if 1 << 10 <= v <= 16 << 30 else "1 KiB .. 16 GiB",
        )
    },
    timeout_s=1200,
    paper="nccl-tests doc/PERFORMANCE.md (bus bandwidth); beyond 002 §5.2",
)
def nccl_collectives(ctx: BenchContext) -> None:
    n = _gpus_or_skip(ctx, "link.nccl.gpus", "collectives need")
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
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        "import sys; from gpudissect.bench.link.peer import nccl_rank_main; nccl_rank_main(sys.argv[1])",
                        str(spec),
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=open(Path(tmp) / f"rank{r}.err", "wb"),
                )
            )
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
        for what, unit, col in (
            ("busbw", "GB/s", "busbw_gbps"),
            ("algbw", "GB/s", "algbw_gbps"),
            ("time", "us", "seconds"),
        ):
            pts = [Point(r["bytes"], r[col] * (1e6 if col == "seconds" else 1), reps=r["iters"]) for r in mine]
            ctx.series(
                f"{op} {what}",
                "message size S",
                "bytes",
                what,
                unit,
                pts,
                plot="loglog" if what == "time" else "logx",
                figure=f"nccl_{what}",
                ranks=n,
                definition="nccl-tests doc/PERFORMANCE.md",
            )
        ok = all(r["ok"] for r in mine)
        bad = [str(r["bytes"]) for r in mine if not r["ok"]]
        last, first = mine[-1], mine[0]
        name = KEY_NAME[op]
        ctx.figure(
            f"link.nccl.{name}_busbw_gbps",
            round(last["busbw_gbps"], 2),
            "GB/s",
            "measured",
            f"{n} ranks, S = {last['bytes']} bytes, slowest rank's mean time over {last['iters']} ops (CUDA events), "
            "busbw = S/t x nccl-tests factor; results checked exactly on every rank",
            check="ok" if ok else "failed",
            note=f"wrong results at S = {', '.join(bad)}" if bad else "",
        )
        ctx.figure(
            f"link.nccl.{name}_{first['bytes']}b_latency_us",
            round(first["seconds"] * 1e6, 2),
            "us",
            "measured",
            f"{n} ranks, mean time of one {first['bytes']}-byte {op} issued eagerly through torch.distributed "
            "(slowest rank; host issue cost included)",
            check="ok" if ok else "failed",
        )
        graphed = [r for r in mine if r.get("graph_seconds")]
        if graphed:
            ctx.series(
                f"{op} time (CUDA graph)",
                "message size S",
                "bytes",
                "time",
                "us",
                [Point(r["bytes"], r["graph_seconds"] * 1e6, reps=r["iters"]) for r in graphed],
                plot="loglog",
                figure="nccl_time",
                ranks=n,
                definition="the same ops captured in one CUDA graph and replayed",
            )
        if graphed and graphed[0]["bytes"] == first["bytes"]:
            ctx.figure(
                f"link.nccl.{name}_{first['bytes']}b_latency_graph_us",
                round(first["graph_seconds"] * 1e6, 2),
                "us",
                "measured",
                f"{n} ranks, mean time of one {first['bytes']}-byte {op} of {first['iters']} captured "
                f"in one CUDA graph, median of {GRAPH_REPLAYS} replays (slowest rank): the GPU-side cost without the host's issue cost, "
                "as nccl-tests -G measures",
                check="ok" if ok else "failed",
            )
