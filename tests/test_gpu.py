"""Run only where an NVIDIA GPU is present (the lent H100); skipped in CI."""

import numpy as np
import pytest

from helpers import has_gpu

pytestmark = [pytest.mark.sass, pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU")]

CLUSTER = r"""
extern "C" __global__ void where(unsigned* out) {
    extern __shared__ unsigned big[];
    unsigned r, n;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    big[threadIdx.x] = r;
    __syncthreads();
    if (threadIdx.x == 0) { out[2 * blockIdx.x] = big[0]; out[2 * blockIdx.x + 1] = n; }
}
"""


def test_cluster_launch_and_big_dynamic_smem():
    from gpudissect.device.compiler import compile_cubin
    from gpudissect.device.cuda import Arg, Device

    dev = Device(0)
    if dev.props["cc_major"] < 9:
        pytest.skip("clusters need sm_90")
    fn = dev.load(compile_cubin(CLUSTER, "cluster.cu", dev.arch)).function("where")
    out = dev.alloc(8 * 4 * 2)
    fn(8, 32, [Arg.ptr(out)], smem=100 * 1024, cluster=(4, 1, 1))
    dev.sync()
    got = dev.download(out, np.uint32, 16).reshape(8, 2)
    assert list(got[:, 0]) == [0, 1, 2, 3, 0, 1, 2, 3] and set(got[:, 1]) == {4}


def test_scattered_allocation_is_contiguous_memory_and_freed():
    """alloc_scattered: pages mapped one by one in shuffled order still read back as one buffer,
    and freeing returns the memory."""
    from gpudissect.device.cuda import Device

    dev = Device(0)
    page = dev.map_granularity()
    free0 = dev.free_memory()
    buf = dev.alloc_scattered(8 * page + 1, seed=3)
    assert buf.nbytes == 9 * page and buf.ptr % page == 0
    data = np.arange(buf.nbytes // 4, dtype=np.uint32)
    dev.upload(data, buf)
    assert np.array_equal(dev.download(buf, np.uint32, data.size), data)
    dev.free(buf)
    assert dev.free_memory() >= free0 - page


def test_fault_and_hang_are_contained(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDISSECT_EXTRA_SUITES", "fake_suite,gpu_fake_suite")
    from gpudissect.bench import registry
    from gpudissect.runner import probe_device, run_benchmarks, start_run
    from gpudissect.store import Store

    registry.load_all()
    store = Store(tmp_path / "g.sqlite")
    facts = probe_device()
    benches = registry.select(["gpufake", "memory"], ["gpu_fault", "gpu_hang", "shared_latency"])
    rid = start_run(store, facts, "quick", {})
    run_benchmarks(store, rid, benches, "quick", {b.key: {} for b in benches}, facts["uuid"])
    by = {b.bench: b for b in store.benches(rid)}
    assert by["gpu_fault"].status == "failed" and "ILLEGAL" in by["gpu_fault"].message
    assert by["gpu_hang"].status == "hung"
    assert by["shared_latency"].status == "ok"  # the GPU still works for the next benchmark
    assert any(f.key == "mem.latency.shared_cycles" for f in store.figures(rid))


def test_a_worker_that_a_benchmark_left_device_memory_in_is_replaced(monkeypatch):
    monkeypatch.setenv("GPUDISSECT_EXTRA_SUITES", "fake_suite,gpu_fake_suite")
    from gpudissect.bench import registry
    from gpudissect.runner import run_one
    from gpudissect.worker import Worker

    registry.load_all()
    by = {b.name: b for b in registry.select(["gpufake"], ["gpu_leak", "gpu_tidy"])}
    w = Worker()
    try:
        pids = []
        for name in ("gpu_tidy", "gpu_tidy", "gpu_leak", "gpu_tidy"):
            o = run_one(1, by[name], "quick", {}, None, worker=w)
            assert o.result.status == "ok", o.result.message
            pids.append(next(f.value for f in o.figures if f.key == "gpufake.pid"))
        assert pids[0] == pids[1] == pids[2] != pids[3]  # the leak ran in the worker and retired it
    finally:
        w.discard()
