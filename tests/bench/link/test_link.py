"""The link suite without a GPU: checksum model, chase chains, size grids, the skip path of the
multi-GPU benchmarks, the NCCL report, and the NCCL sweep's result checks over gloo (torch only)."""

from __future__ import annotations

import os
import socket

import numpy as np
import pytest

from fakes import FakeDevice, bench_context
from gpudissect.bench.link import host_bandwidth, nccl, peer
from gpudissect.bench.link import rig as link
from gpudissect.device.cuda import Buffer
from gpudissect.device.hostmem import HostBuffer


def _slow_checksum(words: np.ndarray) -> int:
    return sum(int(w) ^ ((i * 0x9E3779B9) & 0xFFFFFFFF) for i, w in enumerate(words.tolist())) % 2**64


def test_host_checksum_matches_definition_and_sees_offsets():
    rng = np.random.default_rng(1)
    w = rng.integers(0, 2**32, size=5000, dtype=np.uint32)
    assert link.host_checksum(w) == _slow_checksum(w)
    # a copy that lands one word late has the same words but a different checksum
    shifted = np.concatenate([w[-1:], w[:-1]])
    assert link.host_checksum(shifted) != link.host_checksum(w)
    # chunked evaluation (chunks of 4M words) agrees with one piece
    big = rng.integers(0, 2**32, size=(1 << 22) + 7, dtype=np.uint32)
    assert (
        link.host_checksum(big)
        == (link.host_checksum(big[: 1 << 22]) + link.host_checksum(big[1 << 22 :], 1 << 22)) % 2**64
    )


