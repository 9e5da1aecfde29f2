"""NCCL collectives through torch.distributed, the link suite's last benchmark (nccl-tests' bus
bandwidth): one process per GPU (nccl_rank_main, started by launch_ranks) sweeps every collective
over message sizes and checks each result exactly; rank 0's rows become the series and figures.
Needs two or more GPUs and torch, and says so instead of measuring.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from ...models import Point
from ..context import BenchContext
from ..registry import Param, benchmark, in_range, parse_size
from .rig import LINK, gpus_or_skip, size_grid, skip_counted

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
            in_range(1 << 10, 16 << 30, "1 KiB .. 16 GiB"),
        )
    },
    timeout_s=1200,
    paper="nccl-tests doc/PERFORMANCE.md (bus bandwidth); beyond 002 §5.2",
    torch=True,
)
def nccl_collectives(ctx: BenchContext) -> None:
    n = gpus_or_skip(ctx, "link.nccl.gpus", "collectives need")
    try:
        import torch  # noqa: F401
    except ImportError:
        skip_counted(ctx, "link.nccl.gpus", n, "torch is not installed (pip install torch) for torch.distributed/NCCL")
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
                        "import sys; from gpudissect.bench.link.nccl import nccl_rank_main; "
                        "nccl_rank_main(sys.argv[1])",
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
                f"in one CUDA graph, median of {GRAPH_REPLAYS} replays (slowest rank): the GPU-side cost without the "
                "host's issue cost, as nccl-tests -G measures",
                check="ok" if ok else "failed",
            )
