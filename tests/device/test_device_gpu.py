"""The device layer's driver calls on a real GPU (the lent H100); skipped without one: module globals,
launches on a stream, tensor maps for the TMA benchmarks and our GEMM, the cluster occupancy queries,
and our GEMM on the context torch made current."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from helpers import has_gpu

pytestmark = [pytest.mark.sass, pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU")]

SOURCE = r"""
__constant__ unsigned cdata[64];
__device__ unsigned offset;
extern "C" __global__ void read_globals(unsigned* out) {
    extern __shared__ unsigned stage[];
    stage[threadIdx.x] = cdata[threadIdx.x] + offset;
    __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = stage[63 - threadIdx.x];
}
"""


def _kernel():
    from gpudissect.device.compiler import compile_cubin
    from gpudissect.device.cuda import Device

    dev = Device(0)
    mod = dev.load(compile_cubin(SOURCE, "device_gpu.cu", dev.arch))
    return dev, mod, mod.function("read_globals")


def test_module_globals_and_a_launch_on_a_stream():
    from gpudissect.device.cuda import Arg
    from gpudissect.device.stream import Stream

    dev, mod, fn = _kernel()
    cdata, offset = mod.global_buffer("cdata"), mod.global_buffer("offset")
    assert (cdata.nbytes, offset.nbytes) == (256, 4)
    dev.upload(np.arange(64, dtype=np.uint32), cdata)
    dev.upload(np.array([1000], np.uint32), offset)
    out = dev.alloc(4 * 64 * 3)
    s = Stream(dev)
    try:
        s.launch(fn, 3, 64, [Arg.ptr(out)], smem=64 * 1024)  # above 48 KB: opted in by the launch
        s.sync("read_globals")
    finally:
        s.close()
    got = dev.download(out, np.uint32, 64 * 3).reshape(3, 64)
    assert (got == 1000 + np.arange(63, -1, -1)).all()


def test_tensor_maps_encode():
    from gpudissect.bench.hopper.tma import plans
    from gpudissect.gemm import launch as gemm

    dev, _, _ = _kernel()
    if dev.props["cc_major"] < 9:
        pytest.skip("tensor maps need sm_90")
    buf = dev.alloc(1 << 20)
    maps = [
        plans.encode_tensor_map(plans.TensorMap("float32", (256, 256), (32, 32)), buf.ptr),
        plans.encode_tensor_map(plans.TensorMap("int64", (1 << 16,), (256,)), buf.ptr),
        gemm.tensor_map("bf16", buf.ptr, 256, 512, 128),  # on the context the Device made current
        gemm.tensor_map("e4m3", buf.ptr, 256, 1024, 64, promotion="L2_256B"),
    ]
    assert all(len(m) == 128 and any(m) for m in maps) and len(set(maps)) == 4


def test_cluster_queries():
    from gpudissect.bench.hopper.dsm import common as dsm
    from gpudissect.device.launch import max_active_clusters, max_cluster_size

    dev, _, fn = _kernel()
    if dev.props["cc_major"] < 9:
        pytest.skip("clusters need sm_90")
    n2 = max_active_clusters(fn.handle, (2, 1, 1), (64, 1, 1), 1024)
    assert 1 <= n2 <= dev.props["sm_count"] // 2 * 32
    assert max_cluster_size(fn.handle, (8, 1, 1), (64, 1, 1), 1024) >= 8
    assert dsm._cluster_query(fn, 16, 64, 1024, "potential") >= 8
    assert dsm._cluster_query(fn, 2, 64, 1024, "active") == n2


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="no torch")
@pytest.mark.parametrize("rung", [1, 4, 5, 8, 10, None])
def test_our_gemm_on_torchs_context(rung):
    import torch

    from gpudissect.gemm import matmul

    if torch.cuda.get_device_capability() != (9, 0) and rung != 1:
        pytest.skip("rungs 2+ need sm_90a")
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(1024, 768, device="cuda", generator=g).bfloat16()
    b = torch.randn(768, 512, device="cuda", generator=g).bfloat16()
    c = matmul(a, b, rung=rung)
    ref = a.float() @ b.float()
    assert ((c.float() - ref).abs().max() / ref.abs().max()).item() < 2e-2