def test_chase_chain_is_one_cycle_and_end_is_predicted():
    base, stride, nodes = 0x7F0000000000, 256, 64
    words, order = link.chase_chain(nodes, stride, base)
    assert sorted(order) == list(range(nodes)) and order[0] == 0
    # follow the chain as the kernel does: one untimed step, then `steps`
    addr = base
    for _ in range(1 + 100):
        addr = int(words[(addr - base) // 8])
    assert addr == link.chase_end(order, 100, stride, base)
    seen, a = set(), base
    for _ in range(nodes):
        seen.add(a)
        a = int(words[(a - base) // 8])
    assert len(seen) == nodes and a == base
    with pytest.raises(ValueError):
        link.chase_chain(1, 256, base)


def test_size_grid_and_nccl_sizes():
    assert link.size_grid(4096, 1 << 30, 16) == [4096, 65536, 1 << 20, 1 << 24, 1 << 28, 1 << 30]
    assert link.size_grid(4096, 5000, 2) == [4096, 5000]
    s = nccl.nccl_sizes(False, 4 << 30)
    assert s[0] == 8 and s[-1] == 4 << 30 and all(b == 4 * a for a, b in zip(s, s[1:-1]))


def test_batch_stays_under_the_gate_queue():
    assert host_bandwidth._batch(4096, True) == 200 and host_bandwidth._batch(1 << 30, True) == 1


@pytest.mark.parametrize("bench,key", [("p2p_matrix", "link.p2p.gpus"), ("nccl_collectives", "link.nccl.gpus")])
def test_multi_gpu_benchmarks_skip_on_one_gpu(monkeypatch, run_bench, bench, key):
    monkeypatch.setattr(peer.hostmem, "device_count", lambda: 1)
    r = run_bench(bench)
    assert r.status == "skipped" and ">= 2 GPUs" in r.message  # nothing failed, nothing measured
    assert list(r.figures) == [key]
    f = r.figures[key]
    assert f.check == "ok" and f.value == 1 and "need" in f.note and ">= 2 GPUs" in f.note
    assert any("skipped" in text for _, _, text in r.progress)


def _rows(ok_last=True):
    rows = []
    for op in nccl.NCCL_OPS:
        for b, t in ((8, 20e-6), (1 << 30, 5e-3)):
            rows.append(
                {
                    "op": op,
                    "bytes": b,
                    "seconds": t,
                    "ok": ok_last or b == 8,
                    "algbw_gbps": b / t / 1e9,
                    "busbw_gbps": b / t / 1e9 * 1.75,
                    "iters": 5,
                }
            )
    return rows


def test_nccl_report_keys_and_failed_check():
    ctx, run = bench_context("nccl_collectives")
    nccl.nccl_report(ctx, _rows(), 8)
    got = run.figures
    assert not run.twice
    assert got["link.nccl.allreduce_busbw_gbps"].value == pytest.approx(round((1 << 30) / 5e-3 / 1e9 * 1.75, 2))
    assert got["link.nccl.allreduce_8b_latency_us"].value == 20.0
    ctx, run = bench_context("nccl_collectives")
    nccl.nccl_report(ctx, _rows(ok_last=False), 8)
    bad = run.figures["link.nccl.allgather_busbw_gbps"]
    assert bad.check == "failed" and bad.value == "FAILED" and str(1 << 30) in bad.note


def test_nccl_report_graph_latency_only_where_replayed():
    rows = _rows()
    for r in rows:
        r["graph_seconds"] = 8e-6 if (r["op"] == "all_reduce" and r["bytes"] == 8) else None
    ctx, run = bench_context("nccl_collectives")
    nccl.nccl_report(ctx, rows, 2)
    got = run.figures
    assert got["link.nccl.allreduce_8b_latency_graph_us"].value == 8.0
    assert got["link.nccl.allreduce_8b_latency_us"].value == 20.0  # the eager figure stays beside it
    assert "link.nccl.allgather_8b_latency_graph_us" not in got  # no replay, no figure
    assert "eagerly" in got["link.nccl.allreduce_8b_latency_us"].method
    assert "CUDA graph" in got["link.nccl.allreduce_8b_latency_graph_us"].method


def test_no_multicast_env_is_complete():
    assert nccl.NO_MULTICAST == {
        "NCCL_NVLS_ENABLE": "0",
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
        "NVSHMEM_DISABLE_NVLS": "1",
    }


# ---- the sweep's expected results, proven on 2 gloo ranks on CPU ------------------------------
def _gloo_rank(rank, n, port, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=rank, world_size=n)
    out = {}
    for op in nccl.NCCL_OPS:
        try:
            rows = nccl.nccl_sweep(rank, n, [8, 4096, 1 << 20], ops=(op,), device="cpu")
            out[op] = all(r["ok"] for r in rows)
        except (RuntimeError, NotImplementedError, ValueError) as e:  # an op gloo lacks
            out[op] = f"unsupported: {e}"[:120]
            dist.barrier()
    dist.destroy_process_group()
    q.put((rank, out))


def test_nccl_sweep_checks_hold_on_two_gloo_ranks():
    pytest.importorskip("torch")
    import multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=_gloo_rank, args=(r, 2, port, q)) for r in range(2)]
    for p in ps:
        p.start()
    res = dict(q.get(timeout=120) for _ in ps)
    for p in ps:
        p.join(30)
    checked = {op: v for op, v in res[0].items() if v is True or v is False}
    assert "all_reduce" in checked and "broadcast" in checked, res
    assert all(checked.values()), res


def test_p2p_report_medians_over_pairs():
    ctx, run = bench_context("p2p_matrix")
    res = {k: {} for k in (*peer.P2P_KINDS, "ce_bidir", "sm_latency_us", "ce_latency_us")}
    for i in range(3):
        for j in range(3):
            if i != j:
                for k in peer.P2P_KINDS:
                    res[k][(i, j)] = 400.0 + 10 * i + j
                res["ce_bidir"][(i, j)] = 700.0
                res["sm_latency_us"][(i, j)] = 1.5 + 0.1 * i
                res["ce_latency_us"][(i, j)] = 8.0
    peer._p2p_report(ctx, res, 3, ["X", "NV18", "NV18"] * 3, 1 << 28, [])
    got = run.figures
    assert not run.twice
    assert got["link.p2p_read_gbps"].value == 411.0 and got["link.p2p_read_gbps"].spread == (401.0, 421.0)
    assert got["link.p2p_bidir_gbps"].value == 700.0
    assert got["link.p2p_latency_us"].value == 1.6
    assert len(run.series) == 7
    assert "link.p2p_read_pct_peak" not in got  # no peak given, no share of it
    ctx, run = bench_context("p2p_matrix")
    peer._p2p_report(ctx, res, 3, ["X", "NV18", "NV18"] * 3, 1 << 28, [], peak=478.125)
    got = run.figures
    assert got["link.p2p_read_pct_peak"].value == round(100 * 411.0 / 478.125, 1)
    assert got["link.p2p.ce_write_pct_peak"].unit == "%"
    ctx, run = bench_context("p2p_matrix")
    peer._p2p_report(ctx, {k: {} for k in res}, 2, ["X"] * 4, 1 << 28, ["0->1", "1->0"])
    [only] = run.figures.values()
    assert only.value.startswith("n/a") and "0->1" in only.note


def _topo(speed, nv=18):
    buses = ["0000:19:00.0", "0000:3b:00.0"]
    return [
        {
            "index": i,
            "uuid": f"GPU-{i}",
            "pci_bus_id": buses[i],
            "nvlinks": [buses[1 - i]] * nv,
            "switch_links": 0,
            "nvlink_p2p": {1 - i: True},
            "nvlink_speed_mbps": speed,
            "nvlink_version": 5,
            "levels": {1 - i: 40},
        }
        for i in range(2)
    ]


def test_topology_series_nvlink_speed_and_peak(monkeypatch):
    # the records nvml_topology() gave on an H200 pair: NV18, 26562 MB/s a link (nvidia-smi: 26.562 GB/s)
    monkeypatch.setattr(peer.hostmem, "nvml_topology", lambda: _topo(26562.0))
    ctx, run = bench_context("p2p_matrix")
    labels, peak = peer._topology_series(ctx, 2)
    got = run.figures
    assert labels == ["X", "NV18", "NV18", "X"] and peak == pytest.approx(478.116)
    assert got["link.nvlink.speed_gbps_per_link"].value == 26.562 and got["link.nvlink.peak_gbps"].value == 478.1
    assert got["link.nvlink.switch_links_per_gpu"].value == 0  # joined directly
    monkeypatch.setattr(peer.hostmem, "nvml_topology", lambda: _topo(None))  # speed not reported
    ctx, run = bench_context("p2p_matrix")
    assert peer._topology_series(ctx, 2)[1] is None
    assert set(run.figures) == {"link.p2p.paths", "link.nvlink.switch_links_per_gpu"}


class _Gpu(FakeDevice):
    """One of several fake GPUs: its own address range; the current device and every free logged."""

    def __init__(self, ordinal: int, log: list):
        super().__init__()
        self.ordinal, self.log = ordinal, log
        self.next = 0x10000 + (ordinal << 36)

    def make_current(self):
        self.log.append(("current", self.ordinal))

    def free(self, buf):
        self.log.append(("free", self.ordinal, buf.nbytes))
        super().free(buf)


def test_rig_frees_what_it_holds_with_its_device_current(monkeypatch):
    """A rig's buffers, pinned memory, gate and streams go when its `with` block ends, an error or not,
    each rig's with its own GPU current (peer.py holds one rig per GPU)."""
    log: list = []

    class Gate:
        def __init__(self, dev, spin):
            self.dev = dev

        def free(self):
            log.append(("gate", self.dev.ordinal))

    class Stream:
        def __init__(self, dev):
            self.dev = dev

        def close(self):
            log.append(("stream", self.dev.ordinal))

    monkeypatch.setattr(link, "Gate", Gate)
    monkeypatch.setattr(link, "Stream", Stream)
    monkeypatch.setattr(link, "_cubin", lambda dev: b"")
    # pinned memory as a buffer of the allocating GPU (its mapped address)
    monkeypatch.setattr(link.hostmem, "alloc_pinned", lambda dev, n: HostBuffer(0, n, "pinned", dev.alloc(n).ptr))
    monkeypatch.setattr(link.hostmem, "free_host", lambda dev, h: dev.free(Buffer(h.dev_ptr, h.nbytes)))
    gpus = [_Gpu(0, log), _Gpu(1, log)]
    ctx, _ = bench_context("p2p_matrix", gpus[0])
    with pytest.raises(RuntimeError, match="mid-benchmark"):
        with link.Rig(ctx) as r0, link.Rig(ctx, gpus[1]) as r1:
            r1.alloc(4096)
            r0.alloc(8192)
            r0.pinned(1 << 16)
            assert log[-2:] == [("current", 1), ("current", 0)]  # alloc makes its GPU current first
            del log[:]
            raise RuntimeError("mid-benchmark")
    assert gpus[0].mem == {} and gpus[1].mem == {}
    assert log == [
        *[("current", 1), ("free", 1, 4096), ("gate", 1), ("stream", 1), ("stream", 1), ("free", 1, 8)],
        *[("current", 0), ("free", 0, 8192), ("free", 0, 1 << 16), ("gate", 0), ("stream", 0), ("stream", 0)],
        ("free", 0, 8),
    ]
