"""The link suite's peer-to-peer helpers on one GPU, as a self pair (the lent H100 has one GPU, so
this is how the p2p code paths run on real hardware); the checksum kernel against numpy. Skipped
without a GPU."""

import numpy as np
import pytest

from helpers import has_gpu

pytestmark = pytest.mark.skipif(not has_gpu(), reason="no NVIDIA GPU")


@pytest.fixture(scope="module")
def rig():
    from gpudissect.bench.context import BenchContext
    from gpudissect.bench.link import rig as link
    from gpudissect.bench.registry import load_all
    from gpudissect.device.cuda import Device

    dev = Device(0)
    got = []
    ctx = BenchContext(load_all()["link/p2p_matrix"], dev, "quick", {"size": None}, lambda k, p: got.append((k, p)))
    with link.Rig(ctx) as r:
        yield ctx, r, got


def test_checksum_kernel_equals_numpy(rig):
    from gpudissect.bench.link import rig as link
    from gpudissect.device import hostmem

    ctx, r, _ = rig
    h = hostmem.alloc_pinned(ctx.device, 1 << 20)
    try:
        r.fill(h.dev_ptr, 1 << 20, 99)
        words = h.array(np.uint32).copy()
        assert r.checksum(h.dev_ptr, 1 << 20) == link.host_checksum(words)
        assert len(set(words[:1000].tolist())) > 900  # the fill is a pattern, not a constant
    finally:
        hostmem.free_host(ctx.device, h)


def test_p2p_helpers_as_a_self_pair(rig):
    from gpudissect.bench.link import peer as link_peer

    ctx, r, got = rig
    dev, size = ctx.device, 64 << 20
    src, dst = dev.alloc(size), dev.alloc(size)
    try:
        r.fill(src.ptr, size, 7)
        bufs = [(src, dst)]
        for kind in link_peer.P2P_KINDS:
            assert link_peer._p2p_uni(ctx, [r], bufs, 0, 0, size, 3, kind) > 100  # device-local: far above any link
        assert link_peer._p2p_bidir(ctx, [r], bufs, 0, 0, size, 3) > 100
        lat = link_peer._p2p_chase(ctx, r, dev, 3)
        assert 0.05 < lat < 5  # one dependent DRAM load, in us
        assert 0 < link_peer._p2p_small_copy(r, bufs, 0, 0, 10) < 100
        assert link_peer._topology_series(ctx, 1) == (["X"], None)
        assert any(k == "figure" and p.key == "link.p2p.paths" for k, p in got)
    finally:
        dev.free(src)
        dev.free(dst)
